// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/CacheKind.h"
#include "kvscope/config/ComputeDevice.h"
#include "kvscope/config/GgufWeights.h"
#include "kvscope/config/QuantizerBackend.h"

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>

namespace kvscope::config {

/// The cache a run uses and its options, as `kvscope-cli run`, the GUI and session files give them.
struct CacheSettings {
    CacheKind kind = CacheKind::Dynamic;
    QuantizerBackend backend = QuantizerBackend::MinMax; ///< quantized only
    int nbits = 4;                                       ///< quantized only
    std::int64_t groupSize = 0;        ///< quantized: 0 = the model's head dim (always divides the states)
    std::int64_t residualLength = 128; ///< quantized: full-precision tokens before a flush
    std::int64_t maxCacheLen = 0;      ///< static: 0 = prompt + new tokens
    std::string typeK = "f16";         ///< llamacpp: the K type (llamaCppCacheTypes())
    std::string typeV = "f16";         ///< llamacpp: the V type
    bool attnRotation = true;          ///< llamacpp: rotate quantised K/V (off: LLAMA_ATTN_ROT_DISABLE=1)

    bool operator==(const CacheSettings&) const = default;
};

/// A cache press and how hard it compresses (`kvscope-cli run --press`, the GUI's New session): the name
/// (empty: no press; config::PressDescriptions lists them), the share of each layer's prefill cache a
/// prefill press removes, and `key=value` options (the press's own and, for adakv and decoding, the base
/// press's; decoding's compression_interval and target_size among them).
struct PressSettings {
    PressSettings() = default;
    // Not an aggregate, so that {name, ratio, options} leaves `fitted` empty without a warning.
    PressSettings(std::string name, double ratio = 0.0, std::map<std::string, std::string> options = {},
                  std::map<std::string, std::string> fitted = {})
        : name(std::move(name)), ratio(ratio), options(std::move(options)), fitted(std::move(fitted)) {}

    std::string name;
    double ratio = 0.0;
    std::map<std::string, std::string> options;
    /// Options the inspector fitted to a short prompt (PressDescriptions::fitToPrompt): option -> the
    /// default it replaced; their values are in `options`. Empty for `kvscope-cli run`.
    std::map<std::string, std::string> fitted;

    bool operator==(const PressSettings&) const = default;
    /// {"name", "ratio", "options"} and "fitted" where not empty: the `press` entry of a session's
    /// cache_settings (sessions/FORMAT.md).
    nlohmann::json toJson() const;
    /// The press a session's cache_settings JSON records; nullopt without one or when it does not read.
    static std::optional<PressSettings> fromCacheSettings(const std::string& cacheSettingsJson);
};

/// A serving run (`kvscope-cli serve`, `kvscope --workload`, File > New session > Serving): a workload
/// (a built-in name or a workload file, docs/workloads.md) served over a paged pool (docs/paged.md).
struct ServingSettings {
    std::string workload;
    std::int64_t blockSize = 16;
    std::int32_t numBlocks = 64;
    std::int64_t maxNumBatchedTokens = 256;
    std::int32_t maxNumSeqs = 8;
    bool prefixCaching = true;
    std::string freePolicy = "document"; ///< document | current
    std::string hashAlgorithm = "fnv1a"; ///< prefix hashes: fnv1a | sha256_cbor (vLLM's, hashes equal a server's)
    bool operator==(const ServingSettings&) const = default;
};

/// Following a running server's KV cache (`kvscope --attach`, File > Attach to server, `kvscope-cli attach`):
/// its KV event stream (vLLM's kv_events_config endpoint, or SGLang's), the replay socket to catch up from,
/// the topic, and its /metrics page for the prefix-cache hit rate. The run's tokenizerPath, when given, turns
/// the stored blocks' tokens into text.
struct AttachSettings {
    std::string endpoint;       ///< tcp://HOST:PORT or ipc://PATH
    std::string replayEndpoint; ///< empty: no catching up
    std::string topic;          ///< empty: every topic
    std::string metricsUrl;     ///< http://HOST:PORT/metrics; empty: no hit rate
    double seconds = 0;         ///< follow for this long (0: until stopped)
    bool operator==(const AttachSettings&) const = default;
};

/// What a run is asked to do, torch-free so that the CLI, the GUI's New session dialog and the engine's
/// LiveSession share one definition: one model source (preset, config.json, checkpoint folder or GGUF
/// file; all empty = the default preset), the tokenizer paired with a preset or config.json, the cache, the prompt,
/// how many tokens, decoding, seeds and the device.
struct RunSettings {
    std::string preset;
    std::string configPath;
    std::string checkpointDir;
    /// A llama.cpp GGUF model file, or a known model's name (`smollm2`, `gemma3-270m`: a pip package puts it in site-packages)
    /// (config::ModelFileLocator). It brings its own tokenizer.
    std::string modelFile;
    /// How that GGUF model holds its quantised matrices.
    GgufWeights ggufWeights = GgufWeights::Packed;
    /// A Hugging Face tokenizer (folder, tokenizer.json or tokenizer.model) for a preset or config.json;
    /// empty = the byte tokenizer. A checkpoint folder brings its own.
    std::string tokenizerPath;
    CacheSettings cache;
    PressSettings press;
    std::string prompt = "The key-value cache";
    std::int64_t tokens = 32;
    std::int64_t beams = 1;   ///< beam search width (1 = greedy or sampling)
    std::int64_t promptLookupNumTokens = 0; ///< prompt-lookup decoding: drafted tokens per step (0 = off)
    /// Assisted decoding: a GGUF file or known model sharing the model's vocabulary drafts for it (empty = off).
    std::string assistantModel;
    std::int64_t numAssistantTokens = 5; ///< assisted decoding: drafted tokens per step (a constant schedule)
    double temperature = 0.0; ///< 0 = greedy
    std::int64_t topK = 0;    ///< 0 = all tokens
    bool ignoreEos = false;   ///< generate every token even past the tokenizer's eos
    /// The prompt is the user's message, rendered with the model's chat template (TextCodec::encodeChat).
    bool chat = false;
    std::uint64_t seed = 0;   ///< sampling
    /// Built-in random weights of this seed; unset: a preset's trained weights where it has some, else seed
    /// 0.
    std::optional<std::uint64_t> weightSeed;
    ComputeDevice device = ComputeDevice::Cpu;
    /// Intra-op threads of the model's compute (LibTorch's at::set_num_threads); 0 = all the machine's cores.
    std::int64_t threads = 0;

    /// Set: serve a workload of many requests over a paged pool instead of generating from `prompt`.
    std::optional<ServingSettings> serving;
    /// Set: follow a running server instead of running a model (no model source is loaded).
    std::optional<AttachSettings> attach;
    bool operator==(const RunSettings&) const = default;
};

/// What a live session in the inspector starts from: the defaults above, but sampling (temperature 0.8,
/// top-k 40, seed 0) rather than greedy, because the small presets' greedy text falls into loops ("the sear
/// the sear"). `kvscope-cli run` stays greedy, as Transformers' generate() is.
RunSettings liveSessionSettings();

/// The intra-op threads a run computes on: `settings.threads`, or every core of this machine when it is 0.
int computeThreads(const RunSettings& settings);

/// The one check of a run's settings before anything is built (the CLI's run, the GUI launcher and
/// LiveSession): at most one model source, a tokenizer only with a preset or config.json, at least one
/// token and one beam, no negative thread count, a bit width the backend supports, no negative size,
/// temperature or top-k, a known press with known options of the right types and a ratio in [0, 1) (no ratio
/// or options without a press). Throws ConfigError naming the setting and what is allowed. Whether the device
/// is usable here is the engine's check (DeviceSupport).
void validate(const RunSettings& settings);

} // namespace kvscope::config
