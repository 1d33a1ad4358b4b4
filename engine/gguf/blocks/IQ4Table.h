// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "RowDot.h"

#include <cstdint>

namespace kvscope::gguf {

/// The non-linear code table IQ4_NL and IQ4_XS index with their nibbles (ggml's kvalues_iq4nl).
inline constexpr int8_t kIq4Table[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

#if KVSCOPE_ROWDOT_X86
/// 32 nibble codes (one a byte) looked up in the table: 32 signed bytes.
KVSCOPE_AVX2 inline __m256i iq4Lookup(__m256i codes) {
    const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Table));
    return _mm256_shuffle_epi8(_mm256_set_m128i(table, table), codes);
}
#endif

} // namespace kvscope::gguf
