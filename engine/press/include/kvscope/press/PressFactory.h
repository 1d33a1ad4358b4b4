// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/PressRegistration.h"
#include "kvscope/config/RunSettings.h"
#include "kvscope/press/CachePress.h"
#include "kvscope/press/Press.h"
#include "kvscope/press/PressOptions.h"

#include <functional>
#include <memory>

namespace kvscope::press {

/// The LibTorch half of a press's registration (engine/presses/<Press>.cpp): how to build it.
struct PressFactory {
    /// A scorer press (kind `scorer`) from its own checked options; empty for other kinds.
    std::function<std::shared_ptr<const Press>(const PressOptions& options)> scorer;
    /// The press a generation applies, from the run's press settings (options unchecked: check them with
    /// PressOptions); empty for a scorer, which a ScorerCachePress applies after the prefill. Throws
    /// std::invalid_argument naming what is wrong and what is allowed.
    std::function<std::unique_ptr<CachePress>(const config::PressSettings& settings)> generation;

    /// The factory of a scorer press with no options of its own: the run's ratio is its only setting.
    template <typename Scorer> static PressFactory scorerWithRatio() {
        PressFactory factory;
        factory.scorer = [](const PressOptions&) { return std::make_shared<Scorer>(); };
        return factory;
    }
};

} // namespace kvscope::press

/// Defines the press's factory in its file under engine/presses/ (inside `#if KVSCOPE_PRESS_ENGINE`).
#define KVSCOPE_PRESS_FACTORY(id) ::kvscope::press::PressFactory kvscopePressFactory_##id()
