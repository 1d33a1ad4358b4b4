// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/AttentionLayer.h"

#include "kvscope/cache/CacheError.h"

namespace kvscope::cache {

void AttentionLayer::keepTokens(const at::Tensor&) {
    throw CacheError(ErrorKind::Runtime, typeName() +
                                             " cannot drop single tokens: it holds preallocated slots or a window "
                                             "(presses work on DynamicLayer and QuantizedLayer)");
}

void AttentionLayer::rewriteKeys(const at::Tensor&) {
    throw CacheError(ErrorKind::Runtime, typeName() +
                                             " cannot have its keys rewritten by a press (presses work on "
                                             "DynamicLayer and QuantizedLayer)");
}

} // namespace kvscope::cache
