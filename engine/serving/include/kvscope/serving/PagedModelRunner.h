// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/paged/PagedConfig.h"
#include "kvscope/paged/SchedulerOutput.h"
#include "kvscope/serving/KvPools.h"
#include "kvscope/serving/LayerGroups.h"
#include "kvscope/serving/RequestCache.h"

#include <ATen/core/Tensor.h>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kvscope::model {
class LanguageModel;
}

namespace kvscope::serving {

/// Runs a scheduler step on a decoder-only model: every scheduled request's tokens go through the model
/// over its own RequestCache, request after request (each pass is one request's chunk, so masks, rotary
/// positions and linear-attention states are exactly those of a solo run); keys and values live in the
/// shared KvPools and are read through the step's block tables.
class PagedModelRunner {
public:
    /// Refuses an encoder-decoder model (its decoder needs each request's encoder output and a
    /// cross-attention cache, which this paged path does not hold) and a model with no attention layer.
    /// `config` must hold the groups of pagedGroups(); the pools get its numBlocks and blockSize.
    PagedModelRunner(model::LanguageModel& model, const paged::PagedConfig& config);
    ~PagedModelRunner();

    /// The bookkeeping's layer groups for a model: full attention, sliding windows, and chunked layers as
    /// sliding windows of their chunk size (a chunk never reaches further back than that window, so the
    /// blocks the window frees are never read). Throws the refusals of the constructor.
    static std::vector<paged::LayerGroup> pagedGroups(const model::Architecture& architecture);
    /// Empty when `architecture` can be served, else why not.
    static std::string refusal(const model::Architecture& architecture);

    /// Computes the step: per scheduled request (in output order) the logits [vocab] of its last position
    /// where it samples, undefined where it does not. Running requests' decode steps (one token each) run
    /// together as one left-padded batch, as a left-padded generate() batch runs (padding masked, positions
    /// from the mask), unless the model keeps linear-attention states per request; every other request's
    /// tokens (prefill chunks, admissions) run as a pass of their own.
    std::vector<at::Tensor> execute(const paged::SchedulerOutput& output);
    /// Forgets a finished request's cache (its blocks are the scheduler's to free).
    void release(const std::string& requestId);

    const LayerGroups& groups() const { return m_groups; }
    /// Decode steps run inside a batch of several requests, over the runner's life.
    int64_t batchedDecodes() const { return m_batchedDecodes; }
    const KvPools& pools() const { return m_pools; }

private:
    /// The step's tables of a request, holes as -1 whatever the policy's null block.
    std::vector<std::vector<int64_t>> tablesOf(const paged::ScheduledRequest& scheduled) const;

    model::LanguageModel& m_model;
    LayerGroups m_groups;
    KvPools m_pools;
    int64_t m_nullBlock;
    std::map<std::string, std::unique_ptr<RequestCache>> m_caches;
    /// Bound to each step's decode batch.
    std::unique_ptr<RequestCache> m_batchCache;
    int64_t m_batchedDecodes = 0;
};

} // namespace kvscope::serving
