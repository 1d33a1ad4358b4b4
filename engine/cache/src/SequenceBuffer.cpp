// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/SequenceBuffer.h"

#include "TokenCopy.h"
#include "kvscope/cache/CacheError.h"

#include <ATen/ATen.h>

#include <sstream>

namespace kvscope::cache {
namespace {

/// Tokens of room past the first append, at least (a prompt's first decode steps).
constexpr int64_t kFirstHeadroom = 16;

/// Rows for `tokens` and the steps after them: an eighth more, at least kFirstHeadroom.
int64_t withHeadroom(int64_t tokens) { return tokens + std::max<int64_t>(kFirstHeadroom, tokens / 8); }

std::string shapeText(const at::Tensor& tensor) {
    std::ostringstream out;
    out << tensor.sizes();
    return out.str();
}

} // namespace

void checkFourDimensional(const at::Tensor& states, const char* what) {
    if (!states.defined() || states.dim() != 4) {
        throw CacheError(ErrorKind::Value, std::string(what) + " must be a 4-D tensor [batch, heads, tokens, head_dim], got " +
                                               (states.defined() ? shapeText(states) : std::string("an undefined tensor")));
    }
}

void checkSameSequenceShape(const at::Tensor& like, const at::Tensor& states, const char* what) {
    checkFourDimensional(states, what);
    for (int64_t dim : {0, 1, 3}) {
        if (like.size(dim) != states.size(dim)) {
            throw CacheError(ErrorKind::Runtime,
                             std::string("Sizes of tensors must match except in dimension 2: cached ") + what + " are " +
                                 shapeText(like) + ", new " + what + " are " + shapeText(states));
        }
    }
}

at::Tensor SequenceBuffer::view() const {
    if (!m_storage.defined()) {
        return {};
    }
    return narrowTokens(m_storage, m_begin, m_length);
}

void SequenceBuffer::reserveForAppend(int64_t extra) {
    const int64_t capacity = m_storage.size(2);
    if (m_begin + m_length + extra <= capacity && !m_tailShared) {
        return;
    }
    // Double when mostly full, otherwise just compact: both cost O(length) once per O(length) appends.
    int64_t newCapacity = capacity;
    if (2 * (m_length + extra) > capacity) {
        newCapacity = std::max<int64_t>(2 * (m_length + extra), 16);
    }
    moveToRoomFor(newCapacity);
}

void SequenceBuffer::moveToRoomFor(int64_t capacity) {
    auto sizes = m_storage.sizes().vec();
    sizes[2] = capacity;
    at::Tensor fresh = at::empty(sizes, m_storage.options());
    if (m_length > 0) {
        fresh.narrow(2, 0, m_length).copy_(view());
    }
    m_storage = fresh;
    m_begin = 0;
    m_tailShared = false;
}

at::Tensor SequenceBuffer::append(const at::Tensor& states) {
    if (!m_storage.defined()) {
        checkFourDimensional(states, "states");
        // Room for what follows a prompt: the first steps append in place, where an exact fit moved the whole
        // prompt's states at the first step and held both copies (a 2048-token prompt's 94 MB twice).
        auto sizes = states.sizes().vec();
        sizes[2] = withHeadroom(states.size(2));
        m_storage = at::empty(sizes, states.options().memory_format(at::MemoryFormat::Contiguous));
        m_tailShared = false;
        m_begin = 0;
        m_length = 0;
    }
    checkSameSequenceShape(m_storage, states, "states");
    const int64_t extra = states.size(2);
    reserveForAppend(extra);
    copyTokens(m_storage, m_begin + m_length, states);
    m_length += extra;
    return view();
}

void SequenceBuffer::keepLast(int64_t count) {
    count = std::clamp<int64_t>(count, 0, m_length);
    m_begin += m_length - count;
    m_length = count;
    // A sliding window after a long prompt keeps its last W - 1 tokens of the prompt's whole allocation (Gemma 3
    // after 2048 tokens: 511 of 2304 rows in each of 15 layers, 71 MB where 16 MB hold them): moved to room for
    // what is kept and the steps after it, the prompt's allocation goes once the views handed out go.
    const int64_t room = withHeadroom(count);
    if (count > 0 && 2 * room < m_storage.size(2)) {
        moveToRoomFor(room);
    }
}

void SequenceBuffer::truncate(int64_t count) {
    const int64_t kept = std::clamp<int64_t>(count, 0, m_length);
    // Views handed out earlier still show the dropped tokens (as the reference's fresh tensors do);
    // the next append must not write over them, so it moves to new storage first.
    m_tailShared = m_tailShared || kept < m_length;
    m_length = kept;
}

int64_t SequenceBuffer::tokenElements() const {
    if (!m_storage.defined()) {
        return 0;
    }
    return m_storage.size(0) * m_storage.size(1) * m_storage.size(3);
}

void SequenceBuffer::assign(const at::Tensor& states) {
    m_storage = states.contiguous();
    m_tailShared = false;
    m_begin = 0;
    m_length = states.size(2);
}

void SequenceBuffer::clear() {
    m_storage = at::Tensor();
    m_tailShared = false;
    m_begin = 0;
    m_length = 0;
}

void SequenceBuffer::zero() {
    if (m_storage.defined()) {
        view().zero_();
    }
}

void SequenceBuffer::moveTo(const at::Device& device, bool nonBlocking) {
    if (m_storage.defined() && m_storage.device() != device) {
        m_storage = m_storage.to(device, /*non_blocking=*/nonBlocking);
    }
}

int64_t SequenceBuffer::bytes() const {
    if (!m_storage.defined()) {
        return 0;
    }
    return m_length * (m_storage.numel() / std::max<int64_t>(m_storage.size(2), 1)) *
           static_cast<int64_t>(m_storage.element_size());
}

} // namespace kvscope::cache
