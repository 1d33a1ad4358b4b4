// SPDX-License-Identifier: GPL-3.0-or-later
// Paged attention changes nothing: a prompt fed through a RequestCache over scrambled blocks, in uneven
// chunks, with sliding-window blocks freed as they leave the window, gives the logits of the same prompt
// on a dynamic cache; a second request reusing the first one's prefix blocks gives its own solo logits.
#include "kvscope/serving/RequestCache.h"

#include "ModelTestHelpers.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/runtime/CacheFactory.h"
#include "kvscope/runtime/ModelSource.h"
#include "kvscope/serving/KvPools.h"
#include "kvscope/serving/LayerGroups.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <numeric>

using namespace kvscope;

namespace {

constexpr int64_t kBlockSize = 4;
constexpr int64_t kNumBlocks = 24;
constexpr double kTolerance = 1e-4;

std::vector<std::string> decoderPresets() {
    return {"gemma2", "gemma3", "gemma3n", "llama", "llama4", "mistral", "qwen3-next"};
}

at::Tensor promptIds(int64_t length, int64_t seed) {
    std::vector<int64_t> ids(static_cast<size_t>(length));
    for (int64_t i = 0; i < length; ++i) {
        ids[static_cast<size_t>(i)] = (i * 37 + seed * 11 + 5) % 256;
    }
    return at::tensor(ids, at::kLong).unsqueeze(0);
}

at::Tensor soloLogits(model::LanguageModel& model, const at::Tensor& ids) {
    config::CacheSettings settings;
    auto cache = runtime::CacheFactory::create(model, settings, ids.size(1));
    return model.forward(ids, cache.get());
}

/// Feeds `ids` from `start` in `chunks` through `cache` over `tables` (one per group), freeing (-1) the
/// blocks a sliding group no longer needs before each pass; returns the logits of the positions fed.
at::Tensor pagedLogits(model::LanguageModel& model, const serving::LayerGroups& groups,
                       serving::RequestCache& cache, std::vector<std::vector<int64_t>> tables,
                       const at::Tensor& ids, int64_t start, const std::vector<int64_t>& chunks) {
    std::vector<at::Tensor> pieces;
    int64_t position = start;
    for (const int64_t chunk : chunks) {
        const int64_t length = std::min<int64_t>(chunk, ids.size(1) - position);
        if (length <= 0) {
            break;
        }
        for (size_t group = 0; group < groups.groups().size(); ++group) {
            const auto& described = groups.groups()[group];
            if (described.kind == serving::LayerGroups::Kind::Full) {
                continue;
            }
            const int64_t needed = std::max<int64_t>(position - described.window + 1, 0);
            for (int64_t block = 0; (block + 1) * kBlockSize <= needed; ++block) {
                tables[group][static_cast<size_t>(block)] = -1;
            }
        }
        cache.bind(tables, position, length);
        pieces.push_back(model.forward(ids.narrow(1, position, length), &cache.modelCache()));
        position += length;
    }
    return at::cat(pieces, 1);
}

} // namespace

TEST(RequestCacheTest, ChunkedPagedPrefillMatchesTheDynamicCacheOnEveryDecoderPreset) {
    for (const std::string& preset : decoderPresets()) {
        auto loaded =
            runtime::ModelSource::load(kvscope::testing::presetSettings(preset, std::nullopt), at::kCPU);
        model::LanguageModel& model = *loaded.model;
        const serving::LayerGroups groups(model.architecture());
        serving::KvPools pools(model.architecture(), groups, kNumBlocks, kBlockSize, at::kCPU);
        serving::RequestCache cache(model.architecture(), groups, pools);
        // 27 tokens need 7 blocks; scrambled ids, a different order per group.
        std::vector<std::vector<int64_t>> tables;
        for (size_t group = 0; group < groups.groups().size(); ++group) {
            std::vector<int64_t> table{9, 3, 17, 0, 22, 5, 11};
            std::rotate(table.begin(), table.begin() + static_cast<long>(group), table.end());
            tables.push_back(table);
        }
        const at::Tensor ids = promptIds(27, 1);
        const at::Tensor expected = soloLogits(model, ids);
        const at::Tensor paged =
            pagedLogits(model, groups, cache, tables, ids, 0, {5, 7, 1, 1, 6, 2, 1, 1, 3});
        EXPECT_LT(kvscope::testing::maxAbsDifference(paged, expected), kTolerance) << preset;
    }
}

TEST(RequestCacheTest, APrefixHitReadsAnotherRequestsBlocks) {
    for (const std::string& preset : decoderPresets()) {
        auto loaded =
            runtime::ModelSource::load(kvscope::testing::presetSettings(preset, std::nullopt), at::kCPU);
        model::LanguageModel& model = *loaded.model;
        const serving::LayerGroups groups(model.architecture());
        if (groups.hasLinearAttention()) {
            continue; // a linear-attention state cannot start from a shared prefix (the serving loop turns
                      // hits off)
        }
        serving::KvPools pools(model.architecture(), groups, kNumBlocks, kBlockSize, at::kCPU);
        // Request a: 16 tokens in blocks 4 6 8 10 of every group. Request b shares its first 12 tokens (3
        // blocks) and continues with its own 9 in blocks 1 2 3.
        const at::Tensor first = promptIds(16, 2);
        const at::Tensor second = at::cat({first.narrow(1, 0, 12), promptIds(9, 3)}, 1);
        serving::RequestCache a(model.architecture(), groups, pools);
        std::vector<std::vector<int64_t>> tablesA(groups.groups().size(), std::vector<int64_t>{4, 6, 8, 10});
        // No freeing for a: b reads a's blocks as a sliding group would have kept them cached.
        a.bind(tablesA, 0, 16);
        model.forward(first, &a.modelCache());
        serving::RequestCache b(model.architecture(), groups, pools);
        std::vector<std::vector<int64_t>> tablesB(groups.groups().size(),
                                                  std::vector<int64_t>{4, 6, 8, 1, 2, 3});
        const at::Tensor expected = soloLogits(model, second).narrow(1, 12, 9);
        const at::Tensor paged = pagedLogits(model, groups, b, tablesB, second, 12, {4, 1, 1, 3});
        EXPECT_LT(kvscope::testing::maxAbsDifference(paged, expected), kTolerance) << preset;
    }
}

TEST(RequestCacheTest, RefusesWhatPagedBlocksCannotDo) {
    auto loaded =
        runtime::ModelSource::load(kvscope::testing::presetSettings("llama", std::nullopt), at::kCPU);
    const serving::LayerGroups groups(loaded.model->architecture());
    serving::KvPools pools(loaded.model->architecture(), groups, kNumBlocks, kBlockSize, at::kCPU);
    serving::RequestCache cache(loaded.model->architecture(), groups, pools);
    cache.bind({{1, 2}}, 0, 3);
    const std::string why = kvscope::testing::refusal([&] { cache.modelCache().crop(1); });
    EXPECT_NE(why.find("paged cache cannot crop"), std::string::npos) << why;
    EXPECT_NE(kvscope::testing::refusal([&] { cache.bind({{1}}, 3, 3); }).find("cannot hold position 4"),
              std::string::npos);
}
