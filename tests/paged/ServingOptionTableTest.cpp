// SPDX-License-Identifier: GPL-3.0-or-later
// The serving options both command lines are generated from: each option read into RunSettings::serving
// (values, refusals naming the allowed values), the compare run's changes, and their description.
#include "kvscope/paged/ServingOptionTable.h"

#include "kvscope/paged/PagedConfig.h"
#include "kvscope/paged/PagedError.h"
#include "kvscope/paged/Workload.h"

#include <gtest/gtest.h>

using kvscope::config::RunSettings;
using kvscope::config::ServingSettings;
using kvscope::paged::ServingOptionTable;

namespace {

/// Applies `--name value` to fresh settings: the refusal, or "" with the settings read.
std::string applied(RunSettings& settings, const std::string& name, const std::string& value) {
    const kvscope::config::RunOption* option = ServingOptionTable::find(name);
    EXPECT_NE(option, nullptr) << name;
    return option ? option->apply(settings, value) : "no option";
}

} // namespace

TEST(ServingOptionTableTest, ListsTheServingOptionsInHelpOrderWithTheirDefaults) {
    std::vector<std::string> names;
    for (const auto& option : ServingOptionTable::options()) {
        names.push_back(option.name);
        EXPECT_EQ(option.group, kvscope::config::RunOption::Group::Serving) << option.name;
    }
    EXPECT_EQ(names,
              (std::vector<std::string>{"workload", "block-size", "num-blocks", "max-num-batched-tokens",
                                        "max-num-seqs", "no-prefix-caching", "free-policy",
                                        "prefix-caching-hash-algo"}));
    const RunSettings none;
    EXPECT_EQ(ServingOptionTable::find("block-size")->current(none), "16");
    EXPECT_EQ(ServingOptionTable::find("num-blocks")->current(none), "64");
    EXPECT_EQ(ServingOptionTable::find("max-num-batched-tokens")->current(none), "256");
    EXPECT_EQ(ServingOptionTable::find("max-num-seqs")->current(none), "8");
    EXPECT_EQ(ServingOptionTable::find("free-policy")->current(none), "document");
    EXPECT_EQ(ServingOptionTable::find("prefix-caching-hash-algo")->current(none), "fnv1a");
    EXPECT_EQ(ServingOptionTable::find("no-prefix-caching")->valueName, "");
    EXPECT_EQ(ServingOptionTable::find("prompt"), nullptr);
}

TEST(ServingOptionTableTest, ReadsEachOptionIntoTheServingSettings) {
    RunSettings settings;
    EXPECT_FALSE(settings.serving.has_value());
    EXPECT_EQ(applied(settings, "workload", "chat-shared-system-prompt"), "");
    EXPECT_EQ(applied(settings, "block-size", "4"), "");
    EXPECT_EQ(applied(settings, "num-blocks", "24"), "");
    EXPECT_EQ(applied(settings, "max-num-batched-tokens", "32"), "");
    EXPECT_EQ(applied(settings, "max-num-seqs", "3"), "");
    EXPECT_EQ(applied(settings, "no-prefix-caching", ""), "");
    EXPECT_EQ(applied(settings, "free-policy", "current"), "");
    EXPECT_EQ(applied(settings, "prefix-caching-hash-algo", "sha256_cbor"), "");
    ASSERT_TRUE(settings.serving.has_value());
    EXPECT_EQ(*settings.serving,
              (ServingSettings{"chat-shared-system-prompt", 4, 24, 32, 3, false, "current", "sha256_cbor"}));
}

TEST(ServingOptionTableTest, RefusesBadValuesNamingWhatIsAllowed) {
    struct Case {
        const char* name;
        const char* value;
        const char* refusal;
    };
    const Case cases[] = {
        {"block-size", "0", "must be a whole number at least 1, got `0`"},
        {"num-blocks", "-3", "must be a whole number at least 1, got `-3`"},
        {"num-blocks", "3000000000", "must be a whole number at most 2147483647, got `3000000000`"},
        {"max-num-seqs", "many", "must be a whole number at least 1, got `many`"},
        {"free-policy", "lru", "unknown value `lru` (allowed: document, current)"},
        {"free-policy", "Document", "unknown value `Document` (allowed: document, current)"},
        {"prefix-caching-hash-algo", "sha256", "unknown value `sha256` (allowed: fnv1a, sha256_cbor)"},
        {"workload", "", "give a workload file or a built-in workload's name, got an empty value"},
    };
    for (const Case& c : cases) {
        RunSettings settings;
        EXPECT_EQ(applied(settings, c.name, c.value), c.refusal) << c.name << " " << c.value;
    }
}

TEST(ServingOptionTableTest, ReadsTheChangesOfACompareRun) {
    const ServingSettings base{"w.json", 16, 64, 256, 8, true, "document"};
    struct Case {
        const char* spec;
        ServingSettings expected;
        const char* described;
    };
    const Case cases[] = {
        {"prefix-caching=off", {"w.json", 16, 64, 256, 8, false, "document"}, "prefix caching off"},
        {"prefix-caching=on", base, "the same settings"},
        {"num-blocks=32", {"w.json", 16, 32, 256, 8, true, "document"}, "32 blocks"},
        {" block-size = 8 , free-policy=current",
         {"w.json", 8, 64, 256, 8, true, "current"},
         "blocks of 8, free policy current"},
        {"max-num-batched-tokens=64,max-num-seqs=2,prefix-caching=off",
         {"w.json", 16, 64, 64, 2, false, "document"},
         "prefix caching off, a budget of 64 tokens, 2 running at most"},
    };
    for (const Case& c : cases) {
        const auto changed = ServingOptionTable::changed(base, c.spec);
        ASSERT_TRUE(std::holds_alternative<ServingSettings>(changed))
            << c.spec << ": " << std::get<std::string>(changed);
        EXPECT_EQ(std::get<ServingSettings>(changed), c.expected) << c.spec;
        EXPECT_EQ(ServingOptionTable::describeChanges(base, std::get<ServingSettings>(changed)), c.described)
            << c.spec;
    }
}

TEST(ServingOptionTableTest, RefusesChangesItCannotReadWithTheAllowedKeys) {
    const ServingSettings base;
    const std::string keys = "(allowed: block-size, num-blocks, max-num-batched-tokens, max-num-seqs, "
                             "free-policy, prefix-caching-hash-algo, prefix-caching)";
    struct Case {
        const char* spec;
        std::string refusal;
    };
    const Case cases[] = {
        {"", "no change given: name one as KEY=VALUE (keys: block-size, num-blocks, max-num-batched-tokens, "
             "max-num-seqs, free-policy, prefix-caching-hash-algo, prefix-caching); e.g. prefix-caching=off"},
        {"off", "the change `off` is not KEY=VALUE (keys: block-size, num-blocks, max-num-batched-tokens, "
                "max-num-seqs, free-policy, prefix-caching-hash-algo, prefix-caching); e.g. prefix-caching=off"},
        {"prefix-caching=no", "prefix-caching=no: allowed values on, off"},
        {"pool=3", "unknown setting `pool` to change " + keys},
        {"workload=other.json", "unknown setting `workload` to change " + keys},
        {"no-prefix-caching=1", "unknown setting `no-prefix-caching` to change " + keys},
        {"num-blocks=0", "num-blocks: must be a whole number at least 1, got `0`"},
        {"free-policy=lru", "free-policy: unknown value `lru` (allowed: document, current)"},
    };
    for (const Case& c : cases) {
        const auto changed = ServingOptionTable::changed(base, c.spec);
        ASSERT_TRUE(std::holds_alternative<std::string>(changed)) << c.spec;
        EXPECT_EQ(std::get<std::string>(changed), c.refusal) << c.spec;
    }
    // The compare option refuses the same way when it is read.
    RunSettings settings;
    EXPECT_EQ(ServingOptionTable::compareOption().apply(settings, "pool=3"),
              "unknown setting `pool` to change " + keys);
    EXPECT_EQ(ServingOptionTable::compareOption().apply(settings, "prefix-caching=off"), "");
}

TEST(ServingOptionTableTest, ThePoolIsBuiltFromTheSettingsOrRefusedWithTheFix) {
    const kvscope::paged::PagedConfig config =
        kvscope::paged::PagedConfig::fromSettings({"w.json", 4, 10, 32, 3, false, "current"});
    EXPECT_EQ(config.blockSize, 4);
    EXPECT_EQ(config.numBlocks, 10);
    EXPECT_EQ(config.maxNumBatchedTokens, 32);
    EXPECT_EQ(config.maxNumSeqs, 3);
    EXPECT_FALSE(config.prefixCaching);
    EXPECT_EQ(config.freePolicy, kvscope::paged::FreePolicy::Current);
    try {
        kvscope::paged::PagedConfig::fromSettings({"w.json", 4, 10, 32, 3, true, "lru"});
        FAIL() << "an unknown free policy must be refused";
    } catch (const kvscope::paged::PagedError& error) {
        EXPECT_STREQ(error.what(),
                     "free policy `lru` is unknown: allowed document, current; pass --free-policy document");
    }
    EXPECT_THROW(kvscope::paged::PagedConfig::fromSettings({"w.json", 4, 1, 32, 3, true, "current"}),
                 kvscope::paged::PagedError);
}

// A workload's suggested pool stands in for each pool option the user did not give; given options win, and
// settings the pool does not name keep their values.
TEST(ServingOptionTableTest, TheWorkloadsSuggestedPoolFillsWhatTheUserDidNotGive) {
    const kvscope::paged::WorkloadPool pool{4, 28, std::nullopt, 2};
    const auto none = [](std::string_view) { return false; };
    EXPECT_EQ(ServingOptionTable::withPool(ServingSettings{"w"}, pool, none),
              (ServingSettings{"w", 4, 28, 256, 2, true, "document"}));
    const ServingSettings given{"w", 8, 64, 32, 8, false, "current"};
    EXPECT_EQ(
        ServingOptionTable::withPool(given, pool, [](std::string_view name) { return name == "num-blocks"; }),
        (ServingSettings{"w", 4, 64, 32, 2, false, "current"}));
    EXPECT_EQ(ServingOptionTable::withPool(given, pool, [](std::string_view) { return true; }), given);
    // The built-in workloads' own suggestions (resources/workloads/*.json "pool").
    struct Case {
        const char* workload;
        ServingSettings expected;
    };
    const Case cases[] = {
        {"chat-shared-system-prompt", {"chat-shared-system-prompt", 16, 28, 256, 8, true, "document"}},
        {"burst-preemption", {"burst-preemption", 4, 48, 256, 8, true, "document"}},
        {"prefix-caching-example", {"prefix-caching-example", 4, 10, 256, 8, true, "document"}},
        {"rag-shared-document", {"rag-shared-document", 16, 64, 128, 8, true, "document"}},
    };
    for (const Case& c : cases) {
        EXPECT_EQ(ServingOptionTable::withSuggestedPool(ServingSettings{c.workload}, none), c.expected)
            << c.workload;
    }
    // A workload that does not resolve is left to the run to report.
    EXPECT_EQ(ServingOptionTable::withSuggestedPool(ServingSettings{"no-such-workload"}, none),
              ServingSettings{"no-such-workload"});
}
