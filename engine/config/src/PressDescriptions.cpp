// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/PressDescriptions.h"

#include "kvscope/config/PressOptions.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

// Every registration's description (engine/presses/<Press>.cpp, compiled here without its LibTorch part).
#define KVSCOPE_PRESS(id) ::kvscope::config::PressDescription kvscopePressDescription_##id();
#include "PressList.h"
#undef KVSCOPE_PRESS

namespace kvscope::config {

bool PressDescription::wrapsBase() const {
    return std::any_of(options.begin(), options.end(),
                       [](const PressOption& option) { return option.type == "press"; });
}

const std::vector<PressDescription>& PressDescriptions::all() {
    static const std::vector<PressDescription> all = [] {
        std::vector<PressDescription> presses;
#define KVSCOPE_PRESS(id)                                                                                    \
    presses.push_back(kvscopePressDescription_##id());                                                       \
    if (presses.back().name != #id) {                                                                        \
        throw std::logic_error("engine/presses: the registration " #id " describes `" +                      \
                               presses.back().name + "`: a press's name is its identifier in PressList.h");  \
    }
#include "PressList.h"
#undef KVSCOPE_PRESS
        return presses;
    }();
    return all;
}

const PressDescription* PressDescriptions::findByReference(const std::string& referenceName) {
    const auto& presses = all();
    const auto found = std::find_if(presses.begin(), presses.end(), [&](const PressDescription& description) {
        return !referenceName.empty() && description.referenceName == referenceName;
    });
    return found != presses.end() ? &*found : nullptr;
}

const PressDescription* PressDescriptions::find(const std::string& name) {
    const auto& presses = all();
    const auto found = std::find_if(presses.begin(), presses.end(),
                                    [&](const PressDescription& description) { return description.name == name; });
    return found != presses.end() ? &*found : nullptr;
}

const PressDescription& PressDescriptions::describe(const std::string& name) {
    if (const PressDescription* description = find(name)) {
        return *description;
    }
    throw std::invalid_argument("unknown press `" + name + "` (allowed: " + allowedNames() + ")");
}

std::string PressDescriptions::allowedNames() {
    std::string names;
    for (const PressDescription& description : all()) {
        names += (names.empty() ? "" : ", ") + description.name;
    }
    return names;
}

bool PressDescriptions::isScorer(const std::string& name) {
    const PressDescription* description = find(name);
    return description != nullptr && description->kind == "scorer";
}

std::string PressDescriptions::optionValue(const PressSettings& press, const std::string& option) {
    if (const auto given = press.options.find(option); given != press.options.end()) {
        return given->second;
    }
    const auto declaredDefault = [&](const std::string& name) -> std::optional<std::string> {
        const PressDescription* description = find(name);
        if (description == nullptr) {
            return std::nullopt;
        }
        for (const PressOption& declared : description->options) {
            if (declared.name == option) {
                if (description->derivedDefault) {
                    if (std::optional<std::string> derived =
                            description->derivedDefault(option, press.options)) {
                        return derived;
                    }
                }
                return declared.defaultValue;
            }
        }
        return std::nullopt;
    };
    if (const std::optional<std::string> own = declaredDefault(press.name)) {
        return *own;
    }
    // A wrapper's base press declares the options the wrapper does not.
    if (option != "base") {
        if (const std::string base = optionValue(press, "base"); !base.empty() && base != press.name) {
            return declaredDefault(base).value_or(std::string());
        }
    }
    return {};
}

std::string PressDescriptions::rule(const PressSettings& press, std::int64_t dropped) {
    const PressDescription* description = find(press.name);
    const std::string pattern = description == nullptr || description->sentence.empty()
                                    ? "the {dropped} it ranked lowest were dropped"
                                : dropped == 0 && !description->keptAllSentence.empty()
                                    ? description->keptAllSentence
                                    : description->sentence;
    std::string filled;
    for (std::size_t at = 0; at < pattern.size();) {
        const std::size_t open = pattern.find('{', at);
        const std::size_t close = open == std::string::npos ? std::string::npos : pattern.find('}', open);
        if (close == std::string::npos) {
            filled += pattern.substr(at);
            break;
        }
        filled += pattern.substr(at, open - at);
        const std::string key = pattern.substr(open + 1, close - open - 1);
        if (key == "dropped") {
            filled += std::to_string(dropped);
        } else if (key == "base" || key == "base_name") {
            PressSettings base{optionValue(press, "base"), press.ratio,
                               description != nullptr ? splitOptions(press.name, press.options).second
                                                      : std::map<std::string, std::string>{}};
            const PressDescription* baseDescription = find(base.name);
            filled += key == "base" ? rule(base, dropped)
                                    : (baseDescription != nullptr ? baseDescription->displayName : base.name);
        } else {
            // A stage (composed's first and second) by its display name, as the base is.
            const std::string value = optionValue(press, key);
            const bool stage = description != nullptr &&
                               std::any_of(description->options.begin(), description->options.end(),
                                           [&](const PressOption& option) {
                                               return option.name == key && option.type == "stage";
                                           });
            const PressDescription* staged = stage ? find(value) : nullptr;
            filled += staged != nullptr ? staged->displayName : value;
        }
        at = close + 1;
    }
    return filled;
}

std::string PressDescriptions::scorerNames() {
    std::string names;
    for (const PressDescription& description : all()) {
        if (isScorer(description.name)) {
            names += (names.empty() ? "" : ", ") + description.name;
        }
    }
    return names;
}

namespace {

/// The declared option `stage` of type `stage` (a press the wrapper runs, its options given as
/// `stage.NAME`), or null.
const PressOption* stageOption(const PressDescription& description, const std::string& key) {
    const std::size_t dot = key.find('.');
    if (dot == std::string::npos) {
        return nullptr;
    }
    const auto found =
        std::find_if(description.options.begin(), description.options.end(), [&](const PressOption& option) {
            return option.type == "stage" && key.compare(0, dot, option.name) == 0 &&
                   option.name.size() == dot;
        });
    return found != description.options.end() ? &*found : nullptr;
}

} // namespace

std::pair<std::map<std::string, std::string>, std::map<std::string, std::string>>
PressDescriptions::splitOptions(const std::string& wrapper, const std::map<std::string, std::string>& given) {
    std::map<std::string, std::string> own;
    std::map<std::string, std::string> base;
    const PressDescription& description = describe(wrapper);
    const std::vector<PressOption>& declared = description.options;
    const bool wraps = description.wrapsBase();
    // `base.NAME` always goes to the base press, for an option both declare (CriticalAdaKV's epsilon).
    const std::string prefix = "base.";
    for (const auto& [key, value] : given) {
        if (wraps && key.rfind(prefix, 0) == 0) {
            base[key.substr(prefix.size())] = value;
            continue;
        }
        if (stageOption(description, key) != nullptr) {
            continue; // a stage's own option: stageOptions
        }
        const bool isOwn =
            !wraps || std::any_of(declared.begin(), declared.end(),
                                  [&](const PressOption& option) { return option.name == key; });
        (isOwn ? own : base)[key] = value;
    }
    return {own, base};
}

std::map<std::string, std::string>
PressDescriptions::stageOptions(const std::map<std::string, std::string>& given, const std::string& stage) {
    std::map<std::string, std::string> options;
    const std::string prefix = stage + ".";
    for (const auto& [key, value] : given) {
        if (key.rfind(prefix, 0) == 0) {
            options[key.substr(prefix.size())] = value;
        }
    }
    return options;
}

void PressDescriptions::checkOptions(const std::string& name, const std::map<std::string, std::string>& given) {
    const PressDescription& description = describe(name);
    const auto [own, base] = splitOptions(name, given);
    const PressOptions options(name, description.options, own);
    for (const auto& [key, value] : own) {
        const PressOption& option = *std::find_if(description.options.begin(), description.options.end(),
                                                  [&](const PressOption& declared) { return declared.name == key; });
        // Types only: every option of the catalogue is at least 0; finer ranges are the press's own check.
        if (option.type == "int") {
            (void)options.integer(key, 0);
        } else if (option.type == "float") {
            (void)options.real(key, 0.0, std::numeric_limits<double>::infinity());
        } else if (option.type == "bool") {
            (void)options.flag(key);
        } else if (option.type == "press" && !isScorer(value)) {
            throw std::invalid_argument("press " + name + " option " + key + "=" + value +
                                        ": expected a scorer press (" + scorerNames() + ")");
        }
    }
    if (description.wrapsBase()) {
        checkOptions(options.text("base"), base);
    }
    for (const PressOption& option : description.options) {
        if (option.type != "stage") {
            continue;
        }
        const std::string stage = options.text(option.name);
        const PressDescription* staged = find(stage);
        if (staged == nullptr || staged->phase != "prefill" || staged->policy.effect == "masks" ||
            stage == name) {
            throw std::invalid_argument("press " + name + " option " + option.name + "=" + stage +
                                        ": expected a prefill press that does not mask (" +
                                        stagePressNames(name) + ")");
        }
        checkOptions(stage, stageOptions(given, option.name));
    }
}

std::string PressDescriptions::stagePressNames(const std::string& except) {
    std::string names;
    for (const PressDescription& description : all()) {
        if (description.phase == "prefill" && description.policy.effect != "masks" &&
            description.name != except) {
            names += (names.empty() ? "" : ", ") + description.name;
        }
    }
    return names;
}

std::int64_t PressDescriptions::h2oRecentWindow(std::int64_t budget) {
    return std::max<std::int64_t>(1, budget / 8);
}

std::int64_t PressDescriptions::fitBelowPrompt(std::int64_t tokens) {
    std::int64_t value = 0;
    for (std::int64_t power = 1; power <= tokens / 2; power *= 2) {
        value = power;
    }
    return value;
}

std::vector<std::string> PressDescriptions::fitToPrompt(PressSettings& press, std::int64_t tokens) {
    std::vector<std::string> notices;
    const PressDescription* description = find(press.name);
    if (description == nullptr || description->phase != "prefill") {
        return notices; // decoding presses act on a cache longer than the prompt
    }
    // The press itself, its base (options as they are) and its stages (options as `STAGE.NAME`).
    std::vector<std::pair<const PressDescription*, std::string>> owners{{description, ""}};
    for (const PressOption& option : description->options) {
        if (option.type == "press" || option.type == "stage") {
            const auto given = press.options.find(option.name);
            owners.emplace_back(find(given != press.options.end() ? given->second : option.defaultValue),
                                option.type == "stage" ? option.name + "." : "");
        }
    }
    const std::int64_t fit = fitBelowPrompt(tokens);
    for (const auto& [owner, prefix] : owners) {
        for (const PressOption& option : owner != nullptr ? owner->options : std::vector<PressOption>{}) {
            const std::string key = prefix + option.name;
            const bool given = press.options.count(key) != 0 || (owner != description && prefix.empty() &&
                                                                 press.options.count("base." + key) != 0);
            if (!option.belowPrompt || given || fit < 1 || std::stoll(option.defaultValue) < tokens) {
                continue;
            }
            press.options[key] = std::to_string(fit);
            press.fitted[key] = option.defaultValue;
            notices.push_back(owner->name + " " + option.name + " " + std::to_string(fit) + " instead of " +
                              option.defaultValue + ": the prompt has " + std::to_string(tokens) + " tokens");
        }
    }
    return notices;
}

std::string PressDescriptions::promptTooShort(const std::string& press, const std::string& option,
                                              std::int64_t value, std::int64_t tokens) {
    const std::string prompt = std::to_string(tokens) + (tokens == 1 ? " token" : " tokens");
    const std::int64_t fit = fitBelowPrompt(tokens);
    const std::string fix =
        fit >= 1 ? "give a longer prompt or --press-option " + option + "=" + std::to_string(fit)
                 : "give a prompt of at least " + std::to_string(value + 1) + " tokens";
    return press + "'s " + option + " (" + std::to_string(value) + ") must be shorter than the prompt (" +
           prompt + "): " + fix;
}

} // namespace kvscope::config
