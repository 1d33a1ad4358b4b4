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

namespace {

int64_t slotOf(const std::vector<int64_t>& blockTable, int64_t blockSize, int64_t position) {
    const auto entry = static_cast<size_t>(position / blockSize);
    if (entry >= blockTable.size()) {
        throw std::runtime_error("block table of " + std::to_string(blockTable.size()) + " blocks of " +
                                 std::to_string(blockSize) + " tokens cannot hold position " +
                                 std::to_string(position) +
                                 " (the scheduler allocates blocks before a step)");
    }
    const int64_t block = blockTable[entry];
    if (block < 0) {
        throw std::runtime_error("position " + std::to_string(position) +
                                 " is needed by attention but its block was freed (block table entry " +
                                 std::to_string(entry) + ")");
    }
    return block * blockSize + position % blockSize;
}

at::Tensor onDevice(const std::vector<int64_t>& slots, const at::Device& device) {
    at::Tensor cpu = at::empty({static_cast<int64_t>(slots.size())}, at::TensorOptions().dtype(at::kLong));
    std::copy(slots.begin(), slots.end(), cpu.data_ptr<int64_t>());
    return device.is_cpu() ? cpu : cpu.to(device);
}

} // namespace

SlotBinding SlotBinding::ofDecodeBatch(const std::vector<const std::vector<int64_t>*>& blockTables,
                                       int64_t blockSize, LayerGroups::Kind kind, int64_t window,
                                       const std::vector<int64_t>& computed, int64_t paddedLength,
                                       const at::Device& device) {
    SlotBinding binding;
    binding.batch = static_cast<int64_t>(computed.size());
    binding.computed = paddedLength - 1;
    binding.queryLength = 1;
    int64_t rows = 0;
    std::vector<int64_t> firsts;
    for (const int64_t done : computed) {
        const cache::MaskSizes own = sizesFor(kind, window, done, 1);
        firsts.push_back(own.kvOffset);
        rows = std::max(rows, own.kvLength);
    }
    binding.sizes = {rows, paddedLength - rows};
    std::vector<int64_t> writes;
    std::vector<int64_t> reads;
    reads.reserve(static_cast<size_t>(binding.batch * rows));
    for (size_t row = 0; row < computed.size(); ++row) {
        const std::vector<int64_t>& table = *blockTables[row];
        const int64_t own = slotOf(table, blockSize, computed[row]);
        writes.push_back(own);
        // Padded index j holds position j - (paddedLength - (computed + 1)).
        const int64_t shift = paddedLength - (computed[row] + 1);
        for (int64_t j = paddedLength - rows; j < paddedLength; ++j) {
            const int64_t position = j - shift;
            reads.push_back(position < firsts[row] ? own : slotOf(table, blockSize, position));
        }
    }
    binding.writeSlots = onDevice(writes, device);
    binding.readSlots = onDevice(reads, device);
    return binding;
}

SlotBinding SlotBinding::of(const std::vector<int64_t>& blockTable, int64_t blockSize, LayerGroups::Kind kind,
                            int64_t window, int64_t computed, int64_t queryLength, const at::Device& device) {
    SlotBinding binding;
    binding.computed = computed;
    binding.queryLength = queryLength;
    binding.sizes = sizesFor(kind, window, computed, queryLength);
    const int64_t end = computed + queryLength;
    std::vector<int64_t> slots;
    slots.reserve(static_cast<size_t>(binding.sizes.kvLength));
    for (int64_t position = binding.sizes.kvOffset; position < end; ++position) {
        slots.push_back(slotOf(blockTable, blockSize, position));
    }
    binding.readSlots = onDevice(slots, device);
    binding.writeSlots = binding.readSlots.narrow(0, binding.sizes.kvLength - queryLength, queryLength);
    return binding;
}

} // namespace kvscope::serving
