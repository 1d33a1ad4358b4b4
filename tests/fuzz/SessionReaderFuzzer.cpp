// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: SessionReader::read must survive any bytes (no crash, no hang, bounded memory).
// Build: CXX=clang++ cmake --preset dev -B build/fuzz && ninja -C build/fuzz SessionReaderFuzzer
// Run:   build/fuzz/tests/fuzz/SessionReaderFuzzer -max_len=65536 -rss_limit_mb=1024 tests/data/sessions
#include "kvscope/trace/SessionError.h"
#include "kvscope/trace/SessionReader.h"
#include "kvscope/trace/Timeline.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const kvscope::trace::SessionContents contents = kvscope::trace::SessionReader::read({data, size}, "fuzz");
        // What was read must also replay: the Timeline folds every event.
        kvscope::trace::Timeline timeline;
        for (const kvscope::trace::Event& event : contents.events) {
            timeline.emit(event);
        }
        if (timeline.stepCount() > 0) {
            (void)timeline.stateAt(timeline.stepCount() - 1);
        }
    } catch (const kvscope::trace::SessionError&) {
        // A refusal with a message is a correct answer.
    }
    return 0;
}
