// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/ConformanceRecorder.h"

#include "kvscope/trace/SessionReader.h"

#include <ATen/ATen.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <nlohmann/json.hpp>
#include <unistd.h>

using kvscope::cli::ConformanceRecorder;
namespace trace = kvscope::trace;

namespace {

const std::filesystem::path kFixtures = std::filesystem::path(KVSCOPE_TEST_DATA_DIR) / "conformance";

/// A fresh directory under the system's temporary folder, removed with the test.
struct ScratchDirectory {
    std::filesystem::path path;
    explicit ScratchDirectory(const std::string& name)
        : path(std::filesystem::temp_directory_path() /
               ("kvscope-" + name + "-" + std::to_string(::getpid()))) {
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~ScratchDirectory() { std::filesystem::remove_all(path); }
};

int64_t countOps(const nlohmann::json& fixture, const std::string& op) {
    const auto& ops = fixture.at("ops");
    return std::count_if(ops.begin(), ops.end(),
                         [&](const nlohmann::json& entry) { return entry.at("op") == op; });
}

} // namespace

/// One step per cache_state op, each opened by StepBegin and closed by StepEnd, every update recorded.
TEST(ConformanceRecorderTest, OneStepPerCacheStateWithEveryUpdate) {
    const std::string name = "seed101_cache_007_DynamicCache_sliding.json";
    std::ifstream in(kFixtures / name);
    const nlohmann::json fixture = nlohmann::json::parse(in);
    ScratchDirectory scratch("recorder-one");
    const std::filesystem::path session = scratch.path / "one.kvsess";
    ConformanceRecorder().recordFixture(fixture, name, session);

    const trace::SessionContents contents = trace::SessionReader::read(session);
    EXPECT_TRUE(contents.complete) << contents.damage;
    const int64_t steps = countOps(fixture, "cache_state");
    EXPECT_EQ(contents.intactSteps, steps);
    std::map<trace::EventKind, int64_t> counts;
    for (const trace::Event& event : contents.events) {
        ++counts[event.kind()];
    }
    EXPECT_EQ(counts[trace::EventKind::StepBegin], steps);
    EXPECT_EQ(counts[trace::EventKind::StepEnd], steps);
    EXPECT_EQ(counts[trace::EventKind::Update], countOps(fixture, "update"));
    EXPECT_EQ(counts[trace::EventKind::MaskSizes], countOps(fixture, "mask_sizes"));
    EXPECT_GT(counts[trace::EventKind::WindowSlide], 0);
    EXPECT_EQ(contents.metadata.model, name);
    EXPECT_EQ(contents.metadata.cacheKind, "dynamic");
}

/// A directory: a session per cache-level fixture, none for layer-level ones.
TEST(ConformanceRecorderTest, DirectoryRecordsCacheFixturesOnly) {
    ScratchDirectory fixtures("recorder-fixtures");
    ScratchDirectory out("recorder-out");
    for (const char* name :
         {"seed101_cache_023_StaticCache_sliding.json", "seed101_random_000_dynamic.json"}) {
        std::filesystem::copy_file(kFixtures / name, fixtures.path / name);
    }
    const ConformanceRecorder::Result result = ConformanceRecorder().recordDirectory(fixtures.path, out.path);
    EXPECT_TRUE(result.failures.empty());
    ASSERT_EQ(result.written.size(), 1U);
    EXPECT_EQ(result.written[0].filename(), "seed101_cache_023_StaticCache_sliding.kvsess");
    const trace::SessionContents contents = trace::SessionReader::read(result.written[0]);
    EXPECT_TRUE(contents.complete);
    EXPECT_EQ(contents.metadata.cacheKind, "static");
}
