#include "RuntimeSessionEngine.h"

namespace kvscope::app {

RuntimeSessionEngine::RuntimeSessionEngine(const gui::SessionSettings& settings) : m_session(toRuntime(settings)) {}

runtime::LiveSessionSettings RuntimeSessionEngine::toRuntime(const gui::SessionSettings& settings) {
    runtime::LiveSessionSettings result;
    result.preset = settings.preset;
    result.configPath = settings.configPath;
    result.checkpointDir = settings.checkpointDir;
    result.cacheKind = settings.cacheKind;
    result.backend = settings.backend;
    result.nbits = settings.nbits;
    result.groupSize = settings.groupSize;
    result.residualLength = settings.residualLength;
    result.maxCacheLen = settings.maxCacheLen;
    result.prompt = settings.prompt;
    result.tokens = settings.tokens;
    result.seed = settings.seed;
    result.device = settings.device;
    return result;
}

gui::EngineCapabilities RuntimeSessionEngine::capabilities() {
    gui::EngineCapabilities capabilities;
    capabilities.presets = runtime::LiveSession::presetNames();
    capabilities.defaultPreset = runtime::LiveSession::defaultPreset();
    capabilities.cudaAvailable = runtime::LiveSession::cudaAvailable();
    return capabilities;
}

} // namespace kvscope::app
