// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <ATen/core/Tensor.h>

#include <filesystem>
#include <map>
#include <string>

namespace kvscope::model {

/// Writes one .safetensors file (the layout SafetensorsFile reads): trained weights and test checkpoints.
class SafetensorsWriter {
public:
    /// "F32", "F16" or "BF16"; a ModelError for any other dtype.
    static std::string dtypeName(at::ScalarType dtype);
    /// Every tensor converted to `dtype`, data in name order, `metadata` in the header's __metadata__.
    /// Writes to a temporary name and renames it, so an interrupted write never leaves half a file.
    static void writeFile(const std::filesystem::path& path, const std::map<std::string, at::Tensor>& tensors,
                          at::ScalarType dtype, const std::map<std::string, std::string>& metadata = {});
};

} // namespace kvscope::model
