// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/PressDescription.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

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
};

} // namespace kvscope::config
