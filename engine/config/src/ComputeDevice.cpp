// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/ComputeDevice.h"

#include "kvscope/config/NameTable.h"

namespace kvscope::config {
namespace {

constexpr NameTable<ComputeDevice, 2> kNames{{{
    {ComputeDevice::Cpu, "cpu"},
    {ComputeDevice::Cuda, "cuda"},
}}};
static_assert(kNames.entries().size() == static_cast<size_t>(ComputeDevice::Last) + 1, "one name per device");

} // namespace

std::string_view toString(ComputeDevice device) { return kNames.name(device); }
std::optional<ComputeDevice> computeDeviceFromString(std::string_view name) { return kNames.parse(name); }
std::vector<std::string> computeDeviceNames() { return kNames.names(); }
std::string allowedComputeDevices() { return kNames.allowed(); }

} // namespace kvscope::config
