// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>

namespace kvscope::cache {

/// What `get_mask_sizes` returns: the K/V length the next update returns and the absolute position of
/// its first row.
struct MaskSizes {
    int64_t kvLength = 0;
    int64_t kvOffset = 0;

    bool operator==(const MaskSizes&) const = default;
};

} // namespace kvscope::cache
