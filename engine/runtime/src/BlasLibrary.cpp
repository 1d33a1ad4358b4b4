// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/runtime/BlasLibrary.h"

#include <dlfcn.h>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

namespace kvscope::runtime {

namespace {

/// The library that the process's global lookup of sgemm_ lands in (what LibTorch's calls reach), opened
/// again without loading anything, so that a symbol is looked up in it and its own dependencies only:
/// OpenBLAS's LAPACK may bring libopenblas into a process whose libblas.so.3 is the reference one.
struct SgemmLibrary {
    std::string path;
    void* handle = nullptr;

    SgemmLibrary() {
        void* sgemm = dlsym(RTLD_DEFAULT, "sgemm_");
        Dl_info info{};
        if (sgemm == nullptr || dladdr(sgemm, &info) == 0 || info.dli_fname == nullptr) {
            return;
        }
        std::error_code error;
        const std::filesystem::path canonical = std::filesystem::canonical(info.dli_fname, error);
        path = error ? std::string(info.dli_fname) : canonical.string();
        handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    }
    ~SgemmLibrary() {
        if (handle != nullptr) {
            dlclose(handle); // drops the reference RTLD_NOLOAD took; the library stays loaded
        }
    }
    SgemmLibrary(const SgemmLibrary&) = delete;
    SgemmLibrary& operator=(const SgemmLibrary&) = delete;

    template <typename Function> Function find(const char* name) const {
        return handle != nullptr ? reinterpret_cast<Function>(dlsym(handle, name)) : nullptr;
    }
};

} // namespace

BlasLibrary BlasLibrary::loaded() {
    const SgemmLibrary library;
    BlasLibrary blas;
    blas.path = library.path;
    blas.implementation = "unknown";
    if (library.path.empty()) {
        return blas;
    }
    if (const auto config = library.find<char* (*)()>("openblas_get_config")) {
        blas.implementation = "openblas";
        blas.version = config();
        if (const auto threads = library.find<int (*)()>("openblas_get_num_threads")) {
            blas.threads = threads();
        }
    } else if (const auto version = library.find<const char* (*)()>("bli_info_get_version_str")) {
        blas.implementation = "blis";
        blas.version = version();
        if (const auto threads = library.find<long (*)()>("bli_thread_get_num_threads")) {
            blas.threads = static_cast<int>(threads());
        }
    } else if (library.find<void*>("mkl_get_max_threads") != nullptr ||
               library.find<void*>("MKL_Get_Max_Threads") != nullptr) {
        blas.implementation = "mkl";
        if (const auto threads = library.find<int (*)()>("mkl_get_max_threads")) {
            blas.threads = threads();
        }
    } else if (std::filesystem::path(library.path).parent_path().filename() == "blas") {
        // Debian's netlib reference BLAS (libblas3) lives in .../blas/; it has no symbol of its own.
        blas.implementation = "reference";
    }
    return blas;
}

bool BlasLibrary::setThreads(int threads) {
    const SgemmLibrary library;
    if (const auto set = library.find<void (*)(int)>("openblas_set_num_threads")) {
        set(threads);
        return true;
    }
    if (const auto set = library.find<void (*)(long)>("bli_thread_set_num_threads")) {
        set(threads);
        return true;
    }
    return false;
}

nlohmann::json BlasLibrary::toJson() const {
    return {{"implementation", implementation}, {"path", path}, {"version", version}, {"threads", threads}};
}

} // namespace kvscope::runtime
