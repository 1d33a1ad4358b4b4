// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/PagedConfig.h"

#include "kvscope/paged/PagedError.h"

#include <string>

namespace kvscope::paged {

void PagedConfig::validate() const {
    if (blockSize < 1 || blockSize > 4096)
        throw PagedError("block size " + std::to_string(blockSize) +
                         " is out of range: allowed 1..4096 token slots per block; pass --block-size 16");
    const std::int32_t reserved = freePolicy == FreePolicy::Current ? 1 : 0;
    if (numBlocks < 1 + reserved)
        throw PagedError(
            "the pool has " + std::to_string(numBlocks) + " blocks: at least " +
            std::to_string(1 + reserved) + " are needed" +
            (reserved != 0 ? " (the current free policy reserves block 0 as the null block)" : "") +
            "; raise --num-blocks");
    if (maxNumBatchedTokens < 1)
        throw PagedError("max_num_batched_tokens " + std::to_string(maxNumBatchedTokens) +
                         " leaves no token budget: allowed >= 1; pass --max-num-batched-tokens 256");
    if (maxNumSeqs < 1)
        throw PagedError("max_num_seqs " + std::to_string(maxNumSeqs) +
                         " admits no request: allowed >= 1; pass --max-num-seqs 8");
    if (maxModelLen < 0)
        throw PagedError("max_model_len " + std::to_string(maxModelLen) +
                         " is negative: allowed 0 (unbounded) or a token count");
    if (groups.empty())
        throw PagedError("the paged cache has no layer group: at least one (full attention) is needed");
    for (std::size_t i = 0; i < groups.size(); ++i) {
        const LayerGroup& group = groups[i];
        if (group.kind == GroupKind::Sliding && group.window < 1)
            throw PagedError("layer group " + std::to_string(i) + " is a sliding window of " +
                             std::to_string(group.window) + " tokens: allowed >= 1");
        if (group.kind == GroupKind::Full && group.window != 0)
            throw PagedError("layer group " + std::to_string(i) + " is full attention with a window of " +
                             std::to_string(group.window) + ": full attention takes window 0");
    }
}

PagedConfig PagedConfig::fromSettings(const config::ServingSettings& serving) {
    PagedConfig config;
    config.blockSize = serving.blockSize;
    config.numBlocks = serving.numBlocks;
    config.maxNumBatchedTokens = serving.maxNumBatchedTokens;
    config.maxNumSeqs = serving.maxNumSeqs;
    config.prefixCaching = serving.prefixCaching;
    const std::optional<FreePolicy> policy = freePolicyFromString(serving.freePolicy);
    if (!policy) {
        throw PagedError("free policy `" + serving.freePolicy + "` is unknown: allowed " +
                         std::string(allowedFreePolicies()) + "; pass --free-policy document");
    }
    config.freePolicy = *policy;
    const std::optional<HashAlgorithm> algorithm = hashAlgorithmFromString(serving.hashAlgorithm);
    if (!algorithm) {
        throw PagedError("prefix hash algorithm `" + serving.hashAlgorithm + "` is unknown: allowed " +
                         std::string(allowedHashAlgorithms()) + "; pass --prefix-caching-hash-algo fnv1a");
    }
    config.hashAlgorithm = *algorithm;
    config.validate();
    return config;
}

std::string_view allowedFreePolicies() {
    return "document, current";
}

std::string_view toString(FreePolicy policy) {
    switch (policy) {
    case FreePolicy::Document:
        return "document";
    case FreePolicy::Current:
        return "current";
    }
    return "unknown";
}

std::string_view toString(GroupKind kind) {
    switch (kind) {
    case GroupKind::Full:
        return "full";
    case GroupKind::Sliding:
        return "sliding";
    }
    return "unknown";
}

std::string_view toString(HashAlgorithm algorithm) {
    switch (algorithm) {
    case HashAlgorithm::Fnv1a:
        return "fnv1a";
    case HashAlgorithm::Sha256Cbor:
        return "sha256_cbor";
    }
    return "unknown";
}

std::optional<HashAlgorithm> hashAlgorithmFromString(std::string_view name) {
    if (name == "fnv1a")
        return HashAlgorithm::Fnv1a;
    if (name == "sha256_cbor")
        return HashAlgorithm::Sha256Cbor;
    return std::nullopt;
}

std::string_view allowedHashAlgorithms() {
    return "fnv1a, sha256_cbor";
}

std::optional<FreePolicy> freePolicyFromString(std::string_view name) {
    if (name == "document")
        return FreePolicy::Document;
    if (name == "current")
        return FreePolicy::Current;
    return std::nullopt;
}

} // namespace kvscope::paged
