#pragma once

#include <cstdint>
#include <string>

namespace kvscope::trace {

/// What a live run is asked to do, torch-free so that the GUI's New session dialog and the engine's
/// LiveSession share one definition: one model source (preset, config.json or checkpoint folder;
/// all empty = the default preset), the cache and its options, the prompt, how many tokens, seeds
/// and the device.
struct RunSettings {
    std::string preset;
    std::string configPath;
    std::string checkpointDir;
    std::string cacheKind = "dynamic"; ///< dynamic, static, quantized or offloaded
    std::string backend = "min-max";   ///< quantized: min-max (alias quanto) or hqq
    int nbits = 4;
    std::int64_t groupSize = 0;
    std::int64_t residualLength = 128;
    std::int64_t maxCacheLen = 0;
    std::string prompt = "The key-value cache";
    std::int64_t tokens = 32;
    std::uint64_t seed = 0;
    std::uint64_t weightSeed = 0;
    std::string device = "cpu"; ///< cpu or cuda

    bool operator==(const RunSettings&) const = default;
};

} // namespace kvscope::trace
