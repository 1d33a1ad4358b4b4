// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/models/SpeculationHistory.h"
#include "kvscope/trace/SessionMetadata.h"
#include "kvscope/trace/Timeline.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvscope::gui {

/// A token a step produced (its step_end event): its id and text piece.
struct ProducedToken {
    std::int64_t id = -1;
    std::string text;
    bool operator==(const ProducedToken&) const = default;
};

/// The text of each token position of a session, without a tokenizer: the prompt's pieces from the
/// session's metadata, then the token each step produced (its step_end event) at the position after. In a
/// speculative-decoding session (`speculation` given and not empty) a step adds its accepted drafts (pieces from its
/// speculation event) before its own token.
class SessionTokens {
public:
    /// The piece at `position`; nullopt where the session records none (a format 1.0 file's prompt, a
    /// step not reached yet).
    static std::optional<std::string> pieceAt(const trace::SessionMetadata& metadata, const trace::Timeline& timeline,
                                              std::int64_t position, const SpeculationHistory* speculation = nullptr);
    /// The text of the token each step produced (its step_end event), step by step; "" for a step
    /// without one.
    static std::vector<std::string> producedPieces(const trace::Timeline& timeline);
    /// The tokens steps [fromStep, toStep) produced (toStep clamped to the step count; -1 for all), step by step
    /// (id -1 and "" for a step without a step_end; a speculative step's accepted drafts before its own token): a
    /// view reads a growing session's new steps only, and a long file-backed session's in slices (each step's
    /// frame is decoded).
    static std::vector<ProducedToken> producedTokens(const trace::Timeline& timeline, std::int64_t fromStep = 0,
                                                     std::int64_t toStep = -1,
                                                     const SpeculationHistory* speculation = nullptr);
    /// Whether a piece is a special token as sessions name them: <|im_start|>, <start_of_turn>, <bos>, </s>,
    /// [INST] (a bracketed name without spaces, of the forms tokenizers give their control tokens).
    static bool isSpecial(const std::string& piece);
    /// Whether a special token opens a chat turn (ChatML's <|im_start|>, Gemma's <start_of_turn>, Llama 3's
    /// <|start_header_id|>, Mistral's [INST]).
    static bool opensTurn(const std::string& piece);
    /// The position of the token step `step` produced (prompt length + step, plus the drafts accepted up to it); -1
    /// without prompt pieces.
    static std::int64_t producedPosition(const trace::SessionMetadata& metadata, std::int64_t step,
                                         const SpeculationHistory* speculation = nullptr);
    /// A piece as a strip shows it: spaces as '·', newlines as '↵', tabs as '→', so that a token made
    /// of white space is visible.
    static std::string visible(const std::string& piece);
};

} // namespace kvscope::gui
