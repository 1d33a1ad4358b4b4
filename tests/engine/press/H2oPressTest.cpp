// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/H2oPress.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

namespace {

using kvscope::press::H2oPress;

/// H2O written as plainly as possible, one KV head row at a time, for comparison with the tensor version.
class NaiveH2o {
public:
    NaiveH2o(int64_t budget, int64_t recent) : m_budget(budget), m_recent(recent) {}

    /// attention[h][q][slot] of one batch row; returns the kept slots of each KV head (empty if none evicted).
    std::vector<std::vector<int64_t>> step(const std::vector<std::vector<std::vector<float>>>& attention,
                                           int64_t kvHeads) {
        const size_t heads = attention.size();
        const size_t length = attention[0][0].size();
        const size_t groups = heads / static_cast<size_t>(kvHeads);
        m_scores.resize(static_cast<size_t>(kvHeads));
        std::vector<std::vector<int64_t>> kept(static_cast<size_t>(kvHeads));
        for (size_t kv = 0; kv < static_cast<size_t>(kvHeads); ++kv) {
            std::vector<float>& scores = m_scores[kv];
            scores.resize(length, 0.0f);
            for (size_t slot = 0; slot < length; ++slot) {
                float received = 0.0f;
                for (size_t g = 0; g < groups; ++g) {
                    float column = 0.0f;
                    for (const auto& row : attention[kv * groups + g]) {
                        column += row[slot];
                    }
                    received += column;
                }
                scores[slot] += received / static_cast<float>(groups);
            }
            if (static_cast<int64_t>(length) <= m_budget) {
                continue;
            }
            const size_t older = length - static_cast<size_t>(m_recent);
            std::vector<int64_t> candidates(older);
            std::iota(candidates.begin(), candidates.end(), 0);
            std::stable_sort(candidates.begin(), candidates.end(),
                             [&](int64_t a, int64_t b) { return scores[a] > scores[b]; });
            candidates.resize(static_cast<size_t>(m_budget - m_recent));
            for (size_t slot = older; slot < length; ++slot) {
                candidates.push_back(static_cast<int64_t>(slot));
            }
            std::sort(candidates.begin(), candidates.end());
            std::vector<float> survivors;
            for (int64_t slot : candidates) {
                survivors.push_back(scores[static_cast<size_t>(slot)]);
            }
            scores = survivors;
            kept[kv] = candidates;
        }
        return kept;
    }

private:
    int64_t m_budget;
    int64_t m_recent;
    std::vector<std::vector<float>> m_scores;
};

std::vector<std::vector<std::vector<float>>> nested(const at::Tensor& attention) {
    std::vector<std::vector<std::vector<float>>> result;
    for (int64_t h = 0; h < attention.size(0); ++h) {
        result.emplace_back();
        for (int64_t q = 0; q < attention.size(1); ++q) {
            const at::Tensor row = attention[h][q].contiguous();
            result.back().emplace_back(row.data_ptr<float>(), row.data_ptr<float>() + row.numel());
        }
    }
    return result;
}

/// The tensor version's kept slots [1, Hkv, n] against the naive one's, head by head.
void expectKept(const at::Tensor& kept, const std::vector<std::vector<int64_t>>& expected, int step) {
    for (size_t kv = 0; kv < expected.size(); ++kv) {
        const at::Tensor row = kept[0][static_cast<int64_t>(kv)].contiguous();
        EXPECT_EQ(std::vector<int64_t>(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + row.numel()),
                  expected[kv])
            << "step " << step << " head " << kv;
    }
}

TEST(H2oPressTest, MatchesTheNaiveImplementationOverManySteps) {
    at::manual_seed(5);
    const int64_t heads = 4;
    const int64_t kvHeads = 2;
    H2oPress press(6, 2);
    NaiveH2o naive(6, 2);
    int64_t length = 0;
    int evictions = 0;
    for (int step = 0; step < 12; ++step) {
        const int64_t queries = step == 0 ? 5 : 1;
        length += queries;
        const at::Tensor attention = at::softmax(at::randn({1, heads, queries, length}), -1);
        const at::Tensor kept = press.step(0, attention, kvHeads);
        const auto expected = naive.step(nested(attention[0]), kvHeads);
        if (expected[0].empty()) {
            EXPECT_FALSE(kept.defined()) << "step " << step;
            continue;
        }
        ASSERT_TRUE(kept.defined()) << "step " << step;
        ++evictions;
        expectKept(kept, expected, step);
        length = 6;
    }
    EXPECT_GE(evictions, 6);
}

TEST(H2oPressTest, TiesGoAsTheCanonicalOrderRanksThem) {
    // Attention spread evenly: every older slot ties at every step, so each one-token eviction must drop the
    // slot the stable sort ranks last (the latest of the lowest), and a prefill over budget drops several.
    const int64_t heads = 4;
    const int64_t kvHeads = 2;
    H2oPress press(5, 1);
    NaiveH2o naive(5, 1);
    int64_t length = 0;
    for (int step = 0; step < 10; ++step) {
        const int64_t queries = step == 0 ? 8 : 1;
        length += queries;
        const at::Tensor attention = at::full({1, heads, queries, length}, 1.0f / static_cast<float>(length));
        const at::Tensor kept = press.step(0, attention, kvHeads);
        const auto expected = naive.step(nested(attention[0]), kvHeads);
        ASSERT_TRUE(kept.defined()) << "step " << step;
        expectKept(kept, expected, step);
        length = 5;
    }
}

TEST(H2oPressTest, WorkedTableKeepsTheHeavyHittersAndTheRecentToken) {
    // Budget 3, recent window 1, one head. Accumulated attention per position:
    //   prefill rows [1,0,0] [.5,.5,0] [.2,.3,.5]  -> p0 1.7, p1 0.8, p2 0.5   (3 tokens fit the budget)
    //   step 1 row [.1,.1,.2,.6]                 -> p0 1.8, p1 0.9, p2 0.7, p3 0.6
    //     p3 is recent; heavy 2 of {p0 1.8, p1 0.9, p2 0.7} = p0, p1          -> keeps p0 p1 p3
    //   step 2 row over p0 p1 p3 p4 [.1,.05,.7,.15] -> p0 1.9, p1 0.95, p3 1.3, p4 0.15
    //     p4 is recent; heavy 2 of {p0 1.9, p1 0.95, p3 1.3} = p0, p3         -> keeps p0 p3 p4 (slots 0, 2, 3)
    H2oPress press(3, 1);
    const at::Tensor prefill = at::tensor({1.0f, 0.0f, 0.0f, 0.5f, 0.5f, 0.0f, 0.2f, 0.3f, 0.5f}).view({1, 1, 3, 3});
    EXPECT_FALSE(press.step(0, prefill, 1).defined());
    const at::Tensor first = press.step(0, at::tensor({0.1f, 0.1f, 0.2f, 0.6f}).view({1, 1, 1, 4}), 1);
    ASSERT_TRUE(first.defined());
    EXPECT_TRUE(at::equal(first, at::tensor({0L, 1L, 3L}).view({1, 1, 3})));
    const at::Tensor second = press.step(0, at::tensor({0.1f, 0.05f, 0.7f, 0.15f}).view({1, 1, 1, 4}), 1);
    ASSERT_TRUE(second.defined());
    EXPECT_TRUE(at::equal(second, at::tensor({0L, 2L, 3L}).view({1, 1, 3})));
    EXPECT_TRUE(at::allclose(press.accumulated(0), at::tensor({1.9f, 1.3f, 0.15f}).view({1, 1, 3})));
}

TEST(H2oPressTest, RefusesABudgetSmallerThanTheRecentWindow) {
    EXPECT_THROW(H2oPress(2, 3), std::invalid_argument);
    EXPECT_THROW(H2oPress(0, 0), std::invalid_argument);
}

} // namespace
