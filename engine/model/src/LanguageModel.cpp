// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/LanguageModel.h"

#include "kvscope/model/ModelError.h"

#include <ATen/ATen.h>

namespace kvscope::model {
namespace {

at::Device deviceOf(const ParameterStore& parameters) {
    return parameters.tensors().empty() ? at::Device(at::kCPU) : parameters.tensors().begin()->second.device();
}

bool requiresGrad(const ParameterStore& parameters) {
    for (const auto& [name, tensor] : parameters.tensors()) {
        if (tensor.requires_grad()) {
            return true;
        }
    }
    return false;
}

} // namespace

LanguageModel::LanguageModel(Architecture architecture, ParameterStore parameters)
    : m_architecture(std::move(architecture)), m_parameters(std::move(parameters)), m_device(deviceOf(m_parameters)),
      m_trainable(requiresGrad(m_parameters)) {}

LanguageModel::~LanguageModel() = default;

at::Tensor LanguageModel::forwardLast(const at::Tensor& inputIds, ModelCache* cache, const at::Tensor& attentionMask) {
    const at::Tensor logits = forward(inputIds, cache, attentionMask);
    return logits.narrow(1, logits.size(1) - 1, 1);
}

at::Tensor LanguageModel::checkedInputIds(const at::Tensor& inputIds) const {
    if (!inputIds.defined() || inputIds.dim() != 2 || inputIds.size(0) == 0 || inputIds.size(1) == 0) {
        throw ModelError("input ids must be a non-empty [batch, tokens] tensor");
    }
    if (at::isFloatingType(inputIds.scalar_type()) || inputIds.scalar_type() == at::kBool) {
        throw ModelError("input ids must be integers, got a tensor of " + std::string(c10::toString(inputIds.scalar_type())));
    }
    at::Tensor ids = inputIds.to(m_device, at::kLong);
    const int64_t low = ids.min().item<int64_t>();
    const int64_t high = ids.max().item<int64_t>();
    if (low < 0 || high >= m_architecture.vocabSize()) {
        throw ModelError("token id " + std::to_string(low < 0 ? low : high) + " is outside the vocabulary (allowed: 0-" +
                         std::to_string(m_architecture.vocabSize() - 1) + ")");
    }
    return ids;
}

at::Tensor LanguageModel::checkedAttentionMask(const at::Tensor& attentionMask, int64_t batch, int64_t positions) const {
    if (!attentionMask.defined()) {
        return attentionMask;
    }
    if (attentionMask.dim() != 2 || attentionMask.size(0) != batch || attentionMask.size(1) != positions) {
        throw ModelError("the attention mask must be [batch " + std::to_string(batch) + ", cached + new tokens " +
                         std::to_string(positions) + "], got " + std::to_string(attentionMask.dim()) + " dimensions" +
                         (attentionMask.dim() == 2 ? " [" + std::to_string(attentionMask.size(0)) + ", " +
                                                         std::to_string(attentionMask.size(1)) + "]"
                                                   : std::string()));
    }
    return attentionMask.to(m_device).ne(0);
}

} // namespace kvscope::model
