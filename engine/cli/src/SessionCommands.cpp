// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cli/SessionCommands.h"

#include "kvscope/cli/OptionChecks.h"
#include "kvscope/trace/CompressionLayout.h"
#include "kvscope/trace/PerfettoExport.h"
#include "kvscope/trace/SessionError.h"
#include "kvscope/trace/SessionReader.h"
#include "kvscope/trace/Timeline.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <ostream>
#include <variant>

namespace kvscope::cli {
namespace {

using Json = nlohmann::json;

Json parsedOrText(const std::string& text) {
    Json value = Json::parse(text, nullptr, false);
    return value.is_discarded() ? Json(text) : value;
}

Json metadataJson(const trace::SessionMetadata& metadata) {
    return parsedOrText(metadata.toJson());
}

trace::Timeline timelineOf(const trace::SessionContents& contents) {
    trace::Timeline timeline;
    timeline.emitAll(contents.events);
    return timeline;
}

Json layerJson(std::size_t index, const trace::LayerState& layer) {
    Json json{{"layer", index},
              {"initialized", layer.initialized},
              {"type", trace::toString(layer.kind)},
              {"seq_length", layer.seqLength},
              {"stored_tokens", layer.storedTokens},
              {"capacity", layer.capacity},
              {"query_length", layer.queryLength},
              {"kv_length", layer.kvLength},
              {"kv_offset", layer.kvOffset},
              {"residency", trace::toString(layer.residency)},
              {"bytes_device", layer.bytesDevice},
              {"bytes_device_quantized", layer.bytesDeviceQuantized},
              {"bytes_host", layer.bytesHost}};
    if (trace::isSlidingWindow(layer.kind)) {
        json["window_start"] = layer.windowStart;
        json["window_end"] = layer.windowEnd;
        json["window_size"] = layer.windowSize;
        json["evicted_tokens"] = layer.evictedTokens;
    }
    if (layer.kind == trace::LayerKind::Quantized) {
        json["residual_tokens"] = layer.residualTokens;
        json["quantized_tokens"] = layer.quantizedTokens;
        json["last_flush_step"] = layer.lastFlushStep;
    }
    if (layer.batchSize > 0) {
        json["batch_size"] = layer.batchSize;
    }
    return json;
}

/// The paged-serving section (docs/paged.md): hashes as 16-hex-digit strings, since JSON readers hold
/// numbers as doubles and would round 64-bit hashes.
Json pagedJson(const trace::PagedState& paged) {
    const auto hex = [](std::uint64_t value) {
        char text[19];
        std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(value));
        return std::string(text);
    };
    Json groups = Json::array();
    for (const std::int64_t window : paged.groupWindows)
        groups.push_back(window == 0 ? Json{{"kind", "full"}}
                                     : Json{{"kind", "sliding"}, {"window", window}});
    Json blocks = Json::array();
    for (const trace::PagedBlockState& block : paged.blocks) {
        blocks.push_back({{"id", block.id},
                          {"ref_cnt", block.refCnt},
                          {"hash", block.cached ? Json(hex(block.hash)) : Json(nullptr)},
                          {"group", block.group < 0 ? Json(nullptr) : Json(block.group)}});
    }
    static constexpr const char* kPhases[] = {"waiting", "running", "preempted", "finished"};
    Json requests = Json::array();
    for (const trace::PagedRequestState& request : paged.requests) {
        Json tables = Json::object();
        for (std::size_t g = 0; g < request.blockTables.size(); ++g)
            tables[std::to_string(g)] = request.blockTables[g];
        requests.push_back({{"id", request.id},
                            {"state", kPhases[static_cast<std::size_t>(request.phase)]},
                            {"block_tables", std::move(tables)},
                            {"num_computed_tokens", request.numComputedTokens},
                            {"prompt_tokens", request.promptTokens},
                            {"cached_tokens", request.cachedTokens},
                            {"preemptions", request.preemptions},
                            {"output_tokens", request.outputTokens}});
    }
    return Json{{"block_size", paged.blockSize},
                {"num_blocks", paged.numBlocks},
                {"null_block", paged.nullBlock < 0 ? Json(nullptr) : Json(paged.nullBlock)},
                {"free_policy", paged.freePolicy == 1 ? "current" : "document"},
                {"prefix_caching", paged.prefixCaching},
                {"groups", std::move(groups)},
                {"free_queue", paged.freeQueue},
                {"blocks", std::move(blocks)},
                {"requests", std::move(requests)},
                {"evictions", paged.evictions},
                {"preemptions", paged.preemptions},
                {"query_tokens", paged.queryTokens},
                {"hit_tokens", paged.hitTokens}};
}

/// An attached server's section (docs/paged.md): its stored blocks in storing order, hashes as the server's
/// integers (as `kvscope-cli attach --kv-events` and vLLM write them), and its stream's counters.
Json serverJson(const trace::ServerCacheState& server) {
    std::vector<const trace::ServerBlockState*> order;
    for (const auto& [key, block] : server.blocks)
        order.push_back(&block);
    std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return a->storedIndex < b->storedIndex; });
    Json blocks = Json::array();
    for (const trace::ServerBlockState* block : order) {
        blocks.push_back({{"hash", block->hash},
                          {"parent_hash", block->hasParent ? Json(block->parentHash) : Json(nullptr)},
                          {"token_ids", block->tokenIds},
                          {"text", block->text},
                          {"medium", block->medium},
                          {"group", block->group},
                          {"stored_step", block->storedStep}});
    }
    return Json{{"blocks", std::move(blocks)},
                {"stored_blocks", server.storedBlocks},
                {"removed_blocks", server.removedBlocks},
                {"clears", server.clears},
                {"message_sequence", server.messageSequence},
                {"messages", server.messages},
                {"lost_messages", server.lostMessages},
                {"refused_messages", server.refusedMessages},
                {"prefix_cache_queries", server.prefixCacheQueries < 0 ? Json(nullptr) : Json(server.prefixCacheQueries)},
                {"prefix_cache_hits", server.prefixCacheHits < 0 ? Json(nullptr) : Json(server.prefixCacheHits)}};
}

Json stateJson(const trace::StepState& state) {
    Json layers = Json::array();
    for (std::size_t index = 0; index < state.layers.size(); ++index) {
        layers.push_back(layerJson(index, state.layers[index]));
    }
    Json json{{"step", state.step},
              {"input_token_id", state.inputTokenId},
              {"input", state.inputText},
              {"token_id", state.tokenId},
              {"token", state.tokenText},
              {"wall_ns", state.wallNs},
              {"memory",
               {{"device_full_precision", state.memoryDeviceFullPrecision},
                {"device_quantized", state.memoryDeviceQuantized},
                {"host", state.memoryHost}}},
              {"layers", std::move(layers)}};
    if (state.paged.active)
        json["paged"] = pagedJson(state.paged);
    if (state.server.active)
        json["server"] = serverJson(state.server);
    return json;
}

/// Adds to each pressed layer of `json` (a stateJson) the last compression at or before its step: the press,
/// lengths and the positions each KV head kept (batch row 0). Sessions without presses are unchanged.
void addCompressions(Json& json, const trace::Timeline& timeline) {
    const std::int64_t step = json.at("step").get<std::int64_t>();
    for (std::int64_t earlier = 0; earlier <= step && earlier < timeline.stepCount(); ++earlier) {
        for (const trace::Event& event : timeline.eventsOfStep(earlier)) {
            const auto* compression = std::get_if<trace::CompressionEvent>(&event.payload);
            if (compression == nullptr || event.layer < 0 ||
                static_cast<std::size_t>(event.layer) >= json["layers"].size()) {
                continue;
            }
            const trace::CompressionLayout layout(*compression);
            Json kept = Json::array();
            Json keptScores = Json::array();
            Json rotary = Json::array();
            Json channels = Json::array();
            for (std::int32_t head = 0; head < layout.heads(); ++head) {
                const auto positions = layout.keptPositions(head);
                const auto scores = layout.keptScores(head);
                const auto rotated = layout.rotaryPositions(head);
                const auto zeroed = layout.prunedChannels(head);
                if (!zeroed.empty()) {
                    channels.push_back(std::vector<std::int32_t>(zeroed.begin(), zeroed.end()));
                }
                if (positions.empty()) {
                    continue;
                }
                // Ascending positions, each score beside its position.
                std::vector<std::size_t> order(positions.size());
                std::iota(order.begin(), order.end(), std::size_t{0});
                std::sort(order.begin(), order.end(),
                          [&](std::size_t a, std::size_t b) { return positions[a] < positions[b]; });
                Json headPositions = Json::array();
                Json headScores = Json::array();
                Json headRotary = Json::array();
                for (const std::size_t index : order) {
                    headPositions.push_back(positions[index]);
                    if (!scores.empty()) {
                        headScores.push_back(scores[index]);
                    }
                    if (!rotated.empty()) {
                        headRotary.push_back(rotated[index]);
                    }
                }
                kept.push_back(std::move(headPositions));
                if (!rotated.empty()) {
                    rotary.push_back(std::move(headRotary));
                }
                if (!scores.empty()) {
                    keptScores.push_back(std::move(headScores));
                }
            }
            json["layers"][static_cast<std::size_t>(event.layer)]["compression"] = {
                {"step", earlier},
                {"before", compression->lengthBefore},
                {"after", compression->lengthAfter},
                {"kept_positions", kept}};
            if (!keptScores.empty()) {
                json["layers"][static_cast<std::size_t>(event.layer)]["compression"]["kept_scores"] =
                    keptScores;
            }
            if (!rotary.empty()) {
                // 1.7: the position each kept key's rotation now encodes, beside kept_positions.
                json["layers"][static_cast<std::size_t>(event.layer)]["compression"]["rotary_positions"] =
                    rotary;
            }
            if (!channels.empty()) {
                json["layers"][static_cast<std::size_t>(event.layer)]["compression"]["pruned_channels"] =
                    channels;
            }
        }
    }
}

/// Adds to `json` (a stateJson) the step's speculative verification (format 1.9), when it made one: where the
/// drafts went, the drafted ids, how many were accepted, the positions written and rolled back, and every layer's
/// seq_length before the step and after the crop.
void addSpeculation(Json& json, const trace::Timeline& timeline) {
    const std::int64_t step = json.at("step").get<std::int64_t>();
    for (const trace::Event& event : timeline.retainedEvents()) {
        if (event.step > step) {
            break; // retained events come in step order
        }
        const auto* speculation = std::get_if<trace::SpeculationEvent>(&event.payload);
        if (speculation == nullptr || event.step != step) {
            continue;
        }
        const std::int64_t kept = speculation->firstPosition + speculation->accepted;
        json["speculation"] = {{"source", trace::toString(speculation->source)},
                               {"first_position", speculation->firstPosition},
                               {"draft_ids", speculation->draftIds},
                               {"drafted", speculation->drafted()},
                               {"accepted", speculation->accepted},
                               {"rolled_back", {kept, speculation->firstPosition + speculation->drafted()}},
                               {"lengths_before", speculation->lengthsBefore},
                               {"lengths_after", speculation->lengthsAfter}};
    }
}

/// Adds to each layer of `json` (a stateJson) that reported its quantisation error per channel (llama.cpp's cache,
/// format 1.8) its latest report at or before the step: the tokens it covers and, per KV head, each channel's RMS
/// error and size for keys and values.
void addChannelErrors(Json& json, const trace::Timeline& timeline) {
    const std::int64_t step = json.at("step").get<std::int64_t>();
    for (const trace::Event& event : timeline.retainedEvents()) {
        if (event.step > step) {
            break; // retained events come in step order
        }
        const auto* report = std::get_if<trace::ChannelErrorEvent>(&event.payload);
        if (report == nullptr || report->heads <= 0 || event.layer < 0 ||
            static_cast<std::size_t>(event.layer) >= json["layers"].size()) {
            continue;
        }
        const auto heads = static_cast<std::size_t>(report->heads);
        const auto perHead = [heads](const std::vector<float>& values) {
            Json split = Json::array();
            const std::size_t dim = values.size() / heads;
            if (dim * heads != values.size()) {
                return split; // a damaged file's list: nothing to split
            }
            for (std::size_t head = 0; head < heads; ++head) {
                split.push_back(std::vector<float>(values.begin() + static_cast<std::ptrdiff_t>(head * dim),
                                                   values.begin() + static_cast<std::ptrdiff_t>((head + 1) * dim)));
            }
            return split;
        };
        json["layers"][static_cast<std::size_t>(event.layer)]["channel_error"] = {
            {"step", event.step},
            {"tokens", report->tokens},
            {"key_error", perHead(report->keyError)},
            {"key_size", perHead(report->keySize)},
            {"value_error", perHead(report->valueError)},
            {"value_size", perHead(report->valueSize)}};
    }
}

/// Adds to `json` (a stateJson) the next-token distribution its step produced, when the session recorded one:
/// log-probabilities of row 0, the whole vocabulary by token id (complete) or the most likely tokens with ids.
void addNextToken(Json& json, const trace::Timeline& timeline) {
    const std::int64_t step = json.at("step").get<std::int64_t>();
    if (step < 0 || step >= timeline.stepCount()) {
        return;
    }
    for (const trace::Event& event : timeline.eventsOfStep(step)) {
        if (const auto* logits = std::get_if<trace::LogitsEvent>(&event.payload)) {
            json["next_token"] = {{"complete", logits->complete}, {"log_probs", logits->logProbs}};
            if (!logits->complete) {
                json["next_token"]["token_ids"] = logits->tokenIds;
            }
        }
    }
}

void print(std::ostream& out, const Json& json) {
    out << json.dump(2, ' ', false, Json::error_handler_t::replace) << std::endl;
}

void warnDamage(std::ostream& err, const char* command, const trace::SessionContents& contents) {
    if (!contents.damage.empty()) {
        err << "kvscope-cli " << command << ": " << contents.damage << "\n";
    }
}

} // namespace

void SessionCommands::addSubcommands(CLI::App& app, Options& options) {
    CLI::App* info = app.add_subcommand("info", "Header, steps, layers and event counts of a session file");
    info->add_option("FILE", options.file, "A session file (.kvsess)")->required();
    CLI::App* replay = app.add_subcommand("replay", "The cache state at a step of a session file, as JSON");
    replay->add_option("FILE", options.file, "A session file (.kvsess)")->required();
    CLI::Option* step = replay->add_option("--step", options.step, "Step to show (default: the last)")
                            ->check(OptionChecks::integerAtLeast(0));
    replay->add_flag("--all-steps", options.allSteps, "Every step's state, as a JSON array indexed by step")
        ->excludes(step);
    CLI::App* exporter =
        app.add_subcommand("export", "Export a session file for Perfetto (Chrome trace JSON)");
    exporter->add_option("FILE", options.file, "A session file (.kvsess)")->required();
    exporter->add_option("--perfetto", options.perfetto, "The JSON file to write")->required();
}

int SessionCommands::info(const Options& options, std::ostream& out, std::ostream& err) {
    trace::SessionContents contents;
    try {
        contents = trace::SessionReader::read(options.file);
    } catch (const trace::SessionError& error) {
        err << "kvscope-cli info: " << error.what() << "\n";
        return 2;
    }
    const trace::Timeline timeline = timelineOf(contents);
    std::map<std::string, std::int64_t> counts;
    for (const trace::Event& event : contents.events) {
        ++counts[std::string(trace::toString(event.kind()))];
    }
    Json layerTypes = Json::array();
    for (const trace::LayerState& layer : timeline.latestState().layers) {
        layerTypes.push_back(trace::toString(layer.kind));
    }
    Json json{{"file", options.file},
              {"format_version", contents.version.toString()},
              {"bytes", contents.fileBytes},
              {"complete", contents.complete},
              {"metadata", metadataJson(contents.metadata)},
              {"steps", timeline.stepCount()},
              {"intact_steps", contents.intactSteps},
              {"layers", timeline.layerCount()},
              {"layer_types", layerTypes},
              {"events", contents.events.size()},
              {"event_counts", counts},
              {"skipped_chunks", contents.skippedChunks}};
    // Only when there are any: the golden info files of every format version stay as they are.
    if (contents.skippedEvents > 0) {
        json["skipped_events"] = contents.skippedEvents;
    }
    std::int64_t lost = 0;
    for (const auto& [operation, count] : contents.lost) {
        lost += count;
    }
    if (lost > 0) {
        json["lost"] = {{"count", lost}, {"operations", contents.lost}};
    }
    if (!contents.damage.empty()) {
        json["damage"] = contents.damage;
    }
    print(out, json);
    if (lost > 0) {
        err << "kvscope-cli info: the recorder could not record " << lost
            << " operation(s) (`lost` in the file; the state shown misses what they did)\n";
    }
    warnDamage(err, "info", contents);
    return contents.damage.empty() ? 0 : 2;
}

int SessionCommands::replay(const Options& options, std::ostream& out, std::ostream& err) {
    try {
        if (options.allSteps) {
            // Every step's state in one pass over the file (what comparing two recordings needs).
            const trace::SessionContents contents = trace::SessionReader::read(options.file);
            warnDamage(err, "replay", contents);
            const trace::Timeline timeline = timelineOf(contents);
            Json states = Json::array();
            for (std::int64_t step = 0; step < timeline.stepCount(); ++step) {
                Json json = stateJson(timeline.stateAt(step));
                addCompressions(json, timeline);
                addChannelErrors(json, timeline);
                addSpeculation(json, timeline);
                addNextToken(json, timeline);
                json["file"] = options.file;
                states.push_back(std::move(json));
            }
            print(out, states);
            return 0;
        }
        trace::StepState state;
        if (options.step) {
            // Seeks through the index footer: reads the nearest snapshot and the steps after it.
            state = trace::SessionReader::stateAt(options.file, *options.step);
        }
        const trace::SessionContents contents = trace::SessionReader::read(options.file);
        if (!options.step) {
            warnDamage(err, "replay", contents);
        }
        const trace::Timeline timeline = timelineOf(contents);
        if (!options.step) {
            if (timeline.stepCount() == 0) {
                err << "kvscope-cli replay: " << options.file << " holds no intact step\n";
                return 2;
            }
            state = timeline.stateAt(timeline.stepCount() - 1);
        }
        Json json = stateJson(state);
        addCompressions(json, timeline);
        addChannelErrors(json, timeline);
        addSpeculation(json, timeline);
        addNextToken(json, timeline);
        json["file"] = options.file;
        print(out, json);
        return 0;
    } catch (const trace::SessionError& error) {
        err << "kvscope-cli replay: " << error.what() << "\n";
        return 2;
    }
}

int SessionCommands::exportPerfetto(const Options& options, std::ostream& out, std::ostream& err) {
    try {
        const trace::SessionContents contents = trace::SessionReader::read(options.file);
        warnDamage(err, "export", contents);
        trace::PerfettoExport::write(std::filesystem::path(options.perfetto), contents.metadata,
                                     contents.events);
        print(out, Json{{"file", options.file},
                        {"perfetto", options.perfetto},
                        {"events", contents.events.size()},
                        {"intact_steps", contents.intactSteps},
                        {"bytes", std::filesystem::file_size(options.perfetto)}});
        return 0;
    } catch (const trace::SessionError& error) {
        err << "kvscope-cli export: " << error.what() << "\n";
        return 2;
    }
}

} // namespace kvscope::cli
