// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/config/RunSettings.h"
#include "kvscope/gui/models/EventExplainer.h"
#include "kvscope/trace/CompressionLayout.h"
#include "kvscope/trace/Event.h"

#include <QString>
#include <optional>

namespace kvscope::gui {

/// One sentence per compression event saying what the session's press did and by which rule, with the
/// tokens it dropped: "SnapKV kept 96 of 128 prompt tokens in layer 2: the 32 whose attention from the
/// last 64 queries was lowest were dropped, among them ' the', ' of'." The press and its options come
/// from the session's metadata (options it leaves out take the catalogue's defaults).
class PressExplainer {
public:
    /// `event` holds a CompressionEvent; `press` is the session's (nullopt: a file that names none).
    static QString sentence(const trace::Event& event, const std::optional<config::PressSettings>& press,
                            const EventExplainer::TokenLookup& tokens);
    /// The press as people write it ("SnapKV", "StreamingLLM"); the catalogue name for one it does not know.
    static QString displayName(const std::string& press);
    /// The option's value in `press`, else the catalogue's default ("" for an unknown option).
    static std::string optionValue(const config::PressSettings& press, const std::string& option);

private:
    /// A channel press's event (ThinK): the channels each head zeroed, and that no memory is saved.
    static QString channelSentence(const trace::Event& event, const QString& who,
                                   const trace::CompressionLayout& layout);
    /// "head 0: 3, 9; head 1: 1, 14": the channels each head zeroed.
    static QString channelList(const trace::CompressionLayout& layout);
    /// " Re-rotated keys: positions 3, 7, 8 now sit at 0, 1, 2 ..." for an event with rotary positions (1.7).
    static QString rotationSentence(const trace::CompressionLayout& layout);
};

} // namespace kvscope::gui
