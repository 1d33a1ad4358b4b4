// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/ServingOptionTable.h"

#include "kvscope/config/NumberText.h"
#include "kvscope/paged/PagedConfig.h"
#include "kvscope/paged/PagedError.h"
#include "kvscope/paged/Workload.h"
#include "kvscope/paged/WorkloadCatalog.h"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <utility>

namespace kvscope::paged {
namespace {

using config::RunOption;
using config::RunSettings;
using config::ServingSettings;

/// The serving settings an option reads into: a run given any serving option serves.
ServingSettings& servingOf(RunSettings& settings) {
    return settings.serving ? *settings.serving : settings.serving.emplace();
}

/// What --help shows: the settings' values, or ServingSettings' defaults for a run that does not serve yet.
const ServingSettings& shownOf(const RunSettings& settings) {
    static const ServingSettings defaults;
    return settings.serving ? *settings.serving : defaults;
}

RunOption base(std::string name, std::string valueName, std::string help) {
    RunOption option;
    option.name = std::move(name);
    option.valueName = std::move(valueName);
    option.help = std::move(help);
    option.group = RunOption::Group::Serving;
    return option;
}

/// A whole-number serving setting at least 1 (and no larger than its type holds). `field` is a generic lambda
/// giving the setting of a (const) ServingSettings.
template <typename Field> RunOption whole(std::string name, std::string help, Field field) {
    RunOption option = base(std::move(name), "N", std::move(help));
    option.current = [field](const RunSettings& settings) {
        return std::to_string(field(shownOf(settings)));
    };
    option.apply = [field](RunSettings& settings, const std::string& value) -> std::string {
        ServingSettings& serving = servingOf(settings);
        using Target = std::remove_reference_t<decltype(field(serving))>;
        const std::optional<long long> number = config::NumberText::wholeNumber(value);
        if (!number || *number < 1) {
            return "must be a whole number at least 1, got `" + value + "`";
        }
        if (static_cast<unsigned long long>(*number) >
            static_cast<unsigned long long>(std::numeric_limits<Target>::max())) {
            return "must be a whole number at most " + std::to_string(std::numeric_limits<Target>::max()) +
                   ", got `" + value + "`";
        }
        field(serving) = static_cast<Target>(*number);
        return {};
    };
    return option;
}

std::vector<RunOption> build() {
    std::vector<RunOption> table;
    RunOption workload =
        base("workload", "NAME|FILE",
             "Serve a workload: a workload file (docs/workloads.md) or a built-in workload's name "
             "(chat-shared-system-prompt, rag-shared-document, burst-preemption, "
             "prefix-caching-example)");
    workload.current = [](const RunSettings& settings) { return shownOf(settings).workload; };
    workload.apply = [](RunSettings& settings, const std::string& value) -> std::string {
        if (value.empty()) {
            return "give a workload file or a built-in workload's name, got an empty value";
        }
        servingOf(settings).workload = value;
        return {};
    };
    table.push_back(std::move(workload));
    table.push_back(whole(
        "block-size",
        "Serving: token slots per block (not given: the workload's suggested pool, else the default)",
        [](auto& serving) -> auto& { return serving.blockSize; }));
    table.push_back(whole(
        "num-blocks",
        "Serving: blocks in the pool (not given: the workload's suggested pool, else the default)",
        [](auto& serving) -> auto& { return serving.numBlocks; }));
    table.push_back(whole(
        "max-num-batched-tokens",
        "Serving: a step's token budget (not given: the workload's suggested pool, else the default)",
        [](auto& serving) -> auto& { return serving.maxNumBatchedTokens; }));
    table.push_back(whole(
        "max-num-seqs",
        "Serving: most requests running at once (not given: the workload's suggested pool, else the default)",
        [](auto& serving) -> auto& { return serving.maxNumSeqs; }));
    RunOption noPrefixCaching = base("no-prefix-caching", "", "Serving: do not share cached prompt blocks");
    noPrefixCaching.current = [](const RunSettings&) { return std::string(); };
    noPrefixCaching.apply = [](RunSettings& settings, const std::string&) {
        servingOf(settings).prefixCaching = false;
        return std::string();
    };
    table.push_back(std::move(noPrefixCaching));
    RunOption freePolicy =
        base("free-policy", "POLICY",
             "Serving: where freed blocks go: vLLM's design document, or its code today (null block 0, "
             "uncached blocks to the head) (" +
                 std::string(allowedFreePolicies()) + ")");
    freePolicy.current = [](const RunSettings& settings) { return shownOf(settings).freePolicy; };
    freePolicy.apply = [](RunSettings& settings, const std::string& value) -> std::string {
        const std::optional<FreePolicy> policy = freePolicyFromString(value);
        if (!policy) {
            return "unknown value `" + value + "` (allowed: " + std::string(allowedFreePolicies()) + ")";
        }
        servingOf(settings).freePolicy = std::string(toString(*policy));
        return {};
    };
    table.push_back(std::move(freePolicy));
    RunOption hashAlgorithm =
        base("prefix-caching-hash-algo", "ALGO",
             "Serving: how full blocks' prefix hashes are computed: kvscope's FNV-1a, or vLLM's sha256_cbor, whose "
             "hashes equal a vLLM server's (" +
                 std::string(allowedHashAlgorithms()) + ")");
    hashAlgorithm.current = [](const RunSettings& settings) { return shownOf(settings).hashAlgorithm; };
    hashAlgorithm.apply = [](RunSettings& settings, const std::string& value) -> std::string {
        const std::optional<HashAlgorithm> algorithm = hashAlgorithmFromString(value);
        if (!algorithm) {
            return "unknown value `" + value + "` (allowed: " + std::string(allowedHashAlgorithms()) + ")";
        }
        servingOf(settings).hashAlgorithm = std::string(toString(*algorithm));
        return {};
    };
    table.push_back(std::move(hashAlgorithm));
    return table;
}

std::string trimmed(std::string_view text) {
    const auto first = text.find_first_not_of(" \t");
    if (first == std::string_view::npos) {
        return {};
    }
    const auto last = text.find_last_not_of(" \t");
    return std::string(text.substr(first, last - first + 1));
}

const std::string& allowedKeys() {
    static const std::string keys = "block-size, num-blocks, max-num-batched-tokens, max-num-seqs, "
                                    "free-policy, prefix-caching-hash-algo, prefix-caching";
    return keys;
}

} // namespace

const std::vector<config::RunOption>& ServingOptionTable::options() {
    static const std::vector<RunOption> table = build();
    return table;
}

const config::RunOption* ServingOptionTable::find(std::string_view name) {
    const auto& table = options();
    const auto found = std::find_if(table.begin(), table.end(),
                                    [name](const RunOption& option) { return option.name == name; });
    return found == table.end() ? nullptr : &*found;
}

const config::RunOption& ServingOptionTable::compareOption() {
    static const RunOption option = [] {
        RunOption compare = base("compare-serving", "CHANGES",
                                 "Serving: also run the workload with these changes and compare the two "
                                 "(comma-separated KEY=VALUE: " +
                                     allowedKeys() + "; e.g. prefix-caching=off or num-blocks=32)");
        compare.current = [](const RunSettings&) { return std::string(); };
        // The changes are read against the settings of the run itself once every option is read: here
        // only whether they read at all.
        compare.apply = [](RunSettings&, const std::string& value) -> std::string {
            const auto result = changed(ServingSettings{}, value);
            const std::string* refusal = std::get_if<std::string>(&result);
            return refusal ? *refusal : std::string();
        };
        return compare;
    }();
    return option;
}

std::variant<config::ServingSettings, std::string>
ServingOptionTable::changed(const config::ServingSettings& base, std::string_view spec) {
    RunSettings settings;
    settings.serving = base;
    bool any = false;
    std::size_t start = 0;
    while (start <= spec.size()) {
        const std::size_t comma = std::min(spec.find(',', start), spec.size());
        const std::string change = trimmed(spec.substr(start, comma - start));
        start = comma + 1;
        if (change.empty()) {
            continue;
        }
        any = true;
        const std::size_t equals = change.find('=');
        if (equals == std::string::npos || equals == 0) {
            return "the change `" + change + "` is not KEY=VALUE (keys: " + allowedKeys() +
                   "); e.g. prefix-caching=off";
        }
        const std::string key = trimmed(std::string_view(change).substr(0, equals));
        const std::string value = trimmed(std::string_view(change).substr(equals + 1));
        if (key == "prefix-caching") {
            if (value != "on" && value != "off") {
                return "prefix-caching=" + value + ": allowed values on, off";
            }
            settings.serving->prefixCaching = value == "on";
            continue;
        }
        const RunOption* option = find(key);
        if (option == nullptr || option->valueName.empty() || key == "workload") {
            return "unknown setting `" + key + "` to change (allowed: " + allowedKeys() + ")";
        }
        if (const std::string refusal = option->apply(settings, value); !refusal.empty()) {
            return key + ": " + refusal;
        }
    }
    if (!any) {
        return "no change given: name one as KEY=VALUE (keys: " + allowedKeys() +
               "); e.g. prefix-caching=off";
    }
    return *settings.serving;
}

config::ServingSettings ServingOptionTable::withPool(const config::ServingSettings& serving,
                                                     const WorkloadPool& pool, const GivenOption& given) {
    ServingSettings result = serving;
    if (pool.blockSize && !given("block-size")) {
        result.blockSize = *pool.blockSize;
    }
    if (pool.numBlocks && !given("num-blocks")) {
        result.numBlocks = *pool.numBlocks;
    }
    if (pool.maxNumBatchedTokens && !given("max-num-batched-tokens")) {
        result.maxNumBatchedTokens = *pool.maxNumBatchedTokens;
    }
    if (pool.maxNumSeqs && !given("max-num-seqs")) {
        result.maxNumSeqs = *pool.maxNumSeqs;
    }
    return result;
}

config::ServingSettings ServingOptionTable::withSuggestedPool(const config::ServingSettings& serving,
                                                              const GivenOption& given) {
    if (serving.workload.empty()) {
        return serving;
    }
    try {
        return withPool(serving, Workload::load(WorkloadCatalog::resolve(serving.workload)).pool, given);
    } catch (const PagedError&) {
        return serving;
    }
}

std::string ServingOptionTable::describeChanges(const config::ServingSettings& a,
                                                const config::ServingSettings& b) {
    std::vector<std::string> parts;
    if (a.prefixCaching != b.prefixCaching) {
        parts.push_back(b.prefixCaching ? "prefix caching on" : "prefix caching off");
    }
    if (a.numBlocks != b.numBlocks) {
        parts.push_back(std::to_string(b.numBlocks) + " blocks");
    }
    if (a.blockSize != b.blockSize) {
        parts.push_back("blocks of " + std::to_string(b.blockSize));
    }
    if (a.maxNumBatchedTokens != b.maxNumBatchedTokens) {
        parts.push_back("a budget of " + std::to_string(b.maxNumBatchedTokens) + " tokens");
    }
    if (a.maxNumSeqs != b.maxNumSeqs) {
        parts.push_back(std::to_string(b.maxNumSeqs) + " running at most");
    }
    if (a.freePolicy != b.freePolicy) {
        parts.push_back("free policy " + b.freePolicy);
    }
    if (a.hashAlgorithm != b.hashAlgorithm) {
        parts.push_back("prefix hashes " + b.hashAlgorithm);
    }
    if (a.workload != b.workload) {
        parts.push_back("workload " + b.workload);
    }
    if (parts.empty()) {
        return "the same settings";
    }
    std::string text = parts.front();
    for (std::size_t index = 1; index < parts.size(); ++index) {
        text += ", " + parts[index];
    }
    return text;
}

} // namespace kvscope::paged
