// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/PressConformanceRunner.h"

#include "kvscope/config/PressDescriptions.h"
#include "kvscope/model/TensorOps.h"
#include "kvscope/press/PressCatalog.h"
#include "kvscope/press/TopKSelection.h"

#include <ATen/ATen.h>
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
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

template <typename T> void expectPressEqual(const T& actual, const T& expected, const std::string& what) {
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
    // Relative to each score, with a floor of a tenth of that relative to the largest: a score that is a small
    // difference of large terms (KeyRerotation's re-rotated keys) carries the float32 error of its terms; LibTorch
    // 2.13's kernels put 3e-8 on a score of 7e-4 (4e-5 of it) among scores 30 times larger and more.
    const double largest = reference.numel() == 0 ? 0.0 : reference.abs().max().item<double>();
    const at::Tensor bound = exact ? at::zeros_like(reference)
                                   : reference.abs() * scoreTolerance + 0.1 * scoreTolerance * largest + scoreFloor +
                                         absolute;
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

/// A press the fixture names (its own, a base, a stage) that no registration names: not a mismatch.
struct PressNotImplemented {
    std::string what;
};

std::string catalogueName(const std::string& referenceName) {
    const std::optional<std::string> name = PressCatalog::fromReferenceName(referenceName);
    if (!name) {
        throw PressNotImplemented{"not implemented: no registered press is kvpress's " + referenceName};
    }
    return *name;
}

/// The scenario's kind: the fixture's name without `press_NNN_` (`press_009_adakv_snapkv` -> `adakv_snapkv`).
std::string kindOf(const json& fixture, const std::string& file) {
    std::string name = fixture.value("name", file);
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) {
        name.resize(name.size() - 5);
    }
    const std::size_t prefix = name.rfind("press_", 0) == 0 ? name.find('_', 6) : std::string::npos;
    return prefix != std::string::npos ? name.substr(prefix + 1) : name;
}

/// A registered press's options for a fixture: press_args, then the base press (`base`, its arguments as
/// `base.NAME`) where the fixture names one.
std::map<std::string, std::string> registeredOptions(const json& fixture) {
    std::map<std::string, std::string> options = optionsOf(fixture.at("press_args"));
    if (fixture.contains("base_press") && !fixture.contains("decoding_press")) {
        options["base"] = catalogueName(fixture["base_press"].get<std::string>());
        for (const auto& [key, value] : optionsOf(fixture.value("base_press_args", json::object()))) {
            options["base." + key] = value;
        }
    }
    if (fixture.contains("presses")) {
        // ComposedPress: its stages `first` and `second`, their arguments as `first.NAME`, `second.NAME`; the
        // second's fixed ratio (ThinK's is its key_channel_compression_ratio).
        const json& presses = fixture["presses"];
        for (size_t stage = 0; stage < presses.size() && stage < 2; ++stage) {
            const std::string prefix = stage == 0 ? "first" : "second";
            const std::string name = catalogueName(presses[stage].at("press").get<std::string>());
            options[prefix] = name;
            for (const auto& [key, value] : optionsOf(presses[stage].value("press_args", json::object()))) {
                options[prefix + "." + key] = value;
            }
            for (const char* ratio : {"compression_ratio", "key_channel_compression_ratio"}) {
                if (stage == 1 && presses[stage].contains(ratio) && presses[stage][ratio].is_number()) {
                    options["second_ratio"] = presses[stage][ratio].dump();
                    for (const config::PressOption& option :
                         config::PressDescriptions::describe(name).options) {
                        if (option.name == ratio) {
                            options["second." + option.name] = presses[stage][ratio].dump();
                        }
                    }
                }
            }
        }
    }
    return options;
}

/// A per-case value the fixture records as a press option (PerLayerCompression's compression_ratios): a list
/// as comma-separated numbers.
std::string optionText(const json& value) {
    if (!value.is_array()) {
        return value.is_string() ? value.get<std::string>() : value.dump();
    }
    std::string text;
    for (const json& item : value) {
        text += (text.empty() ? "" : ",") + item.dump();
    }
    return text;
}

/// Compares a press's named intermediate result with the fixture's field of that name: float tensors within
/// the score tolerance, counts and index lists exactly, other numbers exactly.
void expectDetail(const at::Tensor& actual, const json& expected, double& deviation,
                  const std::string& what) {
    if (expected.is_object() && expected.contains("shape")) {
        if (at::isFloatingType(actual.scalar_type()) || expected.at("data").empty() ||
            !expected.at("data")[0].is_number_integer()) {
            expectScores(actual.to(at::kDouble), expected, false, deviation, what);
        } else {
            expectSame(actual, indicesOf(expected), what);
        }
    } else if (expected.is_number_integer() || expected.is_boolean()) {
        expectPressEqual(actual.to(at::kCPU, at::kLong).item<int64_t>(),
                    expected.is_boolean() ? int64_t{expected.get<bool>()} : expected.get<int64_t>(), what);
    } else if (expected.is_number() && actual.scalar_type() == at::kDouble) {
        // Computed in double as kvpress does (DecodingPress's binary-searched ratio): exact.
        expectPressEqual(actual.to(at::kCPU).item<double>(), expected.get<double>(), what);
    } else if (expected.is_number()) {
        // A float32 result (SimLayerKV's lazy score): the score tolerance.
        const double value = actual.to(at::kCPU, at::kDouble).item<double>();
        const double reference = expected.get<double>();
        if (!(std::abs(value - reference) <= std::abs(reference) * scoreTolerance + scoreFloor)) {
            throw PressMismatch{what + ": engine " + json(value).dump() + ", reference " +
                                json(reference).dump()};
        }
    } else if (expected.is_array()) {
        std::vector<int64_t> flat;
        std::function<void(const json&)> flatten = [&](const json& value) {
            if (value.is_array()) {
                for (const json& item : value) {
                    flatten(item);
                }
            } else {
                flat.push_back(value.get<int64_t>());
            }
        };
        flatten(expected);
        expectPressEqual(integers(actual), flat, what);
    }
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
        if (inputs.contains("o_proj_weight")) {
            m_inputs.outputWeight = tensor(inputs["o_proj_weight"]);
        }
        if (inputs.contains("k_proj_weight")) {
            m_inputs.keyWeight = tensor(inputs["k_proj_weight"]);
        }
    }

    double run() {
        const std::string press = m_fixture.at("press").get<std::string>();
        const config::PressDescription& registered =
            config::PressDescriptions::describe(catalogueName(press));
        const bool classic = press == "AdaKVPress" || press == "DecodingPress" ||
                             (registered.kind == "scorer" && !m_fixture.contains("base_press"));
        if (m_fixture.at("kind").get<std::string>() == "prefill") {
            classic ? prefill() : registeredPrefill(registered.name);
        } else {
            classic ? decoding() : registeredDecoding(registered.name);
        }
        return m_deviation;
    }

private:
    at::Tensor tensor(const json& value) const { return ConformanceRunner::tensorOf(value).to(m_device); }

    void loadPrefill() {
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
    }

    void prefill() {
        loadPrefill();
        const std::string press = m_fixture.at("press").get<std::string>();
        for (const json& testCase : m_fixture.at("cases")) {
            const double ratio = testCase.at("compression_ratio").get<double>();
            const std::string where = "ratio " + json(ratio).dump() + ": ";
            if (press == "AdaKVPress") {
                adaKvCase(testCase, ratio, where);
                continue;
            }
            const std::string name = catalogueName(press);
            const auto scorer = PressCatalog::scorer(name, optionsOf(m_fixture.at("press_args")));
            m_inputs.randomMatrix = recordedMatrix(testCase);
            const press::PressSelection selection = scorer->select(m_inputs, ratio);
            expectPressEqual(selection.keptCount, testCase.at("n_kept").get<int64_t>(), where + "n_kept");
            expectScores(selection.scores, testCase.at("scores"), name == "random", m_deviation,
                         where + "scores", absoluteTolerance(name, testCase));
            // The scorer's named intermediate results (LagKV's lag_scores) against the case's fields.
            const std::map<std::string, at::Tensor> details = scorer->details(m_inputs);
            for (const auto& [field, value] : testCase.items()) {
                if (field.find("scores") != std::string::npos && field != "scores") {
                    const auto found = details.find(field);
                    expectScores(found != details.end() ? found->second : at::Tensor(), value, false,
                                 m_deviation, where + field);
                }
            }
            expectSame(selection.keptIndices, indicesOf(testCase.at("kept_indices_canonical")), where + "kept (canonical)");
            expectRawOrder(selection.keptIndices, selection.scores, indicesOf(testCase.at("kept_indices")),
                           where);
        }
    }

    /// kvpress's draw from torch's global RNG, recorded per case (FORMAT.md "Extended kinds"):
    /// LeverageScore's and Compactor's `sketch`, CUR's `random_projection`; undefined where the case has
    /// none.
    at::Tensor recordedMatrix(const json& testCase) const {
        return testCase.contains("sketch")              ? tensor(testCase["sketch"])
               : testCase.contains("random_projection") ? tensor(testCase["random_projection"])
                                                        : at::Tensor();
    }

    /// The absolute slack on top of the relative score tolerance: z-scored presses' scores near 0 carry
    /// float32's absolute error of the mean, not a relative one; leverage also kvpress's own float32
    /// deviation from float64 (recorded per case).
    static double absoluteTolerance(const std::string& name, const json& testCase) {
        const bool zScored = name == "non_causal_attention" || name == "leverage" || name == "compactor";
        return (zScored ? zScoreTolerance : 0.0) + 10.0 * testCase.value("leverage_float64_deviation", 0.0);
    }

    /// kvpress's raw order must be ours except inside runs of exactly equal reference scores.
    static void expectRawOrder(const at::Tensor& kept, const at::Tensor& keptScores, const at::Tensor& raw,
                               const std::string& where) {
        const at::Tensor ours = kept.to(at::kCPU);
        const at::Tensor scores = keptScores.to(at::kCPU);
        expectSame(std::get<0>(at::sort(ours, -1)), std::get<0>(at::sort(raw, -1)), where + "kept set (raw)");
        const at::Tensor ourScores = scores.gather(-1, ours);
        const at::Tensor rawScores = scores.gather(-1, raw);
        if (!at::equal(ourScores, rawScores)) {
            throw PressMismatch{where + "kvpress's kept order differs from the canonical one outside a tie"};
        }
    }

    void adaKvCase(const json& testCase, double ratio, const std::string& where) {
        std::map<std::string, std::string> options = optionsOf(m_fixture.at("base_press_args"));
        options["base"] = catalogueName(m_fixture.at("base_press").get<std::string>());
        for (const auto& [key, value] : optionsOf(m_fixture.at("press_args"))) {
            options[key] = value;
        }
        const press::AdaKvMask mask = PressCatalog::adaKv(options).mask(m_inputs, ratio);
        expectPressEqual(std::vector<int64_t>{mask.keptCount, mask.safeCount, mask.prunedCount},
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
        expectPressEqual(lists, testCase.at("masked_indices").get<std::vector<std::vector<std::vector<int64_t>>>>(),
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
            expectPressEqual(due, step.at("expect_compressed").get<bool>(), where + "compressed");
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
                expectPressEqual(result.bufferLength, step.at("expect_buffer_len").get<int64_t>(), where + "buffer length");
                expectPressEqual(result.ratio, step.at("expect_compression_ratio").get<double>(), where + "compression ratio");
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
            expectPressEqual(keys.size(2), step.at("expect_cache_len").get<int64_t>(), where + "cache length");
        }
    }

    /// The registered press's options for one case: the fixture's, plus case fields the press declares as
    /// options (PerLayerCompression's compression_ratios).
    std::map<std::string, std::string> caseOptions(const std::string& name, const json& testCase) const {
        std::map<std::string, std::string> options = registeredOptions(m_fixture);
        for (const config::PressOption& option : config::PressDescriptions::describe(name).options) {
            if (testCase.contains(option.name)) {
                options[option.name] = optionText(testCase[option.name]);
            }
        }
        return options;
    }

    /// Every field of `expected` the press's decision answers: counts, scores, kept slots (canonical order
    /// where the fixture gives one, else kvpress's own), masks, rewritten keys and named details.
    void expectAction(press::PressAction action, const json& expected, const PressInputs& inputs,
                      const std::string& where) {
        const int64_t length = inputs.keys.size(2);
        if (!action.kept.defined() && !action.masked.defined()) {
            // No eviction: every slot stays, in order (ThinK, a layer SimLayerKV finds busy or does not
            // measure).
            action.kept = at::arange(length, inputs.keys.options().dtype(at::kLong))
                              .expand({inputs.keys.size(0), inputs.keys.size(1), length})
                              .contiguous();
        }
        if (expected.contains("masked_indices")) {
            const at::Tensor masked =
                action.masked.defined()
                    ? action.masked.to(at::kCPU)
                    : at::zeros({inputs.keys.size(0), inputs.keys.size(1), length}, at::kBool);
            std::vector<std::vector<std::vector<int64_t>>> lists(static_cast<size_t>(masked.size(0)));
            for (int64_t batch = 0; batch < masked.size(0); ++batch) {
                for (int64_t head = 0; head < masked.size(1); ++head) {
                    lists[static_cast<size_t>(batch)].push_back(
                        integers(masked[batch][head].nonzero().view(-1)));
                }
            }
            expectPressEqual(lists,
                        expected["masked_indices"].get<std::vector<std::vector<std::vector<int64_t>>>>(),
                        where + "masked indices");
        } else if (expected.contains("n_kept")) {
            expectPressEqual(action.kept.defined() ? action.kept.size(2) : length,
                        expected["n_kept"].get<int64_t>(), where + "n_kept");
        }
        if (expected.contains("stages")) {
            expectStages(action, expected, where);
            return;
        }
        if (expected.contains("scores")) {
            expectScores(action.scores, expected["scores"], false, m_deviation, where + "scores");
        }
        if (expected.contains("kept_indices_canonical")) {
            expectSame(action.kept, indicesOf(expected["kept_indices_canonical"]),
                       where + "kept (canonical)");
        } else if (expected.contains("kept_indices")) {
            expectSame(action.kept, indicesOf(expected["kept_indices"]), where + "kept");
        }
        if (expected.contains("output_keys")) {
            const at::Tensor keys =
                action.keys.defined() ? action.keys : TopKSelection::gather(inputs.keys, action.kept);
            const at::Tensor reference = ConformanceRunner::tensorOf(expected["output_keys"]).to(at::kDouble);
            if (keys.sizes() != reference.sizes()) {
                throw PressMismatch{where + "output keys: shape differs from the reference"};
            }
            const double error = (keys.to(at::kCPU, at::kDouble) - reference).abs().max().item<double>();
            if (!(error <= rotaryTolerance)) {
                throw PressMismatch{where + "output keys: off by " + std::to_string(error)};
            }
        }
        for (const auto& [detail, value] : action.details) {
            if (expected.contains(detail)) {
                expectDetail(value, expected[detail], m_deviation, where + detail);
            }
        }
    }

    /// ComposedPress: the first stage as a scorer case; the second on kvpress's stage-0 slot order, which
    /// differs from the port's only inside ties (FORMAT.md): its scores and rewritten keys compared in that
    /// order, its kept tokens as input positions per row.
    void expectStages(const press::PressAction& action, const json& expected, const std::string& where) {
        const auto detail = [&](const std::string& key) {
            const auto found = action.details.find(key);
            if (found == action.details.end()) {
                throw PressMismatch{where + key + ": the press recorded none"};
            }
            return found->second;
        };
        const json& stages = expected["stages"];
        const json& first = stages.at(0);
        const at::Tensor kept0 = detail("stages.0.kept");
        expectPressEqual(kept0.size(2), first.at("n_kept").get<int64_t>(), where + "stage 0 n_kept");
        expectScores(detail("stages.0.scores"), first.at("scores"), false, m_deviation,
                     where + "stage 0 scores");
        // The press hands stage 1 kvpress's cache order (torch.topk's); off the CPU only ties may differ.
        const at::Tensor raw = indicesOf(first.at("kept_indices")).to(kept0.device());
        if (kept0.is_cpu()) {
            expectSame(kept0, raw, where + "stage 0 kept (kvpress's order)");
        } else {
            expectRawOrder(kept0, detail("stages.0.scores"), raw, where + "stage 0 ");
        }
        // Our stage-0 slot for each of kvpress's: kvpress's raw kept order against ours.
        const auto slotsOf = [](const at::Tensor& tensor) { return std::get<1>(at::sort(tensor, -1)); };
        const at::Tensor order = slotsOf(kept0).gather(-1, slotsOf(slotsOf(raw)));
        const json& second = stages.at(1);
        for (const auto& [key, value] : second.items()) {
            if (key == "press" || key == "kept_indices" || key == "kept_indices_canonical") {
                continue;
            }
            if (key == "n_kept") {
                expectPressEqual(detail("stages.1.kept").size(2), value.get<int64_t>(), where + "stage 1 n_kept");
                continue;
            }
            const at::Tensor ours = detail("stages.1." + key);
            // Per-slot results of stage 1 follow the stage-0 slots: reorder them to kvpress's.
            const bool perSlot = key == "scores";
            expectDetail(perSlot ? ours.gather(-1, order) : ours, value, m_deviation,
                         where + "stage 1 " + key);
        }
        if (expected.contains("kept_indices")) {
            expectSame(std::get<0>(at::sort(action.kept, -1)),
                       std::get<0>(at::sort(indicesOf(expected["kept_indices"]), -1)),
                       where + "kept positions");
        }
        if (expected.contains("output_keys")) {
            const at::Tensor keys = action.keys.defined() ? action.keys : at::Tensor();
            if (!keys.defined()) {
                throw PressMismatch{where + "output keys: the press rewrote none"};
            }
            const at::Tensor ordered = TopKSelection::gather(keys, order);
            const at::Tensor reference = ConformanceRunner::tensorOf(expected["output_keys"]).to(at::kDouble);
            const double error =
                ordered.sizes() == reference.sizes()
                    ? (ordered.to(at::kCPU, at::kDouble) - reference).abs().max().item<double>()
                    : std::numeric_limits<double>::infinity();
            if (!(error <= rotaryTolerance)) {
                throw PressMismatch{where + "output keys: off by " + std::to_string(error)};
            }
        }
    }

    /// A prefill scenario of any registered press through the press a generation applies
    /// (PressCatalog::generation): one pass over the whole prompt per case.
    void registeredPrefill(const std::string& name) {
        loadPrefill();
        const int64_t length = m_inputs.keys.size(2);
        const at::Tensor positions = at::arange(length, at::TensorOptions().dtype(at::kLong).device(m_device))
                                         .expand({m_inputs.keys.size(0), m_inputs.keys.size(1), length});
        for (const json& testCase : m_fixture.at("cases")) {
            const double ratio = testCase.value("compression_ratio", 0.0);
            // A case without a ratio is named by the option it varies (SimLayerKV's lazy_threshold).
            std::string where = "ratio " + json(ratio).dump() + ": ";
            for (const config::PressOption& option : config::PressDescriptions::describe(name).options) {
                if (!testCase.contains("compression_ratio") && testCase.contains(option.name)) {
                    where = option.name + " " + testCase[option.name].dump() + ": ";
                }
            }
            const auto press = PressCatalog::generation({name, ratio, caseOptions(name, testCase)});
            m_inputs.randomMatrix = recordedMatrix(testCase);
            const press::PressAction action = press->onPass(m_inputs, {0, length, ratio, positions});
            expectAction(action, testCase, m_inputs, where);
        }
    }

    /// A decoding scenario of any registered press: the prefill pass (compared with `prefill` where the
    /// fixture has one), then every step, the cache re-synced to kvpress's slot order before a compression.
    void registeredDecoding(const std::string& name) {
        const json& inputs = m_fixture.at("inputs");
        std::map<std::string, std::string> options = registeredOptions(m_fixture);
        if (m_fixture.contains("prefilling_press")) {
            options["prefill"] = catalogueName(m_fixture["prefilling_press"].get<std::string>());
            for (const auto& [key, value] :
                 optionsOf(m_fixture.value("prefilling_press_args", json::object()))) {
                options["prefill." + key] = value;
            }
        }
        if (m_fixture.contains("decoding_press")) {
            for (const auto& [key, value] :
                 optionsOf(m_fixture.value("decoding_press_args", json::object()))) {
                options[key] = value;
            }
            options["base"] = catalogueName(m_fixture.at("base_press").get<std::string>());
            for (const auto& [key, value] : optionsOf(m_fixture.value("base_press_args", json::object()))) {
                options["base." + key] = value;
            }
        }
        const double ratio =
            m_fixture.contains("prefill") ? m_fixture["prefill"].value("compression_ratio", 0.0) : 0.0;
        const auto press = PressCatalog::generation({name, ratio, options});
        at::Tensor keys = tensor(inputs.at("prefill_keys"));
        at::Tensor values = tensor(inputs.at("prefill_values"));
        const int64_t batch = keys.size(0);
        const int64_t heads = keys.size(1);
        const auto longs = at::TensorOptions().dtype(at::kLong).device(m_device);
        at::Tensor positions = at::arange(keys.size(2), longs).expand({batch, heads, -1}).contiguous();
        {
            PressInputs pass = m_inputs;
            pass.keys = keys;
            pass.values = values;
            if (inputs.contains("prefill_hidden_states")) {
                pass.hiddenStates = tensor(inputs["prefill_hidden_states"]);
            }
            std::vector<int64_t> prefillPositions(static_cast<size_t>(keys.size(2)));
            std::iota(prefillPositions.begin(), prefillPositions.end(), 0);
            std::tie(pass.cos, pass.sin) = rotaryRows(prefillPositions, m_fixture.at("model"), m_device);
            const press::PressAction action = press->onPass(pass, {0, keys.size(2), ratio, positions});
            if (m_fixture.contains("prefill")) {
                expectAction(action, m_fixture["prefill"], pass, "prefill: ");
            }
            if (action.kept.defined()) {
                keys = TopKSelection::gather(keys, action.kept);
                values = TopKSelection::gather(values, action.kept);
                positions = positions.gather(-1, action.kept);
            }
        }
        const json& steps = m_fixture.at("steps");
        for (size_t index = 0; index < steps.size(); ++index) {
            const json& step = steps[index];
            const std::string where = "step " + std::to_string(index) + ": ";
            const auto stepPositions = step.at("position_ids").get<std::vector<int64_t>>();
            const int64_t queryLength = step.at("q_len").get<int64_t>();
            keys = at::cat({keys, tensor(step.at("keys"))}, 2);
            values = at::cat({values, tensor(step.at("values"))}, 2);
            positions = at::cat(
                {positions, at::tensor(stepPositions, at::kLong).to(m_device).expand({batch, heads, -1})}, 2);
            if (step.contains("expect_positions_before")) {
                // Same tokens as kvpress, then kvpress's slot order (torch.topk's tie order; FORMAT.md).
                const at::Tensor before = indicesOf(step["expect_positions_before"]).to(m_device);
                expectSame(std::get<0>(at::sort(positions, -1)), std::get<0>(at::sort(before, -1)),
                           where + "cached positions before compression");
                const auto slotsOf = [](const at::Tensor& tensor) {
                    return std::get<1>(at::sort(tensor, -1));
                };
                const at::Tensor order = slotsOf(positions).gather(-1, slotsOf(slotsOf(before)));
                keys = TopKSelection::gather(keys, order);
                values = TopKSelection::gather(values, order);
                positions = positions.gather(-1, order);
            }
            PressInputs pass = m_inputs;
            pass.keys = keys;
            pass.values = values;
            if (step.contains("hidden_states")) {
                pass.hiddenStates = tensor(step["hidden_states"]);
            }
            std::tie(pass.cos, pass.sin) = rotaryRows(stepPositions, m_fixture.at("model"), m_device);
            const press::PressAction action =
                press->onPass(pass, {static_cast<int64_t>(index) + 1, queryLength, ratio, positions});
            const auto detail = [&](const char* key) {
                const auto found = action.details.find(key);
                return found != action.details.end() ? found->second : at::Tensor();
            };
            const at::Tensor compressed = detail("compressed");
            expectPressEqual(compressed.defined() && compressed.item<int64_t>() != 0,
                        step.at("expect_compressed").get<bool>(), where + "compressed");
            for (const auto& [field, key] : {std::pair{"expect_buffer_len", "buffer_len"},
                                             std::pair{"expect_compression_ratio", "compression_ratio"},
                                             std::pair{"expect_target_size", "target_size"}}) {
                if (step.contains(field)) {
                    const at::Tensor value = detail(key);
                    if (!value.defined()) {
                        throw PressMismatch{where + key + ": the press recorded none"};
                    }
                    expectDetail(value, step[field], m_deviation, where + key);
                }
            }
            if (step.contains("expect_scores")) {
                expectScores(action.scores, step["expect_scores"], false, m_deviation, where + "scores");
                expectSame(action.kept, indicesOf(step.at("expect_kept_indices_canonical")),
                           where + "kept (canonical)");
            }
            if (action.kept.defined()) {
                keys = TopKSelection::gather(keys, action.kept);
                values = TopKSelection::gather(values, action.kept);
                positions = positions.gather(-1, action.kept);
            }
            if (step.contains("expect_kept_positions")) {
                expectSame(std::get<0>(at::sort(positions, -1)),
                           std::get<0>(at::sort(indicesOf(step["expect_kept_positions"]), -1)),
                           where + "kept positions");
            }
            expectPressEqual(keys.size(2), step.at("expect_cache_len").get<int64_t>(), where + "cache length");
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
    FixtureResult result{name, false, {}, std::nullopt, {}, false};
    result.kind = kindOf(fixture, name);
    const json& press = fixture.at("press");
    if (!press.is_string() ||
        config::PressDescriptions::findByReference(press.get<std::string>()) == nullptr) {
        // Partial support shows as such: a press not ported yet neither passes nor fails.
        result.notImplemented = true;
        result.failure = "not implemented: no registered press is kvpress's " + press.dump();
        return result;
    }
    try {
        result.scoreDeviation = FixtureReplay(fixture, m_device).run();
        result.passed = true;
    } catch (const PressNotImplemented& missing) {
        result.notImplemented = true;
        result.failure = missing.what;
    } catch (const PressMismatch& mismatch) {
        result.failure = mismatch.what;
    } catch (const std::exception& error) {
        result.failure = std::string("refused or malformed: ") + error.what();
    }
    return result;
}

} // namespace kvscope::cli
