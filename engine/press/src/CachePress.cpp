// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/CachePress.h"

namespace kvscope::press {

bool CachePress::wantsAttentionWeights(int64_t, int64_t) const {
    return false;
}

} // namespace kvscope::press
