# SPDX-License-Identifier: GPL-3.0-or-later
# What `cmake --install` lays out (docs/packaging.md) and the Debian package CPack makes of it
# (scripts/package.sh). Data goes to <prefix>/share/kvscope, where config::DataDirectory finds it
# beside an installed program.
include(GNUInstallDirs)

install(TARGETS kvscope-cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET kvscope)
  install(TARGETS kvscope RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

set(KVSCOPE_DATA_DIR ${CMAKE_INSTALL_DATADIR}/kvscope)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/resources/presets/ DESTINATION ${KVSCOPE_DATA_DIR}/presets)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/resources/workloads/ DESTINATION ${KVSCOPE_DATA_DIR}/workloads)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/sessions/ DESTINATION ${KVSCOPE_DATA_DIR}/sessions
        FILES_MATCHING PATTERN "*.kvsess" PATTERN "FORMAT.md")
install(FILES ${PROJECT_SOURCE_DIR}/resources/io.github.kvscope.kvscope.desktop
        DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
install(FILES ${PROJECT_SOURCE_DIR}/resources/io.github.kvscope.kvscope.metainfo.xml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)
install(FILES ${PROJECT_SOURCE_DIR}/resources/kvscope-session.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/mime/packages)
install(FILES ${PROJECT_SOURCE_DIR}/resources/icons/kvscope.svg
        DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
install(FILES ${PROJECT_SOURCE_DIR}/resources/icons/kvscope.png
        DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/64x64/apps)
install(FILES ${PROJECT_SOURCE_DIR}/resources/debian-copyright DESTINATION ${CMAKE_INSTALL_DOCDIR}
        RENAME copyright)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})

# Man pages are written from each program's --help (its command-line table) by scripts/man-page.py.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  set(KVSCOPE_MAN_DIR ${CMAKE_BINARY_DIR}/man)
  set(pages ${KVSCOPE_MAN_DIR}/kvscope-cli.1.gz)
  add_custom_command(OUTPUT ${KVSCOPE_MAN_DIR}/kvscope-cli.1.gz
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/man-page.py kvscope-cli $<TARGET_FILE:kvscope-cli>
            ${KVSCOPE_MAN_DIR}/kvscope-cli.1.gz
    DEPENDS kvscope-cli ${PROJECT_SOURCE_DIR}/scripts/man-page.py
    COMMENT "kvscope: man page kvscope-cli(1)")
  if(TARGET kvscope)
    add_custom_command(OUTPUT ${KVSCOPE_MAN_DIR}/kvscope.1.gz
      COMMAND ${CMAKE_COMMAND} -E env QT_QPA_PLATFORM=offscreen
              ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/man-page.py kvscope $<TARGET_FILE:kvscope>
              ${KVSCOPE_MAN_DIR}/kvscope.1.gz
      DEPENDS kvscope ${PROJECT_SOURCE_DIR}/scripts/man-page.py
      COMMENT "kvscope: man page kvscope(1)")
    list(APPEND pages ${KVSCOPE_MAN_DIR}/kvscope.1.gz)
  endif()
  # Not part of `all`: the packaging builds it (scripts/package.sh), the tests check it (man_pages).
  add_custom_target(man_pages DEPENDS ${pages})
  install(FILES ${pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 OPTIONAL)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kvscope)
set(CPACK_PACKAGE_VENDOR "The kvscope developers")
set(CPACK_PACKAGE_CONTACT "The kvscope developers <kvscope@users.noreply.github.com>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "inspector for the key-value caches of transformer language models")
set(CPACK_PACKAGE_DESCRIPTION "kvscope steps a transformer language model token by token and shows what its
key-value cache does at every step: sliding windows, quantization, offloading, hybrid and
linear-attention layers, kvpress's presses and paged caches with prefix sharing. Sessions are saved,
replayed, compared and exported to Perfetto. kvscope-cli runs the same engine from the command line.")
set(CPACK_PACKAGE_HOMEPAGE_URL "")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends from the ELF files (dpkg-shlibdeps), which sees everything linked, the sentencepiece module included.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# LibTorch multiplies through libblas.so.3; the reference BLAS there is 15-30x slower (README, Speed).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libopenblas0-pthread")
set(CPACK_STRIP_FILES ON)
include(CPack)
