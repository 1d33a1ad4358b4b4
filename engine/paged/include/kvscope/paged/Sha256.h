// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace kvscope::paged {

/// SHA-256 (FIPS 180-4), for vLLM's `sha256_cbor` prefix hashes; kept here so the torch-free paged
/// library needs no crypto package.
class Sha256 {
public:
    using Digest = std::array<std::uint8_t, 32>;

    void update(std::span<const std::uint8_t> bytes);
    void update(std::string_view text);
    /// The digest of everything updated so far; the object is spent afterwards.
    Digest finish();

    static Digest of(std::span<const std::uint8_t> bytes);

private:
    void compress(const std::uint8_t* block);

    std::array<std::uint32_t, 8> m_state{0x6a09e667U, 0xbb67ae85U, 0x3c6ef372U, 0xa54ff53aU,
                                         0x510e527fU, 0x9b05688cU, 0x1f83d9abU, 0x5be0cd19U};
    std::array<std::uint8_t, 64> m_buffer{};
    std::size_t m_buffered = 0;
    std::uint64_t m_length = 0; ///< bytes updated
};

} // namespace kvscope::paged
