// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/ModelBenchmark.h"

#include "kvscope/cli/CliRunOptions.h"
#include "kvscope/cli/OptionChecks.h"
#include "kvscope/config/RunOptionTable.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/TensorOps.h"
#include "kvscope/runtime/ComputeThreads.h"
#include "kvscope/runtime/Generator.h"
#include "kvscope/runtime/ModelSource.h"
#include "kvscope/runtime/RunMetadata.h"
#include "kvscope/runtime/TextCodec.h"
#include "kvscope/trace/SessionWriter.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <time.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace kvscope::cli {
namespace {

using Clock = std::chrono::steady_clock;

/// Seconds of wall clock and of the process's CPU (every thread), from one start.
class Stopwatch {
public:
    Stopwatch() : m_wall(Clock::now()), m_cpu(cpuSeconds()) {}
    double wall() const { return std::chrono::duration<double>(Clock::now() - m_wall).count(); }
    double cpu() const { return cpuSeconds() - m_cpu; }

private:
    static double cpuSeconds() {
        timespec now{};
        ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
        return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
    }
    Clock::time_point m_wall;
    double m_cpu;
};

/// One timed generation: the prefill's and the decode steps' seconds (wall and CPU), and the tokens picked.
struct Timed {
    double prefillSeconds = 0.0;
    double decodeSeconds = 0.0;
    double prefillCpuSeconds = 0.0;
    double decodeCpuSeconds = 0.0;
    std::vector<double> decodeStepSeconds; ///< each decode step's wall clock
    std::vector<int64_t> tokens;
};

/// Why the plain loop cannot run `arch` (empty: it can). It covers the Llama family's math: full attention,
/// RMSNorm, rotary positions, optional q/k norms and q/k/v biases, a gated MLP.
std::string plainLoopRefusal(const model::Architecture& arch) {
    if (arch.isEncoderDecoder() || arch.fusedProjections() || arch.sandwichNorms() || arch.normAddsOne() ||
        arch.scalesEmbeddings() || arch.localRopeTheta() > 0.0 || arch.config().attnLogitSoftcapping ||
        arch.config().finalLogitSoftcapping) {
        return "model_type `" + arch.config().modelType + "`";
    }
    for (int64_t layer = 0; layer < arch.numLayers(); ++layer) {
        if (arch.attentionKind(layer) != model::AttentionKind::FullAttention ||
            arch.hasLinearAttention(layer) || arch.isKvShared(layer)) {
            return "layer " + std::to_string(layer) + " (" +
                   model::Architecture::attentionKindName(arch.attentionKind(layer)) + ")";
        }
    }
    return {};
}

/// The model written out in plain LibTorch calls over its parameters: the reference the engine is timed
/// against. Its KV cache is a list of tensors grown by at::cat, with nothing recorded.
class PlainDecoder {
public:
    explicit PlainDecoder(const model::LanguageModel& model)
        : m_arch(model.architecture()), m_parameters(model.parameters()) {
        m_inverseFrequencies = model::ops::inverseFrequencies(m_arch.rotaryDim(), m_arch.config().ropeTheta,
                                                              m_arch.config().ropeScaling, model.device());
    }

    /// Logits [vocab] of the last of `ids` [1, t], after the `m_keys` cached positions.
    at::Tensor forward(const at::Tensor& ids) {
        const int64_t length = ids.size(1);
        const int64_t past = m_keys.empty() ? 0 : m_keys.front().size(2);
        const double eps = m_arch.config().rmsNormEps;
        const auto [cos, sin] =
            model::ops::rotary((at::arange(length, ids.options()) + past).unsqueeze(0), m_inverseFrequencies);
        at::Tensor mask;
        if (length > 1) {
            mask = at::ones({length, past + length}, ids.options().dtype(at::kBool)).tril(past);
        }
        m_keys.resize(static_cast<size_t>(m_arch.numLayers()));
        m_values.resize(static_cast<size_t>(m_arch.numLayers()));
        at::Tensor x = m_parameters.embed("model.embed_tokens.weight", ids);
        for (int64_t layer = 0; layer < m_arch.numLayers(); ++layer) {
            const std::string p = "model.layers." + std::to_string(layer) + ".";
            at::Tensor h = rmsNorm(x, get(p + "input_layernorm.weight"), eps);
            at::Tensor q = heads(linear(h, p + "self_attn.q_proj.weight",
                                                    optional(p + "self_attn.q_proj.bias")),
                                 m_arch.numHeads());
            at::Tensor k = heads(linear(h, p + "self_attn.k_proj.weight",
                                                    optional(p + "self_attn.k_proj.bias")),
                                 m_arch.numKvHeads());
            at::Tensor v = heads(linear(h, p + "self_attn.v_proj.weight",
                                                    optional(p + "self_attn.v_proj.bias")),
                                 m_arch.numKvHeads());
            if (m_arch.queryKeyNorms()) {
                q = rmsNorm(q, get(p + "self_attn.q_norm.weight"), eps);
                k = rmsNorm(k, get(p + "self_attn.k_norm.weight"), eps);
            }
            q = model::ops::applyRotary(q, cos, sin);
            k = model::ops::applyRotary(k, cos, sin);
            at::Tensor& keys = m_keys[static_cast<size_t>(layer)];
            at::Tensor& values = m_values[static_cast<size_t>(layer)];
            keys = keys.defined() ? at::cat({keys, k}, 2) : k;
            values = values.defined() ? at::cat({values, v}, 2) : v;
            const int64_t groups = m_arch.numHeads() / m_arch.numKvHeads();
            const at::Tensor kk = groups > 1 ? keys.repeat_interleave(groups, 1) : keys;
            const at::Tensor vv = groups > 1 ? values.repeat_interleave(groups, 1) : values;
            at::Tensor scores = at::matmul(q, kk.transpose(-1, -2)) * m_arch.attentionScale();
            if (mask.defined()) {
                scores = scores.masked_fill(mask.logical_not(), std::numeric_limits<float>::lowest());
            }
            const at::Tensor attended =
                at::matmul(at::softmax(scores, -1), vv).transpose(1, 2).reshape({1, length, -1});
            x = x + linear(attended, p + "self_attn.o_proj.weight",
                                       optional(p + "self_attn.o_proj.bias"));
            h = rmsNorm(x, get(p + "post_attention_layernorm.weight"), eps);
            const at::Tensor gate = model::ops::activate(
                linear(h, p + "mlp.gate_proj.weight"), m_arch.activation());
            x = x + linear(gate * linear(h, p + "mlp.up_proj.weight"), p + "mlp.down_proj.weight");
        }
        x = rmsNorm(x.narrow(1, length - 1, 1), get("model.norm.weight"), eps);
        return linear(x, m_arch.tiedEmbeddings() ? "model.embed_tokens.weight" : "lm_head.weight")[0][0];
    }

private:
    static at::Tensor rmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps) {
        return weight * (x * at::rsqrt(x.pow(2).mean(-1, true) + eps));
    }
    static at::Tensor heads(const at::Tensor& x, int64_t count) {
        return x.view({x.size(0), x.size(1), count, -1}).transpose(1, 2);
    }
    at::Tensor get(const std::string& name) const { return m_parameters.get(name); }
    /// The same products as the engine's (block by block for a packed GGUF matrix).
    at::Tensor linear(const at::Tensor& input, const std::string& name, const at::Tensor& bias = at::Tensor()) const {
        return m_parameters.linear(input, name, bias);
    }
    at::Tensor optional(const std::string& name) const {
        return m_parameters.contains(name) ? m_parameters.get(name) : at::Tensor();
    }

    const model::Architecture& m_arch;
    const model::ParameterStore& m_parameters;
    at::Tensor m_inverseFrequencies;
    std::vector<at::Tensor> m_keys;
    std::vector<at::Tensor> m_values;
};

Timed timePlain(const model::LanguageModel& model, const std::vector<int64_t>& prompt, int64_t decodeTokens) {
    at::NoGradGuard noGrad;
    PlainDecoder decoder(model);
    Timed timed;
    Stopwatch prefill;
    at::Tensor logits = decoder.forward(at::tensor(prompt, at::kLong).unsqueeze(0).to(model.device()));
    int64_t token = logits.argmax().item<int64_t>();
    timed.prefillSeconds = prefill.wall();
    timed.prefillCpuSeconds = prefill.cpu();
    timed.tokens.push_back(token);
    Stopwatch decode;
    for (int64_t step = 0; step < decodeTokens; ++step) {
        const Clock::time_point begin = Clock::now();
        logits = decoder.forward(at::tensor({token}, at::kLong).view({1, 1}).to(model.device()));
        token = logits.argmax().item<int64_t>();
        timed.decodeStepSeconds.push_back(std::chrono::duration<double>(Clock::now() - begin).count());
        timed.tokens.push_back(token);
    }
    timed.decodeSeconds = decode.wall();
    timed.decodeCpuSeconds = decode.cpu();
    return timed;
}

Timed timeEngine(model::LanguageModel& model, const runtime::ModelSource::Loaded& loaded,
                 const config::RunSettings& settings, const std::vector<int64_t>& prompt,
                 int64_t decodeTokens, bool record) {
    runtime::GenerationOptions options;
    options.maxNewTokens = decodeTokens + 1;
    options.stopAtEos = false;
    std::unique_ptr<trace::SessionWriter> writer;
    const std::filesystem::path file = std::filesystem::temp_directory_path() /
                                       ("kvscope-bench-model-" + std::to_string(::getpid()) + ".kvsess");
    if (record) {
        writer = std::make_unique<trace::SessionWriter>(
            file, runtime::RunMetadata::build(loaded, settings, *loaded.text, prompt,
                                              runtime::RunMetadata::nowUnixNs()));
    }
    Timed timed;
    {
        runtime::Generator generator(model, settings.cache, options, writer.get(), loaded.text.get());
        Stopwatch prefill;
        timed.tokens.push_back(generator.prefill(prompt).tokens.front());
        timed.prefillSeconds = prefill.wall();
        timed.prefillCpuSeconds = prefill.cpu();
        Stopwatch decode;
        for (int64_t step = 0; step < decodeTokens; ++step) {
            const Clock::time_point begin = Clock::now();
            timed.tokens.push_back(generator.step().tokens.front());
            timed.decodeStepSeconds.push_back(std::chrono::duration<double>(Clock::now() - begin).count());
        }
        timed.decodeSeconds = decode.wall();
        timed.decodeCpuSeconds = decode.cpu();
    }
    writer.reset();
    std::error_code ignored;
    std::filesystem::remove(file, ignored);
    return timed;
}

double upperMedian(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

} // namespace

double ModelBenchmark::quietSeconds(const std::vector<std::vector<double>>& stepSeconds) {
    double total = 0.0;
    for (size_t step = 0; !stepSeconds.empty() && step < stepSeconds.front().size(); ++step) {
        double fastest = std::numeric_limits<double>::infinity();
        for (const std::vector<double>& repeat : stepSeconds) {
            fastest = std::min(fastest, repeat.at(step));
        }
        total += fastest;
    }
    return total;
}

CLI::App* ModelBenchmark::addSubcommand(CLI::App& bench, ModelBenchmarkOptions& options) {
    CLI::App* command = bench.add_subcommand(
        "model", "Prefill and decode tokens/s of a model: kvscope's engine against a plain-LibTorch loop (where it "
                 "covers the model)");
    command->add_option("--preset", options.run.preset, "Built-in model preset (kvscope-cli presets)");
    command->add_option("--config", options.run.configPath, "A Hugging Face config.json (built-in weights)");
    command->add_option("--checkpoint", options.run.checkpointDir,
                        "A folder with config.json and *.safetensors");
    command->add_option("--model", options.run.modelFile,
                        "A llama.cpp GGUF model file, or `smollm2` or `gemma3-270m` (their pip packages)");
    CliRunOptions::addOption(*command, options.run, *config::RunOptionTable::find("gguf-weights"));
    command->add_option("--prompt-tokens", options.promptTokens, "Prompt length in tokens")
        ->check(OptionChecks::integerAtLeast(1));
    command->add_option("--tokens", options.decodeTokens, "Decode steps timed after the prefill")
        ->check(OptionChecks::integerAtLeast(1));
    command
        ->add_option("--repeats", options.repeats,
                     "Timed runs of each loop (medians, and each step's fastest)")
        ->check(OptionChecks::integerAtLeast(1));
    command
        ->add_option("--threads", options.run.threads, "CPU threads (0: every core, as model compute uses)")
        ->check(OptionChecks::integerAtLeast(0));
    command->add_flag("!--no-record", options.record,
                      "Time the engine without writing its events to a session");
    command->add_flag("!--no-plain", options.plain,
                      "Time the engine alone, without the plain-LibTorch loop: the process's peak memory is then the "
                      "engine's (scripts/bench-gguf.py)");
    return command;
}

nlohmann::json ModelBenchmark::run(const ModelBenchmarkOptions& options) {
    config::RunSettings settings = options.run;
    settings.ignoreEos = true;
    config::validate(settings);
    const int threads = runtime::ComputeThreads::apply(static_cast<int>(settings.threads));
    runtime::ModelSource::Loaded loaded = runtime::ModelSource::load(settings, at::kCPU);
    model::LanguageModel& model = *loaded.model;
    // A model the plain loop does not cover (Gemma's sliding layers, a recurrent layer ...) is timed alone.
    const std::string refusal = plainLoopRefusal(model.architecture());
    const bool withPlain = refusal.empty() && options.plain;
    // Ids spread over the vocabulary, the same for both loops; no tokenizer needed.
    std::vector<int64_t> prompt;
    const int64_t vocab = model.architecture().vocabSize();
    for (int64_t i = 0; i < options.promptTokens; ++i) {
        prompt.push_back((i * 7919 + 11) % vocab);
    }
    // One untimed short run of each warms the allocator and the BLAS's thread pool.
    timeEngine(model, loaded, settings, {prompt.front()}, 1, false);
    if (withPlain) {
        timePlain(model, {prompt.front()}, 1);
    }
    std::vector<Timed> engineRuns;
    std::vector<Timed> plainRuns;
    bool tokensMatch = true;
    for (int64_t repeat = 0; repeat < options.repeats; ++repeat) {
        // Alternate the loops, so that a slow spell of a shared machine falls on both.
        engineRuns.push_back(
            timeEngine(model, loaded, settings, prompt, options.decodeTokens, options.record));
        if (withPlain) {
            plainRuns.push_back(timePlain(model, prompt, options.decodeTokens));
            tokensMatch = tokensMatch && engineRuns.back().tokens == plainRuns.back().tokens;
        }
    }
    const auto rounded = [](double value) { return std::round(value * 100.0) / 100.0; };
    const auto medianOf = [](const std::vector<Timed>& runs, double Timed::*field) {
        std::vector<double> values;
        for (const Timed& run : runs) {
            values.push_back(run.*field);
        }
        return upperMedian(values);
    };
    // The prefill is one step: its quiet time is the fastest repeat's.
    const auto quiet = [](const std::vector<Timed>& runs) {
        std::vector<std::vector<double>> prefills;
        std::vector<std::vector<double>> decodes;
        for (const Timed& run : runs) {
            prefills.push_back({run.prefillSeconds});
            decodes.push_back(run.decodeStepSeconds);
        }
        return std::pair{quietSeconds(prefills), quietSeconds(decodes)};
    };
    const auto quietEngine = quiet(engineRuns);
    const auto phases = [&](const std::vector<Timed>& runs, const std::pair<double, double>& quietTimes) {
        const double prefill = medianOf(runs, &Timed::prefillSeconds);
        const double decode = medianOf(runs, &Timed::decodeSeconds);
        const auto [quietPrefill, quietDecode] = quietTimes;
        return nlohmann::json{
            {"prefill_quiet_ms", rounded(quietPrefill * 1e3)},
            {"decode_quiet_ms", rounded(quietDecode * 1e3)},
            {"prefill_ms", rounded(prefill * 1e3)},
            {"decode_ms", rounded(decode * 1e3)},
            {"prefill_cpu_ms", rounded(medianOf(runs, &Timed::prefillCpuSeconds) * 1e3)},
            {"decode_cpu_ms", rounded(medianOf(runs, &Timed::decodeCpuSeconds) * 1e3)},
            {"prefill_tokens_per_s", rounded(static_cast<double>(options.promptTokens) / prefill)},
            {"decode_tokens_per_s", rounded(static_cast<double>(options.decodeTokens) / decode)}};
    };
    // The engine's time over the plain loop's, in percent, for one phase field.
    const auto overhead = [&](double Timed::*field) {
        return rounded((medianOf(engineRuns, field) / medianOf(plainRuns, field) - 1.0) * 100.0);
    };
    nlohmann::json result = {
        {"model", loaded.name},
        {"weight_bytes", model.parameters().bytes()},
        {"prompt_tokens", options.promptTokens},
        {"decode_tokens", options.decodeTokens},
        {"repeats", options.repeats},
        {"recorded", options.record},
        {"engine", phases(engineRuns, quietEngine)}};
    if (!options.plain) {
        result["plain"] = nullptr;
        result["plain_refused"] = "not asked for (--no-plain)";
    } else if (!withPlain) {
        result["plain"] = nullptr;
        result["plain_refused"] = "the plain loop covers the Llama family's math (llama, mistral, qwen2, qwen3: "
                                  "full attention, RMSNorm, rotary positions, a gated MLP), not " + refusal;
    } else {
        const auto quietPlain = quiet(plainRuns);
        result["plain"] = phases(plainRuns, quietPlain);
        result["overhead_percent"] = {{"prefill", overhead(&Timed::prefillSeconds)},
                                      {"decode", overhead(&Timed::decodeSeconds)}};
        result["overhead_cpu_percent"] = {{"prefill", overhead(&Timed::prefillCpuSeconds)},
                                          {"decode", overhead(&Timed::decodeCpuSeconds)}};
        result["overhead_quiet_percent"] = {{"prefill", rounded((quietEngine.first / quietPlain.first - 1.0) * 100.0)},
                                            {"decode", rounded((quietEngine.second / quietPlain.second - 1.0) * 100.0)}};
        result["tokens_match"] = tokensMatch;
    }
    result.update(runtime::ComputeThreads::describe());
    result["threads"] = threads;
    return result;
}

} // namespace kvscope::cli
