// SPDX-License-Identifier: GPL-3.0-or-later
#include "RuntimeSessionEngine.h"

namespace kvscope::app {

// The inspector fits press defaults to a short prompt (docs/presses.md); `kvscope-cli run` keeps kvpress's.
RuntimeSessionEngine::RuntimeSessionEngine(const config::RunSettings& settings)
    : m_session(settings, runtime::LiveSession::PressDefaults::FitToPrompt) {}

gui::EngineCapabilities RuntimeSessionEngine::capabilities() {
    gui::EngineCapabilities capabilities;
    capabilities.presets = runtime::LiveSession::presetNames();
    capabilities.defaultPreset = runtime::LiveSession::defaultPreset();
    capabilities.cudaAvailable = runtime::LiveSession::cudaAvailable();
    capabilities.presses = runtime::LiveSession::presses();
    capabilities.describeTokenizer = &runtime::LiveSession::describeTokenizer;
    return capabilities;
}

} // namespace kvscope::app
