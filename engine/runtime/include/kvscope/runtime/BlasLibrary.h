// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

namespace kvscope::runtime {

/// The BLAS that LibTorch's matrix products run on in this process, found at run time: Debian's
/// LibTorch multiplies through whatever `libblas.so.3` resolves to (update-alternatives), which may be
/// the unoptimised reference BLAS, some 25 times slower than OpenBLAS (README, "Speed").
struct BlasLibrary {
    /// "openblas", "blis", "mkl", "reference" (netlib's), or "unknown".
    std::string implementation;
    /// The file that serves sgemm_, links resolved
    /// ("/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"); empty where no sgemm_ is loaded.
    std::string path;
    /// What the library says of itself (OpenBLAS's openblas_get_config, BLIS's version); may be empty.
    std::string version;
    /// OpenBLAS's own thread count (it keeps one apart from LibTorch's); -1 where unknown.
    int threads = -1;

    /// The BLAS that `sgemm_` resolves to in this process.
    static BlasLibrary loaded();
    /// Sets the BLAS's own thread count where it has one (OpenBLAS, BLIS); false where it has none.
    static bool setThreads(int threads);
    /// {"implementation", "path", "version", "threads"}.
    nlohmann::json toJson() const;
};

} // namespace kvscope::runtime
