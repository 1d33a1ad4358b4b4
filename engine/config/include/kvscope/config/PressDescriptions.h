// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/PressDescription.h"
#include "kvscope/config/RunSettings.h"

#include <map>
#include <string>
#include <utility>
#include <vector>
#include <cstdint>

namespace kvscope::config {

/// The catalogue of cache presses without LibTorch: names, options and defaults, for checking a run's
/// settings and for the GUI's New session dialog. kvscope_press builds the presses themselves.
class PressDescriptions {
public:
    static const std::vector<PressDescription>& all();
    /// The press called `name`, or null.
    static const PressDescription* find(const std::string& name);
    /// The press called `name`; std::invalid_argument naming the allowed names otherwise.
    static const PressDescription& describe(const std::string& name);
    /// Comma-separated names, for error messages.
    static std::string allowedNames();
    /// The scorer presses a wrapper (adakv, decoding) may take as its `base`, comma-separated.
    static std::string scorerNames();
    /// Whether `name` is a scorer press (a prefill press other than adakv).
    static bool isScorer(const std::string& name);
    /// A wrapper's options split into its own and the rest, which go to its base press.
    static std::pair<std::map<std::string, std::string>, std::map<std::string, std::string>>
    splitOptions(const std::string& wrapper, const std::map<std::string, std::string>& given);
    /// Checks `options` given to press `name` (which must exist): every key is the press's own or, for a
    /// wrapper, its base press's, and every value reads as its type. Throws std::invalid_argument naming the
    /// press, the option and what is allowed. Ranges are the press's own check when it is built.
    static void checkOptions(const std::string& name, const std::map<std::string, std::string>& options);

    /// H2O's recent_window when none is given: an eighth of the budget, at least 1 (256 of the default
    /// 2048), so that any budget works alone.
    static std::int64_t h2oRecentWindow(std::int64_t budget);
    /// What an option that must stay below the prompt fits a prompt of `tokens` tokens with: the largest
    /// power of two at most half of it (8 for 20 tokens), or 0 under 2 tokens (no value fits).
    static std::int64_t fitBelowPrompt(std::int64_t tokens);
    /// The inspector's defaults: every prompt-bounded option (PressOption::belowPrompt) of the press, or of
    /// an adakv's base press, that `press` does not set and whose default is not below `tokens` is set to
    /// fitBelowPrompt(tokens), and `press.fitted` records the default it replaced. Options the user gave
    /// stay (the press refuses them, saying why); `kvscope-cli run` keeps kvpress's defaults and never
    /// calls this. Returns one line per fitted option, e.g. "snapkv window_size 8 instead of 64: the
    /// prompt has 20 tokens".
    static std::vector<std::string> fitToPrompt(PressSettings& press, std::int64_t tokens);
    /// A press's refusal of a prompt-bounded option, in the user's terms and with the fix: "SnapKV's
    /// window_size (64) must be shorter than the prompt (20 tokens): give a longer prompt or --press-option
    /// window_size=8" (`press` as people write it).
    static std::string promptTooShort(const std::string& press, const std::string& option, std::int64_t value,
                                      std::int64_t tokens);
};

} // namespace kvscope::config
