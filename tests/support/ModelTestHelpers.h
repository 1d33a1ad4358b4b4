// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Shared helpers of the model and runtime tests: preset configs, temporary folders, logits of a
// cache-free recompute and of token-by-token cached decoding.
#include "kvscope/config/ModelConfig.h"
#include "kvscope/config/RunSettings.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelCache.h"
#include "TemporaryDirectory.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <vector>
#include <random>
#include <string>

namespace kvscope::testing {

inline config::ModelConfig presetConfig(const std::string& name) {
    return config::ModelConfig::fromFile(std::filesystem::path(KVSCOPE_SOURCE_DIR) / "resources" / "presets" /
                                         (name + ".json"));
}

/// The run settings of `preset` (empty: the default), with random weights of `weightSeed` when given.
inline config::RunSettings presetSettings(const std::string& preset, std::optional<std::uint64_t> weightSeed) {
    config::RunSettings settings;
    settings.preset = preset;
    settings.weightSeed = weightSeed;
    return settings;
}

inline std::vector<std::string> presetNames() {
    return {"gemma2", "gemma3", "gemma3n", "llama", "llama4", "mistral", "qwen3-next", "whisper"};
}

/// KL(p || q) of the softmaxes of two logit rows, in nats.
inline double klDivergence(const at::Tensor& p, const at::Tensor& q) {
    const at::Tensor logP = at::log_softmax(p.to(at::kDouble), -1);
    const at::Tensor logQ = at::log_softmax(q.to(at::kDouble), -1);
    return (logP.exp() * (logP - logQ)).sum().item<double>();
}

/// A file of little-endian float32 rows of `width` values (a peer's logits), as [rows, width].
inline at::Tensor readFloatRows(const std::filesystem::path& path, int64_t width) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const int64_t count = static_cast<int64_t>(bytes.size() / sizeof(float));
    at::Tensor rows = at::empty({count / width, width}, at::kFloat);
    std::memcpy(rows.data_ptr<float>(), bytes.data(), static_cast<size_t>(count / width * width) * sizeof(float));
    return rows;
}

/// The greedy token with `held` (eos) held back, as generate()'s min_new_tokens holds it back.
inline int64_t greedyWithout(const at::Tensor& logits, int64_t held) {
    at::Tensor kept = logits.clone();
    kept[held] = -std::numeric_limits<float>::infinity();
    return kept.argmax().item<int64_t>();
}

inline double maxAbsDifference(const at::Tensor& a, const at::Tensor& b) {
    return (a.to(at::kCPU) - b.to(at::kCPU)).abs().max().item<double>();
}

/// Feeds `ids` [batch, tokens] through the model over `cache` in pieces (first `prefill` tokens, then
/// `chunk` at a time) and returns the logits of every position [batch, tokens, vocab].
inline at::Tensor cachedLogits(model::LanguageModel& model, model::ModelCache& cache, const at::Tensor& ids,
                               int64_t prefill, int64_t chunk = 1, const at::Tensor& attentionMask = at::Tensor()) {
    std::vector<at::Tensor> pieces;
    for (int64_t start = 0; start < ids.size(1);) {
        const int64_t length = std::min<int64_t>(start == 0 ? prefill : chunk, ids.size(1) - start);
        const at::Tensor mask = attentionMask.defined() ? attentionMask.narrow(1, 0, start + length) : at::Tensor();
        pieces.push_back(model.forward(ids.narrow(1, start, length), &cache, mask));
        start += length;
    }
    return at::cat(pieces, 1);
}

/// The message of the exception `call` throws; empty when it throws none.
template <typename Call> std::string refusal(Call&& call) {
    try {
        call();
    } catch (const std::exception& error) {
        return error.what();
    }
    return "";
}

} // namespace kvscope::testing
