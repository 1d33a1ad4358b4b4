// SPDX-License-Identifier: GPL-3.0-or-later
// MaskBuilder against the masks worked out in research/hf-cache.md §2.7 (re-derived from
// masking_utils and the Transformers tests), with mask sizes taken from real cache layers.
#include "kvscope/cache/DynamicCache.h"
#include "kvscope/cache/DynamicSlidingWindowLayer.h"
#include "kvscope/cache/StaticLayer.h"
#include "kvscope/cache/StaticSlidingWindowLayer.h"
#include "kvscope/model/MaskBuilder.h"
#include "kvscope/model/ModelError.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

using kvscope::cache::MaskSizes;
using kvscope::model::AttentionKind;
using kvscope::model::MaskBuilder;

namespace {

const at::Device kCpu(at::kCPU);

at::Tensor states(int64_t tokens, int64_t batch = 1) { return at::randn({batch, 1, tokens, 2}); }

std::string render(AttentionKind kind, int64_t window, int64_t q, int64_t qOffset, MaskSizes sizes,
                   const at::Tensor& padding = at::Tensor(), int64_t batch = 0) {
    return MaskBuilder::render(MaskBuilder::build(kind, window, q, qOffset, sizes, padding, kCpu), batch);
}

} // namespace

TEST(MaskBuilderTest, DocstringMasksWithoutCache) {
    EXPECT_EQ(render(AttentionKind::FullAttention, 0, 5, 0, {5, 0}), "1.... 11... 111.. 1111. 11111");
    EXPECT_EQ(render(AttentionKind::SlidingAttention, 3, 5, 0, {5, 0}), "1.... 11... 111.. .111. ..111");
    EXPECT_EQ(render(AttentionKind::ChunkedAttention, 3, 5, 0, {5, 0}), "1.... 11... 111.. ...1. ...11");
}

TEST(MaskBuilderTest, ShapeAndBatchFollowThePaddingMask) {
    const at::Tensor mask = MaskBuilder::build(AttentionKind::FullAttention, 0, 3, 2, {5, 0}, at::ones({2, 5}), kCpu);
    EXPECT_EQ(mask.sizes(), at::IntArrayRef({2, 1, 3, 5}));
    EXPECT_EQ(mask.scalar_type(), at::kBool);
    EXPECT_EQ(MaskBuilder::build(AttentionKind::FullAttention, 0, 3, 2, {5, 0}, at::Tensor(), kCpu).size(0), 1);
}

TEST(MaskBuilderTest, ChunkedMaskWithLeftPaddingAndLargePrefill) {
    // test_chunked_mask_with_left_padding_and_large_prefill: C=3, B=2, S=8, row 0 has 4 left pads.
    at::Tensor padding = at::ones({2, 8}, at::kLong);
    padding[0].narrow(0, 0, 4).zero_();
    EXPECT_EQ(render(AttentionKind::ChunkedAttention, 3, 8, 0, {8, 0}, padding, 0),
              "........ ........ ........ ........ ....1... ....11.. ....111. .......1");
    EXPECT_EQ(render(AttentionKind::ChunkedAttention, 3, 8, 0, {8, 0}, padding, 1),
              "1....... 11...... 111..... ...1.... ...11... ...111.. ......1. ......11");
}

TEST(MaskBuilderTest, ChunkedMaskWithLeftPaddingWhileDecoding) {
    // test_chunked_mask_with_left_padding_decoding: attention_chunk_size=4, one layer, 8-token prefill.
    kvscope::config::ModelConfig config;
    config.numHiddenLayers = 1;
    config.attentionChunkSize = 4;
    kvscope::cache::DynamicCache cache(config);
    cache.update(states(8, 2), states(8, 2), 0);
    const MaskSizes sizes = cache.maskSizes(1, 0);
    EXPECT_EQ(sizes, (MaskSizes{4, 5}));
    EXPECT_EQ(cache.seqLength(0), 8);
    at::Tensor padding = at::ones({2, 9}, at::kLong);
    padding[0].narrow(0, 0, 7).zero_();
    EXPECT_EQ(render(AttentionKind::ChunkedAttention, 4, 1, cache.seqLength(0), sizes, padding, 0), "..11");
    EXPECT_EQ(render(AttentionKind::ChunkedAttention, 4, 1, cache.seqLength(0), sizes, padding, 1), "...1");
}

TEST(MaskBuilderTest, DynamicSlidingWindowAfterSixTokens) {
    kvscope::cache::DynamicSlidingWindowLayer layer(4);
    layer.update(states(6), states(6));
    const MaskSizes sizes = layer.maskSizes(2);
    EXPECT_EQ(sizes, (MaskSizes{5, 3}));
    EXPECT_EQ(render(AttentionKind::SlidingAttention, 4, 2, layer.seqLength(), sizes), "1111. .1111");
}

TEST(MaskBuilderTest, StaticSlidingWindowMasksUnfilledSlots) {
    kvscope::cache::StaticSlidingWindowLayer layer(8, 4);
    layer.update(states(2), states(2));
    const MaskSizes sizes = layer.maskSizes(1);
    EXPECT_EQ(sizes, (MaskSizes{4, 0}));
    EXPECT_EQ(render(AttentionKind::SlidingAttention, 4, 1, 2, sizes, at::ones({1, 3})), "111.");
}

TEST(MaskBuilderTest, StaticLayerPadsThePaddingMaskWithZeros) {
    kvscope::cache::StaticLayer layer(6);
    layer.update(states(3), states(3));
    const MaskSizes sizes = layer.maskSizes(1);
    EXPECT_EQ(sizes, (MaskSizes{6, 0}));
    const at::Tensor padding = at::tensor({0, 1, 1, 1}, at::kLong).unsqueeze(0);
    EXPECT_EQ(render(AttentionKind::FullAttention, 0, 1, 3, sizes, padding), ".111..");
}

TEST(MaskBuilderTest, SlidingWindowSeesItselfAndWindowMinusOnePrevious) {
    // kv > q - W: at W=2 a decoding query at position 9 sees 8 and 9 only.
    EXPECT_EQ(render(AttentionKind::SlidingAttention, 2, 1, 9, {3, 7}), ".11");
}

TEST(MaskBuilderTest, RefusesLinearAttentionAndMissingWindows) {
    EXPECT_THROW(MaskBuilder::build(AttentionKind::LinearAttention, 0, 1, 0, {1, 0}, at::Tensor(), kCpu),
                 kvscope::model::ModelError);
    try {
        MaskBuilder::build(AttentionKind::SlidingAttention, 0, 1, 0, {1, 0}, at::Tensor(), kCpu);
        FAIL() << "a sliding mask without a window was built";
    } catch (const kvscope::model::ModelError& error) {
        EXPECT_NE(std::string(error.what()).find("window"), std::string::npos) << error.what();
    }
}
