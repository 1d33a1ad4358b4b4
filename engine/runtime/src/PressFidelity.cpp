// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/runtime/PressFidelity.h"

#include "kvscope/gguf/BlockType.h"
#include "kvscope/model/AttachedAttentionObserver.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelCache.h"
#include "kvscope/runtime/CacheFactory.h"
#include "kvscope/runtime/GenerationError.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>

namespace kvscope::runtime {

namespace {

/// Log-probabilities [vocab] of the next token after `ids` [1, n], through `cache`.
at::Tensor nextLogProbabilities(model::LanguageModel& model, model::ModelCache& cache, const at::Tensor& ids) {
    const at::Tensor logits = model.forwardLast(ids, &cache);
    return at::log_softmax(logits[0][0].to(at::kCPU, at::kDouble), -1);
}

at::Tensor idsOf(const std::vector<int64_t>& tokens) { return at::tensor(tokens, at::kLong).unsqueeze(0); }

} // namespace

FidelityResult PressFidelity::measure(model::LanguageModel& model, const config::CacheSettings& cache,
                                      const std::vector<int64_t>& prompt, int64_t tokens, const config::PressSettings& press) {
    check(model, cache, press);
    return measure(model, cache, reference(model, cache, prompt, tokens), press);
}

void PressFidelity::check(const model::LanguageModel& model, const config::CacheSettings& cache,
                          const config::PressSettings& press) {
    CachePressHook(model.architecture(), cache, 1, press);
}

FidelityReference PressFidelity::reference(model::LanguageModel& model, const config::CacheSettings& cache,
                                           const std::vector<int64_t>& prompt, int64_t tokens) {
    if (prompt.empty() || tokens < 1) {
        throw GenerationError("a fidelity measurement needs a prompt and at least 1 token");
    }
    at::NoGradGuard noGrad;
    FidelityReference reference;
    reference.prompt = prompt;
    const auto plain = CacheFactory::create(model, cache, static_cast<int64_t>(prompt.size()) + tokens);
    at::Tensor next = nextLogProbabilities(model, *plain, idsOf(prompt));
    reference.vocab = next.size(0);
    for (int64_t token = 0; token < tokens; ++token) {
        const at::Tensor row = next.contiguous();
        reference.logProbabilities.insert(reference.logProbabilities.end(), row.data_ptr<double>(),
                                          row.data_ptr<double>() + reference.vocab);
        reference.tokens.push_back(next.argmax().item<int64_t>());
        if (token + 1 < tokens) {
            next = nextLogProbabilities(model, *plain, idsOf({reference.tokens.back()}));
        }
    }
    return reference;
}

FidelityResult PressFidelity::measure(model::LanguageModel& model, const config::CacheSettings& cache,
                                      const FidelityReference& reference,
                                      const config::PressSettings& press) {
    const int64_t tokens = static_cast<int64_t>(reference.tokens.size());
    if (reference.prompt.empty() || tokens < 1) {
        throw GenerationError("a fidelity measurement needs a prompt and at least 1 token");
    }
    at::NoGradGuard noGrad;
    // No press: the cache alone is measured (a quantised cache against the reference's full-precision one).
    std::optional<CachePressHook> hook;
    if (!press.name.empty()) {
        hook.emplace(model.architecture(), cache, 1, press);
    }
    FidelityResult result;
    result.tokens = reference.tokens;
    const auto pressedCache =
        CacheFactory::create(model, cache, static_cast<int64_t>(reference.prompt.size()) + tokens);
    const model::AttachedAttentionObserver attached(model, hook ? &*hook : nullptr);
    int64_t agreements = 0;
    double total = 0.0;
    for (int64_t token = 0; token < tokens; ++token) {
        const at::Tensor pressed = nextLogProbabilities(
            model, *pressedCache,
            token == 0 ? idsOf(reference.prompt) : idsOf({result.tokens[static_cast<size_t>(token - 1)]}));
        if (pressed.size(0) != reference.vocab) {
            throw GenerationError("the fidelity reference has " + std::to_string(reference.vocab) +
                                  " log-probabilities per token but the model predicts " +
                                  std::to_string(pressed.size(0)) + ": it was made with another model");
        }
        const std::span<const double> row = reference.row(static_cast<size_t>(token));
        // A view of the reference's row: the same doubles whether it was just computed or read from a file.
        const at::Tensor uncompressed = at::from_blob(const_cast<double*>(row.data()), {reference.vocab},
                                                      at::TensorOptions().dtype(at::kDouble));
        const double divergence = (uncompressed.exp() * (uncompressed - pressed)).sum().item<double>();
        const bool agrees = pressed.argmax().item<int64_t>() == result.tokens[static_cast<size_t>(token)];
        result.divergences.push_back(divergence);
        result.topAgrees.push_back(agrees);
        total += divergence;
        agreements += agrees ? 1 : 0;
        if (!agrees && result.firstDisagreement < 0) {
            result.firstDisagreement = token;
        }
    }
    result.meanDivergence = total / static_cast<double>(tokens);
    result.topAgreement = static_cast<double>(agreements) / static_cast<double>(tokens);
    if (hook) {
        result.decisions = hook->decisions();
        result.notices = hook->notices();
    }
    return result;
}

std::string PressFidelity::weightsDigest(const model::LanguageModel& model) {
    // FNV-1a over 8-byte words (bytes for the tail): not cryptographic, only to tell weights apart.
    constexpr uint64_t prime = 0x100000001b3ull;
    uint64_t hash = 0xcbf29ce484222325ull;
    const auto mixBytes = [&](const void* data, size_t size) {
        const auto* bytes = static_cast<const uint8_t*>(data);
        size_t at = 0;
        for (; at + 8 <= size; at += 8) {
            uint64_t word = 0;
            std::memcpy(&word, bytes + at, 8);
            hash = (hash ^ word) * prime;
        }
        for (; at < size; ++at) {
            hash = (hash ^ bytes[at]) * prime;
        }
    };
    for (const auto& [name, tensor] : model.parameters().tensors()) {
        const at::Tensor data = tensor.detach().to(at::kCPU).contiguous();
        const std::string dtype = c10::toString(data.scalar_type());
        mixBytes(name.data(), name.size() + 1);
        mixBytes(dtype.data(), dtype.size() + 1);
        mixBytes(data.sizes().data(), data.sizes().size() * sizeof(int64_t));
        mixBytes(data.data_ptr(), static_cast<size_t>(data.numel()) * data.element_size());
    }
    for (const auto& [name, matrix] : model.parameters().packedMatrices()) {
        mixBytes(name.data(), name.size() + 1);
        mixBytes(matrix.type().name(), std::strlen(matrix.type().name()) + 1);
        mixBytes(matrix.storedBlocks().data(), matrix.storedBlocks().size());
        mixBytes(matrix.rowOrder().data(), matrix.rowOrder().size() * sizeof(int64_t));
    }
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
    return text;
}

} // namespace kvscope::runtime
