// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: SessionReader::read must survive any bytes (no crash, no hang, bounded memory).
// Build: CXX=clang++ cmake --preset dev -B build/fuzz && ninja -C build/fuzz SessionReaderFuzzer
// Run:   build/fuzz/tests/fuzz/SessionReaderFuzzer -max_len=65536 -rss_limit_mb=1024 tests/data/sessions
#include "kvscope/trace/CompressionLayout.h"
#include "kvscope/trace/SessionError.h"
#include "kvscope/trace/SessionReader.h"
#include "kvscope/trace/Timeline.h"

#include <cstddef>
#include <cstdint>
#include <variant>

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
    } catch (const kvscope::trace::SessionError&) {
        // A refusal with a message is a correct answer.
    }
    return 0;
}
