// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/SessionTokens.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string_view>

namespace kvscope::gui {

std::optional<std::string> SessionTokens::pieceAt(const trace::SessionMetadata& metadata,
                                                  const trace::Timeline& timeline, std::int64_t position,
                                                  const SpeculationHistory* speculation) {
    const auto promptLength = static_cast<std::int64_t>(metadata.promptPieces.size());
    if (position < 0 || promptLength == 0) {
        return std::nullopt;
    }
    if (position < promptLength) {
        return metadata.promptPieces[static_cast<std::size_t>(position)];
    }
    // The token step s produced is fed at step s + 1, at position promptLength + s (plus the drafts accepted before).
    std::int64_t step = position - promptLength;
    if (speculation != nullptr && !speculation->empty()) {
        const auto [producer, index] = *speculation->producer(promptLength, position);
        const SpeculationHistory::Verification* verification = speculation->at(producer);
        if (verification != nullptr && index < verification->event.accepted) {
            return std::string(verification->event.piece(static_cast<std::size_t>(index)));
        }
        step = producer;
    }
    for (const trace::Event& event : timeline.eventsOfStep(step)) {
        if (const auto* end = std::get_if<trace::StepEndEvent>(&event.payload)) {
            return end->text;
        }
    }
    return std::nullopt;
}

std::vector<std::string> SessionTokens::producedPieces(const trace::Timeline& timeline) {
    std::vector<std::string> pieces;
    for (ProducedToken& token : producedTokens(timeline)) {
        pieces.push_back(std::move(token.text));
    }
    return pieces;
}

std::vector<ProducedToken> SessionTokens::producedTokens(const trace::Timeline& timeline, std::int64_t fromStep,
                                                         std::int64_t toStep, const SpeculationHistory* speculation) {
    fromStep = std::max<std::int64_t>(fromStep, 0);
    toStep = toStep < 0 ? timeline.stepCount() : std::min(toStep, timeline.stepCount());
    std::vector<ProducedToken> tokens;
    tokens.reserve(static_cast<std::size_t>(std::max<std::int64_t>(toStep - fromStep, 0)));
    for (std::int64_t step = fromStep; step < toStep; ++step) {
        if (const SpeculationHistory::Verification* verification = speculation ? speculation->at(step) : nullptr) {
            const trace::SpeculationEvent& drafts = verification->event;
            for (std::int64_t draft = 0; draft < drafts.accepted; ++draft) {
                const auto index = static_cast<std::size_t>(draft);
                tokens.push_back({drafts.draftIds[index], std::string(drafts.piece(index))});
            }
        }
        ProducedToken own;
        for (const trace::Event& event : timeline.eventsOfStep(step)) {
            if (const auto* end = std::get_if<trace::StepEndEvent>(&event.payload)) {
                own = {end->tokenId, end->text};
            }
        }
        tokens.push_back(std::move(own));
    }
    return tokens;
}

bool SessionTokens::isSpecial(const std::string& piece) {
    if (piece == "[INST]" || piece == "[/INST]") {
        return true;
    }
    if (piece.size() < 3 || piece.front() != '<' || piece.back() != '>') {
        return false;
    }
    const std::string_view name(piece.data() + 1, piece.size() - 2);
    if (name.size() >= 2 && name.front() == '|' && name.back() == '|') {
        return name.find_first_of(" \n<>") == std::string_view::npos;
    }
    // <start_of_turn>, <end_of_turn>, <bos>, </s>: a name of letters, digits and underscores; an HTML tag such
    // as <b> or <div> has no underscore and is not one of the short names.
    for (const char c : name) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '/')) {
            return false;
        }
    }
    static const std::set<std::string_view> shortNames = {"s", "/s", "bos", "eos", "pad", "unk", "mask", "cls", "sep"};
    return name.find('_') != std::string_view::npos || shortNames.contains(name);
}

bool SessionTokens::opensTurn(const std::string& piece) {
    static const std::set<std::string_view> openers = {"<|im_start|>", "<start_of_turn>", "<|start_header_id|>",
                                                       "[INST]", "<|user|>", "<|assistant|>", "<|system|>"};
    return openers.contains(piece);
}

std::int64_t SessionTokens::producedPosition(const trace::SessionMetadata& metadata, std::int64_t step,
                                             const SpeculationHistory* speculation) {
    const auto promptLength = static_cast<std::int64_t>(metadata.promptPieces.size());
    if (promptLength == 0) {
        return -1;
    }
    return speculation != nullptr ? speculation->producedPosition(promptLength, step) : promptLength + step;
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
