// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/PressCatalog.h"

#include "kvscope/config/PressDescriptions.h"
#include "kvscope/press/PressOptions.h"
#include "kvscope/press/ScorerCachePress.h"

#include <stdexcept>
#include <utility>

// Every registration's factory (engine/presses/<Press>.cpp, compiled here with its LibTorch part).
#define KVSCOPE_PRESS(id) ::kvscope::press::PressFactory kvscopePressFactory_##id();
#include "PressList.h"
#undef KVSCOPE_PRESS

namespace kvscope::press {
namespace {

const std::map<std::string, PressFactory>& factories() {
    static const std::map<std::string, PressFactory> factories = {
#define KVSCOPE_PRESS(id) {#id, kvscopePressFactory_##id()},
#include "PressList.h"
#undef KVSCOPE_PRESS
    };
    return factories;
}

} // namespace

const std::vector<PressDescription>& PressCatalog::presses() { return config::PressDescriptions::all(); }

std::string PressCatalog::allowedNames() { return config::PressDescriptions::allowedNames(); }

const PressFactory& PressCatalog::factory(const std::string& name) {
    const auto found = factories().find(name);
    if (found == factories().end()) {
        throw std::invalid_argument("unknown press `" + name + "` (allowed: " + allowedNames() + ")");
    }
    return found->second;
}

PressOptions PressCatalog::optionsOf(const std::string& name,
                                     const std::map<std::string, std::string>& given) {
    return PressOptions(name, config::PressDescriptions::describe(name).options, given);
}

std::shared_ptr<const Press> PressCatalog::scorer(const std::string& name,
                                                  const std::map<std::string, std::string>& given) {
    const PressFactory& made = factory(name);
    if (!made.scorer) {
        throw std::invalid_argument("press " + name + " is not a scorer press (scorers: " +
                                    config::PressDescriptions::scorerNames() + ")");
    }
    return made.scorer(optionsOf(name, given));
}

std::unique_ptr<CachePress> PressCatalog::generation(const config::PressSettings& settings) {
    const PressFactory& made = factory(settings.name);
    if (made.generation) {
        return made.generation(settings);
    }
    return std::make_unique<ScorerCachePress>(scorer(settings.name, settings.options));
}

std::shared_ptr<const Press> PressCatalog::base(const std::string& wrapper,
                                                const std::map<std::string, std::string>& given) {
    const auto [own, base] = config::PressDescriptions::splitOptions(wrapper, given);
    const std::string name = optionsOf(wrapper, own).text("base");
    if (!config::PressDescriptions::isScorer(name)) {
        throw std::invalid_argument("press " + wrapper + " option base=" + name +
                                    ": expected a scorer press (" + config::PressDescriptions::scorerNames() +
                                    ")");
    }
    return scorer(name, base);
}

PressCatalog::Wrapped PressCatalog::wrapped(const std::string& wrapper,
                                            const std::map<std::string, std::string>& given,
                                            const std::string& reason, Withheld withheld) {
    Wrapped made{optionsOf(wrapper, config::PressDescriptions::splitOptions(wrapper, given).first),
                 base(wrapper, given)};
    const bool queries = withheld == Withheld::QueriesOrAttentionWeights;
    if (!reason.empty() && (made.base->reads().attentions || (queries && made.base->reads().queries))) {
        throw std::invalid_argument(wrapper + " press: base " + made.base->name() + " reads " +
                                    (queries ? "queries or attention weights" : "attention weights") + ", " +
                                    reason);
    }
    return made;
}

AdaKvPress PressCatalog::adaKv(const std::map<std::string, std::string>& given, const std::string& reason) {
    const Wrapped made = wrapped("adakv", given, reason);
    return AdaKvPress(made.base, made.options.real("alpha_safeguard", 0.0, 1.0));
}

DecodingPress PressCatalog::decoding(const std::map<std::string, std::string>& given,
                                     const std::string& reason) {
    const Wrapped made = wrapped("decoding", given, reason);
    return DecodingPress(made.base, made.options.integer("compression_interval", 1),
                         made.options.integer("target_size", 1),
                         made.options.integer("hidden_states_buffer_size", 0));
}

H2oPress PressCatalog::h2o(const std::map<std::string, std::string>& given) {
    const PressOptions options = optionsOf("h2o", given);
    const int64_t budget = options.integer("budget", 1);
    // The recent window's default follows the budget, so that `budget=16` alone works.
    return H2oPress(budget, given.count("recent_window") != 0 ? options.integer("recent_window", 0)
                                                              : H2oPress::defaultRecentWindow(budget));
}

std::optional<std::string> PressCatalog::fromReferenceName(const std::string& referenceName) {
    if (const PressDescription* description = config::PressDescriptions::findByReference(referenceName)) {
        return description->name;
    }
    return std::nullopt;
}

} // namespace kvscope::press
