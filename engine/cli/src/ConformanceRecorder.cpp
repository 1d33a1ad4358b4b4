// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/ConformanceRecorder.h"

#include "kvscope/cli/ConformanceRunner.h"

#include "kvscope/cache/CacheError.h"
#include "kvscope/cache/Cache.h"
#include "kvscope/config/CacheKind.h"
#include "kvscope/config/ComputeDevice.h"
#include "kvscope/config/ModelConfig.h"
#include "kvscope/trace/SessionWriter.h"

#include <ATen/ATen.h>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace kvscope::cli {
namespace {

using nlohmann::json;

at::Tensor tensorOf(const json& value, const at::Device& device) {
    const auto shape = value.at("shape").get<std::vector<int64_t>>();
    const auto data = value.at("data").get<std::vector<double>>();
    const std::vector<float> values(data.begin(), data.end());
    return at::tensor(values, at::kFloat).reshape(shape).to(device);
}

at::Tensor indicesOf(const json& value, const at::Device& device) {
    return at::tensor(value.get<std::vector<int64_t>>(), at::kLong).to(device);
}

/// One op of the fixture on the cache, as ConformanceRunner applies it (its results are not checked here).
void apply(cache::Cache& cache, const json& op, const at::Device& device) {
    const std::string name = op.at("op").get<std::string>();
    if (name == "mask_sizes") {
        cache.maskSizes(op.at("query_length").get<int64_t>(), op.at("layer_idx").get<int64_t>());
    } else if (name == "update") {
        cache.update(tensorOf(op.at("keys"), device), tensorOf(op.at("values"), device),
                     op.at("layer_idx").get<int64_t>());
    } else if (name == "update_conv_state") {
        cache.updateConvState(tensorOf(op.at("conv_states"), device), op.at("layer_idx").get<int64_t>());
    } else if (name == "update_recurrent_state") {
        cache.updateRecurrentState(tensorOf(op.at("recurrent_states"), device),
                                   op.at("layer_idx").get<int64_t>());
    } else if (name == "crop") {
        cache.crop(op.at("max_length").get<int64_t>());
    } else if (name == "reorder") {
        cache.reorder(indicesOf(op.at("beam_idx"), device));
    } else if (name == "batch_repeat_interleave") {
        cache.batchRepeatInterleave(op.at("repeats").get<int64_t>());
    } else if (name == "batch_select_indices") {
        cache.batchSelectIndices(indicesOf(op.at("indices"), device));
    } else if (name == "reset") {
        cache.reset();
    } else if (name == "get_seq_length") {
        (void)cache.seqLength(op.at("layer_idx").get<int64_t>());
    } else if (name == "has_previous_state") {
        (void)cache.hasPreviousState(op.at("layer_idx").get<int64_t>());
    }
    // `cache_state` and `state` only read: the step boundary is the caller's.
}

} // namespace

void ConformanceRecorder::recordFixture(const json& fixture, const std::string& name,
                                        const std::filesystem::path& session) const {
    const json& spec = fixture.at("cache");
    std::unique_ptr<cache::Cache> subject = ConformanceRunner::cacheOf(spec);
    trace::SessionMetadata metadata;
    metadata.kvscopeVersion = "kvscope-cli conform --record";
    metadata.model = name;
    metadata.modelConfigJson = spec.at("config").dump();
    const std::string type = spec.at("type").get<std::string>();
    metadata.cacheKind = config::toString(type == "StaticCache" ? config::CacheKind::Static : config::CacheKind::Dynamic);
    metadata.cacheSettingsJson =
        json{{"class", type}, {"max_cache_len", spec.value("max_cache_len", int64_t{-1})}}.dump();
    metadata.device = config::toString(m_device.is_cuda() ? config::ComputeDevice::Cuda : config::ComputeDevice::Cpu);
    metadata.createdUnixNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();

    trace::SessionWriter writer(session, metadata);
    subject->setEventSink(&writer);
    trace::EventEmitter& emitter = subject->eventEmitter();
    int64_t step = 0;
    bool open = false;
    auto started = std::chrono::steady_clock::now();
    auto closeStep = [&] {
        subject->finishStep();
        const auto wall = std::chrono::steady_clock::now() - started;
        emitter.emit(-1, trace::StepEndEvent{
                             -1, "", std::chrono::duration_cast<std::chrono::nanoseconds>(wall).count()});
        ++step;
        open = false;
    };
    try {
        for (const json& op : fixture.at("ops")) {
            if (!open) {
                subject->setStep(step);
                emitter.emit(-1, trace::StepBeginEvent{-1, ""});
                started = std::chrono::steady_clock::now();
                open = true;
            }
            try {
                apply(*subject, op, m_device);
            } catch (const cache::CacheError&) {
                if (!op.contains("expect_error")) {
                    throw;
                }
            }
            if (op.at("op").get<std::string>() == "cache_state") {
                closeStep();
            }
        }
        if (open) {
            closeStep();
        }
    } catch (...) {
        subject->setEventSink(nullptr);
        throw;
    }
    subject->setEventSink(nullptr);
    writer.finish();
}

ConformanceRecorder::Result ConformanceRecorder::recordDirectory(const std::filesystem::path& directory,
                                                                 const std::filesystem::path& out) const {
    std::filesystem::create_directories(out);
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(directory)) {
        if (entry.is_regular_file() && entry.path().extension() == ".json") {
            files.push_back(entry.path());
        }
    }
    std::sort(files.begin(), files.end());
    Result result;
    for (const auto& file : files) {
        const std::string name = file.filename().string();
        try {
            std::ifstream in(file);
            const json fixture = json::parse(in);
            if (fixture.value("level", std::string()) != "cache") {
                continue;
            }
            const std::filesystem::path session = out / (file.stem().string() + ".kvsess");
            recordFixture(fixture, name, session);
            result.written.push_back(session);
        } catch (const std::exception& error) {
            result.failures.push_back(name + ": " + error.what());
        }
    }
    return result;
}

} // namespace kvscope::cli
