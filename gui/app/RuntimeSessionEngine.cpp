// SPDX-License-Identifier: GPL-3.0-or-later
#include "RuntimeSessionEngine.h"

namespace kvscope::app {

RuntimeSessionEngine::RuntimeSessionEngine(const config::RunSettings& settings) : m_session(settings) {}

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
