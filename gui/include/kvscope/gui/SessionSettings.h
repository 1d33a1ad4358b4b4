#pragma once

#include <cstdint>
#include <string>

namespace kvscope::gui {

// What the New session dialog asks for: the model source (preset, config.json or checkpoint folder;
// all empty = the default preset), the cache and its options, prompt, tokens, seed and device.
struct SessionSettings {
    std::string preset;
    std::string configPath;
    std::string checkpointDir;
    std::string cacheKind = "dynamic";
    std::string backend = "min-max";
    int nbits = 4;
    std::int64_t groupSize = 0;
    std::int64_t residualLength = 128;
    std::int64_t maxCacheLen = 0;
    std::string prompt = "The key-value cache";
    std::int64_t tokens = 32;
    std::uint64_t seed = 0;
    std::string device = "cpu";

    bool operator==(const SessionSettings&) const = default;
};

} // namespace kvscope::gui
