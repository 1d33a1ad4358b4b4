// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"

#include <QString>
#include <cstdint>
#include <string>
#include <vector>

namespace kvscope::gui {

class PagedHistory;

/// The event log's sentences for paged-serving events: what the scheduler and the block pool did and why,
/// naming requests, blocks and (where the session recorded them) the tokens as text.
class PagedExplainer {
public:
    /// A short statement of the event's fields; empty for a kind that is not paged.
    static QString summary(const trace::Event& event);
    /// Why it happened. `history` (may be null) gives the requests' text, who cached a block, and the
    /// blocks a hit reused or a preemption or finish released.
    static QString sentence(const trace::Event& event, const PagedHistory* history);
    /// Text shortened for a sentence: up to `maxChars` characters, cut at a word and ended with " ..."
    /// when longer; newlines written \n.
    static QString preview(const std::string& text, int maxChars = 20);
    /// "0, 1, 2" (commas), and "1 and 0" (the last joined by "and").
    static QString commaList(const std::vector<std::int32_t>& ids);
    static QString andList(const std::vector<std::int32_t>& ids);
};

} // namespace kvscope::gui
