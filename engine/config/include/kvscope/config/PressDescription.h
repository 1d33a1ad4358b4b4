// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/PressOption.h"
#include "kvscope/config/PressPolicy.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kvscope::config {

/// One cache press the engine offers, self-described without LibTorch: its registration in
/// engine/presses/ (docs/presses.md, "Adding a press"). Every list of presses (CLI, GUI picker, event log,
/// docs) reads these.
struct PressDescription {
    /// The catalogue name (`snapkv`): `--press`, session files, the registration's identifier.
    std::string name;
    /// kvpress's class (`SnapKVPress`; empty for a press beyond kvpress): conformance fixtures name it.
    std::string referenceName;
    /// As people write it (`SnapKV`): the subject of the event log's sentences and the picker's label.
    std::string displayName;
    /// `scorer` (scores tokens; wrappers take it as `base`), `wrapper` (acts through a base press),
    /// `decoding` (compresses while decoding), `value-changing` (rewrites keys or values) or `layer` (one
    /// keep-or-not decision per layer, SimLayerKV).
    std::string kind;
    /// `prefill` (acts on the prefill's cache) or `decoding`.
    std::string phase;
    std::string summary;
    std::vector<PressOption> options;
    /// The event log's rule for one decision, its `{placeholders}` filled by PressDescriptions::sentence:
    /// `{dropped}` (tokens dropped per head), an option's name (its value), `{base}` (the base press's own
    /// rule) and `{base_name}` (the base press's display name).
    std::string sentence;
    /// The rule for a decision that dropped nothing (SimLayerKV's busy layer), placeholders as `sentence`;
    /// empty: `sentence` serves for every decision.
    std::string keptAllSentence;
    PressPolicy policy;
    /// A default that follows other options (H2O's recent_window: budget / 8), given the options set;
    /// nullopt where the declared default stands. Empty for most presses.
    std::function<std::optional<std::string>(const std::string& option,
                                             const std::map<std::string, std::string>& given)>
        derivedDefault;

    /// Whether the press takes a scorer press as its `base` option.
    bool wrapsBase() const;
};

} // namespace kvscope::config
