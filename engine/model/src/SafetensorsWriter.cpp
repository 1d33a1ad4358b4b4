// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/SafetensorsWriter.h"

#include "kvscope/model/ModelError.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <vector>

namespace kvscope::model {

std::string SafetensorsWriter::dtypeName(at::ScalarType dtype) {
    switch (dtype) {
    case at::kFloat:
        return "F32";
    case at::kHalf:
        return "F16";
    case at::kBFloat16:
        return "BF16";
    default:
        throw ModelError(std::string("safetensors files are written as F32, F16 or BF16, not ") + c10::toString(dtype));
    }
}

void SafetensorsWriter::writeFile(const std::filesystem::path& path, const std::map<std::string, at::Tensor>& tensors,
                                  at::ScalarType dtype, const std::map<std::string, std::string>& metadata) {
    const std::string dtypeText = dtypeName(dtype);
    nlohmann::json header = nlohmann::json::object();
    if (!metadata.empty()) {
        header["__metadata__"] = metadata;
    }
    std::vector<at::Tensor> converted;
    uint64_t offset = 0;
    for (const auto& [name, tensor] : tensors) {
        at::Tensor data = tensor.detach().to(at::kCPU).to(dtype).contiguous();
        const uint64_t bytes = static_cast<uint64_t>(data.numel()) * data.element_size();
        header[name] = {{"dtype", dtypeText}, {"shape", data.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
        converted.push_back(data);
    }
    std::string text = header.dump();
    // The reference writer pads the header with spaces to a multiple of 8 bytes.
    text.append((8 - text.size() % 8) % 8, ' ');
    std::filesystem::path partial = path;
    partial += ".partial";
    {
        std::ofstream out(partial, std::ios::binary | std::ios::trunc);
        const uint64_t length = text.size(); // little-endian on every platform LibTorch runs on here
        out.write(reinterpret_cast<const char*>(&length), 8);
        out.write(text.data(), static_cast<std::streamsize>(text.size()));
        for (const at::Tensor& data : converted) {
            out.write(static_cast<const char*>(data.data_ptr()), static_cast<std::streamsize>(data.numel() * data.element_size()));
        }
        if (!out.flush()) {
            throw ModelError("cannot write `" + partial.string() + "` (is the folder writable and the disk not full?)");
        }
    }
    std::error_code error;
    std::filesystem::rename(partial, path, error);
    if (error) {
        throw ModelError("cannot rename `" + partial.string() + "` to `" + path.string() + "`: " + error.message());
    }
}

} // namespace kvscope::model
