// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/model/LanguageModel.h"

#include <vector>

namespace kvscope::model {

/// A tiny Whisper-like encoder-decoder: the encoder runs once over a fixed synthetic input (log-mel
/// shaped, [num_mel_bins, 2 * max_source_positions]) through two convolutions and bidirectional
/// layers; the decoder's self-attention goes through the EncoderDecoderCache's self-attention cache,
/// and each layer's cross-attention keys/values are computed once and kept in its cross-attention
/// cache (marked updated).
class EncoderDecoderModel : public LanguageModel {
public:
    EncoderDecoderModel(Architecture architecture, ParameterStore parameters);
    ~EncoderDecoderModel() override;

    /// `cache` must be null or hold an EncoderDecoderCache.
    at::Tensor forward(const at::Tensor& inputIds, ModelCache* cache,
                       const at::Tensor& attentionMask = at::Tensor()) override;

    /// The encoder's output [1, max_source_positions, d_model] (computed once).
    const at::Tensor& encoderOutput();
    /// The fixed synthetic input features [1, num_mel_bins, 2 * max_source_positions].
    static at::Tensor syntheticFeatures(int64_t melBins, int64_t frames);
    static std::vector<ParameterSpec> parameterSpecs(const Architecture& architecture);

private:
    at::Tensor selfAttention(const std::string& prefix, const at::Tensor& hidden, int64_t heads) const;
    at::Tensor feedForward(const std::string& prefix, const at::Tensor& hidden) const;
    at::Tensor weight(const std::string& name) const { return m_parameters.get(name); }
    at::Tensor optional(const std::string& name) const;

    at::Tensor m_encoderOutput;
};

} // namespace kvscope::model
