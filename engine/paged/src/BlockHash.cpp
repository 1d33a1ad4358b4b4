// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/BlockHash.h"

#include <cstdint>

namespace kvscope::paged {

namespace {

constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
constexpr std::uint64_t kFnvPrime = 0x100000001b3ULL;

constexpr std::uint64_t fnvBytes(std::uint64_t hash, const unsigned char* bytes, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
        hash ^= bytes[i];
        hash *= kFnvPrime;
    }
    return hash;
}

// Little-endian whatever the host, so that hashes agree across machines.
constexpr std::uint64_t fnvWord(std::uint64_t hash, std::uint64_t word) {
    for (int i = 0; i < 8; ++i) {
        hash ^= (word >> (8 * i)) & 0xffU;
        hash *= kFnvPrime;
    }
    return hash;
}

constexpr std::uint64_t splitmix64(std::uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

constexpr std::uint64_t noneHash() {
    constexpr char text[] = "kvscope.paged.none";
    std::uint64_t hash = kFnvOffset;
    for (std::size_t i = 0; i + 1 < sizeof(text); ++i) {
        hash ^= static_cast<unsigned char>(text[i]);
        hash *= kFnvPrime;
    }
    return hash;
}

} // namespace

const HashValue BlockHash::kNoneHash = noneHash();

HashValue BlockHash::of(HashValue parent, std::span<const TokenId> tokens, std::string_view extraKey) {
    std::uint64_t hash = fnvWord(kFnvOffset, parent);
    hash = fnvWord(hash, tokens.size());
    for (const TokenId token : tokens)
        hash = fnvWord(hash, static_cast<std::uint64_t>(token));
    hash = fnvWord(hash, extraKey.size());
    hash = fnvBytes(hash, reinterpret_cast<const unsigned char*>(extraKey.data()), extraKey.size());
    return splitmix64(hash);
}

} // namespace kvscope::paged
