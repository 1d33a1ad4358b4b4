// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/SessionTokens.h"

namespace kvscope::gui {

std::optional<std::string> SessionTokens::pieceAt(const trace::SessionMetadata& metadata,
                                                  const trace::Timeline& timeline, std::int64_t position) {
    const auto promptLength = static_cast<std::int64_t>(metadata.promptPieces.size());
    if (position < 0 || promptLength == 0) {
        return std::nullopt;
    }
    if (position < promptLength) {
        return metadata.promptPieces[static_cast<std::size_t>(position)];
    }
    // The token step s produced is fed at step s + 1, at position promptLength + s.
    for (const trace::Event& event : timeline.eventsOfStep(position - promptLength)) {
        if (const auto* end = std::get_if<trace::StepEndEvent>(&event.payload)) {
            return end->text;
        }
    }
    return std::nullopt;
}

std::vector<std::string> SessionTokens::producedPieces(const trace::Timeline& timeline) {
    std::vector<std::string> pieces(static_cast<std::size_t>(timeline.stepCount()));
    for (std::int64_t step = 0; step < timeline.stepCount(); ++step) {
        for (const trace::Event& event : timeline.eventsOfStep(step)) {
            if (const auto* end = std::get_if<trace::StepEndEvent>(&event.payload)) {
                pieces[static_cast<std::size_t>(step)] = end->text;
            }
        }
    }
    return pieces;
}

std::int64_t SessionTokens::producedPosition(const trace::SessionMetadata& metadata, std::int64_t step) {
    return metadata.promptPieces.empty() ? -1 : static_cast<std::int64_t>(metadata.promptPieces.size()) + step;
}

std::string SessionTokens::visible(const std::string& piece) {
    std::string shown;
    for (const char c : piece) {
        switch (c) {
        case ' ':
            shown += "\u00b7";
            break;
        case '\n':
            shown += "\u21b5";
            break;
        case '\t':
            shown += "\u2192";
            break;
        default:
            shown += c;
        }
    }
    return shown;
}

} // namespace kvscope::gui
