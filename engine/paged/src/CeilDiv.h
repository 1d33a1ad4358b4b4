// SPDX-License-Identifier: GPL-3.0-or-later
// How many blocks of `b` tokens hold `a` tokens (a >= 0, b > 0).
#pragma once

#include <cstdint>

namespace kvscope::paged {

inline std::int64_t ceilDiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

} // namespace kvscope::paged
