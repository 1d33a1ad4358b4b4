// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/PressConformanceRunner.h"

#include "kvscope/model/TensorOps.h"
#include "kvscope/press/LagKvPress.h"
#include "kvscope/press/PressCatalog.h"
#include "kvscope/press/SimLayerKvPress.h"
#include "kvscope/press/ThinkPress.h"
#include "kvscope/press/TopKSelection.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

namespace kvscope::cli {
namespace {

using nlohmann::json;
using press::PressCatalog;
using press::PressInputs;
using press::TopKSelection;

/// A difference from the reference; caught per fixture and reported with the case or step.
struct PressMismatch {
    std::string what;
};

/// FORMAT.md's tolerances: scores within 1e-5 relative (+1e-12), rotary rows within 1e-5 absolute.
constexpr double scoreTolerance = 1e-5;
constexpr double scoreFloor = 1e-12;
constexpr double rotaryTolerance = 1e-5;
/// Extended kinds: z-normalised scores within 1e-5 absolute (their tie rule is 5e-4 absolute).
constexpr double zScoreTolerance = 1e-5;

std::vector<int64_t> integers(const at::Tensor& tensor) {
    const at::Tensor flat = tensor.to(at::kCPU, at::kLong).contiguous().view(-1);
    return {flat.data_ptr<int64_t>(), flat.data_ptr<int64_t>() + flat.numel()};
}

at::Tensor indicesOf(const json& value) {
    return at::tensor(value.at("data").get<std::vector<int64_t>>(), at::kLong)
        .reshape(value.at("shape").get<std::vector<int64_t>>());
}

void expectSame(const at::Tensor& actual, const at::Tensor& expected, const std::string& what) {
    if (actual.sizes() != expected.sizes() || integers(actual) != integers(expected)) {
        std::ostringstream out;
        out << what << ": engine " << json(integers(actual)).dump() << ", reference " << json(integers(expected)).dump();
        throw PressMismatch{out.str()};
    }
}

template <typename T> void expectEqual(const T& actual, const T& expected, const std::string& what) {
    if (!(actual == expected)) {
        throw PressMismatch{what + ": engine " + json(actual).dump() + ", reference " + json(expected).dump()};
    }
}

/// Compares scores elementwise (exactly for RandomPress; within `absolute` more where the reference is z-scored)
/// and widens `deviation` to the largest relative one.
void expectScores(const at::Tensor& actual, const json& expected, bool exact, double& deviation, const std::string& what,
                  double absolute = 0.0) {
    if (!actual.defined()) {
        throw PressMismatch{what + ": the engine computed no scores"};
    }
    const at::Tensor reference = ConformanceRunner::tensorOf(expected).to(at::kDouble);
    if (actual.sizes() != reference.sizes()) {
        std::ostringstream out;
        out << what << ": shape " << actual.sizes() << ", reference " << reference.sizes();
        throw PressMismatch{out.str()};
    }
    const at::Tensor difference = (actual.to(at::kCPU, at::kDouble) - reference).abs();
    const at::Tensor bound =
        exact ? at::zeros_like(reference) : reference.abs() * scoreTolerance + scoreFloor + absolute;
    const at::Tensor relative = difference / reference.abs().clamp_min(scoreFloor);
    deviation = std::max(deviation, relative.numel() == 0 ? 0.0 : relative.max().item<double>());
    const at::Tensor bad = difference > bound;
    if (bad.any().item<bool>()) {
        const int64_t index = bad.view(-1).nonzero()[0][0].item<int64_t>();
        std::ostringstream out;
        out << what << ": element " << index << " is " << actual.to(at::kCPU, at::kDouble).view(-1)[index].item<double>()
            << ", reference " << reference.view(-1)[index].item<double>();
        throw PressMismatch{out.str()};
    }
}

/// press_args as the catalogue's `key=value` options: numbers and booleans in their JSON spelling.
std::map<std::string, std::string> optionsOf(const json& arguments) {
    std::map<std::string, std::string> options;
    for (const auto& [key, value] : arguments.items()) {
        options[key] = value.is_string() ? value.get<std::string>() : value.dump();
    }
    return options;
}

std::string catalogueName(const std::string& referenceName) {
    const std::optional<std::string> name = PressCatalog::fromReferenceName(referenceName);
    if (!name) {
        throw PressMismatch{"unknown press class `" + referenceName + "`"};
    }
    return *name;
}

/// cos and sin [1, n, D] of `positions`, as the engine's model computes them.
std::pair<at::Tensor, at::Tensor> rotaryRows(const std::vector<int64_t>& positions, const json& model,
                                             const at::Device& device) {
    const at::Tensor ids = at::tensor(positions, at::kLong).unsqueeze(0).to(device);
    const auto [cos, sin] = model::ops::rotary(
        ids, model::ops::inverseFrequencies(model.at("head_dim").get<int64_t>(), model.at("rope_theta").get<double>(),
                                            std::nullopt, device));
    return {cos.squeeze(1), sin.squeeze(1)};
}

class FixtureReplay {
public:
    FixtureReplay(const json& fixture, const at::Device& device) : m_fixture(fixture), m_device(device) {
        const json& model = fixture.at("model");
        m_inputs.numHeads = model.at("num_attention_heads").get<int64_t>();
        m_inputs.numKeyValueHeads = model.at("num_key_value_heads").get<int64_t>();
        m_inputs.headDim = model.at("head_dim").get<int64_t>();
        m_inputs.layerIndex = model.at("layer_idx").get<int64_t>();
        m_inputs.numLayers = model.at("num_hidden_layers").get<int64_t>();
        m_inputs.ropeTheta = model.at("rope_theta").get<double>();
        const json& inputs = fixture.at("inputs");
        if (inputs.contains("q_proj_weight")) {
            m_inputs.queryWeight = tensor(inputs["q_proj_weight"]);
        }
        if (inputs.contains("k_proj_weight")) {
            m_inputs.keyWeight = tensor(inputs["k_proj_weight"]);
        }
    }

    double run() {
        if (m_fixture.at("kind").get<std::string>() == "prefill") {
            prefill();
        } else {
            decoding();
        }
        return m_deviation;
    }

private:
    at::Tensor tensor(const json& value) const { return ConformanceRunner::tensorOf(value).to(m_device); }

    void prefill() {
        const json& inputs = m_fixture.at("inputs");
        m_inputs.keys = tensor(inputs.at("keys"));
        m_inputs.values = tensor(inputs.at("values"));
        if (inputs.contains("hidden_states")) {
            m_inputs.hiddenStates = tensor(inputs["hidden_states"]);
        }
        if (inputs.contains("attentions")) {
            m_inputs.attentions = tensor(inputs["attentions"]);
        }
        if (inputs.contains("cos")) {
            // The engine uses its own rotary rows; they must match HF's within float32 accuracy.
            std::vector<int64_t> positions(static_cast<size_t>(m_inputs.keys.size(2)));
            std::iota(positions.begin(), positions.end(), 0);
            std::tie(m_inputs.cos, m_inputs.sin) = rotaryRows(positions, m_fixture.at("model"), m_device);
            for (const char* key : {"cos", "sin"}) {
                const at::Tensor mine = std::string(key) == "cos" ? m_inputs.cos : m_inputs.sin;
                const double error = (mine.to(at::kCPU, at::kDouble) - ConformanceRunner::tensorOf(inputs[key]).to(at::kDouble))
                                         .abs().max().item<double>();
                if (!(error <= rotaryTolerance)) {
                    throw PressMismatch{std::string(key) + ": off by " + std::to_string(error)};
                }
            }
        }
        const std::string press = m_fixture.at("press").get<std::string>();
        for (const json& testCase : m_fixture.at("cases")) {
            if (press == "SimLayerKVPress") {
                simLayerCase(testCase);
                continue;
            }
            const double ratio = testCase.at("compression_ratio").get<double>();
            const std::string where = "ratio " + json(ratio).dump() + ": ";
            if (press == "AdaKVPress") {
                adaKvCase(testCase, ratio, where);
                continue;
            }
            if (press == "ThinKPress") {
                thinkCase(testCase, ratio, where);
                continue;
            }
            const std::string name = catalogueName(press);
            const auto scorer = PressCatalog::scorer(name, optionsOf(m_fixture.at("press_args")));
            // kvpress's draw from torch's global RNG, recorded (FORMAT.md "Extended kinds").
            m_inputs.randomMatrix = testCase.contains("sketch")              ? tensor(testCase["sketch"])
                                    : testCase.contains("random_projection") ? tensor(testCase["random_projection"])
                                                                             : at::Tensor();
            const press::PressSelection selection = scorer->select(m_inputs, ratio);
            expectEqual(selection.keptCount, testCase.at("n_kept").get<int64_t>(), where + "n_kept");
            // z-scored presses: scores near 0 carry float32's absolute error of the mean, not a relative one;
            // leverage also kvpress's own float32 deviation from float64 (recorded per case).
            const bool zScored = name == "non_causal_attention" || name == "leverage" || name == "compactor";
            const double absolute = (zScored ? zScoreTolerance : 0.0) +
                                    10.0 * testCase.value("leverage_float64_deviation", 0.0);
            expectScores(selection.scores, testCase.at("scores"), name == "random", m_deviation, where + "scores",
                         absolute);
            if (testCase.contains("lag_scores")) {
                const auto lag = std::dynamic_pointer_cast<const press::LagKvPress>(scorer);
                expectScores(lag ? lag->lagScores(m_inputs) : at::Tensor(), testCase["lag_scores"], false, m_deviation,
                             where + "lag scores");
            }
            expectSame(selection.keptIndices, indicesOf(testCase.at("kept_indices_canonical")), where + "kept (canonical)");
            expectRawOrder(selection, indicesOf(testCase.at("kept_indices")), where);
        }
    }

    /// kvpress's raw order must be ours except inside runs of exactly equal reference scores.
    void expectRawOrder(const press::PressSelection& selection, const at::Tensor& raw, const std::string& where) const {
        const at::Tensor ours = selection.keptIndices.to(at::kCPU);
        const at::Tensor scores = selection.scores.to(at::kCPU);
        expectSame(std::get<0>(at::sort(ours, -1)), std::get<0>(at::sort(raw, -1)), where + "kept set (raw)");
        const at::Tensor ourScores = scores.gather(-1, ours);
        const at::Tensor rawScores = scores.gather(-1, raw);
        if (!at::equal(ourScores, rawScores)) {
            throw PressMismatch{where + "kvpress's kept order differs from the canonical one outside a tie"};
        }
    }

    /// ThinK: the channel scores, the pruned channels per head and the keys after pruning; no token dropped.
    void thinkCase(const json& testCase, double ratio, const std::string& where) {
        const press::ThinkPress think(ratio, m_fixture.at("press_args").at("window_size").get<int64_t>());
        const press::ChannelPruning pruning = think.prune(m_inputs);
        expectEqual(think.prunedCount(m_inputs.headDim), testCase.at("n_pruned_channels").get<int64_t>(),
                    where + "n_pruned_channels");
        expectEqual(think.reportedRatio(), testCase.at("press_compression_ratio").get<double>(),
                    where + "press compression ratio");
        expectScores(pruning.channelScores, testCase.at("channel_scores"), false, m_deviation, where + "channel scores");
        expectSame(pruning.prunedChannels, indicesOf(testCase.at("pruned_channels")), where + "pruned channels");
        const at::Tensor reference = ConformanceRunner::tensorOf(testCase.at("output_keys"));
        if (!at::equal(pruning.keys.to(at::kCPU, reference.scalar_type()), reference)) {
            throw PressMismatch{where + "the keys after pruning differ"};
        }
    }

    /// SimLayerKV: the lazy score, the decision and the kept slots at each threshold.
    void simLayerCase(const json& testCase) {
        const double threshold = testCase.at("lazy_threshold").get<double>();
        const std::string where = "lazy_threshold " + json(threshold).dump() + ": ";
        const json& arguments = m_fixture.at("press_args");
        const press::SimLayerKvPress press(threshold, arguments.at("n_last").get<int64_t>(),
                                           arguments.at("n_recent").get<int64_t>(),
                                           arguments.at("n_initial").get<int64_t>());
        const double reference = testCase.at("lazy_score").get<double>();
        const double score = press.lazyScore(m_inputs);
        if (!(std::abs(score - reference) <= std::abs(reference) * scoreTolerance + scoreFloor)) {
            throw PressMismatch{where + "lazy score " + json(score).dump() + ", reference " + json(reference).dump()};
        }
        const press::LazyLayerDecision decision = press.decide(m_inputs);
        expectEqual(decision.lazy, testCase.at("lazy").get<bool>(), where + "lazy");
        expectEqual(decision.keptIndices.size(2), testCase.at("n_kept").get<int64_t>(), where + "n_kept");
        expectSame(decision.keptIndices, indicesOf(testCase.at("kept_indices")), where + "kept");
        expectEqual(decision.reportedRatio, testCase.at("press_compression_ratio").get<double>(),
                    where + "press compression ratio");
    }

    void adaKvCase(const json& testCase, double ratio, const std::string& where) {
        std::map<std::string, std::string> options = optionsOf(m_fixture.at("base_press_args"));
        options["base"] = catalogueName(m_fixture.at("base_press").get<std::string>());
        for (const auto& [key, value] : optionsOf(m_fixture.at("press_args"))) {
            options[key] = value;
        }
        const press::AdaKvMask mask = PressCatalog::adaKv(options).mask(m_inputs, ratio);
        expectEqual(std::vector<int64_t>{mask.keptCount, mask.safeCount, mask.prunedCount},
                    std::vector<int64_t>{testCase.at("n_kept").get<int64_t>(), testCase.at("n_safe").get<int64_t>(),
                                         testCase.at("n_pruned").get<int64_t>()},
                    where + "n_kept, n_safe, n_pruned");
        expectScores(mask.scores, testCase.at("scores"), false, m_deviation, where + "scores");
        const at::Tensor masked = mask.masked.to(at::kCPU);
        std::vector<std::vector<std::vector<int64_t>>> lists(static_cast<size_t>(masked.size(0)));
        for (int64_t batch = 0; batch < masked.size(0); ++batch) {
            for (int64_t head = 0; head < masked.size(1); ++head) {
                lists[static_cast<size_t>(batch)].push_back(integers(masked[batch][head].nonzero().view(-1)));
            }
        }
        expectEqual(lists, testCase.at("masked_indices").get<std::vector<std::vector<std::vector<int64_t>>>>(),
                    where + "masked indices");
    }

    void decoding() {
        const json& inputs = m_fixture.at("inputs");
        std::map<std::string, std::string> options = optionsOf(m_fixture.at("base_press_args"));
        options["base"] = catalogueName(m_fixture.at("base_press").get<std::string>());
        for (const auto& [key, value] : optionsOf(m_fixture.at("press_args"))) {
            options[key] = value;
        }
        press::DecodingPress decoding = PressCatalog::decoding(options);
        at::Tensor keys = tensor(inputs.at("prefill_keys"));
        at::Tensor values = tensor(inputs.at("prefill_values"));
        const int64_t batch = keys.size(0);
        const int64_t heads = keys.size(1);
        at::Tensor positions =
            at::arange(keys.size(2), at::TensorOptions().dtype(at::kLong).device(m_device)).expand({batch, heads, -1});
        const json& steps = m_fixture.at("steps");
        for (size_t index = 0; index < steps.size(); ++index) {
            const json& step = steps[index];
            const std::string where = "step " + std::to_string(index) + ": ";
            const auto stepPositions = step.at("position_ids").get<std::vector<int64_t>>();
            const int64_t queryLength = step.at("q_len").get<int64_t>();
            keys = at::cat({keys, tensor(step.at("keys"))}, 2);
            values = at::cat({values, tensor(step.at("values"))}, 2);
            positions = at::cat({positions, at::tensor(stepPositions, at::kLong).to(m_device).expand({batch, heads, -1})}, 2);
            PressInputs pass = m_inputs;
            pass.keys = keys;
            pass.values = values;
            if (step.contains("hidden_states")) {
                pass.hiddenStates = tensor(step["hidden_states"]);
            }
            std::tie(pass.cos, pass.sin) = rotaryRows(stepPositions, m_fixture.at("model"), m_device);
            const bool due = decoding.append(pass, queryLength);
            expectEqual(due, step.at("expect_compressed").get<bool>(), where + "compressed");
            if (due) {
                // Same tokens as kvpress, then kvpress's slot order (torch.topk's tie order; FORMAT.md).
                const at::Tensor before = indicesOf(step.at("expect_positions_before")).to(m_device);
                expectSame(std::get<0>(at::sort(positions, -1)), std::get<0>(at::sort(before, -1)),
                           where + "cached positions before compression");
                const auto slotsOf = [](const at::Tensor& tensor) { return std::get<1>(at::sort(tensor, -1)); };
                const at::Tensor order = slotsOf(positions).gather(-1, slotsOf(slotsOf(before)));
                pass.keys = keys = TopKSelection::gather(keys, order);
                pass.values = values = TopKSelection::gather(values, order);
                positions = positions.gather(-1, order);
                const press::DecodingStep result = decoding.compress(pass);
                expectEqual(result.bufferLength, step.at("expect_buffer_len").get<int64_t>(), where + "buffer length");
                expectEqual(result.ratio, step.at("expect_compression_ratio").get<double>(), where + "compression ratio");
                if (result.ratio > 0.0) {
                    expectScores(result.selection.scores, step.at("expect_scores"), false, m_deviation, where + "scores");
                    const at::Tensor kept = result.selection.keptIndices;
                    expectSame(kept, indicesOf(step.at("expect_kept_indices_canonical")), where + "kept (canonical)");
                    keys = TopKSelection::gather(keys, kept);
                    values = TopKSelection::gather(values, kept);
                    positions = positions.gather(-1, kept);
                    expectSame(std::get<0>(at::sort(positions, -1)),
                               std::get<0>(at::sort(indicesOf(step.at("expect_kept_positions")), -1)),
                               where + "kept positions");
                }
            }
            expectEqual(keys.size(2), step.at("expect_cache_len").get<int64_t>(), where + "cache length");
        }
    }

    const json& m_fixture;
    at::Device m_device;
    PressInputs m_inputs;
    double m_deviation = 0.0;
};

} // namespace

bool PressConformanceRunner::isPressFixture(const json& fixture) {
    if (!fixture.is_object() || !fixture.contains("press") || !fixture.contains("kind")) {
        return false;
    }
    const json& kind = fixture["kind"];
    return kind.is_string() && (kind.get<std::string>() == "prefill" || kind.get<std::string>() == "decoding");
}

FixtureResult PressConformanceRunner::runFixture(const json& fixture, const std::string& name) const {
    FixtureResult result{name, false, {}, std::nullopt};
    try {
        result.scoreDeviation = FixtureReplay(fixture, m_device).run();
        result.passed = true;
    } catch (const PressMismatch& mismatch) {
        result.failure = mismatch.what;
    } catch (const std::exception& error) {
        result.failure = std::string("refused or malformed: ") + error.what();
    }
    return result;
}

} // namespace kvscope::cli
