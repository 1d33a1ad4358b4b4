// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/BlockHasher.h"

#include "kvscope/paged/BlockHash.h"
#include "kvscope/paged/Request.h"

#include <algorithm>

namespace kvscope::paged {

namespace {

/// Canonical CBOR (RFC 8949 4.2.1: shortest argument, definite lengths), the subset vLLM's block keys use.
class CborBytes {
public:
    void head(std::uint8_t major, std::uint64_t argument) {
        const auto type = static_cast<std::uint8_t>(major << 5);
        if (argument < 24) {
            m_bytes.push_back(static_cast<std::uint8_t>(type | argument));
            return;
        }
        const int width = argument <= 0xffU ? 1 : argument <= 0xffffU ? 2 : argument <= 0xffffffffU ? 4 : 8;
        m_bytes.push_back(static_cast<std::uint8_t>(type | (width == 1 ? 24 : width == 2 ? 25 : width == 4 ? 26 : 27)));
        for (int i = width - 1; i >= 0; --i)
            m_bytes.push_back(static_cast<std::uint8_t>(argument >> (8 * i)));
    }
    void integer(std::int64_t value) {
        if (value >= 0)
            head(0, static_cast<std::uint64_t>(value));
        else
            head(1, static_cast<std::uint64_t>(-(value + 1)));
    }
    void bytes(std::span<const std::uint8_t> data) {
        head(2, data.size());
        m_bytes.insert(m_bytes.end(), data.begin(), data.end());
    }
    void text(std::string_view data) {
        head(3, data.size());
        m_bytes.insert(m_bytes.end(), data.begin(), data.end());
    }
    void array(std::size_t count) { head(4, count); }
    void null() { m_bytes.push_back(0xf6); }
    std::span<const std::uint8_t> data() const { return m_bytes; }

private:
    std::vector<std::uint8_t> m_bytes;
};

} // namespace

const Sha256::Digest& BlockHasher::sha256CborNone() {
    static const Sha256::Digest none = [] {
        CborBytes cbor;
        cbor.text("vllm-none-hash");
        return Sha256::of(cbor.data());
    }();
    return none;
}

Sha256::Digest BlockHasher::sha256Cbor(const Sha256::Digest& parent, std::span<const TokenId> tokens,
                                       std::string_view cacheSalt) {
    CborBytes cbor;
    cbor.array(3);
    cbor.bytes(parent);
    cbor.array(tokens.size());
    for (const TokenId token : tokens)
        cbor.integer(token);
    if (cacheSalt.empty()) {
        cbor.null();
    } else {
        cbor.array(1);
        cbor.array(2);
        cbor.text("cache_salt");
        cbor.text(cacheSalt);
    }
    return Sha256::of(cbor.data());
}

HashValue BlockHasher::low64(const Sha256::Digest& digest) {
    HashValue value = 0;
    for (std::size_t i = digest.size() - 8; i < digest.size(); ++i)
        value = (value << 8) | digest[i];
    return value;
}

HashValue BlockHasher::noneHash() const {
    return m_algorithm == HashAlgorithm::Sha256Cbor ? low64(sha256CborNone()) : BlockHash::kNoneHash;
}

void BlockHasher::extend(Request& request, std::int64_t blockSize) const {
    const std::int64_t numFull = request.numTokens() / blockSize;
    std::vector<TokenId> tokens(static_cast<std::size_t>(blockSize));
    for (auto i = static_cast<std::int64_t>(request.blockHashes.size()); i < numFull; ++i) {
        for (std::int64_t t = 0; t < blockSize; ++t)
            tokens[static_cast<std::size_t>(t)] = request.tokenAt(i * blockSize + t);
        // Only the first block carries the salt: later ones inherit it through their parent.
        const std::string_view salt = i == 0 ? std::string_view(request.cacheSalt) : std::string_view();
        if (m_algorithm == HashAlgorithm::Sha256Cbor) {
            const Sha256::Digest& parent = i == 0 ? sha256CborNone() : request.blockDigests.back();
            request.blockDigests.push_back(sha256Cbor(parent, tokens, salt));
            request.blockHashes.push_back(low64(request.blockDigests.back()));
        } else {
            const HashValue parent = i == 0 ? BlockHash::kNoneHash : request.blockHashes.back();
            request.blockHashes.push_back(BlockHash::of(parent, tokens, salt));
        }
    }
}

std::vector<HashValue> BlockHasher::chain(const Request& request, std::int64_t blockSize,
                                          std::int64_t numBlocks) const {
    Request fresh;
    fresh.promptIds = request.promptIds;
    fresh.outputIds = request.outputIds;
    fresh.cacheSalt = request.cacheSalt;
    extend(fresh, blockSize);
    if (static_cast<std::int64_t>(fresh.blockHashes.size()) > numBlocks)
        fresh.blockHashes.resize(static_cast<std::size_t>(std::max<std::int64_t>(numBlocks, 0)));
    return fresh.blockHashes;
}

} // namespace kvscope::paged
