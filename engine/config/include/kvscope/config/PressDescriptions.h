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

/// The registry of cache presses without LibTorch: every registration of engine/presses/PressList.h with
/// its names, kind, options and defaults, event-log sentence and policy, for checking a run's settings, the
/// CLI's `presses`, the GUI's New session dialog and event log. kvscope_press builds the presses themselves
/// from the same registrations (press::PressCatalog).
class PressDescriptions {
public:
    static const std::vector<PressDescription>& all();
    /// The press called `name`, or null.
    static const PressDescription* find(const std::string& name);
    /// The press of kvpress class `referenceName` (`SnapKVPress`), or null.
    static const PressDescription* findByReference(const std::string& referenceName);
    /// The press called `name`; std::invalid_argument naming the allowed names otherwise.
    static const PressDescription& describe(const std::string& name);
    /// Comma-separated names, for error messages.
    static std::string allowedNames();
    /// The scorer presses a wrapper (adakv, decoding) may take as its `base`, comma-separated.
    static std::string scorerNames();
    /// Whether `name` is a scorer press (kind `scorer`).
    static bool isScorer(const std::string& name);
    /// The option's value in `press`, else its default (a derived one, or the declared one; a wrapper's
    /// base press declares the options the wrapper does not); "" for an option neither declares.
    static std::string optionValue(const PressSettings& press, const std::string& option);
    /// The press's event-log rule for a decision that dropped `dropped` tokens per head, its sentence
    /// template filled with `press`'s options ("the 2 whose attention from the last 64 queries was lowest
    /// were dropped"); a generic rule for an unknown press.
    static std::string rule(const PressSettings& press, std::int64_t dropped);
    /// A wrapper's options split into its own and the rest, which go to its base press; `base.NAME` goes to
    /// the base press as NAME even where the wrapper declares NAME too.
    static std::pair<std::map<std::string, std::string>, std::map<std::string, std::string>>
    splitOptions(const std::string& wrapper, const std::map<std::string, std::string>& given);
    /// The options of a wrapper's stage press (option type `stage`: PrefillDecoding's `prefill`, Composed's
    /// `first` and `second`), given as `stage.NAME`, without the prefix.
    static std::map<std::string, std::string> stageOptions(const std::map<std::string, std::string>& given,
                                                           const std::string& stage);
    /// The presses a `stage` option takes (prefill presses that do not mask), except `except`,
    /// comma-separated.
    static std::string stagePressNames(const std::string& except);
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
