// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/PressDescription.h"
#include "kvscope/config/RunSettings.h"
#include "kvscope/press/AdaKvPress.h"
#include "kvscope/press/CachePress.h"
#include "kvscope/press/DecodingPress.h"
#include "kvscope/press/H2oPress.h"
#include "kvscope/press/PressFactory.h"
#include "kvscope/press/PressOption.h"
#include "kvscope/press/PressOptions.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kvscope::press {

/// One press the catalogue offers (listed in kvscope_config, without LibTorch).
using PressDescription = config::PressDescription;

/// The press registry's LibTorch half: every registration of engine/presses/PressList.h by name, with its
/// description (config::PressDescriptions) and factory. Builds presses from `key=value` options (the CLI's
/// `--press-option`) and finds them by kvpress class name (the conformance fixtures).
class PressCatalog {
public:
    static const std::vector<PressDescription>& presses();
    /// Comma-separated catalogue names, for error messages.
    static std::string allowedNames();
    /// The registration's factory of press `name`; std::invalid_argument naming the allowed names otherwise.
    static const PressFactory& factory(const std::string& name);
    /// A scorer press; std::invalid_argument naming the allowed names or option values otherwise.
    static std::shared_ptr<const Press> scorer(const std::string& name, const std::map<std::string, std::string>& options);
    /// The press a generation applies for `settings` (any kind); std::invalid_argument on bad settings.
    static std::unique_ptr<CachePress> generation(const config::PressSettings& settings);
    /// A wrapper's base scorer: its `base` option (else the declared default) built from the options the
    /// wrapper does not declare itself.
    static std::shared_ptr<const Press> base(const std::string& wrapper,
                                             const std::map<std::string, std::string>& options);
    /// What a wrapper cannot hand its base press.
    enum class Withheld { AttentionWeights, QueriesOrAttentionWeights };
    /// A wrapper's own options (checked against its declaration) and its base scorer.
    struct Wrapped {
        PressOptions options;
        std::shared_ptr<const Press> base;
    };
    /// `wrapper`'s options and base from `given`. With a `reason`, a base that reads what the wrapper
    /// withholds is refused: "<wrapper> press: base <base> reads <attention weights>, <reason>" (the reason
    /// says why, then the fix: "which ... refuses; choose another base (knorm, ...)").
    static Wrapped wrapped(const std::string& wrapper, const std::map<std::string, std::string>& given,
                           const std::string& reason = {}, Withheld withheld = Withheld::AttentionWeights);
    /// `given` checked against press `name`'s declared options (the wrapper's own only, for a wrapper).
    static PressOptions optionsOf(const std::string& name, const std::map<std::string, std::string>& given);
    /// AdaKV and DecodingPress from their options; `reason` as wrapped()'s.
    static AdaKvPress adaKv(const std::map<std::string, std::string>& options,
                            const std::string& reason = {});
    static DecodingPress decoding(const std::map<std::string, std::string>& options,
                                  const std::string& reason = {});
    static H2oPress h2o(const std::map<std::string, std::string>& options);
    /// The catalogue name of a kvpress class name (`SnapKVPress` -> `snapkv`).
    static std::optional<std::string> fromReferenceName(const std::string& referenceName);
};

} // namespace kvscope::press
