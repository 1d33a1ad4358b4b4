// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/cli/ConformanceRunner.h"

#include <c10/core/Device.h>
#include <nlohmann/json_fwd.hpp>

#include <string>

namespace kvscope::cli {

/// Replays kvpress press fixtures (format: kvpress_ref/FORMAT.md, kinds "prefill" and "decoding") against
/// the engine's presses: scores within 1e-5 relative (Random exactly), kept tokens in canonical order
/// exactly, and in decoding the cache re-synced to kvpress's slot order before each compression.
class PressConformanceRunner {
public:
    explicit PressConformanceRunner(const c10::Device& device) : m_device(device) {}
    /// A fixture with a `kind` of "prefill" or "decoding" and a `press`.
    static bool isPressFixture(const nlohmann::json& fixture);
    FixtureResult runFixture(const nlohmann::json& fixture, const std::string& name) const;

private:
    c10::Device m_device;
};

} // namespace kvscope::cli
