// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Helpers shared by the kvscope_cache unit tests: building `[batch, heads, tokens, head_dim]` states
// from literal values, reading tensors back as vectors, refusals, and the worked-table runner.

#include "kvscope/cache/AttentionLayer.h"
#include "kvscope/cache/Cache.h"
#include "kvscope/cache/CacheError.h"
#include "kvscope/cache/KeyValueStates.h"
#include "kvscope/cache/MaskSizes.h"

#include "kvscope/config/ModelConfig.h"

#include <ATen/ATen.h>
#include <cmath>
#include <functional>
#include <optional>
#include <gtest/gtest.h>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

namespace kvscope::cache {

/// Readable gtest output for mask sizes (found by argument-dependent lookup).
inline void PrintTo(const MaskSizes& sizes, std::ostream* out) {
    *out << "(" << sizes.kvLength << ", " << sizes.kvOffset << ")";
}

} // namespace kvscope::cache

namespace kvscope::cache::test {

using Values = std::vector<float>;

/// `[1, 1, n, 1]` states holding `values` (batch = heads = head_dim = 1, as in the worked tables).
inline at::Tensor states(const Values& values) {
    return at::tensor(values, at::TensorOptions().dtype(at::kFloat)).view({1, 1, -1, 1});
}

/// `[1, 1, last - first + 1, 1]` states holding first, first + 1, ..., last.
inline at::Tensor rangeStates(int first, int last) {
    Values values;
    for (int value = first; value <= last; ++value) {
        values.push_back(static_cast<float>(value));
    }
    return states(values);
}

/// Every element of `tensor` in row-major order, as floats.
/// `[1, n, 1]` indexer keys of an indexed layer (batch = index_head_dim = 1).
inline at::Tensor indexerKeys(const Values& values) {
    return at::tensor(values, at::TensorOptions().dtype(at::kFloat)).view({1, -1, 1});
}

inline Values values(const at::Tensor& tensor) {
    at::Tensor flat = tensor.detach().to(at::kCPU).to(at::kFloat).contiguous().flatten();
    const float* data = flat.data_ptr<float>();
    return Values(data, data + flat.numel());
}

inline Values negated(Values values) {
    for (float& value : values) {
        value = -value;
    }
    return values;
}

inline const char* kindName(ErrorKind kind) {
    return CacheError(kind, "").kindName();
}

/// Passes when `operation` throws a CacheError of `kind` whose message contains every fragment.
inline ::testing::AssertionResult refuses(const std::function<void()>& operation, ErrorKind kind,
                                          std::initializer_list<std::string> fragments = {}) {
    try {
        operation();
    } catch (const CacheError& error) {
        if (error.kind() != kind) {
            return ::testing::AssertionFailure() << "threw " << error.kindName() << " instead of "
                                                 << kindName(kind) << ": " << error.what();
        }
        const std::string message = error.what();
        for (const std::string& fragment : fragments) {
            if (message.find(fragment) == std::string::npos) {
                return ::testing::AssertionFailure() << "message lacks \"" << fragment << "\": " << message;
            }
        }
        return ::testing::AssertionSuccess();
    } catch (const std::exception& error) {
        return ::testing::AssertionFailure() << "threw a non-CacheError exception: " << error.what();
    }
    return ::testing::AssertionFailure() << "did not throw (expected " << kindName(kind) << ")";
}

/// One row of a worked table (hf-cache.md 1.3): the update's tokens, the mask sizes asked for
/// before it, the keys it returns, the keys stored afterwards and the sequence length afterwards.
struct Step {
    Values input;
    MaskSizes maskBefore;
    Values returned;
    Values stored;
    int64_t seqLength;
};

/// Runs a worked table on a layer with keys = input and values = -input (so that a key/value mix-up
/// shows), checking every column and that the returned length equals the advertised kv length.
inline void runSteps(AttentionLayer& layer, const std::vector<Step>& steps) {
    for (size_t index = 0; index < steps.size(); ++index) {
        const Step& step = steps[index];
        SCOPED_TRACE("step " + std::to_string(index));
        const auto queryLength = static_cast<int64_t>(step.input.size());
        EXPECT_EQ(layer.maskSizes(queryLength), step.maskBefore);
        at::Tensor keys = states(step.input);
        KeyValueStates out = layer.update(keys, -keys);
        EXPECT_EQ(values(out.keys), step.returned);
        EXPECT_EQ(values(out.values), negated(step.returned));
        EXPECT_EQ(out.keys.size(2), step.maskBefore.kvLength);
        EXPECT_EQ(values(layer.keys()), step.stored);
        EXPECT_EQ(values(layer.values()), negated(step.stored));
        EXPECT_EQ(layer.seqLength(), step.seqLength);
    }
}

/// The worked tensor of hf-cache.md 3.1/3.2 (both quantizers' worked examples), shape (1, 1, 2, 8).
inline at::Tensor workedTensor() {
    return at::tensor({0.f, .5f, 1.f, 1.5f, -1.f, -.5f, 2.f, 3.f, .1f, .2f, .3f, .4f, .9f, .8f, .7f, .6f})
        .view({1, 1, 2, 8});
}

/// A tensor's elements as ints (quantized codes).
inline std::vector<int> codes(const at::Tensor& tensor) {
    at::Tensor flat = tensor.to(at::kInt).contiguous().flatten();
    return std::vector<int>(flat.data_ptr<int>(), flat.data_ptr<int>() + flat.numel());
}

/// Element-wise closeness to a worked table's values (1e-6 absolute plus relative).
inline void expectClose(const Values& actual, const std::vector<double>& expected) {
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_NEAR(actual[i], expected[i], 1e-6 + 1e-6 * std::abs(expected[i])) << "element " << i;
    }
}

inline double maxError(const at::Tensor& a, const at::Tensor& b) {
    return (a - b).abs().max().item<double>();
}

/// A text config with these layer types (and a window for the sliding ones).
inline config::ModelConfig configWithTypes(std::vector<std::string> types, std::optional<int64_t> slidingWindow) {
    config::ModelConfig config;
    config.numHiddenLayers = static_cast<int64_t>(types.size());
    config.layerTypes = std::move(types);
    config.slidingWindow = slidingWindow;
    return config;
}

/// The reference class names of a cache's layers, in order.
inline std::vector<std::string> typeNames(const Cache& cache) {
    std::vector<std::string> names;
    for (size_t i = 0; i < cache.size(); ++i) {
        names.push_back(cache.layer(i).typeName());
    }
    return names;
}

} // namespace kvscope::cache::test
