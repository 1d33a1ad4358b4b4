// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <nlohmann/json_fwd.hpp>

namespace kvscope::runtime {

/// How many CPU threads model compute uses: every core by default. The one place that sets LibTorch's
/// intra-op threads and the BLAS's own (OpenBLAS keeps a count apart from LibTorch's), so that
/// `--threads N` means N for both.
class ComputeThreads {
public:
    /// Uses `requested` threads, or every core of the machine when `requested` <= 0; returns the count
    /// in effect. Call it on the thread that computes: LibTorch's OpenMP count is per thread.
    static int apply(int requested);
    /// The machine's cores as the system reports them (at least 1).
    static int machineCores();
    /// LibTorch's intra-op threads on the calling thread.
    static int current();
    /// {"threads": current(), "blas": BlasLibrary::loaded(), "openmp_wait_policy"}: what `run` and `bench` report.
    static nlohmann::json describe();
};

} // namespace kvscope::runtime
