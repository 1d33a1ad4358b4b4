// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>

namespace kvscope::trace {

/// Where a step (or snapshot) chunk of a session file lies: its step and the byte where its frame starts, as
/// the index footer lists them.
struct StepChunkLocation {
    std::int64_t step = 0;
    std::uint64_t offset = 0;
    bool operator==(const StepChunkLocation&) const = default;
};

} // namespace kvscope::trace
