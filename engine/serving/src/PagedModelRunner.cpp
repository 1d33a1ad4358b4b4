// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/serving/PagedModelRunner.h"

#include "kvscope/model/LanguageModel.h"
#include "kvscope/paged/PagedError.h"

#include <ATen/ATen.h>

namespace kvscope::serving {

std::string PagedModelRunner::refusal(const model::Architecture& architecture) {
    if (architecture.isEncoderDecoder()) {
        return "model_type `" + architecture.config().modelType +
               "` is an encoder-decoder: its decoder attends each request's encoder output through a "
               "cross-attention cache, which paged serving does not hold; serve a decoder-only model "
               "(kvscope-cli "
               "presets lists them)";
    }
    if (LayerGroups(architecture).groups().empty()) {
        return "no layer of model_type `" + architecture.config().modelType +
               "` stores keys/values, so there is nothing to page; serve a model with attention layers";
    }
    return "";
}

std::vector<paged::LayerGroup> PagedModelRunner::pagedGroups(const model::Architecture& architecture) {
    if (const std::string why = refusal(architecture); !why.empty()) {
        throw paged::PagedError(why);
    }
    std::vector<paged::LayerGroup> groups;
    const LayerGroups layerGroups(architecture); // named: a range-for over a temporary's member dangles
    for (const LayerGroups::Group& group : layerGroups.groups()) {
        paged::LayerGroup described;
        described.kind =
            group.kind == LayerGroups::Kind::Full ? paged::GroupKind::Full : paged::GroupKind::Sliding;
        described.window = group.kind == LayerGroups::Kind::Full ? 0 : group.window;
        for (const int64_t layer : group.layers) {
            described.layers.push_back(static_cast<std::int32_t>(layer));
        }
        groups.push_back(std::move(described));
    }
    return groups;
}

PagedModelRunner::PagedModelRunner(model::LanguageModel& model, const paged::PagedConfig& config)
    : m_model(model), m_groups(model.architecture()),
      m_pools(model.architecture(), m_groups, config.numBlocks, config.blockSize, model.device()),
      m_nullBlock(config.freePolicy == paged::FreePolicy::Current ? 0 : -1) {
    if (const std::string why = refusal(model.architecture()); !why.empty()) {
        throw paged::PagedError(why);
    }
    if (config.groups != pagedGroups(model.architecture())) {
        throw paged::PagedError("the paged config's layer groups are not the model's (build them with "
                                "PagedModelRunner::pagedGroups)");
    }
}

PagedModelRunner::~PagedModelRunner() = default;

std::vector<at::Tensor> PagedModelRunner::execute(const paged::SchedulerOutput& output) {
    std::vector<at::Tensor> logits;
    logits.reserve(output.requests.size());
    for (const paged::ScheduledRequest& scheduled : output.requests) {
        auto found = m_caches.find(scheduled.requestId);
        if (found == m_caches.end()) {
            found = m_caches
                        .emplace(scheduled.requestId,
                                 std::make_unique<RequestCache>(m_model.architecture(), m_groups, m_pools))
                        .first;
        }
        std::vector<std::vector<int64_t>> tables;
        tables.reserve(scheduled.blockTables.size());
        for (const auto& table : scheduled.blockTables) {
            std::vector<int64_t> entries(table.begin(), table.end());
            if (m_nullBlock >= 0) {
                // The Current policy's null block marks holes as -1 does under Document: never to be read.
                std::replace(entries.begin(), entries.end(), m_nullBlock, int64_t{-1});
            }
            tables.push_back(std::move(entries));
        }
        const auto length = static_cast<int64_t>(scheduled.tokenIds.size());
        RequestCache& cache = *found->second;
        cache.bind(tables, scheduled.firstPosition, length);
        const at::Tensor ids = at::tensor(scheduled.tokenIds, at::TensorOptions().dtype(at::kLong))
                                   .to(m_model.device())
                                   .unsqueeze(0);
        const at::Tensor all = m_model.forward(ids, &cache.modelCache());
        logits.push_back(scheduled.samples ? all[0][length - 1] : at::Tensor());
    }
    return logits;
}

void PagedModelRunner::release(const std::string& requestId) {
    m_caches.erase(requestId);
}

} // namespace kvscope::serving
