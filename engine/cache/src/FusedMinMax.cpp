// SPDX-License-Identifier: GPL-3.0-or-later
#include "FusedMinMax.h"

#include "kvscope/cache/CacheError.h"
#include "kvscope/cuda/MinMaxKernels.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

namespace kvscope::cache {
namespace {

cuda::GroupLayout layoutOf(const at::Tensor& tensor, int64_t axis, int64_t groupSize) {
    return cuda::GroupLayout::of(tensor.numel(), tensor.size(-1), axis != 0, groupSize);
}

void* currentStream(const at::Tensor& tensor) {
    return c10::cuda::getCurrentCUDAStream(tensor.device().index()).stream();
}

void check(int error, const char* what) {
    if (error != 0) {
        throw CacheError(ErrorKind::Runtime, std::string("fused min-max ") + what +
                                                 " kernel failed: " + cuda::MinMaxKernels::errorText(error));
    }
}

} // namespace

QuantizedTensor FusedMinMax::quantize(const at::Tensor& tensor, int64_t axis, int nbits, int64_t groupSize) {
    const c10::cuda::CUDAGuard onDevice(tensor.device());
    const cuda::GroupLayout layout = layoutOf(tensor, axis, groupSize);
    // The reference's grouped shapes: rows of a group (axis 0) or columns (axis -1).
    const std::vector<int64_t> codesShape = axis == 0 ? std::vector<int64_t>{layout.groups, groupSize}
                                                      : std::vector<int64_t>{groupSize, layout.groups};
    const std::vector<int64_t> statsShape =
        axis == 0 ? std::vector<int64_t>{layout.groups, 1} : std::vector<int64_t>{1, layout.groups};
    const at::TensorOptions floats = tensor.options();
    at::Tensor codes = at::empty(codesShape, floats.dtype(at::kByte));
    at::Tensor scale = at::empty(statsShape, floats);
    at::Tensor lo = at::empty(statsShape, floats);
    // One code per byte: QuantizedTensor holds codes unpacked, as the reference's quantizer returns them.
    check(cuda::MinMaxKernels::quantize(tensor.data_ptr<float>(), layout, nbits, 8, codes.data_ptr<uint8_t>(),
                                        scale.data_ptr<float>(), lo.data_ptr<float>(), currentStream(tensor)),
          "quantize");
    return {codes, scale, lo, axis, tensor.sizes().vec(), tensor.scalar_type()};
}

at::Tensor FusedMinMax::dequantize(const QuantizedTensor& quantized) {
    const at::Tensor codes = quantized.codes.contiguous();
    const at::Tensor scale = quantized.scale.contiguous();
    const at::Tensor lo = quantized.offset.contiguous();
    const c10::cuda::CUDAGuard onDevice(codes.device());
    at::Tensor output = at::empty(quantized.shape, scale.options());
    const cuda::GroupLayout layout = layoutOf(output, quantized.axis, codes.numel() / scale.numel());
    check(cuda::MinMaxKernels::dequantize(codes.data_ptr<uint8_t>(), 8, scale.data_ptr<float>(),
                                          lo.data_ptr<float>(), layout, output.data_ptr<float>(),
                                          currentStream(codes)),
          "dequantize");
    return output;
}

at::Tensor FusedMinMax::roundTrip(const at::Tensor& tensor, int64_t axis, int nbits, int64_t groupSize) {
    const c10::cuda::CUDAGuard onDevice(tensor.device());
    at::Tensor output = at::empty_like(tensor);
    check(cuda::MinMaxKernels::roundTrip(tensor.data_ptr<float>(), layoutOf(tensor, axis, groupSize), nbits,
                                         output.data_ptr<float>(), currentStream(tensor)),
          "round trip");
    return output;
}

} // namespace kvscope::cache
