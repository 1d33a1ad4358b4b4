// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope::config {

/// Where a run keeps its model and caches. Whether CUDA can be used here is the engine's question
/// (cache::DeviceSupport); this is only the name.
enum class ComputeDevice { Cpu, Cuda, Last = Cuda };

std::string_view toString(ComputeDevice device);
std::optional<ComputeDevice> computeDeviceFromString(std::string_view name);
std::vector<std::string> computeDeviceNames();
std::string allowedComputeDevices();

} // namespace kvscope::config
