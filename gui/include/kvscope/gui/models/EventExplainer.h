// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/RunSettings.h"
#include "kvscope/trace/Event.h"
#include "kvscope/trace/StepState.h"

#include <QString>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace kvscope::gui {

class PagedHistory;

/// What an event did and, in one sentence, why the cache did it: the event log's teaching mode.
class EventExplainer {
public:
    /// The text of the token at a position (SessionTokens::pieceAt over the session), nullopt where none
    /// is known.
    using TokenLookup = std::function<std::optional<std::string>(std::int64_t position)>;

    /// A short statement of the event's fields ("evicted 1, window [1, 4097)").
    static QString summary(const trace::Event& event);
    /// Why it happened, in the cache's terms; `state` is the cache after the event's step (for the
    /// layer's kind and settings). With `tokens`, it quotes the tokens the event concerns: those an
    /// update stored, a window slid past, a flush quantized or a crop cut. A compression is explained by
    /// PressExplainer with `press`, the session's cache press; a paged-serving event by PagedExplainer with
    /// `paged`, the serving session's history (requests' text, who cached a block).
    static QString why(const trace::Event& event, const trace::StepState& state, const TokenLookup& tokens = {},
                       const std::optional<config::PressSettings>& press = std::nullopt,
                       const PagedHistory* paged = nullptr);
    /// The tokens at positions [begin, end) quoted (' the', ' key'; the first and last with … between
    /// beyond three), or empty where a piece is unknown.
    static QString quoteTokens(const TokenLookup& tokens, std::int64_t begin, std::int64_t end);
    /// "12.5 KiB"-style byte counts.
    static QString formatBytes(double bytes);
};

} // namespace kvscope::gui
