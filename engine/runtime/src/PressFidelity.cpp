// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/runtime/PressFidelity.h"

#include "kvscope/model/AttachedAttentionObserver.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelCache.h"
#include "kvscope/runtime/CacheFactory.h"
#include "kvscope/runtime/GenerationError.h"

#include <ATen/ATen.h>

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
    if (prompt.empty() || tokens < 1) {
        throw GenerationError("a fidelity measurement needs a prompt and at least 1 token");
    }
    at::NoGradGuard noGrad;
    const int64_t maxLength = static_cast<int64_t>(prompt.size()) + tokens;
    CachePressHook hook(model.architecture(), cache, 1, press);

    FidelityResult result;
    std::vector<at::Tensor> reference;
    {
        const auto plain = CacheFactory::create(model, cache, maxLength);
        reference.push_back(nextLogProbabilities(model, *plain, idsOf(prompt)));
        for (int64_t token = 0; token < tokens; ++token) {
            result.tokens.push_back(reference.back().argmax().item<int64_t>());
            if (token + 1 < tokens) {
                reference.push_back(nextLogProbabilities(model, *plain, idsOf({result.tokens.back()})));
            }
        }
    }

    const auto pressedCache = CacheFactory::create(model, cache, maxLength);
    const model::AttachedAttentionObserver attached(model, &hook);
    int64_t agreements = 0;
    double total = 0.0;
    for (int64_t token = 0; token < tokens; ++token) {
        const at::Tensor pressed = nextLogProbabilities(
            model, *pressedCache, token == 0 ? idsOf(prompt) : idsOf({result.tokens[static_cast<size_t>(token - 1)]}));
        const at::Tensor& uncompressed = reference[static_cast<size_t>(token)];
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
    result.decisions = hook.decisions();
    result.notices = hook.notices();
    return result;
}

} // namespace kvscope::runtime
