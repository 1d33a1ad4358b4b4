// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <c10/core/Device.h>
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace kvscope::cli {

/// Writes the engine's session of each cache-level conformance fixture (`kvscope-cli conform DIR --record
/// OUT`), so that a recording of the reference running the same operations (the Python recorder,
/// python/kvscope) can be compared with it step by step. A step ends after every `cache_state` op and after
/// the last op; a step opens (StepBegin, token -1, no text) at the first op after that. Nothing is checked
/// here: `conform` does that.
class ConformanceRecorder {
public:
    /// What one directory gave: the sessions written, and for each fixture that could not be recorded, why.
    struct Result {
        std::vector<std::filesystem::path> written;
        std::vector<std::string> failures;
    };

    explicit ConformanceRecorder(const c10::Device& device = c10::Device(c10::kCPU)) : m_device(device) {}

    /// OUT/<fixture name>.kvsess for every cache-level *.json of the directory, sorted by name; layer-level
    /// fixtures are skipped (a session describes a cache). Creates OUT if needed.
    Result recordDirectory(const std::filesystem::path& directory, const std::filesystem::path& out) const;
    /// Runs the fixture's ops on the engine's cache with a SessionWriter attached; throws on a setup error or
    /// an op that fails where the reference did not.
    void recordFixture(const nlohmann::json& fixture, const std::string& name,
                       const std::filesystem::path& session) const;

private:
    c10::Device m_device;
};

} // namespace kvscope::cli
