// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace kvscope::cache {

/// Amortised storage of a token sequence `[batch, heads, tokens, head_dim]`: appending q tokens costs
/// O(q) (the reference re-concatenates everything, O(tokens)). The held tokens are a window
/// [begin, begin + length) of a larger allocation; views handed out stay valid because storage is never
/// overwritten below the write position, and growth/compaction moves to a fresh allocation.
class SequenceBuffer {
public:
    /// False until the first append/assign: the reference's one-dimensional empty tensor.
    bool hasShape() const { return m_storage.defined(); }
    int64_t length() const { return m_length; }
    /// The held tokens (undefined when !hasShape()).
    at::Tensor view() const;
    /// Appends `states` (checking batch, heads and head_dim) and returns the view of everything held.
    at::Tensor append(const at::Tensor& states);
    /// Drops all but the last `count` tokens.
    void keepLast(int64_t count);
    /// Keeps the first `count` tokens.
    void truncate(int64_t count);
    /// Replaces the contents with `states`, which the buffer then owns and may write in place: pass a
    /// tensor nobody else holds (a clone or the fresh result of an operation).
    void assign(const at::Tensor& states);
    /// Back to the one-dimensional empty state.
    void clear();
    void zero();
    /// Moves the storage to another device (offload/prefetch).
    void moveTo(const at::Device& device, bool nonBlocking);
    int64_t bytes() const;
    /// Elements per token (batch x heads x head_dim); 0 before the first append.
    int64_t tokenElements() const;
    /// The whole allocation (for device queries).
    const at::Tensor& storage() const { return m_storage; }

private:
    void reserveForAppend(int64_t extra);
    /// Moves the held tokens to the start of a fresh allocation of `capacity` rows.
    void moveToRoomFor(int64_t capacity);

    at::Tensor m_storage;
    int64_t m_begin = 0;
    int64_t m_length = 0;
    /// Set by truncate: positions past the end may still be visible through earlier views.
    bool m_tailShared = false;
};

/// Throws the reference's "Sizes of tensors must match" refusal when `states` cannot be appended after
/// a sequence of shape `like` (both `[batch, heads, tokens, head_dim]`).
void checkSameSequenceShape(const at::Tensor& like, const at::Tensor& states, const char* what);
/// Throws unless `states` is a 4-D `[batch, heads, tokens, head_dim]` tensor.
void checkFourDimensional(const at::Tensor& states, const char* what);

} // namespace kvscope::cache
