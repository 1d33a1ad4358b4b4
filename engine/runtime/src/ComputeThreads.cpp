// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/runtime/ComputeThreads.h"

#include "kvscope/runtime/BlasLibrary.h"

#include <ATen/Parallel.h>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

namespace kvscope::runtime {

int ComputeThreads::machineCores() {
    const unsigned cores = std::thread::hardware_concurrency();
    return cores > 0 ? static_cast<int>(cores) : 1;
}

int ComputeThreads::apply(int requested) {
    // LibTorch's own default counts physical cores (1 on a 2-vCPU machine with SMT); ask for all of them.
    const int threads = requested > 0 ? requested : machineCores();
    at::set_num_threads(threads);
    BlasLibrary::setThreads(threads);
    return current();
}

int ComputeThreads::current() {
    return at::get_num_threads();
}

nlohmann::json ComputeThreads::describe() {
    // What LibTorch's OpenMP threads do while they wait (config::OpenMpWaitPolicy): "PASSIVE" unless set otherwise.
    const char* waitPolicy = std::getenv("OMP_WAIT_POLICY");
    return {{"threads", current()},
            {"blas", BlasLibrary::loaded().toJson()},
            {"openmp_wait_policy", waitPolicy != nullptr ? waitPolicy : "unset (OpenMP's default: spin, then sleep)"}};
}

} // namespace kvscope::runtime
