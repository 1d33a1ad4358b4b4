// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/runtime/CacheFactory.h"

#include "kvscope/cache/DynamicCache.h"
#include "kvscope/cache/EncoderDecoderCache.h"
#include "kvscope/cache/LinearAttentionLayer.h"
#include "kvscope/cache/LlamaCppCache.h"
#include "kvscope/gguf/BlockType.h"
#include "kvscope/cache/QuantizedLayer.h"
#include "kvscope/cache/StaticCache.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelCache.h"
#include "kvscope/runtime/GenerationError.h"

#include <ATen/ATen.h>

namespace kvscope::runtime {
namespace {

bool hasAttentionKind(const model::Architecture& architecture, model::AttentionKind kind) {
    for (model::AttentionKind layer : architecture.attentionKinds()) {
        if (layer == kind) {
            return true;
        }
    }
    return false;
}

std::unique_ptr<cache::Cache> quantizedCache(const model::Architecture& architecture, const config::CacheSettings& options) {
    const config::ModelConfig& config = architecture.config();
    const cache::QuantizationSettings settings = CacheFactory::quantizationSettings(options, architecture.headDim());
    if (hasAttentionKind(architecture, model::AttentionKind::Hybrid)) {
        throw GenerationError("--cache quantized cannot hold `hybrid` layers (the reference has no quantized "
                              "linear-attention layer); use --cache dynamic or offloaded");
    }
    if (!hasAttentionKind(architecture, model::AttentionKind::LinearAttention)) {
        return std::make_unique<cache::QuantizedCache>(config, settings);
    }
    // The reference's QuantizedCache makes every layer a QuantizedLayer, which has nowhere to keep a
    // linear-attention state; kvscope quantizes the attention layers and keeps LinearAttentionLayers.
    auto quantizer = cache::QuantizedCache::makeQuantizer(settings);
    std::vector<std::unique_ptr<cache::CacheLayer>> layers;
    for (int64_t layer = 0; layer < architecture.numLayers() - architecture.numKvSharedLayers(); ++layer) {
        if (architecture.attentionKind(layer) == model::AttentionKind::LinearAttention) {
            layers.push_back(std::make_unique<cache::LinearAttentionLayer>());
        } else {
            layers.push_back(std::make_unique<cache::QuantizedLayer>(quantizer, settings.axisKey, settings.axisValue,
                                                                     settings.residualLength));
        }
    }
    return std::make_unique<cache::Cache>(std::move(layers));
}

std::unique_ptr<cache::Cache> decoderCache(const model::Architecture& architecture, const config::CacheSettings& options,
                                           int64_t maxLength) {
    const config::ModelConfig& config = architecture.config();
    switch (options.kind) {
    case config::CacheKind::Dynamic:
        return std::make_unique<cache::DynamicCache>(config);
    case config::CacheKind::Offloaded:
        return std::make_unique<cache::DynamicCache>(config, cache::Offloading::AllLayers);
    case config::CacheKind::Static: {
        if (hasAttentionKind(architecture, model::AttentionKind::Hybrid)) {
            throw GenerationError("--cache static cannot hold `hybrid` layers (the reference builds a plain StaticLayer "
                                  "with no linear-attention state); use --cache dynamic or offloaded");
        }
        const int64_t length = options.maxCacheLen > 0 ? options.maxCacheLen : maxLength;
        if (length < maxLength) {
            throw GenerationError("--max-cache-len " + std::to_string(length) + " is shorter than the run (prompt + new "
                                  "tokens = " + std::to_string(maxLength) +
                                  "); a static cache cannot grow (use at least that length, or 0 for automatic)");
        }
        return std::make_unique<cache::StaticCache>(config, length);
    }
    case config::CacheKind::Quantized:
        return quantizedCache(architecture, options);
    case config::CacheKind::LlamaCpp:
        for (int64_t layer = 0; layer < architecture.numLayers(); ++layer) {
            if (architecture.attentionKind(layer) != model::AttentionKind::FullAttention) {
                throw GenerationError("--cache llamacpp holds full-attention layers; layer " + std::to_string(layer) +
                                      " of this model is " + model::Architecture::attentionKindName(architecture.attentionKind(layer)) +
                                      " (llama.cpp keeps those in caches of their own); use --cache dynamic");
            }
        }
        return std::make_unique<cache::LlamaCppCache>(config, options.typeK, options.typeV, options.attnRotation);
    }
    throw GenerationError("unknown cache kind " + std::to_string(static_cast<int>(options.kind)));
}

} // namespace

nlohmann::json CacheFactory::describe(const config::CacheSettings& options, int64_t headDim) {
    nlohmann::json described{{"kind", config::toString(options.kind)}};
    if (options.kind == config::CacheKind::Quantized) {
        const cache::QuantizationSettings quantization = quantizationSettings(options, headDim);
        described["backend"] = config::toString(quantization.backend);
        described["nbits"] = quantization.nbits;
        described["group"] = quantization.groupSize;
        described["residual"] = quantization.residualLength;
    }
    if (options.kind == config::CacheKind::LlamaCpp) {
        described["type_k"] = options.typeK;
        described["type_v"] = options.typeV;
        described["attn_rotation"] = options.attnRotation;
    }
    if (options.kind == config::CacheKind::Static && options.maxCacheLen > 0) {
        described["max_cache_len"] = options.maxCacheLen;
    }
    return described;
}

cache::QuantizationSettings CacheFactory::quantizationSettings(const config::CacheSettings& options, int64_t headDim) {
    cache::QuantizationSettings settings;
    settings.backend = options.backend;
    settings.nbits = options.nbits;
    settings.groupSize = options.groupSize > 0 ? options.groupSize : headDim;
    settings.residualLength = options.residualLength;
    const int64_t axis = options.backend == config::QuantizerBackend::Hqq ? 1 : 0;
    settings.axisKey = axis;
    settings.axisValue = axis;
    return settings;
}

std::unique_ptr<model::ModelCache> CacheFactory::create(const model::LanguageModel& model, const config::CacheSettings& options,
                                                        int64_t maxLength) {
    const model::Architecture& architecture = model.architecture();
    if (options.kind == config::CacheKind::Quantized) {
        // Refuse bad backends and widths before anything is built (the quantizer names what is allowed).
        cache::QuantizedCache::makeQuantizer(quantizationSettings(options, architecture.headDim()));
    }
    if (options.kind == config::CacheKind::LlamaCpp) {
        for (const auto& [name, flag] : {std::pair{options.typeK, "--cache-type-k"}, std::pair{options.typeV, "--cache-type-v"}}) {
            const int64_t block = cache::LlamaCppCache::cacheType(name, flag).blockSize();
            if (architecture.headDim() % block != 0) {
                throw GenerationError(std::string(flag) + " " + name + " quantises blocks of " + std::to_string(block) +
                                      " values, which do not divide this model's heads of " +
                                      std::to_string(architecture.headDim()) +
                                      " (llama.cpp refuses it too); use f16, bf16 or f32");
            }
        }
    }
    std::unique_ptr<cache::Cache> self = decoderCache(architecture, options, maxLength);
    if (!architecture.isEncoderDecoder()) {
        return std::make_unique<model::ModelCache>(std::move(self));
    }
    // Cross-attention keys/values cover the whole encoder output: a static cache of exactly that length,
    // otherwise a plain dynamic one (offloading it would only move states the decoder reads every step).
    std::unique_ptr<cache::Cache> cross;
    if (options.kind == config::CacheKind::Static) {
        config::ModelConfig crossConfig = architecture.config();
        crossConfig.layerTypes = std::vector<std::string>(static_cast<size_t>(architecture.numLayers()), "full_attention");
        crossConfig.slidingWindow.reset();
        crossConfig.attentionChunkSize.reset();
        cross = std::make_unique<cache::StaticCache>(crossConfig, architecture.config().maxSourcePositions);
    } else {
        cross = std::make_unique<cache::DynamicCache>();
    }
    return std::make_unique<model::ModelCache>(
        std::make_unique<cache::EncoderDecoderCache>(std::move(self), std::move(cross)));
}

double CacheFactory::logitTolerance(const config::CacheSettings& options) {
    if (options.kind != config::CacheKind::Quantized) {
        return 1e-4;
    }
    // About twice the largest difference measured on the presets: random weights (CacheConsistencyTest,
    // residual 5, 16 sampled tokens: 8-bit 0.031, 4-bit 0.68, 2-bit 2.3) and trained ones, whose logits
    // are sharper (the December 2026 weights: CacheConsistencyTest's llama 8-bit 0.085; run --check, residual
    // 4, 24 greedy tokens, the largest over the presets: 8-bit 0.062, 4-bit 2.0, 3-bit 2.8 (hqq), 2-bit 6.3,
    // 1-bit 12.4 (hqq, gemma3n)). The logits of other models have other scales: for a checkpoint these
    // bounds are a rule of thumb.
    if (options.nbits >= 8) {
        return 0.17;
    }
    if (options.nbits >= 4) {
        return 4.0;
    }
    if (options.nbits == 3) {
        return 6.0;
    }
    return options.nbits == 2 ? 13.0 : 25.0;
}

} // namespace kvscope::runtime
