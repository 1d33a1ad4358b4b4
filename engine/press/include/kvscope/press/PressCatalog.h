// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/PressDescription.h"
#include "kvscope/press/AdaKvPress.h"
#include "kvscope/press/DecodingPress.h"
#include "kvscope/press/H2oPress.h"
#include "kvscope/press/PressOption.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kvscope::press {

/// One press the catalogue offers (listed in kvscope_config, without LibTorch).
using PressDescription = config::PressDescription;

/// Every press by name, with its options; builds presses from `key=value` options (the CLI's
/// `--press-option`) and from kvpress class names (the conformance fixtures).
class PressCatalog {
public:
    static const std::vector<PressDescription>& presses();
    /// Comma-separated catalogue names, for error messages.
    static std::string allowedNames();
    /// A scorer press; std::invalid_argument naming the allowed names or option values otherwise.
    static std::shared_ptr<const Press> scorer(const std::string& name, const std::map<std::string, std::string>& options);
    static AdaKvPress adaKv(const std::map<std::string, std::string>& options);
    static DecodingPress decoding(const std::map<std::string, std::string>& options);
    static H2oPress h2o(const std::map<std::string, std::string>& options);
    /// The catalogue name of a kvpress class name (`SnapKVPress` -> `snapkv`).
    static std::optional<std::string> fromReferenceName(const std::string& referenceName);
};

} // namespace kvscope::press
