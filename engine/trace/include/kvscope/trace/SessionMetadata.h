#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kvscope::trace {

// What a session file says about the run that produced it: the header's JSON metadata.
struct SessionMetadata {
    std::string kvscopeVersion;
    std::string model;                    // preset name, config.json path or checkpoint folder
    std::string modelConfigJson = "{}";   // the model's configuration, a JSON object
    std::string cacheKind;                // dynamic, static, quantized, offloaded, ...
    std::string cacheSettingsJson = "{}"; // the cache's options, a JSON object
    std::string device = "cpu";           // cpu, cuda:0
    std::uint64_t seed = 0;
    std::string prompt;
    std::int64_t createdUnixNs = 0;

    bool operator==(const SessionMetadata&) const = default;

    // The header's JSON text; fromJson refuses text that is not a JSON object or holds a field of
    // the wrong type (SessionError naming the field). Unknown keys are ignored, missing ones keep
    // their defaults, so newer writers stay readable.
    std::string toJson() const;
    static SessionMetadata fromJson(std::string_view json);
};

} // namespace kvscope::trace
