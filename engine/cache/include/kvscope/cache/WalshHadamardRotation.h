// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>

namespace kvscope::cache {

/// llama.cpp's rotation of a quantised KV cache (PR #21038): each run of n values of a head (n a power of two)
/// is multiplied by the orthonormal Walsh-Hadamard matrix of size n (Sylvester's construction over 1/sqrt(n)),
/// which spreads an outlier channel over the block before it is quantised. The matrix is its own inverse.
class WalshHadamardRotation {
public:
    /// Rotates `count` consecutive runs of `n` floats in place, as ggml's CPU backend computes the product
    /// (ggml_compute_forward_fwht: scaled by 1/sqrt(n) first, then butterflies of width 1, 2, 4, ...), so that
    /// the rotated values are bit for bit llama.cpp's. `n` must be a power of two.
    static void apply(float* values, int64_t count, int64_t n);
    /// The block llama.cpp rotates keys of `headDim` channels by when their type is quantised: the largest
    /// power of two from 64 up dividing the head (llama_kv_cache::build_input_k_rot); 0 when 64 does not
    /// divide it (no rotation).
    static int64_t keyBlock(int64_t headDim);
    /// The block for values: always 64 (llama_kv_cache::build_input_v_rot), 0 when 64 does not divide the head.
    static int64_t valueBlock(int64_t headDim);
};

} // namespace kvscope::cache
