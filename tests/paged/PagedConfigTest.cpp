// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/PagedConfig.h"

#include "kvscope/paged/PagedError.h"

#include <gtest/gtest.h>

using namespace kvscope::paged;

namespace {

std::string errorOf(const PagedConfig& config) {
    try {
        config.validate();
    } catch (const PagedError& error) {
        return error.what();
    }
    return {};
}

} // namespace

TEST(PagedConfigTest, DefaultsAreValid) {
    EXPECT_EQ(errorOf(PagedConfig{}), "");
}

TEST(PagedConfigTest, NamesTheBadFieldAndTheFix) {
    PagedConfig config;
    config.blockSize = 0;
    EXPECT_NE(errorOf(config).find("--block-size"), std::string::npos);
    config = {};
    config.numBlocks = 1;
    config.freePolicy = FreePolicy::Current;
    EXPECT_NE(errorOf(config).find("null block"), std::string::npos);
    config = {};
    config.maxNumSeqs = 0;
    EXPECT_NE(errorOf(config).find("--max-num-seqs"), std::string::npos);
    config = {};
    config.maxNumBatchedTokens = 0;
    EXPECT_NE(errorOf(config).find("--max-num-batched-tokens"), std::string::npos);
    config = {};
    config.groups = {LayerGroup{GroupKind::Sliding, 0, {}}};
    EXPECT_NE(errorOf(config).find("sliding window of 0"), std::string::npos);
    config.groups = {};
    EXPECT_NE(errorOf(config).find("no layer group"), std::string::npos);
}

TEST(PagedConfigTest, FreePolicyNames) {
    EXPECT_EQ(freePolicyFromString("document"), FreePolicy::Document);
    EXPECT_EQ(freePolicyFromString("current"), FreePolicy::Current);
    EXPECT_FALSE(freePolicyFromString("lru").has_value());
    EXPECT_EQ(toString(FreePolicy::Current), "current");
    EXPECT_EQ(toString(GroupKind::Sliding), "sliding");
}
