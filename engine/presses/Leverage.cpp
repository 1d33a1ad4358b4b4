// SPDX-License-Identifier: GPL-3.0-or-later
// LeverageScore (kvpress's LeverageScorePress): statistical leverage of the pre-RoPE keys.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(leverage) {
    kvscope::config::PressDescription press;
    press.name = "leverage";
    press.referenceName = "LeverageScorePress";
    press.displayName = "LeverageScore";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "statistical leverage of each pre-RoPE key under a random sketch (z-normalised)";
    press.options = {{"sketch_dimension", "int", "48", "columns of the random Gaussian sketch"},
                     {"seed", "int", "0", "seed of the sketch (kvpress draws it from torch's global RNG)"}};
    press.sentence = "the {dropped} whose pre-RoPE keys had the lowest leverage (random sketch of "
                     "{sketch_dimension} columns, seed {seed}) were dropped";
    press.policy.queries = true; // the hidden states
    press.policy.keyProjection = true;
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/LeverageScorePress.h"
#include "kvscope/press/PressFactory.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <cmath>
#include <stdexcept>

namespace kvscope::press {

LeverageScorePress::LeverageScorePress(int64_t sketchDimension, uint64_t seed)
    : m_sketchDimension(sketchDimension), m_seed(seed) {
    if (sketchDimension < 1) {
        throw std::invalid_argument("LeverageScore's sketch_dimension must be at least 1, got " +
                                    std::to_string(sketchDimension));
    }
}

at::Tensor LeverageScorePress::sketch(const PressInputs& inputs, int64_t sketchDimension, uint64_t seed) {
    const std::vector<int64_t> shape = {inputs.keys.size(0), inputs.numKeyValueHeads, inputs.headDim,
                                        sketchDimension};
    if (inputs.randomMatrix.defined()) {
        if (inputs.randomMatrix.sizes() != at::IntArrayRef(shape)) {
            throw std::invalid_argument("the recorded sketch has the wrong shape for this layer");
        }
        return inputs.randomMatrix;
    }
    // torch.randn on a CPU generator seeded per layer, so that layers draw different sketches.
    at::Generator generator = at::detail::createCPUGenerator(seed + static_cast<uint64_t>(inputs.layerIndex));
    return at::randn(shape, generator, at::TensorOptions().dtype(at::kFloat)) *
           (1.0 / std::sqrt(static_cast<double>(sketchDimension)));
}

at::Tensor LeverageScorePress::sliceScores(const PressInputs& inputs, int64_t first, int64_t rows,
                                           int64_t sketchDimension, uint64_t seed) {
    // In float64: kvpress's float32 solve is the less accurate side (FORMAT.md, leverage_float64_deviation).
    const at::Tensor keys = keysBeforeRotation(inputs, first, rows).to(at::kDouble);
    const at::Tensor centred = keys - keys.mean(-2, /*keepdim=*/true);
    const at::Tensor x =
        at::matmul(centred, sketch(inputs, sketchDimension, seed).to(keys.device(), at::kDouble));
    const at::Tensor xt = x.transpose(-2, -1);
    const at::Tensor gram = at::matmul(xt, x);
    const at::Tensor symmetric = 0.5 * (gram + gram.transpose(-2, -1));
    const at::Tensor identity = at::eye(sketchDimension, symmetric.options());
    // kvpress's chol_with_jitter: 1e-2, then ten times more on each failure, five tries.
    double jitter = 1e-2;
    at::Tensor lower;
    for (int attempt = 0; attempt < 5 && !lower.defined(); ++attempt) {
        auto [factor, info] = at::linalg_cholesky_ex(symmetric + jitter * identity);
        if (info.eq(0).all().item<bool>()) {
            lower = factor;
        }
        jitter *= 10.0;
    }
    if (!lower.defined()) {
        throw std::runtime_error("LeverageScore: the sketched key Gram matrix is not positive definite");
    }
    const at::Tensor solved = at::cholesky_solve(xt, lower, /*upper=*/false);
    return zNormalized((x * solved.transpose(-2, -1)).sum(-1).clamp_min(0.0));
}

at::Tensor LeverageScorePress::score(const PressInputs& inputs, int64_t) const {
    require(inputs.hiddenStates, "hidden states", name());
    requirePrefillRows(inputs);
    const int64_t length = inputs.keys.size(2);
    return sliceScores(inputs, 0, length, m_sketchDimension, m_seed).to(inputs.keys.scalar_type());
}

} // namespace kvscope::press

KVSCOPE_PRESS_FACTORY(leverage) {
    kvscope::press::PressFactory factory;
    factory.scorer = [](const kvscope::press::PressOptions& options) {
        return std::make_shared<kvscope::press::LeverageScorePress>(
            options.integer("sketch_dimension", 1), static_cast<uint64_t>(options.integer("seed", 0)));
    };
    return factory;
}
#endif
