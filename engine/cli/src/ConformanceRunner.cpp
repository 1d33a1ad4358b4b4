// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/ConformanceRunner.h"

#include "kvscope/cli/PressConformanceRunner.h"

#include "kvscope/cache/AttentionLayer.h"
#include "kvscope/cache/CacheError.h"
#include "kvscope/cache/DFlashCache.h"
#include "kvscope/cache/DynamicCache.h"
#include "kvscope/cache/IndexedLayer.h"
#include "kvscope/cache/LayerSpec.h"
#include "kvscope/cache/LinearAttentionLayer.h"
#include "kvscope/cache/MtpCache.h"
#include "kvscope/cache/QuantizedCache.h"
#include "kvscope/cache/StaticCache.h"
#include "kvscope/config/ModelConfig.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <sstream>

namespace kvscope::cli {
namespace {

using nlohmann::json;
using namespace kvscope::cache;

/// A mismatch between the engine and the fixture; caught per fixture and reported with the op index.
struct Mismatch {
    std::string what;
};

std::string shapeText(const at::Tensor& tensor) {
    std::ostringstream out;
    out << tensor.sizes();
    return out.str();
}

void expectTensor(const at::Tensor& actual, const json& expected, double tolerance, const std::string& what) {
    at::Tensor reference = ConformanceRunner::tensorOf(expected);
    if (!actual.defined()) {
        throw Mismatch{what + ": the engine has no tensor, the reference has " + shapeText(reference)};
    }
    if (actual.sizes() != reference.sizes()) {
        throw Mismatch{what + ": shape " + shapeText(actual) + ", reference " + shapeText(reference)};
    }
    if (reference.numel() == 0) {
        return;
    }
    const double difference = (actual.to(at::kCPU, at::kDouble) - reference.to(at::kDouble)).abs().max().item<double>();
    if (!(difference <= tolerance)) {
        throw Mismatch{what + ": max abs difference " + std::to_string(difference) + " > " + std::to_string(tolerance)};
    }
}

template <typename T> void expectEqual(const T& actual, const T& expected, const std::string& what) {
    if (!(actual == expected)) {
        std::ostringstream out;
        out << what << ": engine " << json(actual).dump() << ", reference " << json(expected).dump();
        throw Mismatch{out.str()};
    }
}

at::Tensor indexTensor(const json& values, const at::Device& device) {
    return at::tensor(values.get<std::vector<int64_t>>(), at::kLong).to(device);
}

/// The fixture's layer spec (oracle/FORMAT.md: "type" and the options that type takes).
LayerSpec layerSpec(const json& spec) {
    const std::string name = spec.at("type").get<std::string>();
    const std::optional<LayerType> type = layerTypeFromString(name);
    if (!type) {
        throw Mismatch{"unknown layer type `" + name + "` (allowed: " + allowedLayerTypes() + ")"};
    }
    LayerSpec layer;
    layer.type = *type;
    layer.slidingWindow = spec.value("sliding_window", int64_t{0});
    layer.maxCacheLen = spec.value("max_cache_len", int64_t{0});
    layer.nbits = spec.value("nbits", 4);
    layer.groupSize = spec.value("q_group_size", int64_t{64});
    layer.axisKey = spec.value("axis_key", int64_t{0});
    layer.axisValue = spec.value("axis_value", int64_t{0});
    layer.residualLength = spec.value("residual_length", int64_t{128});
    return layer;
}

/// The object under test: one layer, or one cache of layers.
class Subject {
public:
    Subject(const json& fixture, const at::Device& device) : m_device(device) {
        if (fixture.at("level").get<std::string>() == "layer") {
            const LayerSpec spec = layerSpec(fixture.at("layer"));
            m_layer = makeLayer(spec);
            const bool quantized = spec.type == LayerType::QuantizedMinMax || spec.type == LayerType::QuantizedHqq;
            m_tolerance = quantized ? 1e-5 : 1e-6;
            return;
        }
        m_cache = ConformanceRunner::cacheOf(fixture.at("cache"));
        if (dynamic_cast<const QuantizedCache*>(m_cache.get()) != nullptr) {
            m_tolerance = 1e-5;
        }
    }

    double tolerance() const { return m_tolerance; }
    /// A fixture's input tensor, on the device under test.
    at::Tensor input(const json& value) const { return ConformanceRunner::tensorOf(value).to(m_device); }

    AttentionLayer& attention(const json& op) {
        CacheLayer& target = layerFor(op);
        AttentionLayer* attention = target.asAttention();
        if (attention == nullptr) {
            throw Mismatch{"op addresses a " + target.typeName() + ", which has no key/value cache"};
        }
        return *attention;
    }

    CacheLayer& layerFor(const json& op) {
        if (m_layer) {
            return *m_layer;
        }
        return m_cache->layer(op.at("layer_idx").get<size_t>());
    }

    MaskSizes maskSizes(const json& op) {
        if (m_layer) {
            return attention(op).maskSizes(op.at("query_length").get<int64_t>());
        }
        return m_cache->maskSizes(op.at("query_length").get<int64_t>(), op.at("layer_idx").get<int64_t>());
    }

    KeyValueStates update(const json& op, const at::Tensor& keys, const at::Tensor& values) {
        if (m_layer) {
            return attention(op).update(keys, values);
        }
        return m_cache->update(keys, values, op.at("layer_idx").get<int64_t>());
    }

    Cache* cache() { return m_cache.get(); }
    CacheLayer* layer() { return m_layer.get(); }

    /// Crop, reorder, batch ops and reset, on the layer or on every layer of the cache.
    void apply(const std::string& name, const json& op) {
        if (m_layer) {
            applyTo(*m_layer, name, op, m_device);
            return;
        }
        if (name == "crop") {
            m_cache->crop(op.at("max_length").get<int64_t>());
        } else if (name == "crop_tokens") {
            m_cache->cropTokens(op.at("tokens_to_remove").get<int64_t>());
        } else if (name == "activate_past_recording") {
            m_cache->activatePastRecording();
        } else if (name == "reorder") {
            m_cache->reorder(indexTensor(op.at("beam_idx"), m_device));
        } else if (name == "batch_repeat_interleave") {
            m_cache->batchRepeatInterleave(op.at("repeats").get<int64_t>());
        } else if (name == "batch_select_indices") {
            m_cache->batchSelectIndices(indexTensor(op.at("indices"), m_device));
        } else if (name == "reset") {
            m_cache->reset();
        }
    }

private:
    static void applyTo(CacheLayer& layer, const std::string& name, const json& op, const at::Device& device) {
        if (name == "crop") {
            layer.crop(op.at("max_length").get<int64_t>());
        } else if (name == "crop_tokens") {
            layer.cropTokens(op.at("tokens_to_remove").get<int64_t>());
        } else if (name == "activate_past_recording") {
            layer.activatePastRecording();
        } else if (name == "offload") {
            layer.offload();
        } else if (name == "prefetch") {
            layer.prefetch();
        } else if (name == "reorder") {
            layer.reorder(indexTensor(op.at("beam_idx"), device));
        } else if (name == "batch_repeat_interleave") {
            layer.batchRepeatInterleave(op.at("repeats").get<int64_t>());
        } else if (name == "batch_select_indices") {
            layer.batchSelectIndices(indexTensor(op.at("indices"), device));
        } else if (name == "reset") {
            layer.reset();
        }
    }

    std::unique_ptr<CacheLayer> m_layer;
    std::unique_ptr<Cache> m_cache;
    at::Device m_device;
    double m_tolerance = 1e-6;
};

void expectStored(AttentionLayer& layer, const json& op, double tolerance) {
    if (op.contains("expect_stored_keys")) {
        expectTensor(layer.keys(), op["expect_stored_keys"], tolerance, "stored keys");
        expectTensor(layer.values(), op["expect_stored_values"], tolerance, "stored values");
    } else if (layer.keys().defined() && layer.keys().numel() > 0) {
        throw Mismatch{"stored keys: the engine holds " + shapeText(layer.keys()) + ", the reference holds none"};
    }
}

void runOp(Subject& subject, const json& op) {
    const std::string name = op.at("op").get<std::string>();
    const double tolerance = subject.tolerance();
    if (name == "mask_sizes") {
        const MaskSizes sizes = subject.maskSizes(op);
        const auto expected = op.at("expect").get<std::vector<int64_t>>();
        expectEqual(std::vector<int64_t>{sizes.kvLength, sizes.kvOffset}, expected, "mask sizes");
    } else if (name == "update") {
        const KeyValueStates returned =
            subject.update(op, subject.input(op.at("keys")), subject.input(op.at("values")));
        if (op.contains("expect_keys")) {
            expectTensor(returned.keys, op["expect_keys"], tolerance, "returned keys");
            expectTensor(returned.values, op["expect_values"], tolerance, "returned values");
        }
        AttentionLayer& layer = subject.attention(op);
        if (op.contains("expect_seq_length")) {
            expectEqual(layer.seqLength(), op["expect_seq_length"].get<int64_t>(), "seq length");
        }
        if (op.contains("expect_max_cache_shape")) {
            expectEqual(layer.maxCacheShape(), op["expect_max_cache_shape"].get<int64_t>(), "max cache shape");
        }
        if (subject.layer() != nullptr) {
            expectStored(layer, op, tolerance);
        }
    } else if (name == "update_conv_state" || name == "update_recurrent_state") {
        const bool conv = name == "update_conv_state";
        const at::Tensor input = subject.input(op.at(conv ? "conv_states" : "recurrent_states"));
        const int64_t layerIdx = op.at("layer_idx").get<int64_t>();
        Cache* cache = subject.cache();
        const at::Tensor result =
            conv ? cache->updateConvState(input, layerIdx) : cache->updateRecurrentState(input, layerIdx);
        const char* key = conv ? "expect_conv_states" : "expect_recurrent_states";
        if (op.contains(key)) {
            expectTensor(result, op[key], tolerance, conv ? "conv states" : "recurrent states");
        }
    } else if (name == "has_previous_state") {
        expectEqual(subject.cache()->hasPreviousState(op.at("layer_idx").get<int64_t>()), op.at("expect").get<bool>(),
                    "has_previous_state");
    } else if (name == "crop" || name == "crop_tokens" || name == "activate_past_recording" || name == "offload" ||
               name == "prefetch" || name == "reorder" || name == "batch_repeat_interleave" ||
               name == "batch_select_indices" || name == "reset") {
        subject.apply(name, op);
    } else if (name == "update_indexer") {
        const at::Tensor input = subject.input(op.at("indexer_keys"));
        at::Tensor result;
        if (subject.layer() != nullptr) {
            IndexedLayer* indexed = subject.attention(op).asIndexed();
            if (indexed == nullptr) {
                throw Mismatch{"update_indexer on a " + subject.layer()->typeName() + ", which has no indexer"};
            }
            result = indexed->updateIndexer(input);
        } else {
            result = subject.cache()->updateIndexer(input, op.at("layer_idx").get<int64_t>());
        }
        if (op.contains("expect_indexer_keys")) {
            expectTensor(result, op["expect_indexer_keys"], tolerance, "indexer keys");
        }
    } else if (name == "query_offset") {
        expectEqual(subject.cache()->queryOffset(op.at("layer_idx").get<int64_t>()), op.at("expect").get<int64_t>(),
                    "query offset");
    } else if (name == "set_previous_accepted_tokens") {
        auto* dflash = dynamic_cast<DFlashCache*>(subject.cache());
        if (dflash == nullptr) {
            throw Mismatch{"set_previous_accepted_tokens needs a DFlashCache"};
        }
        dflash->setPreviousAcceptedTokens(op.at("count").get<int64_t>());
    } else if (name == "conv_window") {
        const LinearAttentionLayer* linear = subject.layerFor(op).asLinearAttention();
        if (linear == nullptr) {
            throw Mismatch{"conv_window on a layer without linear-attention states"};
        }
        expectTensor(linear->convStates(), op.at("expect_conv_states"), tolerance, "conv window");
    } else if (name == "state") {
        AttentionLayer& layer = subject.attention(op);
        expectEqual(layer.seqLength(), op.at("expect_seq_length").get<int64_t>(), "seq length");
        expectStored(layer, op, tolerance);
    } else if (name == "cache_state") {
        Cache& cache = *subject.cache();
        expectEqual(cache.seqLength(), op.at("expect_seq_length").get<int64_t>(), "cache seq length");
        expectEqual(cache.isSliding(), op.at("expect_is_sliding").get<std::vector<bool>>(), "is_sliding");
        const json& shapes = op.at("expect_max_cache_shape");
        if (shapes.is_array()) {
            for (size_t index = 0; index < shapes.size(); ++index) {
                expectEqual(cache.maxCacheShape(static_cast<int64_t>(index)), shapes[index].get<int64_t>(),
                            "max cache shape of layer " + std::to_string(index));
            }
        } else {
            for (const auto& [key, value] : shapes.items()) {
                expectEqual(cache.maxCacheShape(std::stoll(key)), value.get<int64_t>(), "max cache shape of layer " + key);
            }
        }
    } else if (name == "get_seq_length") {
        (void)subject.cache()->seqLength(op.at("layer_idx").get<int64_t>());
    } else {
        throw Mismatch{"unknown op `" + name + "`"};
    }
}

} // namespace

at::Tensor ConformanceRunner::tensorOf(const json& value) {
    std::vector<int64_t> shape = value.at("shape").get<std::vector<int64_t>>();
    std::vector<double> data = value.at("data").get<std::vector<double>>();
    std::vector<float> values(data.begin(), data.end());
    return at::tensor(values, at::kFloat).reshape(shape);
}

std::unique_ptr<Cache> ConformanceRunner::cacheOf(const json& spec) {
    const config::ModelConfig config = config::ModelConfig::fromJson(spec.at("config"));
    const std::string type = spec.at("type").get<std::string>();
    if (type == "DynamicCache") {
        return std::make_unique<DynamicCache>(config);
    }
    if (type == "MtpCache") {
        return std::make_unique<MtpCache>(config);
    }
    if (type == "DFlashCache") {
        return std::make_unique<DFlashCache>(config);
    }
    if (type == "StaticCache") {
        return std::make_unique<StaticCache>(config, spec.at("max_cache_len").get<int64_t>());
    }
    if (type == "QuantizedCache") {
        // The reference's QuantizedCache(backend, config, nbits, axis_key, axis_value, q_group_size, residual_length).
        const std::string backend = spec.at("backend").get<std::string>();
        QuantizationSettings settings;
        const auto parsed = config::quantizerBackendFromString(backend);
        if (!parsed) {
            throw std::runtime_error("unknown quantizer backend `" + backend + "` (allowed: " +
                                     config::allowedQuantizerBackends() + ")");
        }
        settings.backend = *parsed;
        settings.nbits = spec.value("nbits", settings.nbits);
        settings.axisKey = spec.value("axis_key", settings.axisKey);
        settings.axisValue = spec.value("axis_value", settings.axisValue);
        settings.groupSize = spec.value("q_group_size", settings.groupSize);
        settings.residualLength = spec.value("residual_length", settings.residualLength);
        return std::make_unique<QuantizedCache>(config, settings);
    }
    throw std::runtime_error("unknown cache type `" + type + "` (allowed: DynamicCache, StaticCache, QuantizedCache, MtpCache, DFlashCache)");
}

FixtureResult ConformanceRunner::runFixture(const json& fixture, const std::string& name) const {
    if (PressConformanceRunner::isPressFixture(fixture)) {
        return PressConformanceRunner(m_device).runFixture(fixture, name);
    }
    FixtureResult result{name, false, {}, std::nullopt, {}, false};
    std::unique_ptr<Subject> subject;
    try {
        subject = std::make_unique<Subject>(fixture, m_device);
    } catch (const Mismatch& mismatch) {
        result.failure = "setup: " + mismatch.what;
        return result;
    } catch (const std::exception& error) {
        result.failure = std::string("setup: ") + error.what();
        return result;
    }
    const json& ops = fixture.at("ops");
    for (size_t index = 0; index < ops.size(); ++index) {
        const json& op = ops[index];
        const std::string opName = op.value("op", std::string("?"));
        const std::string where = "op " + std::to_string(index) + " (" + opName + "): ";
        const bool expectError = op.contains("expect_error");
        try {
            runOp(*subject, op);
            if (expectError) {
                result.failure = where + "the reference refused with " + op["expect_error"].get<std::string>() +
                                 ", the engine accepted";
                return result;
            }
        } catch (const Mismatch& mismatch) {
            result.failure = where + mismatch.what;
            return result;
        } catch (const CacheError& error) {
            if (!expectError) {
                result.failure = where + "unexpected refusal (" + error.kindName() + "): " + error.what();
                return result;
            }
            const std::string expected = op["expect_error"].get<std::string>();
            if (expected != error.kindName()) {
                result.failure = where + "refused with " + error.kindName() + " where the reference raised " + expected +
                                 ": " + error.what();
                return result;
            }
        } catch (const std::exception& error) {
            result.failure = where + "crashed with an unclassified error: " + error.what();
            return result;
        }
    }
    result.passed = true;
    return result;
}

FixtureResult ConformanceRunner::runFile(const std::filesystem::path& path) const {
    std::ifstream in(path);
    if (!in) {
        return {path.filename().string(), false, "cannot open the file", std::nullopt, {}, false};
    }
    json fixture;
    try {
        fixture = json::parse(in);
    } catch (const json::exception& error) {
        return {path.filename().string(),
                false,
                std::string("not valid JSON: ") + error.what(),
                std::nullopt,
                {},
                false};
    }
    return runFixture(fixture, path.filename().string());
}

std::vector<FixtureResult> ConformanceRunner::runDirectory(const std::filesystem::path& directory) const {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(directory)) {
        if (entry.is_regular_file() && entry.path().extension() == ".json") {
            files.push_back(entry.path());
        }
    }
    std::sort(files.begin(), files.end());
    std::vector<FixtureResult> results;
    results.reserve(files.size());
    for (const auto& file : files) {
        results.push_back(runFile(file));
    }
    return results;
}

} // namespace kvscope::cli
