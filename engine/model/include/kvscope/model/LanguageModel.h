// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/model/Architecture.h"
#include "kvscope/model/ParameterStore.h"

#include <ATen/core/Tensor.h>

namespace kvscope::model {

class AttentionObserver;

class ModelCache;

/// A model the generator drives: token ids in, logits out, keys/values through a cache; parameters on one
/// device, computing in float32 (a checkpoint's bf16/f16 matrices stay 2 bytes and widen per matmul). Inference only (no autograd) unless its parameters require gradients, which
/// only training gives them.
class LanguageModel {
public:
    virtual ~LanguageModel();
    LanguageModel(const LanguageModel&) = delete;
    LanguageModel& operator=(const LanguageModel&) = delete;

    const Architecture& architecture() const { return m_architecture; }
    const config::ModelConfig& config() const { return m_architecture.config(); }
    const ParameterStore& parameters() const { return m_parameters; }
    at::Device device() const { return m_device; }
    /// Whether forward() records autograd history: the parameters required gradients when the model
    /// was made, and gradient mode is on where forward() is called.
    bool trainable() const { return m_trainable; }

    /// Logits [batch, tokens, vocab] for `inputIds` [batch, tokens] following the tokens `cache` holds
    /// (and adds them to it), or for these tokens alone when `cache` is null. `attentionMask`
    /// [batch, cached + tokens] marks real tokens (nonzero) and left padding (0); undefined = no padding.
    virtual at::Tensor forward(const at::Tensor& inputIds, ModelCache* cache,
                               const at::Tensor& attentionMask = at::Tensor()) = 0;
    /// forward(), but the logits of the last position only [batch, 1, vocab]: a long prefill then never
    /// holds [tokens, vocab] logits.
    virtual at::Tensor forwardLast(const at::Tensor& inputIds, ModelCache* cache,
                                   const at::Tensor& attentionMask = at::Tensor());
    /// Query rows attention computes at once (0, the default: as many as a 32 MB score budget allows).
    void setAttentionQueryChunk(int64_t rows) { m_attentionQueryChunk = rows; }
    /// Sees each attention layer after its forward pass (null: none); it must outlive its use. Only the
    /// decoder-only model calls it.
    void setAttentionObserver(AttentionObserver* observer) { m_observer = observer; }

protected:
    LanguageModel(Architecture architecture, ParameterStore parameters);

    /// Checks ids [batch, tokens] of integers inside the vocabulary; returns them as int64 on the device.
    at::Tensor checkedInputIds(const at::Tensor& inputIds) const;
    /// Checks a padding mask against the batch and the positions it must cover.
    at::Tensor checkedAttentionMask(const at::Tensor& attentionMask, int64_t batch, int64_t positions) const;

    Architecture m_architecture;
    ParameterStore m_parameters;
    at::Device m_device;
    bool m_trainable = false;
    AttentionObserver* m_observer = nullptr;
    int64_t m_attentionQueryChunk = 0;
};

} // namespace kvscope::model
