// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/model/PackedMatrix.h"

#include <ATen/core/Tensor.h>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace kvscope::model {

class SafetensorsCheckpoint;

/// One parameter a model needs: its Hugging Face name, shape and how built-in weights draw it.
struct ParameterSpec {
    std::string name;
    std::vector<int64_t> shape;
    /// Built-in weights are mean + std * N(0, 1); a negative std means 1/sqrt(fan_in) (the last dim).
    double mean = 0.0;
    double std = -1.0;
    /// Whisper's encoder positions: fixed sinusoids, not random.
    bool sinusoids = false;
};

/// A model's parameters by Hugging Face name, on one device: float32, a checkpoint's bf16/f16 matrices, or a
/// GGUF file's quantised matrices kept as its blocks (PackedMatrix, CPU only).
class ParameterStore {
public:
    ParameterStore() = default;

    /// Built-in weights: drawn in spec order from one CPU generator seeded with `seed`.
    static ParameterStore random(const std::vector<ParameterSpec>& specs, uint64_t seed);
    /// The specs' tensors from a checkpoint (f32, f16 or bf16): matrices stay views of the mapped file in its
    /// dtype, vectors and kernels are widened to float32. Refuses a
    /// missing tensor or a wrong shape, and checkpoint tensors no spec names, listing them, except
    /// those in `ignored` (which are not loaded).
    static ParameterStore fromCheckpoint(const std::vector<ParameterSpec>& specs,
                                         const SafetensorsCheckpoint& checkpoint,
                                         const std::set<std::string>& ignored = {});

    /// Throws ModelError unless every spec is present with its shape.
    void check(const std::vector<ParameterSpec>& specs) const;
    /// The named tensor; a packed matrix comes widened to float32 (a copy: products go through packed()).
    at::Tensor get(const std::string& name) const;
    bool contains(const std::string& name) const { return m_tensors.count(name) != 0 || m_packed.count(name) != 0; }
    void set(const std::string& name, at::Tensor tensor);
    void setPacked(const std::string& name, PackedMatrix matrix);
    /// The named matrix when it is kept packed, else nullptr.
    const PackedMatrix* packed(const std::string& name) const;
    /// `input @ weight^T + bias` of the named weight (ops::linear), block by block where it is kept packed.
    at::Tensor linear(const at::Tensor& input, const std::string& weightName, const at::Tensor& bias = at::Tensor()) const;
    /// linear() of one input with each named weight (and its bias, where `biases` has a defined one): where every
    /// weight is a packed matrix of one width, one stacked product (PackedMatrix::multiplyStacked) whose columns
    /// the results view.
    std::vector<at::Tensor> linearStacked(const at::Tensor& input, const std::vector<std::string>& weightNames,
                                          const std::vector<at::Tensor>& biases = {}) const;
    /// The rows of the named embedding table for `ids`, float32 (ops::embed), widened row by row where packed.
    at::Tensor embed(const std::string& tableName, const at::Tensor& ids) const;
    /// The tensors held as tensors (not the packed matrices).
    const std::map<std::string, at::Tensor>& tensors() const { return m_tensors; }
    const std::map<std::string, PackedMatrix>& packedMatrices() const { return m_packed; }
    /// A copy with every tensor on `device`; packed matrices stay packed on the CPU and are widened elsewhere.
    ParameterStore to(const at::Device& device) const;
    /// A copy with every tensor rounded through `dtype` (what a checkpoint in that dtype holds), packed ones widened.
    ParameterStore roundedThrough(at::ScalarType dtype) const;
    int64_t parameterCount() const;
    /// The bytes the parameters hold (packed matrices as their blocks).
    int64_t bytes() const;

private:
    std::map<std::string, at::Tensor> m_tensors;
    std::map<std::string, PackedMatrix> m_packed;
};

} // namespace kvscope::model
