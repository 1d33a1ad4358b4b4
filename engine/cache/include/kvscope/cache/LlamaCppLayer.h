// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cache/ChannelError.h"
#include "kvscope/cache/DynamicLayer.h"
#include "kvscope/cache/QuantizationReport.h"
#include "kvscope/cache/QuantizedSequence.h"

#include <cstdint>
#include <vector>

namespace kvscope::gguf {
class BlockType;
}

namespace kvscope::cache {

/// A layer of llama.cpp's KV cache (llama_kv_cache with `-ctk`/`-ctv`): each token's keys and values are stored
/// as ggml stores them, a row of KV heads x head_dim values in the K (V) type's blocks of 32 (q4_0: 18 bytes per
/// 32 values), written by ggml's reference quantiser; with a quantised type and a head of a multiple of 64, the
/// row is first rotated by a Walsh-Hadamard matrix (WalshHadamardRotation), as llama.cpp does unless
/// LLAMA_ATTN_ROT_DISABLE=1. Attention reads the blocks dequantised and rotated back (llama.cpp rotates the
/// queries and the output instead: the same product).
///
/// The blocks are the layer's memory (storedBytes); it also keeps their decoded values for attention, as llama.cpp
/// dequantises them for each product. A press drops tokens per head, so each head's blocks are kept apart:
/// rows() puts a token's heads side by side as llama.cpp's row.
class LlamaCppLayer : public DynamicLayer {
public:
    /// `keyType` and `valueType` must quantise (gguf::BlockType::quantizes); `rotation` as llama.cpp's default.
    LlamaCppLayer(const gguf::BlockType& keyType, const gguf::BlockType& valueType, bool rotation);

    std::string typeName() const override { return "LlamaCppLayer"; }

    void lazyInitialization(const at::Tensor& keyStates, const at::Tensor& valueStates) override;
    KeyValueStates update(const at::Tensor& keyStates, const at::Tensor& valueStates) override;
    void reset() override;
    void reorder(const at::Tensor& beamIdx) override;
    void crop(int64_t maxLength) override;
    void batchRepeatInterleave(int64_t repeats) override;
    void batchSelectIndices(const at::Tensor& indices) override;
    void keepTokens(const at::Tensor& indices) override;
    void rewriteKeys(const at::Tensor& keys) override;
    /// The K and V blocks, as llama.cpp allocates them per token.
    int64_t storedBytes() const override;

    const gguf::BlockType& keyType() const { return m_keyType; }
    const gguf::BlockType& valueType() const { return m_valueType; }
    /// The rotation block of keys (values), 0 when they are not rotated (a float type, or a head not a multiple
    /// of 64).
    int64_t keyRotation() const { return m_keyRotation; }
    int64_t valueRotation() const { return m_valueRotation; }
    /// The bytes of the blocks of quantised types (the K and V of a float type count as full precision).
    int64_t quantizedBytes() const;
    /// Batch row `batch`'s keys (values) as llama.cpp's cache rows: one row per stored token of every KV head's
    /// blocks in head order, the rows in token order.
    std::vector<uint8_t> keyRows(int64_t batch = 0) const;
    std::vector<uint8_t> valueRows(int64_t batch = 0) const;
    /// Whether K or V is a quantised type (not f32, f16 or bf16).
    bool quantises() const;
    /// The last update's quantisation, as a quantized layer's flush reports it: its tokens, every stored token
    /// quantised afterwards, and the error of what attention reads against the states given, keys and values.
    const QuantizationReport& lastUpdate() const { return m_lastUpdate; }
    /// The error per KV head and channel of every key (value) the updates since initialisation or reset() quantised
    /// (a rewrite of the stored keys is not counted again).
    const ChannelError& keyChannelError() const { return m_keyChannels; }
    const ChannelError& valueChannelError() const { return m_valueChannels; }

private:
    /// `states` [batch, heads, tokens, head_dim] rotated (by `rotation`, 0: none) and quantised: the blocks
    /// [batch, heads, tokens, bytes per head] (uint8, CPU), the values attention reads (dequantised, rotated
    /// back; `states`' dtype and device) and, where `channels` is given, their error against `states`, also added
    /// to `channels` per KV head and channel.
    struct Encoded {
        at::Tensor blocks;
        at::Tensor decoded;
        QuantizedSequence::FlushError error;
    };
    static Encoded encode(const at::Tensor& states, const gguf::BlockType& type, int64_t rotation,
                          ChannelError* channels);
    static std::vector<uint8_t> rowsOf(const SequenceBuffer& blocks, int64_t batch);

    const gguf::BlockType& m_keyType;
    const gguf::BlockType& m_valueType;
    bool m_rotation;
    int64_t m_keyRotation = 0;
    int64_t m_valueRotation = 0;
    SequenceBuffer m_keyBlocks;
    SequenceBuffer m_valueBlocks;
    QuantizationReport m_lastUpdate;
    ChannelError m_keyChannels;
    ChannelError m_valueChannels;
};

} // namespace kvscope::cache
