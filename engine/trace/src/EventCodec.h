// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "ByteReader.h"
#include "ByteWriter.h"

#include "kvscope/trace/Event.h"
#include "kvscope/trace/StepState.h"

#include <optional>

namespace kvscope::trace {

// The binary encoding of events and step states inside session chunks (sessions/FORMAT.md,
// "Events" and "Snapshot"). Decoding throws ByteReader::Overrun or EventCodec::Invalid on bytes
// that no writer produces; an event of a kind newer than this reader is skipped (nullopt).
class EventCodec {
public:
    struct Invalid : std::runtime_error {
        using std::runtime_error::runtime_error;
    };

    static void encode(ByteWriter& out, const Event& event);
    static std::optional<Event> decode(ByteReader& in);

    static void encode(ByteWriter& out, const StepState& state);
    static StepState decodeStepState(ByteReader& in);
};

} // namespace kvscope::trace
