// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/CacheLayer.h"

#include "kvscope/cache/CacheError.h"

namespace kvscope::cache {

void CacheLayer::cropTokens(int64_t) {
    throw CacheError(ErrorKind::Attribute, "'" + typeName() +
                                               "' object has no attribute 'crop': its slots are preallocated, so "
                                               "the release cannot roll it back; speculative decoding needs a "
                                               "DynamicCache (dynamic, sliding or quantized layers)");
}

} // namespace kvscope::cache
