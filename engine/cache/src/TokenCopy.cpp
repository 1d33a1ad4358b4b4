// SPDX-License-Identifier: GPL-3.0-or-later
#include "TokenCopy.h"

#include <ATen/ATen.h>

#include <array>
#include <cstring>

namespace kvscope::cache {
namespace {

bool rowsContiguous(const at::Tensor& tensor) {
    return tensor.stride(3) == 1 && (tensor.size(2) <= 1 || tensor.stride(2) == tensor.size(3));
}

} // namespace

void copyTokens(const at::Tensor& destination, int64_t position, const at::Tensor& states) {
    const int64_t tokens = states.size(2);
    if (tokens == 0) {
        return;
    }
    const bool fast = destination.device().is_cpu() && states.device().is_cpu() &&
                      destination.scalar_type() == states.scalar_type() && rowsContiguous(destination) &&
                      rowsContiguous(states) && destination.size(0) == states.size(0) &&
                      destination.size(1) == states.size(1) && destination.size(3) == states.size(3);
    if (!fast) {
        destination.narrow(2, position, tokens).copy_(states);
        return;
    }
    const auto elementSize = static_cast<int64_t>(destination.element_size());
    const int64_t rowBytes = tokens * states.size(3) * elementSize;
    auto* target = static_cast<char*>(destination.data_ptr());
    const auto* source = static_cast<const char*>(states.data_ptr());
    for (int64_t b = 0; b < states.size(0); ++b) {
        for (int64_t h = 0; h < states.size(1); ++h) {
            std::memcpy(target + (b * destination.stride(0) + h * destination.stride(1) + position * destination.stride(2)) *
                                     elementSize,
                        source + (b * states.stride(0) + h * states.stride(1)) * elementSize, static_cast<size_t>(rowBytes));
        }
    }
}

} // namespace kvscope::cache

namespace kvscope::cache {

at::Tensor narrowTokens(const at::Tensor& base, int64_t begin, int64_t length) {
    if (base.requires_grad() || base.is_quantized() || !base.is_cpu()) {
        return base.narrow(2, begin, length);
    }
    auto impl = c10::make_intrusive<c10::TensorImpl>(c10::Storage(base.storage()), base.key_set(), base.dtype());
    std::array<int64_t, 4> sizes{base.size(0), base.size(1), length, base.size(3)};
    impl->set_sizes_and_strides(sizes, base.strides());
    impl->set_storage_offset(base.storage_offset() + begin * base.stride(2));
    return at::Tensor(std::move(impl));
}

} // namespace kvscope::cache
