// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/models/RetainedEventReader.h"
#include "kvscope/trace/Event.h"
#include "kvscope/trace/Timeline.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace kvscope::gui {

/// Every verification of a speculative-decoding session (its speculation events), read from its Timeline once
/// and then as it grows, and where each step's tokens lie in the text: a speculative step adds its accepted drafts
/// and then the model's own token, so positions stop being the prompt's length plus the step.
class SpeculationHistory {
public:
    struct Verification {
        std::int64_t step = 0;
        trace::SpeculationEvent event;
        /// Tokens the text held after the step, prompt included: the last of them is the step's own token.
        std::int64_t textEnd = 0;
    };

    /// What a transcript says of one position of the text.
    struct DraftMark {
        enum class Kind {
            None,        ///< no speculative step drafted it
            Accepted,    ///< a draft the model verified: it entered the cache in the step that drafted it
            Replacement, ///< the model's own token where it rejected a draft (the rejected drafts rolled back)
        };
        Kind kind = Kind::None;
        std::int64_t step = -1;
        /// Replacement: the verification whose rejected drafts started here.
        const Verification* verification = nullptr;
    };

    /// Forgets everything (a new session).
    void reset();
    /// Reads the timeline's retained events added since the last call (a live run's new events).
    void update(const trace::Timeline& timeline);
    bool empty() const { return m_verifications.empty(); }
    /// Every verification, in step order.
    const std::vector<Verification>& verifications() const { return m_verifications; }
    /// The verification step `step` made; null where it made none.
    const Verification* at(std::int64_t step) const;
    /// The position of the token step `step` produces (the last it adds, which the next step feeds): the prompt's
    /// length plus the step plus every draft accepted up to it. `promptLength` 0: -1 (no positions to name).
    std::int64_t producedPosition(std::int64_t promptLength, std::int64_t step) const;
    /// The step that added `position` to the text and which of its tokens it is (0: its first); nullopt inside the
    /// prompt. Past the last verification, one token per step.
    std::optional<std::pair<std::int64_t, std::int64_t>> producer(std::int64_t promptLength, std::int64_t position) const;
    DraftMark markAt(std::int64_t promptLength, std::int64_t position) const;

private:
    std::vector<Verification> m_verifications;
    RetainedEventReader m_reader;
};

} // namespace kvscope::gui
