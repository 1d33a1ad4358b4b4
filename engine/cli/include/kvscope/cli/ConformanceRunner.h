// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <nlohmann/json_fwd.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kvscope::cache {
class Cache;
}

namespace kvscope::cli {

/// The outcome of one conformance fixture.
struct FixtureResult {
    std::string file;
    bool passed = false;
    /// For a failure: the op index, the op and what differed.
    std::string failure;
    /// Press fixtures: the largest relative score deviation from the reference, |port - ref| / |ref|.
    std::optional<double> scoreDeviation;
    /// Press fixtures: the scenario's kind (`snapkv`, `adakv_knorm`, `chunkkv`), for the per-kind counts.
    std::string kind;
    /// Press fixtures: no registered press answers the fixture's kvpress class; neither passed nor failed.
    bool notImplemented = false;
};

/// Replays golden fixtures written by the oracle's make_fixtures.py (format: oracle/FORMAT.md)
/// against the engine's caches and compares every observable result. The engine's tensors are made on
/// the runner's device; results are compared on the CPU.
class ConformanceRunner {
public:
    explicit ConformanceRunner(const c10::Device& device = c10::Device(c10::kCPU)) : m_device(device) {}

    FixtureResult runFile(const std::filesystem::path& path) const;
    FixtureResult runFixture(const nlohmann::json& fixture, const std::string& name) const;
    /// Every *.json in the directory, sorted by name.
    std::vector<FixtureResult> runDirectory(const std::filesystem::path& directory) const;
    /// The cache a cache-level fixture's "cache" spec names (DynamicCache or StaticCache of its config);
    /// std::runtime_error naming the allowed types otherwise. Shared with ConformanceRecorder.
    static std::unique_ptr<cache::Cache> cacheOf(const nlohmann::json& spec);
    /// A fixture tensor ({"shape", "data"}) as float32 on the CPU; shared with PressConformanceRunner.
    static at::Tensor tensorOf(const nlohmann::json& value);

private:
    c10::Device m_device;
};

} // namespace kvscope::cli
