// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/LayerKind.h"
#include "kvscope/trace/SessionMetadata.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kvscope::trace {
class EventSink;
}

namespace kvscope::synthetic {

/// Shape of a generated session. Layer kinds repeat with the layer index: layer i is sliding when
/// slidingEvery > 0 and i % slidingEvery == 1, quantized when quantizedEvery > 0 and
/// i % quantizedEvery == quantizedEvery / 2 (and not sliding), static when staticEvery > 0 and
/// i % staticEvery == staticEvery - 1 (and neither), dynamic otherwise.
struct SyntheticSessionOptions {
    std::int32_t layers = 32;
    std::int64_t tokens = 1024;      ///< decode steps after the prefill: steps = tokens + 1
    std::int64_t promptTokens = 128; ///< tokens of the prefill (step 0)
    std::uint64_t seed = 1;
    std::int32_t slidingEvery = 8;
    std::int64_t window = 4096;
    std::int32_t quantizedEvery = 8;
    std::int64_t residualLength = 128; ///< a quantized layer flushes every residualLength steps
    std::int32_t staticEvery = 0;
    bool offload = false;   ///< offload/prefetch transfers around every layer's update but layer 0's,
                            /// and a Compute span per update, on a modeled compute and prefetch lane
    bool irregular = false; ///< random crops, resets, reorders, batch ops, per-layer memory, empty steps
};

/// Emits a plausible generation session without a model: per step StepBegin, per layer MaskSizes and
/// Update (+ WindowSlide, QuantizeFlush, Transfer and Compute as the options imply), StepEnd and a cache-wide
/// Memory event. Sizes follow a model with 8 KV heads of dimension 128 in fp16 (4 KiB per token and
/// layer). Deterministic for given options; used by tests, benchmarks and GUI demos.
class SyntheticSession {
public:
    static void generate(const SyntheticSessionOptions& options, trace::EventSink& sink);
    static trace::LayerKind kindOfLayer(const SyntheticSessionOptions& options, std::int32_t layer);
    /// Upper bound of the events generate() emits without the irregular extras, for reserve().
    static std::size_t estimateEventCount(const SyntheticSessionOptions& options);
    /// The text of each prompt position (words of the session's made-up vocabulary), as a session's
    /// metadata records a prompt.
    static std::vector<std::string> promptPieces(const SyntheticSessionOptions& options);

    /// The options `LAYERSxTOKENS` stands for (kvscope --synthetic, kvscope-cli synthetic): a window of a
    /// quarter of the tokens, a residual and a prompt of an eighth (4 to 128).
    static SyntheticSessionOptions sized(std::int32_t layers, std::int64_t tokens, bool offload = false);
    /// The metadata a session file of these options carries.
    static trace::SessionMetadata metadataFor(const SyntheticSessionOptions& options);

    /// What write() produced.
    struct Written {
        std::int64_t steps = 0;
        std::uint64_t events = 0;
        std::uint64_t bytes = 0;
    };
    /// Streams the session into a session file (trace::SessionWriter) without holding it in memory;
    /// SessionError when the file cannot be written.
    static Written write(const SyntheticSessionOptions& options, const std::filesystem::path& path);
};

} // namespace kvscope::synthetic
