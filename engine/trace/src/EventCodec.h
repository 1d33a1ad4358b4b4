// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "ByteReader.h"
#include "ByteWriter.h"

#include "kvscope/trace/Event.h"
#include "kvscope/trace/StepState.h"

#include <optional>
#include <string>

namespace kvscope::trace {

// The binary encoding of events and step states inside session chunks (sessions/FORMAT.md,
// "Events" and "Snapshot"). Decoding throws ByteReader::Overrun or EventCodec::Invalid on bytes
// that no writer produces; an event of a kind newer than this reader is skipped (nullopt).
class EventCodec {
public:
    struct Invalid : std::runtime_error {
        using std::runtime_error::runtime_error;
    };

    /// Kinds from 128 up are annotations about the recording, never folded into the state; 128, `lost`:
    /// an operation the recorder could not record (operation, reason: two strings).
    static constexpr std::uint8_t kLostKind = 128;

    /// What decode() passed over: an annotation or a kind from a newer minor.
    struct Skipped {
        std::uint8_t kind = 0;
        std::string lostOperation; ///< the operation of a `lost` annotation
    };

    static void encode(ByteWriter& out, const Event& event);
    /// The next event; nullopt for a kind that is not folded into the state, described in `skipped`.
    static std::optional<Event> decode(ByteReader& in, Skipped* skipped = nullptr);

    static void encode(ByteWriter& out, const StepState& state);
    static StepState decodeStepState(ByteReader& in);
};

} // namespace kvscope::trace
