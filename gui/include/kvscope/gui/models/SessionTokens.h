// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/SessionMetadata.h"
#include "kvscope/trace/Timeline.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvscope::gui {

/// The text of each token position of a session, without a tokenizer: the prompt's pieces from the
/// session's metadata, then the token each step produced (its step_end event) at the position after.
class SessionTokens {
public:
    /// The piece at `position`; nullopt where the session records none (a format 1.0 file's prompt, a
    /// step not reached yet).
    static std::optional<std::string> pieceAt(const trace::SessionMetadata& metadata, const trace::Timeline& timeline,
                                              std::int64_t position);
    /// The text of the token each step produced (its step_end event), step by step; "" for a step
    /// without one.
    static std::vector<std::string> producedPieces(const trace::Timeline& timeline);
    /// The position of the token step `step` produced (prompt length + step); -1 without prompt pieces.
    static std::int64_t producedPosition(const trace::SessionMetadata& metadata, std::int64_t step);
    /// A piece as a strip shows it: spaces as '·', newlines as '↵', tabs as '→', so that a token made
    /// of white space is visible.
    static std::string visible(const std::string& piece);
};

} // namespace kvscope::gui
