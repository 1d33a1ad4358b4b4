// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/Press.h"

#include <map>
#include <memory>
#include <vector>

namespace kvscope::press {

/// What DecodingPress did after one forward pass of a layer.
struct DecodingStep {
    bool compressed = false;
    /// The ratio the binary search found (0 when the cache already fits).
    double ratio = 0.0;
    /// Hidden rows handed to the base press.
    int64_t bufferLength = 0;
    /// The base press's decision; scores undefined when ratio is 0.
    PressSelection selection;
};

/// kvpress's DecodingPress: every `compressionInterval` forward passes (or at once for a pass of at least
/// `targetSize` tokens) compresses the layer cache back to `targetSize` tokens with a base scorer press,
/// which reads the hidden states buffered since the last compression. State is kept per layer.
class DecodingPress {
public:
    DecodingPress(std::shared_ptr<const Press> base, int64_t compressionInterval = 512, int64_t targetSize = 2048,
                  int64_t bufferSize = 256);
    /// Records one forward pass of layer `inputs.layerIndex` (its hidden rows, if the base reads them) and
    /// says whether the layer compresses now; if so, call compress() with the same pass's inputs.
    bool append(const PressInputs& inputs, int64_t queryLength);
    /// Compresses the layer: `inputs` holds the whole cache (this pass's tokens appended) and this pass's
    /// rotary rows; the base press reads the hidden rows buffered since the last compression.
    DecodingStep compress(const PressInputs& inputs);
    /// The ratio for which `int(length * (1 - ratio)) == target` (kvpress's 20-step binary search).
    static double targetRatio(int64_t length, int64_t target);
    const Press& base() const { return *m_base; }
    int64_t compressionInterval() const { return m_compressionInterval; }
    int64_t targetSize() const { return m_targetSize; }
    void reset() { m_layers.clear(); }

private:
    struct LayerState {
        std::vector<at::Tensor> buffer;
        int64_t count = 0;
    };
    std::shared_ptr<const Press> m_base;
    int64_t m_compressionInterval;
    int64_t m_targetSize;
    int64_t m_bufferSize;
    std::map<int64_t, LayerState> m_layers;
};

} // namespace kvscope::press
