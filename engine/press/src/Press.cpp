// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/Press.h"

#include "kvscope/config/PressDescriptions.h"
#include "kvscope/model/TensorOps.h"
#include "kvscope/press/TopKSelection.h"

#include <ATen/ATen.h>
#include <stdexcept>

namespace kvscope::press {

std::string Press::displayName() const {
    std::string display = referenceName();
    const std::string suffix = "Press";
    if (display.size() > suffix.size() &&
        display.compare(display.size() - suffix.size(), suffix.size(), suffix) == 0) {
        display.resize(display.size() - suffix.size());
    }
    return display;
}

void Press::refuseLongerThanPrompt(const std::string& option, int64_t value, int64_t length) const {
    throw std::invalid_argument(
        config::PressDescriptions::promptTooShort(displayName(), option, value, length));
}

int64_t Press::keptCount(int64_t length, double ratio, const PressInputs&) const {
    return static_cast<int64_t>(static_cast<double>(length) * (1.0 - ratio));
}

PressSelection Press::select(const PressInputs& inputs, double ratio) const {
    if (!(ratio >= 0.0 && ratio < 1.0)) {
        throw std::invalid_argument("compression ratio " + std::to_string(ratio) + " is outside [0, 1)");
    }
    require(inputs.keys, "keys", name());
    const int64_t length = inputs.keys.size(2);
    PressSelection selection;
    if (ratio == 0.0) {
        selection.keptCount = length;
        selection.keptIndices = at::arange(length, inputs.keys.options().dtype(at::kLong))
                                    .expand({inputs.keys.size(0), inputs.keys.size(1), length})
                                    .contiguous();
        return selection;
    }
    selection.keptCount = keptCount(length, ratio, inputs);
    selection.scores = scoreAt(inputs, selection.keptCount, ratio);
    selection.keptIndices = TopKSelection::largest(selection.scores, selection.keptCount);
    return selection;
}

at::Tensor Press::scoreAt(const PressInputs& inputs, int64_t keptCount, double) const {
    return score(inputs, keptCount);
}

std::map<std::string, at::Tensor> Press::details(const PressInputs&) const {
    return {};
}

at::Tensor Press::queries(const PressInputs& inputs, int64_t rows) {
    const at::Tensor hidden = inputs.hiddenStates.narrow(1, inputs.hiddenStates.size(1) - rows, rows);
    const at::Tensor query = model::ops::splitHeads(
        model::ops::linear(hidden, inputs.queryWeight, inputs.queryBias), inputs.numHeads);
    return inputs.queryNormWeight.defined()
               ? model::ops::rmsNorm(query, inputs.queryNormWeight, inputs.normEpsilon, inputs.normAddsOne)
               : query;
}

at::Tensor Press::keysBeforeRotation(const PressInputs& inputs, int64_t first, int64_t rows) {
    require(inputs.keyWeight, "key projection", "pre-RoPE key");
    const at::Tensor hidden = inputs.hiddenStates.narrow(1, first, rows);
    const at::Tensor keys = model::ops::splitHeads(
        model::ops::linear(hidden, inputs.keyWeight, inputs.keyBias), inputs.numKeyValueHeads);
    return inputs.keyNormWeight.defined()
               ? model::ops::rmsNorm(keys, inputs.keyNormWeight, inputs.normEpsilon, inputs.normAddsOne)
               : keys;
}

at::Tensor Press::repeatKv(const at::Tensor& keys, int64_t numHeads) {
    const int64_t groups = numHeads / keys.size(1);
    return groups > 1 ? keys.repeat_interleave(groups, 1) : keys;
}

at::Tensor Press::zNormalized(const at::Tensor& scores) {
    return (scores - scores.mean()) / scores.std().clamp_min(1e-6);
}

at::Tensor Press::groupMean(const at::Tensor& perHead, int64_t numKeyValueHeads) {
    std::vector<int64_t> shape = perHead.sizes().vec();
    const int64_t groups = shape[1] / numKeyValueHeads;
    shape[1] = groups;
    shape.insert(shape.begin() + 1, numKeyValueHeads);
    return perHead.reshape(shape).mean(2);
}

at::Tensor Press::withPads(const at::Tensor& scores, int64_t count, bool before) {
    // kvpress pads with `scores.max().item() + 1`: a Python float, added in double, then stored in the dtype.
    const double pad = scores.max().item<double>() + 1.0;
    at::Tensor pads = at::full({scores.size(0), scores.size(1), count}, pad, scores.options());
    return before ? at::cat({pads, scores}, -1) : at::cat({scores, pads}, -1);
}

void Press::requirePrefillRows(const PressInputs& inputs) const {
    const int64_t length = inputs.keys.size(2);
    if (inputs.hiddenStates.size(1) != length || (inputs.cos.defined() && inputs.cos.size(-2) != length)) {
        throw std::invalid_argument(displayName() +
                                    " scores the prefill only (as many hidden rows as cached tokens)");
    }
}

void Press::require(const at::Tensor& tensor, const char* what, const std::string& press) {
    if (!tensor.defined()) {
        throw std::invalid_argument("the " + press + " press reads the layer's " + what +
                                    ", which were not given");
    }
}

} // namespace kvscope::press
