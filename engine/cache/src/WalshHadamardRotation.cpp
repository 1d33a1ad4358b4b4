// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/WalshHadamardRotation.h"

#include <cmath>

namespace kvscope::cache {

void WalshHadamardRotation::apply(float* values, int64_t count, int64_t n) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(n));
    for (int64_t run = 0; run < count; ++run, values += n) {
        for (int64_t j = 0; j < n; ++j) {
            values[j] *= scale;
        }
        for (int64_t width = 1; width < n; width <<= 1) {
            for (int64_t i = 0; i < n; i += 2 * width) {
                for (int64_t j = 0; j < width; ++j) {
                    const float u = values[i + j];
                    const float v = values[i + width + j];
                    values[i + j] = u + v;
                    values[i + width + j] = u - v;
                }
            }
        }
    }
}

int64_t WalshHadamardRotation::keyBlock(int64_t headDim) {
    if (headDim <= 0 || headDim % 64 != 0) {
        return 0;
    }
    int64_t block = 64;
    while (headDim % (block * 2) == 0) {
        block *= 2;
    }
    return block;
}

int64_t WalshHadamardRotation::valueBlock(int64_t headDim) { return headDim > 0 && headDim % 64 == 0 ? 64 : 0; }

} // namespace kvscope::cache
