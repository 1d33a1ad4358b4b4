// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/ParameterStore.h"

#include "kvscope/model/ModelError.h"
#include "kvscope/model/ModelLoader.h"
#include "kvscope/model/SafetensorsCheckpoint.h"
#include "kvscope/model/TensorOps.h"

#include <ATen/ATen.h>
#include <cmath>
#include <set>
#include <sstream>

namespace kvscope::model {
namespace {

std::string shapeText(at::IntArrayRef shape) {
    std::ostringstream text;
    text << shape;
    return text.str();
}

at::Tensor sinusoids(int64_t length, int64_t channels) {
    // Whisper's `sinusoids(length, channels)`: sin of the first half of the channels, cos of the second.
    const int64_t half = channels / 2;
    const double increment = std::log(10000.0) / static_cast<double>(half - 1);
    at::Tensor inverse = at::exp(-increment * at::arange(half, at::kFloat));
    at::Tensor scaled = at::arange(length, at::kFloat).unsqueeze(1) * inverse.unsqueeze(0);
    return at::cat({at::sin(scaled), at::cos(scaled)}, 1);
}

} // namespace

ParameterStore ParameterStore::random(const std::vector<ParameterSpec>& specs, uint64_t seed) {
    auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
    ParameterStore store;
    for (const ParameterSpec& spec : specs) {
        if (spec.sinusoids) {
            if (spec.shape.size() != 2 || spec.shape[1] % 2 != 0 || spec.shape[1] < 4) {
                throw ModelError("sinusoidal parameter `" + spec.name + "` needs a shape [length, even channels >= 4]");
            }
            store.set(spec.name, sinusoids(spec.shape[0], spec.shape[1]));
            continue;
        }
        const double std = spec.std >= 0 ? spec.std : 1.0 / std::sqrt(static_cast<double>(spec.shape.back()));
        at::Tensor tensor = at::randn(spec.shape, generator, at::TensorOptions().dtype(at::kFloat)) * std + spec.mean;
        store.set(spec.name, tensor);
    }
    return store;
}

ParameterStore ParameterStore::fromCheckpoint(const std::vector<ParameterSpec>& specs,
                                              const SafetensorsCheckpoint& checkpoint,
                                              const std::set<std::string>& ignored) {
    ParameterStore store;
    std::set<std::string> wanted;
    std::vector<std::string> missing;
    for (const ParameterSpec& spec : specs) {
        wanted.insert(spec.name);
        if (!checkpoint.contains(spec.name)) {
            missing.push_back(spec.name);
            continue;
        }
        at::Tensor tensor = checkpoint.tensor(spec.name);
        if (tensor.sizes() != at::IntArrayRef(spec.shape)) {
            throw ModelError("checkpoint tensor `" + spec.name + "` has shape " + shapeText(tensor.sizes()) +
                             " but the config needs " + shapeText(spec.shape));
        }
        // Tensors stay views of the memory-mapped file, in its dtype where they are matrices (projections,
        // embeddings: ops::linear and ops::embed widen them per use), so a bf16/f16 model keeps 2 bytes per
        // weight. Vectors and convolution kernels (norms, biases: a sliver of the bytes) are widened here, so
        // that elementwise math stays float32.
        const bool kept = tensor.scalar_type() == at::kFloat || tensor.dim() == 2;
        store.set(spec.name, kept ? tensor : tensor.to(at::kFloat));
    }
    if (!missing.empty()) {
        std::string names;
        for (size_t i = 0; i < missing.size() && i < 5; ++i) {
            names += (i ? ", `" : "`") + missing[i] + "`";
        }
        throw ModelError("checkpoint `" + checkpoint.directory().string() + "` lacks " + std::to_string(missing.size()) +
                         " tensor(s) the config needs: " + names + (missing.size() > 5 ? ", ..." : ""));
    }
    std::vector<std::string> unused;
    for (const std::string& name : checkpoint.names()) {
        if (!wanted.count(name) && !ignored.count(name) &&
            name.find("rotary_emb.inv_freq") == std::string::npos) {
            unused.push_back(name);
        }
    }
    if (!unused.empty()) {
        std::string names;
        for (size_t i = 0; i < unused.size() && i < 5; ++i) {
            names += (i ? ", `" : "`") + unused[i] + "`";
        }
        throw ModelError("checkpoint `" + checkpoint.directory().string() + "` has " +
                         std::to_string(unused.size()) +
                         " tensor(s) kvscope's decoder for this config does not use: " + names +
                         (unused.size() > 5 ? ", ..." : "") +
                         " (supported checkpoint families: " + ModelLoader::checkpointModelTypes() + ")");
    }
    return store;
}

void ParameterStore::check(const std::vector<ParameterSpec>& specs) const {
    for (const ParameterSpec& spec : specs) {
        if (const PackedMatrix* matrix = packed(spec.name)) {
            if (std::vector<int64_t>{matrix->rows(), matrix->cols()} != spec.shape) {
                throw ModelError("parameter `" + spec.name + "` has shape [" + std::to_string(matrix->rows()) + ", " +
                                 std::to_string(matrix->cols()) + "] but the config needs " +
                                 shapeText(at::IntArrayRef(spec.shape)));
            }
            continue;
        }
        const at::Tensor tensor = get(spec.name);
        if (tensor.sizes() != at::IntArrayRef(spec.shape)) {
            throw ModelError("parameter `" + spec.name + "` has shape " + shapeText(tensor.sizes()) +
                             " but the config needs " + shapeText(spec.shape));
        }
    }
}

at::Tensor ParameterStore::get(const std::string& name) const {
    if (auto it = m_tensors.find(name); it != m_tensors.end()) {
        return it->second;
    }
    if (const PackedMatrix* matrix = packed(name)) {
        return matrix->widened();
    }
    throw ModelError("the model has no parameter `" + name + "`");
}

at::Tensor ParameterStore::linear(const at::Tensor& input, const std::string& weightName, const at::Tensor& bias) const {
    const PackedMatrix* matrix = packed(weightName);
    if (matrix == nullptr) {
        return ops::linear(input, get(weightName), bias);
    }
    const at::Tensor product = matrix->multiply(input);
    return bias.defined() ? product + bias : product;
}

std::vector<at::Tensor> ParameterStore::linearStacked(const at::Tensor& input,
                                                      const std::vector<std::string>& weightNames,
                                                      const std::vector<at::Tensor>& biases) const {
    const auto biasOf = [&](size_t i) { return i < biases.size() ? biases[i] : at::Tensor(); };
    std::vector<const PackedMatrix*> matrices;
    for (const std::string& name : weightNames) {
        const PackedMatrix* matrix = packed(name);
        if (matrix == nullptr || (!matrices.empty() && matrix->cols() != matrices.front()->cols())) {
            matrices.clear();
            break;
        }
        matrices.push_back(matrix);
    }
    std::vector<at::Tensor> products;
    products.reserve(weightNames.size());
    if (matrices.size() < 2) {
        for (size_t i = 0; i < weightNames.size(); ++i) {
            products.push_back(linear(input, weightNames[i], biasOf(i)));
        }
        return products;
    }
    const at::Tensor stacked = PackedMatrix::multiplyStacked(input, matrices);
    int64_t first = 0;
    for (size_t i = 0; i < matrices.size(); ++i) {
        const at::Tensor product = stacked.narrow(-1, first, matrices[i]->rows());
        products.push_back(biasOf(i).defined() ? product + biasOf(i) : product);
        first += matrices[i]->rows();
    }
    return products;
}

at::Tensor ParameterStore::embed(const std::string& tableName, const at::Tensor& ids) const {
    const PackedMatrix* matrix = packed(tableName);
    return matrix != nullptr ? matrix->gather(ids) : ops::embed(get(tableName), ids);
}

void ParameterStore::set(const std::string& name, at::Tensor tensor) {
    m_packed.erase(name);
    m_tensors[name] = std::move(tensor);
}

void ParameterStore::setPacked(const std::string& name, PackedMatrix matrix) {
    m_tensors.erase(name);
    m_packed.insert_or_assign(name, std::move(matrix));
}

const PackedMatrix* ParameterStore::packed(const std::string& name) const {
    auto it = m_packed.find(name);
    return it == m_packed.end() ? nullptr : &it->second;
}

ParameterStore ParameterStore::to(const at::Device& device) const {
    ParameterStore moved;
    for (const auto& [name, tensor] : m_tensors) {
        moved.set(name, tensor.to(device));
    }
    for (const auto& [name, matrix] : m_packed) {
        if (device.is_cpu()) {
            moved.setPacked(name, matrix);
        } else {
            moved.set(name, matrix.widened().to(device));
        }
    }
    return moved;
}

ParameterStore ParameterStore::roundedThrough(at::ScalarType dtype) const {
    ParameterStore rounded;
    for (const auto& [name, tensor] : m_tensors) {
        rounded.set(name, tensor.to(dtype).to(at::kFloat));
    }
    for (const auto& [name, matrix] : m_packed) {
        rounded.set(name, matrix.widened().to(dtype).to(at::kFloat));
    }
    return rounded;
}

int64_t ParameterStore::parameterCount() const {
    int64_t count = 0;
    for (const auto& [name, tensor] : m_tensors) {
        count += tensor.numel();
    }
    for (const auto& [name, matrix] : m_packed) {
        count += matrix.rows() * matrix.cols();
    }
    return count;
}

int64_t ParameterStore::bytes() const {
    int64_t bytes = 0;
    for (const auto& [name, tensor] : m_tensors) {
        bytes += tensor.numel() * static_cast<int64_t>(tensor.element_size());
    }
    for (const auto& [name, matrix] : m_packed) {
        bytes += matrix.bytes();
    }
    return bytes;
}

} // namespace kvscope::model
