// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/LlamaCppLayer.h"

#include "kvscope/cache/CacheError.h"
#include "kvscope/cache/WalshHadamardRotation.h"
#include "kvscope/gguf/BlockType.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>

namespace kvscope::cache {
namespace {

bool isQuantised(const gguf::BlockType& type) { return type.blockSize() > 1; }

void checkQuantises(const gguf::BlockType& type, const char* what) {
    if (!type.quantizes()) {
        throw CacheError(ErrorKind::Value, std::string("the llama.cpp cache has no quantiser for ") + what +
                                               " type " + type.name());
    }
}

} // namespace

LlamaCppLayer::LlamaCppLayer(const gguf::BlockType& keyType, const gguf::BlockType& valueType, bool rotation)
    : m_keyType(keyType), m_valueType(valueType), m_rotation(rotation) {
    checkQuantises(keyType, "the K");
    checkQuantises(valueType, "the V");
}

void LlamaCppLayer::lazyInitialization(const at::Tensor& keyStates, const at::Tensor& valueStates) {
    DynamicLayer::lazyInitialization(keyStates, valueStates);
    const int64_t keyDim = keyStates.size(3);
    const int64_t valueDim = valueStates.size(3);
    // llama.cpp refuses a quantised K whose head is not whole blocks (llama_context); kvscope keeps each head's
    // blocks apart, so V must be whole blocks too.
    const auto checkWhole = [](const gguf::BlockType& type, int64_t dim, const char* what) {
        if (dim % type.blockSize() != 0) {
            throw CacheError(ErrorKind::Value, std::string("the llama.cpp cache's ") + what + " type " + type.name() +
                                                   " quantises blocks of " + std::to_string(type.blockSize()) +
                                                   " values, which do not divide the head dimension " +
                                                   std::to_string(dim) + " (use f16 or f32)");
        }
    };
    checkWhole(m_keyType, keyDim, "K");
    checkWhole(m_valueType, valueDim, "V");
    m_keyRotation = m_rotation && isQuantised(m_keyType) ? WalshHadamardRotation::keyBlock(keyDim) : 0;
    m_valueRotation = m_rotation && isQuantised(m_valueType) ? WalshHadamardRotation::valueBlock(valueDim) : 0;
    m_keyBlocks.clear();
    m_valueBlocks.clear();
    m_keyChannels.reset(keyStates.size(1), keyDim);
    m_valueChannels.reset(valueStates.size(1), valueDim);
}

LlamaCppLayer::Encoded LlamaCppLayer::encode(const at::Tensor& states, const gguf::BlockType& type,
                                             int64_t rotation, ChannelError* channels) {
    const at::Tensor given = states.to(at::kCPU, at::kFloat).contiguous();
    at::Tensor values = given.clone();
    float* data = values.data_ptr<float>();
    const int64_t count = values.numel();
    if (rotation > 0) {
        WalshHadamardRotation::apply(data, count / rotation, rotation);
    }
    const int64_t blocks = count / type.blockSize();
    std::vector<int64_t> shape = states.sizes().vec();
    shape.back() = shape.back() / type.blockSize() * type.typeSize();
    at::Tensor bytes = at::empty(shape, at::kByte);
    if (blocks > 0) {
        type.quantize(data, static_cast<size_t>(blocks), bytes.data_ptr<uint8_t>());
        type.dequantize(bytes.data_ptr<uint8_t>(), static_cast<size_t>(blocks), data);
    }
    if (rotation > 0) {
        WalshHadamardRotation::apply(data, count / rotation, rotation);
    }
    // One pass over [batch, heads, tokens, dim] for the update's error and each channel's; a rewrite of the stored
    // keys (no `channels`) reports neither.
    QuantizedSequence::FlushError error;
    if (channels != nullptr) {
        const float* original = given.data_ptr<float>();
        const int64_t heads = states.size(1);
        const int64_t tokens = std::max<int64_t>(states.size(2), 1);
        const int64_t dim = states.size(3);
        const int64_t rows = count / std::max<int64_t>(dim, 1);
        for (int64_t row = 0; row < rows; ++row) {
            const int64_t head = row / tokens % heads;
            for (int64_t channel = 0; channel < dim; ++channel) {
                const int64_t at = row * dim + channel;
                error.add(original[at], data[at]);
                channels->add(head * dim + channel, original[at], data[at]);
            }
        }
        channels->countTokens(states.size(0) * states.size(2));
    }
    return {bytes, values.to(states.device(), states.scalar_type()), error};
}

KeyValueStates LlamaCppLayer::update(const at::Tensor& keyStates, const at::Tensor& valueStates) {
    checkFourDimensional(keyStates, "key_states");
    checkFourDimensional(valueStates, "value_states");
    if (!m_initialized) {
        lazyInitialization(keyStates, valueStates);
    }
    const Encoded keys = encode(keyStates, m_keyType, m_keyRotation, &m_keyChannels);
    const Encoded values = encode(valueStates, m_valueType, m_valueRotation, &m_valueChannels);
    KeyValueStates states = DynamicLayer::update(keys.decoded, values.decoded);
    m_keyBlocks.append(keys.blocks);
    m_valueBlocks.append(values.blocks);
    // The error attention reads with, over this update's keys and values.
    m_lastUpdate = QuantizedSequence::FlushError::report(keys.error, values.error, keyStates.size(2), m_keys.length());
    return states;
}

void LlamaCppLayer::reset() {
    DynamicLayer::reset();
    m_keyBlocks.zero();
    m_valueBlocks.zero();
    m_keyChannels.reset(m_keyChannels.heads(), m_keyChannels.dim());
    m_valueChannels.reset(m_valueChannels.heads(), m_valueChannels.dim());
}

void LlamaCppLayer::reorder(const at::Tensor& beamIdx) {
    const bool held = seqLength() > 0;
    DynamicLayer::reorder(beamIdx); // checks the index
    if (held) {
        const at::Tensor index = beamIdx.to(at::kCPU, at::kLong);
        m_keyBlocks.assign(m_keyBlocks.view().index_select(0, index));
        m_valueBlocks.assign(m_valueBlocks.view().index_select(0, index));
    }
}

void LlamaCppLayer::crop(int64_t maxLength) {
    DynamicLayer::crop(maxLength);
    if (m_keys.hasShape() && m_keyBlocks.hasShape()) {
        m_keyBlocks.truncate(m_keys.length());
        m_valueBlocks.truncate(m_values.length());
    }
}

void LlamaCppLayer::batchRepeatInterleave(int64_t repeats) {
    const bool held = seqLength() > 0;
    DynamicLayer::batchRepeatInterleave(repeats); // checks `repeats`
    if (held) {
        m_keyBlocks.assign(m_keyBlocks.view().repeat_interleave(repeats, 0));
        m_valueBlocks.assign(m_valueBlocks.view().repeat_interleave(repeats, 0));
    }
}

void LlamaCppLayer::batchSelectIndices(const at::Tensor& indices) {
    const bool held = seqLength() > 0;
    DynamicLayer::batchSelectIndices(indices); // checks the indices
    if (held) {
        at::Tensor index = indices.to(at::kCPU);
        index = index.scalar_type() == at::kBool ? index.nonzero().reshape(-1) : index.to(at::kLong);
        m_keyBlocks.assign(m_keyBlocks.view().index_select(0, index));
        m_valueBlocks.assign(m_valueBlocks.view().index_select(0, index));
    }
}

void LlamaCppLayer::keepTokens(const at::Tensor& indices) {
    DynamicLayer::keepTokens(indices);
    const at::Tensor rows = indices.to(at::kCPU, at::kLong).unsqueeze(-1);
    m_keyBlocks.assign(m_keyBlocks.view().gather(2, rows.expand({-1, -1, -1, m_keyBlocks.view().size(3)})));
    m_valueBlocks.assign(m_valueBlocks.view().gather(2, rows.expand({-1, -1, -1, m_valueBlocks.view().size(3)})));
}

void LlamaCppLayer::rewriteKeys(const at::Tensor& keys) {
    if (!m_initialized || !m_keys.hasShape()) {
        DynamicLayer::rewriteKeys(keys); // refuses, saying why
        return;
    }
    if (keys.sizes() != m_keys.view().sizes()) {
        throw CacheError(ErrorKind::Runtime, typeName() + ": rewritten keys must keep the stored shape");
    }
    // The rewritten keys are stored as new keys are: rotated and quantised again.
    const Encoded encoded = encode(keys, m_keyType, m_keyRotation, nullptr);
    DynamicLayer::rewriteKeys(encoded.decoded);
    m_keyBlocks.assign(encoded.blocks);
}

bool LlamaCppLayer::quantises() const { return isQuantised(m_keyType) || isQuantised(m_valueType); }

int64_t LlamaCppLayer::storedBytes() const { return m_keyBlocks.bytes() + m_valueBlocks.bytes(); }

int64_t LlamaCppLayer::quantizedBytes() const {
    return (isQuantised(m_keyType) ? m_keyBlocks.bytes() : 0) + (isQuantised(m_valueType) ? m_valueBlocks.bytes() : 0);
}

std::vector<uint8_t> LlamaCppLayer::rowsOf(const SequenceBuffer& blocks, int64_t batch) {
    if (!blocks.hasShape()) {
        return {};
    }
    // [batch, heads, tokens, bytes] -> this batch row's [tokens, heads, bytes].
    const at::Tensor rows = blocks.view()[batch].transpose(0, 1).contiguous();
    const uint8_t* data = rows.data_ptr<uint8_t>();
    return {data, data + rows.numel()};
}

std::vector<uint8_t> LlamaCppLayer::keyRows(int64_t batch) const { return rowsOf(m_keyBlocks, batch); }
std::vector<uint8_t> LlamaCppLayer::valueRows(int64_t batch) const { return rowsOf(m_valueBlocks, batch); }

} // namespace kvscope::cache
