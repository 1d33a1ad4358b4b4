// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/serving/SlotBinding.h"

#include <ATen/ATen.h>
#include <algorithm>
#include <stdexcept>
#include <string>

namespace kvscope::serving {

cache::MaskSizes SlotBinding::sizesFor(LayerGroups::Kind kind, int64_t window, int64_t computed,
                                       int64_t queryLength) {
    int64_t first = 0;
    if (kind == LayerGroups::Kind::Sliding) {
        // The query at `computed` sees positions computed - window + 1 .. computed (the sliding mask).
        first = std::max<int64_t>(computed - window + 1, 0);
    } else if (kind == LayerGroups::Kind::Chunked) {
        first = computed / window * window;
    }
    return {computed + queryLength - first, first};
}

SlotBinding SlotBinding::of(const std::vector<int64_t>& blockTable, int64_t blockSize, LayerGroups::Kind kind,
                            int64_t window, int64_t computed, int64_t queryLength, const at::Device& device) {
    SlotBinding binding;
    binding.computed = computed;
    binding.queryLength = queryLength;
    binding.sizes = sizesFor(kind, window, computed, queryLength);
    const int64_t end = computed + queryLength;
    if (static_cast<int64_t>(blockTable.size()) * blockSize < end) {
        throw std::runtime_error("block table of " + std::to_string(blockTable.size()) + " blocks of " +
                                 std::to_string(blockSize) + " tokens cannot hold position " +
                                 std::to_string(end - 1) + " (the scheduler allocates blocks before a step)");
    }
    std::vector<int64_t> slots(static_cast<size_t>(binding.sizes.kvLength));
    for (int64_t position = binding.sizes.kvOffset; position < end; ++position) {
        const int64_t block = blockTable[static_cast<size_t>(position / blockSize)];
        if (block < 0) {
            throw std::runtime_error("position " + std::to_string(position) +
                                     " is needed by attention but its block was freed (block table entry " +
                                     std::to_string(position / blockSize) + ")");
        }
        slots[static_cast<size_t>(position - binding.sizes.kvOffset)] =
            block * blockSize + position % blockSize;
    }
    const at::Tensor read = at::tensor(slots, at::TensorOptions().dtype(at::kLong));
    binding.readSlots = read.to(device);
    binding.writeSlots = binding.readSlots.narrow(0, binding.sizes.kvLength - queryLength, queryLength);
    return binding;
}

} // namespace kvscope::serving
