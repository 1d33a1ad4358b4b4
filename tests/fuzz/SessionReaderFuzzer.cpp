// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: SessionReader::read must survive any bytes (no crash, no hang, bounded memory), and so
// must a file-backed Timeline (Timeline::openFile: SessionReader::scan, then steps decoded on demand).
// Build: CXX=clang++ cmake --preset dev -B build/fuzz && ninja -C build/fuzz SessionReaderFuzzer
// Run:   build/fuzz/tests/fuzz/SessionReaderFuzzer -max_len=65536 -rss_limit_mb=1024 tests/fuzz/session-seeds
//        (crashers found so far: tests/fuzz/session-regressions, replayed by SessionReaderRegressionTest)
#include "kvscope/gui/models/ChannelErrorHistory.h"
#include "kvscope/gui/models/PagedHistory.h"
#include "kvscope/gui/models/ServingSummary.h"
#include "SpanBlock.h"
#include "kvscope/trace/CompressionLayout.h"
#include "kvscope/trace/SessionError.h"
#include "kvscope/trace/SessionReader.h"
#include "kvscope/trace/Timeline.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <variant>

namespace {

// The same bytes as a file, opened file-backed: every step's frame decoded again, a few states folded.
void openFileBacked(const std::uint8_t* data, std::size_t size) {
    static const std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("kvscope-fuzz-" + std::to_string(::getpid()) + ".kvsess");
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    }
    // At an interval of 8 the file is read by the pass; at the writer's (32) a 1.6 file's overview is read.
    for (const std::int64_t interval :
         {std::int64_t{8}, kvscope::trace::Timeline::kDefaultKeyframeInterval}) {
        try {
            kvscope::trace::SessionContents contents;
            const kvscope::trace::Timeline timeline =
                kvscope::trace::Timeline::openFile(path, contents, 4, interval);
            for (std::int64_t step = 0; step < timeline.stepCount() && step < 4096; ++step) {
                try {
                    (void)timeline.eventsOfStep(step).size();
                } catch (const kvscope::trace::SessionError&) {
                    // a frame the overview's open did not decode: reported when reached
                }
            }
            if (timeline.stepCount() > 0) {
                (void)timeline.stateAt(timeline.stepCount() - 1);
                (void)timeline.stateAt(timeline.stepCount() / 2);
                (void)timeline.seriesOf(0, kvscope::trace::SeriesField::BytesHost, 0,
                                        timeline.stepCount() - 1, 64);
                (void)timeline.seriesOf(-1, kvscope::trace::SeriesField::SeqLength, 0,
                                        timeline.stepCount() - 1, 64);
            }
        } catch (const kvscope::trace::SessionError&) {
        }
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const kvscope::trace::SessionContents contents = kvscope::trace::SessionReader::read({data, size}, "fuzz");
        // What was read must also replay: the Timeline folds every event.
        kvscope::trace::Timeline timeline;
        for (const kvscope::trace::Event& event : contents.events) {
            timeline.emit(event);
            // A compression's lists are split per head as the GUI and replay do: no read may leave its list.
            if (const auto* compression = std::get_if<kvscope::trace::CompressionEvent>(&event.payload)) {
                const kvscope::trace::CompressionLayout layout(*compression);
                std::int64_t sum = 0;
                for (std::int32_t head = 0; head < layout.heads(); ++head) {
                    for (const std::int64_t position : layout.keptPositions(head)) {
                        sum += position;
                    }
                    for (const float score : layout.droppedScores(head)) {
                        sum += static_cast<std::int64_t>(score != 0.0F);
                    }
                    sum += static_cast<std::int64_t>(layout.keptScores(head).size() + layout.droppedPositions(head).size());
                }
                (void)sum;
            }
        }
        if (timeline.stepCount() > 0) {
            (void)timeline.stateAt(timeline.stepCount() - 1);
        }
        // A serving session's events as the GUI reads them (its views, the event log's sentences and
        // compare mode): every request's tokens and lane, every step's changes, metrics and summary.
        kvscope::gui::PagedHistory history;
        history.extend(timeline);
        std::int64_t sum = 0;
        for (std::int64_t step = 0; step < history.stepCount(); ++step) {
            sum += history.metrics(step).usedBlocks +
                   static_cast<std::int64_t>(history.changes(step).freed.size());
            for (const std::string& id : history.requestIds()) {
                sum += static_cast<std::int64_t>(history.lane(id, step).phase);
            }
        }
        for (const std::string& id : history.requestIds()) {
            const std::int64_t tokens = history.tokenCount(id);
            sum += history.text(id, 0, tokens).has_value() + history.promptTokens(id);
            sum += history.piece(id, tokens - 1).has_value() + history.piece(id, -1).has_value();
        }
        for (const kvscope::trace::Event& event : contents.events) {
            sum += static_cast<std::int64_t>(history.hitsOf(event.sequence).size() +
                                             history.releasesOf(event.sequence).size() +
                                             history.preemptedFor(event.sequence).size());
        }
        for (const auto& record : history.cacheRecords()) {
            sum += history.cachedBy(record.block, record.sequence) != nullptr;
            sum += history.cachedAt(record.block, record.sequence + 1);
        }
        sum += kvscope::gui::ServingSummary::of(history).steps;
        // llama.cpp caches' channel errors as the channel error view reads them: each layer's latest report, its
        // worst channel and the head medians the view quotes.
        kvscope::gui::ChannelErrorHistory channels;
        channels.update(timeline);
        double figures = 0.0; // a damaged file's floats may be anything: kept out of integers
        for (std::int32_t layer = 0; layer < channels.layerCount(); ++layer) {
            const auto* report = channels.latestAt(layer, timeline.stepCount());
            if (report == nullptr) {
                continue;
            }
            const auto worst = kvscope::gui::ChannelErrorHistory::worst(report->event.keyError, report->event.keySize,
                                                                        report->event.heads);
            sum += worst ? worst->channel : 0;
            figures += kvscope::gui::ChannelErrorHistory::headMedian(report->event.valueSize, report->event.heads, 0) +
                       kvscope::gui::ChannelErrorHistory::overall(report->event.valueError);
        }
        (void)sum;
        (void)figures;
    } catch (const kvscope::trace::SessionError&) {
        // A refusal with a message is a correct answer.
    }
    openFileBacked(data, size);
    // The same bytes as a Spans chunk's payload (1.9): inside a file a mutation rarely keeps the chunk's checksum, so
    // the block decoder is also fed directly.
    try {
        kvscope::trace::TimedSpans spans;
        (void)kvscope::trace::SpanBlock::decode({data, size}, spans);
    } catch (const std::runtime_error&) {
        // EventCodec::Invalid, ByteReader::Overrun: not a block.
    }
    return 0;
}
