// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/ComputeDevice.h"

#include "kvscope/config/NameTable.h"

namespace kvscope::config {
namespace {

constexpr NameTable<ComputeDevice, 2> kComputeDeviceNames{{{
    {ComputeDevice::Cpu, "cpu"},
    {ComputeDevice::Cuda, "cuda"},
}}};
static_assert(kComputeDeviceNames.entries().size() == static_cast<size_t>(ComputeDevice::Last) + 1, "one name per device");

} // namespace

std::string_view toString(ComputeDevice device) { return kComputeDeviceNames.name(device); }
std::optional<ComputeDevice> computeDeviceFromString(std::string_view name) { return kComputeDeviceNames.parse(name); }
std::vector<std::string> computeDeviceNames() { return kComputeDeviceNames.names(); }
std::string allowedComputeDevices() { return kComputeDeviceNames.allowed(); }

} // namespace kvscope::config
