// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

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

/// A model's parameters by Hugging Face name, on one device: float32, or a checkpoint's bf16/f16 matrices.
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
    const at::Tensor& get(const std::string& name) const;
    bool contains(const std::string& name) const { return m_tensors.count(name) != 0; }
    void set(const std::string& name, at::Tensor tensor);
    const std::map<std::string, at::Tensor>& tensors() const { return m_tensors; }
    /// A copy with every tensor on `device`.
    ParameterStore to(const at::Device& device) const;
    /// A copy with every tensor rounded through `dtype` (what a checkpoint in that dtype holds).
    ParameterStore roundedThrough(at::ScalarType dtype) const;
    int64_t parameterCount() const;

private:
    std::map<std::string, at::Tensor> m_tensors;
};

} // namespace kvscope::model
