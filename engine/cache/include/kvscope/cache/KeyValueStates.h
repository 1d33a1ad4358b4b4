// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <ATen/core/Tensor.h>

namespace kvscope::cache {

/// The key and value states an update returns, each `[batch, heads, tokens, head_dim]`.
///
/// Like the reference's static layers, the tensors may alias the layer's storage: they hold the values
/// the reference returns until the next call that changes the layer.
struct KeyValueStates {
    at::Tensor keys;
    at::Tensor values;
};

} // namespace kvscope::cache
