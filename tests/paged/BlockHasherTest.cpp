// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/BlockHasher.h"
#include "kvscope/paged/BlockHash.h"
#include "kvscope/paged/Request.h"
#include "kvscope/paged/Sha256.h"

#include <gtest/gtest.h>
#include <numeric>
#include <string>
#include <vector>

using namespace kvscope::paged;

namespace {

std::string hex(const Sha256::Digest& digest) {
    static const char* digits = "0123456789abcdef";
    std::string text;
    for (const std::uint8_t byte : digest) {
        text += digits[byte >> 4];
        text += digits[byte & 15];
    }
    return text;
}

std::vector<TokenId> idRange(TokenId first, TokenId last) {
    std::vector<TokenId> tokens(static_cast<std::size_t>(last - first + 1));
    std::iota(tokens.begin(), tokens.end(), first);
    return tokens;
}

} // namespace

// FIPS 180-4's examples and a multi-block input, as Python's hashlib gives them.
TEST(BlockHasherTest, Sha256MatchesHashlib) {
    EXPECT_EQ(hex(Sha256::of({})), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    Sha256 abc;
    abc.update("abc");
    EXPECT_EQ(hex(abc.finish()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    // 1000 bytes fed in uneven pieces: the buffering across 64-byte blocks.
    Sha256 pieces;
    const std::string a(1000, 'a');
    for (std::size_t at = 0, step = 1; at < a.size(); at += step, step = step * 3 % 97 + 1)
        pieces.update(std::string_view(a).substr(at, step));
    EXPECT_EQ(hex(pieces.finish()), "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

// vLLM's sha256_cbor, literal values from vLLM's own functions (cbor2.dumps(..., canonical=True) + hashlib) and
// from a real vLLM 0.32 server's BlockStored events.
TEST(BlockHasherTest, Sha256CborIsVllms) {
    EXPECT_EQ(hex(BlockHasher::sha256CborNone()), "9bd96a485ad84efdafb72ee48a1d7a69bcead0f8f0433173941b276b9581eef0");
    const std::vector<TokenId> first = idRange(1, 32);
    const Sha256::Digest block0 = BlockHasher::sha256Cbor(BlockHasher::sha256CborNone(), first, "");
    EXPECT_EQ(BlockHasher::low64(block0), 12204319907483556814ULL); // vLLM's event for tokens 1..32
    // Every width of CBOR integer (1, 2, 3, 5 bytes) and a salt's extra keys (("cache_salt", salt),).
    const std::vector<TokenId> widths = {70000, 5, 300, 2147483647, 24, 23, 255, 256, 65535, 65536};
    const Sha256::Digest salted = BlockHasher::sha256Cbor(block0, widths, "tenant-b");
    EXPECT_EQ(hex(salted), "4e8d30baf3bb62de650e9a87ca29d2a825805c1470fd0eff2515b0d3843ae114");
    EXPECT_EQ(BlockHasher::low64(salted), 2672236376417296660ULL);
}

// A request's chain under sha256_cbor: the second block hashes its parent's whole digest (vLLM's event gave
// parent 12204319907483556814, hash 3809265657902063151 for SmolLM2's first outputs after prompt 1..40).
TEST(BlockHasherTest, ChainsRequestsAsVllm) {
    Request request;
    request.promptIds = idRange(1, 40);
    request.outputIds = {41, 26, 198, 198, 504, 2798, 6330, 314, 42, 198, 198, 504, 2798, 6330, 314, 42,
                         198, 198, 504, 2798, 6330, 314, 42, 198};
    const BlockHasher hasher(HashAlgorithm::Sha256Cbor);
    hasher.extend(request, 32);
    ASSERT_EQ(request.blockHashes.size(), 2U);
    EXPECT_EQ(request.blockHashes[0], 12204319907483556814ULL);
    EXPECT_EQ(request.blockHashes[1], 3809265657902063151ULL);
    EXPECT_EQ(request.blockDigests.size(), 2U);
    EXPECT_EQ(hasher.chain(request, 32, 8), request.blockHashes);
    EXPECT_EQ(hasher.chain(request, 32, 1), std::vector<HashValue>{request.blockHashes[0]});
    // Extending again adds nothing until another block fills.
    hasher.extend(request, 32);
    EXPECT_EQ(request.blockHashes.size(), 2U);
}

// The default stays kvscope's FNV-1a (sessions and their hashes unchanged).
TEST(BlockHasherTest, DefaultIsFnv) {
    Request request;
    request.promptIds = idRange(1, 8);
    request.cacheSalt = "s";
    BlockHasher().extend(request, 4);
    ASSERT_EQ(request.blockHashes.size(), 2U);
    EXPECT_EQ(request.blockHashes[0], BlockHash::of(BlockHash::kNoneHash, idRange(1, 4), "s"));
    EXPECT_EQ(request.blockHashes[1], BlockHash::of(request.blockHashes[0], idRange(5, 8)));
    EXPECT_TRUE(request.blockDigests.empty());
    EXPECT_EQ(BlockHasher().noneHash(), BlockHash::kNoneHash);
    EXPECT_EQ(BlockHasher(HashAlgorithm::Sha256Cbor).noneHash(), BlockHasher::low64(BlockHasher::sha256CborNone()));
}
