// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/synthetic/SyntheticSession.h"

#include "kvscope/trace/Event.h"
#include "kvscope/trace/EventEmitter.h"
#include "kvscope/trace/SessionWriter.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <random>
#include <string_view>
#include <vector>

namespace kvscope::synthetic {

using namespace kvscope::trace;

namespace {

// 8 KV heads x 128 dims x fp16 x (K and V); 4-bit quantized adds a scale and zero point per group.
constexpr std::int64_t kBytesPerToken = 8 * 128 * 2 * 2;
constexpr std::int64_t kQuantizedBytesPerToken = kBytesPerToken / 4 + 64;
// Modeled host-device link: 25 GB/s plus a fixed launch latency.
constexpr double kNsPerByte = 1.0 / 25.0;
constexpr std::int64_t kTransferLatencyNs = 5000;
// Modeled attention update of one layer: a fixed cost plus a cost per attended token.
constexpr std::int64_t kComputeBaseNs = 20000;
constexpr std::int64_t kComputeNsPerToken = 4;

constexpr std::array<std::string_view, 16> kVocabulary{
    " the", " cache", " of",    " a",  " token", " layer", ",",          ".",
    " and", " key",   " value", " is", " to",    " in",    " attention", " model",
};

struct SimulatedLayer {
    LayerKind kind = LayerKind::Dynamic;
    std::int64_t seqLength = 0;
    std::int64_t stored = 0;
    std::int64_t quantized = 0;
    std::int64_t residual = 0;
    std::int64_t capacity = -1;
    bool onHost = false;
    std::int64_t offloadEndNs = 0; // when its last offload finished (its prefetch may not start earlier)
    std::int64_t readyNs = 0;      // when its last prefetch finished (its update may not start earlier)

    std::int64_t quantizedBytes() const { return quantized * kQuantizedBytesPerToken; }
    std::int64_t fullPrecisionBytes() const {
        if (kind == LayerKind::Quantized)
            return residual * kBytesPerToken;
        if (kind == LayerKind::Static)
            return capacity * kBytesPerToken; // preallocated
        return stored * kBytesPerToken;
    }
    std::int64_t bytes() const { return quantizedBytes() + fullPrecisionBytes(); }
};

class Generator {
public:
    Generator(const SyntheticSessionOptions& options, EventSink& sink)
        : m_options(options), m_emitter(&sink), m_random(options.seed) {
        m_layers.resize(static_cast<std::size_t>(std::max(options.layers, 0)));
        for (std::int32_t i = 0; i < options.layers; ++i) {
            SimulatedLayer& layer = m_layers[static_cast<std::size_t>(i)];
            layer.kind = SyntheticSession::kindOfLayer(options, i);
            if (layer.kind == LayerKind::Static)
                layer.capacity = options.promptTokens + options.tokens;
        }
    }

    void run() {
        if (m_options.irregular)
            m_emitter.emit(-1, ResetEvent{}); // a broadcast before any layer exists reaches none
        runStep(0, m_options.promptTokens);
        for (std::int64_t step = 1; step <= m_options.tokens; ++step) {
            if (m_options.irregular && chance(0.03))
                continue; // an empty step: the generator advanced without touching the cache
            runStep(step, 1);
        }
    }

private:
    bool chance(double probability) {
        return std::uniform_real_distribution<double>(0.0, 1.0)(m_random) < probability;
    }
    std::int64_t uniform(std::int64_t low, std::int64_t high) {
        return std::uniform_int_distribution<std::int64_t>(low, high)(m_random);
    }

    void runStep(std::int64_t step, std::int64_t tokensIn) {
        m_emitter.setStep(step);
        const std::int64_t fedToken = step == 0 ? -1 : m_lastToken;
        m_emitter.emit(-1,
                       StepBeginEvent{fedToken, step == 0 ? std::string("<prompt>") : tokenText(fedToken)});
        for (std::int32_t i = 0; i < m_options.layers; ++i) {
            updateLayer(i, tokensIn);
            if (m_options.irregular && step == 0 && i == m_options.layers / 2)
                m_emitter.emit(-1, ReorderEvent{{0}}); // a broadcast that only the first half has seen
        }
        m_lastToken = uniform(0, 31999);
        m_emitter.emit(-1,
                       StepEndEvent{m_lastToken, tokenText(m_lastToken), 18'000'000 + uniform(0, 4'000'000)});
        if (m_options.irregular)
            emitIrregularExtras();
        emitMemory();
    }

    void updateLayer(std::int32_t index, std::int64_t tokensIn) {
        SimulatedLayer& layer = m_layers[static_cast<std::size_t>(index)];
        const bool offloaded = m_options.offload && index > 0;
        if (offloaded && layer.onHost) {
            const std::int64_t begin = std::max(m_prefetchFreeNs, layer.offloadEndNs);
            layer.readyNs = m_prefetchFreeNs = emitTransfer(index, TransferDirection::Prefetch,
                                                            TransferLane::Prefetch, layer.bytes(), begin);
            layer.onHost = false;
        }

        const std::int64_t seqBefore = layer.seqLength;
        const std::int64_t seqAfter = seqBefore + tokensIn;
        const bool sliding = isSlidingWindow(layer.kind);
        MaskSizesEvent mask{tokensIn, seqAfter, 0};
        if (sliding) {
            mask.kvOffset = std::max<std::int64_t>(0, seqAfter - m_options.window);
            mask.kvLength = seqAfter - mask.kvOffset;
        } else if (layer.kind == LayerKind::Static) {
            mask.kvLength = layer.capacity;
        }
        m_emitter.emit(index, mask);

        layer.seqLength = seqAfter;
        std::int64_t returned = seqAfter;
        if (sliding) {
            returned = layer.stored + tokensIn; // the reference attends over past window + new tokens
            layer.stored = std::min(seqAfter, m_options.window);
            const std::int64_t evicted = returned - layer.stored;
            if (evicted > 0)
                m_emitter.emit(
                    index, WindowSlideEvent{evicted, seqAfter - layer.stored, seqAfter, m_options.window});
        } else {
            layer.stored = seqAfter;
            if (layer.kind == LayerKind::Static)
                returned = layer.capacity;
        }

        if (layer.kind == LayerKind::Quantized) {
            const bool first = layer.quantized == 0 && layer.residual == 0;
            const std::int64_t bytesBefore = layer.bytes() + tokensIn * kBytesPerToken;
            layer.residual += tokensIn;
            if (first || layer.residual >= m_options.residualLength) {
                QuantizeFlushEvent flush;
                flush.tokensMoved = layer.residual;
                flush.residualBefore = layer.residual;
                flush.residualAfter = 0;
                flush.quantizedTokensAfter = seqAfter;
                flush.bytesBefore = bytesBefore;
                layer.residual = 0;
                layer.quantized = seqAfter;
                flush.bytesAfter = layer.bytes();
                flush.maxAbsError = 0.05 + 0.01 * static_cast<double>(uniform(0, 100)) / 100.0;
                flush.meanAbsError = flush.maxAbsError / 8.0;
                flush.relativeError = flush.meanAbsError / 2.0;
                m_emitter.emit(index, flush);
            }
        }

        if (m_options.offload) {
            // Like the engine's modeled compute lane: an update waits for its layer's prefetch.
            const std::int64_t begin = std::max(m_computeFreeNs, layer.readyNs);
            m_computeFreeNs = begin + kComputeBaseNs + kComputeNsPerToken * returned;
            m_emitter.emit(index, ComputeEvent{TimingSource::Modeled, begin, m_computeFreeNs});
        }
        m_emitter.emit(index, UpdateEvent{tokensIn, seqAfter, layer.stored, layer.capacity, returned,
                                          layer.bytes(), layer.kind});

        if (offloaded) {
            layer.offloadEndNs = m_computeFreeNs = emitTransfer(
                index, TransferDirection::Offload, TransferLane::Compute, layer.bytes(), m_computeFreeNs);
            layer.onHost = true;
        }
    }

    // Returns the transfer's end.
    std::int64_t emitTransfer(std::int32_t index, TransferDirection direction, TransferLane lane,
                              std::int64_t bytes, std::int64_t beginNs) {
        const auto duration =
            kTransferLatencyNs + static_cast<std::int64_t>(static_cast<double>(bytes) * kNsPerByte);
        m_emitter.emit(
            index, TransferEvent{direction, lane, TimingSource::Modeled, beginNs, beginNs + duration, bytes});
        return beginNs + duration;
    }

    void emitIrregularExtras() {
        const std::int64_t seqLength = m_layers.empty() ? 0 : m_layers.front().seqLength;
        if (chance(0.01) && seqLength > 8) {
            const std::int64_t after = seqLength - uniform(1, 8);
            m_emitter.emit(-1, CropEvent{after, seqLength, after});
            for (SimulatedLayer& layer : m_layers) {
                layer.stored = std::max<std::int64_t>(0, layer.stored - (seqLength - after));
                layer.seqLength = after;
                if (layer.kind == LayerKind::Quantized) {
                    layer.quantized = std::min(layer.quantized, after);
                    layer.residual = after - layer.quantized;
                }
            }
        }
        if (chance(0.004)) {
            m_emitter.emit(-1, ResetEvent{});
            for (SimulatedLayer& layer : m_layers) {
                layer.seqLength = layer.stored = layer.quantized = layer.residual = 0;
            }
        }
        if (chance(0.02)) {
            std::vector<std::int64_t> beams(4);
            std::iota(beams.begin(), beams.end(), 0);
            std::shuffle(beams.begin(), beams.end(), m_random);
            m_emitter.emit(-1, ReorderEvent{std::move(beams)});
        }
        if (chance(0.01)) {
            m_emitter.emit(-1, BatchRepeatEvent{2, m_batch, m_batch * 2});
            m_batch *= 2;
        }
        if (chance(0.01) && m_batch > 1) {
            std::vector<std::int64_t> kept(static_cast<std::size_t>(m_batch / 2));
            std::iota(kept.begin(), kept.end(), 0);
            m_emitter.emit(-1, BatchSelectEvent{kept, m_batch, m_batch / 2});
            m_batch /= 2;
        }
        if (chance(0.05) && !m_layers.empty()) {
            const auto index = static_cast<std::int32_t>(uniform(0, m_options.layers - 1));
            const SimulatedLayer& layer = m_layers[static_cast<std::size_t>(index)];
            const std::int64_t host = layer.onHost ? layer.bytes() : 0;
            m_emitter.emit(index, MemoryEvent{layer.onHost ? 0 : layer.fullPrecisionBytes(),
                                              layer.onHost ? 0 : layer.quantizedBytes(), host});
        }
    }

    void emitMemory() {
        MemoryEvent memory;
        for (const SimulatedLayer& layer : m_layers) {
            if (layer.onHost) {
                memory.host += layer.bytes();
            } else {
                memory.deviceFullPrecision += layer.fullPrecisionBytes();
                memory.deviceQuantized += layer.quantizedBytes();
            }
        }
        m_emitter.emit(-1, memory);
    }

    static std::string tokenText(std::int64_t tokenId) {
        return std::string(kVocabulary[static_cast<std::size_t>(tokenId) % kVocabulary.size()]);
    }

    const SyntheticSessionOptions& m_options;
    EventEmitter m_emitter;
    std::mt19937_64 m_random;
    std::vector<SimulatedLayer> m_layers;
    std::int64_t m_lastToken = -1;
    std::int64_t m_computeFreeNs = 0;  // modeled compute lane
    std::int64_t m_prefetchFreeNs = 0; // modeled prefetch lane
    std::int64_t m_batch = 1;
};

} // namespace

LayerKind SyntheticSession::kindOfLayer(const SyntheticSessionOptions& options, std::int32_t layer) {
    if (options.slidingEvery > 0 && layer % options.slidingEvery == 1 % options.slidingEvery)
        return LayerKind::DynamicSlidingWindow;
    if (options.quantizedEvery > 0 && layer % options.quantizedEvery == options.quantizedEvery / 2)
        return LayerKind::Quantized;
    if (options.staticEvery > 0 && layer % options.staticEvery == options.staticEvery - 1)
        return LayerKind::Static;
    return LayerKind::Dynamic;
}

void SyntheticSession::generate(const SyntheticSessionOptions& options, EventSink& sink) {
    Generator(options, sink).run();
}

std::size_t SyntheticSession::estimateEventCount(const SyntheticSessionOptions& options) {
    const auto steps = static_cast<std::size_t>(std::max<std::int64_t>(options.tokens, 0) + 1);
    std::size_t perStep = 3; // StepBegin, StepEnd, Memory
    std::size_t flushes = 0;
    for (std::int32_t layer = 0; layer < options.layers; ++layer) {
        perStep += 2; // MaskSizes, Update
        if (options.offload)
            perStep += layer > 0 ? 3 : 1; // Compute, and the layer's two transfers
        switch (kindOfLayer(options, layer)) {
        case LayerKind::DynamicSlidingWindow:
            perStep += 1; // at most one slide per step
            break;
        case LayerKind::Quantized:
            flushes +=
                steps / static_cast<std::size_t>(std::max<std::int64_t>(options.residualLength, 1)) + 1;
            break;
        default:
            break;
        }
    }
    return steps * perStep + flushes + 1;
}

std::vector<std::string> SyntheticSession::promptPieces(const SyntheticSessionOptions& options) {
    std::vector<std::string> pieces;
    for (std::int64_t position = 0; position < options.promptTokens; ++position) {
        pieces.emplace_back(kVocabulary[static_cast<std::size_t>(position * 7 + 3) % kVocabulary.size()]);
    }
    return pieces;
}

SyntheticSessionOptions SyntheticSession::sized(std::int32_t layers, std::int64_t tokens, bool offload) {
    SyntheticSessionOptions options;
    options.layers = layers;
    options.tokens = tokens;
    options.window = std::max<std::int64_t>(8, tokens / 4);
    options.residualLength = std::clamp<std::int64_t>(tokens / 8, 4, 128);
    options.promptTokens = std::clamp<std::int64_t>(tokens / 8, 4, 128);
    options.offload = offload;
    return options;
}

trace::SessionMetadata SyntheticSession::metadataFor(const SyntheticSessionOptions& options) {
    trace::SessionMetadata metadata;
    metadata.kvscopeVersion = "synthetic";
    metadata.model = "synthetic " + std::to_string(options.layers) + " layers";
    metadata.cacheKind = options.offload ? "offloaded" : "hybrid";
    metadata.modelConfigJson = "{\"num_hidden_layers\": " + std::to_string(options.layers) +
                               ", \"sliding_window\": " + std::to_string(options.window) + "}";
    metadata.cacheSettingsJson = "{\"residual\": " + std::to_string(options.residualLength) + "}";
    metadata.device = "cpu";
    metadata.seed = options.seed;
    metadata.prompt = "(synthetic)";
    metadata.tokenizer = "synthetic";
    metadata.promptPieces = promptPieces(options);
    return metadata;
}

SyntheticSession::Written SyntheticSession::write(const SyntheticSessionOptions& options,
                                                  const std::filesystem::path& path) {
    trace::SessionWriter writer(path, metadataFor(options));
    generate(options, writer);
    writer.finish();
    return {writer.stepsWritten(), writer.eventsWritten(), writer.bytesWritten()};
}

} // namespace kvscope::synthetic
