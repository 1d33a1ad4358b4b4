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

std::vector<std::vector<int64_t>> PagedModelRunner::tablesOf(const paged::ScheduledRequest& scheduled) const {
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
    return tables;
}

std::vector<at::Tensor> PagedModelRunner::execute(const paged::SchedulerOutput& output) {
    std::vector<at::Tensor> logits(output.requests.size());
    // Decode steps (one token each) of a model whose requests hold nothing but blocks run as one left-padded
    // batch; they are running requests, which come before the admitted ones whose prefix hits may read blocks
    // computed in this step, so running them first keeps every read after its write.
    std::vector<size_t> decodes;
    if (m_batchDecodes && !m_groups.hasLinearAttention()) {
        for (size_t index = 0; index < output.requests.size(); ++index) {
            if (output.requests[index].tokenIds.size() == 1 && !output.requests[index].admitted) {
                decodes.push_back(index);
            }
        }
    }
    if (decodes.size() < 2) {
        decodes.clear();
    }
    if (!decodes.empty()) {
        std::vector<std::vector<std::vector<int64_t>>> tables;
        std::vector<int64_t> computed;
        std::vector<paged::TokenId> ids;
        tables.reserve(decodes.size());
        for (const size_t index : decodes) {
            tables.push_back(tablesOf(output.requests[index]));
            computed.push_back(output.requests[index].firstPosition);
            ids.push_back(output.requests[index].tokenIds.front());
        }
        std::vector<const std::vector<std::vector<int64_t>>*> rows;
        for (const auto& table : tables) {
            rows.push_back(&table);
        }
        if (!m_batchCache) {
            m_batchCache = std::make_unique<RequestCache>(m_model.architecture(), m_groups, m_pools);
        }
        const at::Tensor padding = m_batchCache->bindDecodeBatch(rows, computed);
        m_batchedDecodes += static_cast<int64_t>(decodes.size());
        const at::Tensor input =
            at::tensor(ids, at::TensorOptions().dtype(at::kLong)).to(m_model.device()).unsqueeze(1);
        const at::Tensor all = m_model.forward(input, &m_batchCache->modelCache(), padding);
        for (size_t row = 0; row < decodes.size(); ++row) {
            if (output.requests[decodes[row]].samples) {
                logits[decodes[row]] = all[static_cast<int64_t>(row)][0];
            }
        }
    }
    size_t nextDecode = 0;
    for (size_t index = 0; index < output.requests.size(); ++index) {
        if (nextDecode < decodes.size() && decodes[nextDecode] == index) {
            ++nextDecode;
            continue;
        }
        const paged::ScheduledRequest& scheduled = output.requests[index];
        auto found = m_caches.find(scheduled.requestId);
        if (found == m_caches.end()) {
            found = m_caches
                        .emplace(scheduled.requestId,
                                 std::make_unique<RequestCache>(m_model.architecture(), m_groups, m_pools))
                        .first;
        }
        const auto length = static_cast<int64_t>(scheduled.tokenIds.size());
        RequestCache& cache = *found->second;
        cache.bind(tablesOf(scheduled), scheduled.firstPosition, length);
        const at::Tensor ids = at::tensor(scheduled.tokenIds, at::TensorOptions().dtype(at::kLong))
                                   .to(m_model.device())
                                   .unsqueeze(0);
        const at::Tensor last = m_model.forwardLast(ids, &cache.modelCache());
        if (scheduled.samples) {
            logits[index] = last[0][0];
        }
    }
    return logits;
}

void PagedModelRunner::release(const std::string& requestId) {
    m_caches.erase(requestId);
}

} // namespace kvscope::serving
