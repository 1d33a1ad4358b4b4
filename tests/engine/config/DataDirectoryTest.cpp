// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/DataDirectory.h"

#include "kvscope/config/BuildInfo.h"

#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <regex>

using kvscope::config::BuildInfo;
using kvscope::config::DataDirectory;

TEST(DataDirectoryTest, InstalledFolderIsTheSharedFolderBesideTheBinFolder) {
    struct Case {
        const char* executable;
        const char* expected;
    };
    const Case cases[] = {
        {"/usr/bin/kvscope", "/usr/share/kvscope/presets"},
        {"/opt/kvscope/bin/kvscope-cli", "/opt/kvscope/share/kvscope/presets"},
        {"/home/me/.local/bin/kvscope", "/home/me/.local/share/kvscope/presets"},
        // A build tree's program is not installed: the source tree's folder is used instead.
        {"/work/build/dev/gui/kvscope", ""},
        {"/work/build/dev/engine/cli/kvscope-cli", ""},
    };
    for (const Case& c : cases)
        EXPECT_EQ(DataDirectory::installedFolder(c.executable, "presets").string(), c.expected)
            << c.executable;
}

TEST(DataDirectoryTest, EnvironmentOverridesAndABuildFallsBackToTheSourceTree) {
    // This test binary lives in a build tree, never in a bin folder.
    EXPECT_EQ(DataDirectory::locate("presets", nullptr, "/src/resources/presets"), "/src/resources/presets");
    ::setenv("KVSCOPE_TEST_DATA_FOLDER", "/elsewhere/presets", 1);
    EXPECT_EQ(DataDirectory::locate("presets", "KVSCOPE_TEST_DATA_FOLDER", "/src/resources/presets"),
              "/elsewhere/presets");
    // Set but empty counts as unset, as a shell's `VAR= kvscope` means.
    ::setenv("KVSCOPE_TEST_DATA_FOLDER", "", 1);
    EXPECT_EQ(DataDirectory::locate("presets", "KVSCOPE_TEST_DATA_FOLDER", "/src/resources/presets"),
              "/src/resources/presets");
    ::unsetenv("KVSCOPE_TEST_DATA_FOLDER");
}

TEST(BuildInfoTest, VersionLineNamesProgramVersionAndCommit) {
    std::ifstream cmake(KVSCOPE_SOURCE_DIR "/CMakeLists.txt");
    const std::string text((std::istreambuf_iterator<char>(cmake)), std::istreambuf_iterator<char>());
    std::smatch project;
    ASSERT_TRUE(std::regex_search(text, project, std::regex(R"(project\(kvscope VERSION ([0-9.]+))")));
    EXPECT_EQ(BuildInfo::version(), project[1].str());
    const std::string line = BuildInfo::versionLine("kvscope-cli");
    EXPECT_TRUE(std::regex_match(
        line, std::regex(R"(kvscope-cli [0-9.]+ \(commit ([0-9a-f]{12}(-dirty)?|unknown)\))")))
        << line;
}
