// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/EventExplainer.h"

#include "kvscope/gui/models/ChannelErrorHistory.h"
#include "kvscope/gui/models/PagedExplainer.h"
#include "kvscope/gui/models/PressExplainer.h"
#include "kvscope/trace/LayerKind.h"

#include <QCoreApplication>
#include <QStringList>

#include <algorithm>
#include <cmath>

namespace kvscope::gui {
namespace {

QString eventTr(const char* text) { return QCoreApplication::translate("EventExplainer", text); }

QString layerName(const trace::Event& event) {
    return event.layer >= 0 ? eventTr("Layer %1").arg(event.layer) : eventTr("Every layer");
}

QString kindName(const trace::Event& event, const trace::StepState& state) {
    if (event.layer >= 0 && static_cast<std::size_t>(event.layer) < state.layers.size()) {
        return QString::fromUtf8(trace::toString(state.layers[static_cast<std::size_t>(event.layer)].kind));
    }
    return eventTr("cache");
}

QString idList(const std::vector<std::int64_t>& ids) {
    QStringList parts;
    for (std::size_t index = 0; index < ids.size() && index < 8; ++index) {
        parts << QString::number(ids[index]);
    }
    if (ids.size() > 8) {
        parts << QStringLiteral("…");
    }
    return parts.join(QStringLiteral(", "));
}

/// "position 7" or "positions 7–9" for [begin, end); "no position" when empty.
QString positionRange(std::int64_t begin, std::int64_t end) {
    if (end <= begin) {
        return eventTr("no position");
    }
    return end - begin == 1 ? eventTr("position %1").arg(begin) : eventTr("positions %1–%2").arg(begin).arg(end - 1);
}

QString microseconds(std::int64_t ns) { return QString::number(static_cast<double>(ns) / 1000.0, 'f', 1) + " µs"; }

/// A token's text in single quotes, newlines written \n so that a row stays one line.
QString quoted(const std::string& text) {
    QString shown = QString::fromUtf8(text);
    shown.replace(QLatin1Char('\n'), QStringLiteral("\\n"));
    return QStringLiteral("'%1'").arg(shown);
}

QString tokenLabel(std::int64_t id, const std::string& text) {
    if (id < 0) {
        return eventTr("(prompt)");
    }
    return QStringLiteral("%1 %2").arg(id).arg(quoted(text));
}

/// " (' the', ' cache')" after a count, or nothing where the tokens are unknown.
QString inParentheses(const QString& quotes) {
    return quotes.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(quotes);
}

/// A press leaves sliding-window layers alone (their windows already bound them); says which, if any.
QString slidingLayersLeftAlone(const trace::StepState& state) {
    QStringList sliding;
    for (std::size_t layer = 0; layer < state.layers.size(); ++layer) {
        if (state.layers[layer].initialized && trace::isSlidingWindow(state.layers[layer].kind)) {
            sliding << QString::number(layer);
        }
    }
    if (sliding.isEmpty()) {
        return {};
    }
    return QCoreApplication::translate("EventExplainer", " The press leaves sliding-window %1 %2 alone: %3 "
                                                         "window%4 already bound%5 them.")
        .arg(sliding.size() == 1 ? "layer" : "layers", sliding.join(", "), sliding.size() == 1 ? "its" : "their",
             sliding.size() == 1 ? "" : "s", sliding.size() == 1 ? "s" : "");
}

/// What a row's `why` knows besides the payload: the event, the cache after its step, the session's tokens
/// and press, and the layer's name.
struct EventWhyContext {
    const trace::Event& event;
    const trace::StepState& state;
    const EventExplainer::TokenLookup& tokens;
    const std::optional<config::PressSettings>& press;
    QString layer;
};

/// The event log's text, one row per kind of event (as trace's EventFields describes each record once):
/// `summary` states the payload's fields, `why` says why the cache did it. The paged kinds have no row
/// here: PagedExplainer's rows explain them. EventExplainerTest checks that every kind has its text.
template <typename Payload> struct EventLogText {};

template <> struct EventLogText<trace::UpdateEvent> {
    static QString summary(const trace::UpdateEvent& payload) {
        return eventTr("+%1 tokens → seq %2, stored %3%4, returned %5, %6")
            .arg(payload.tokensIn)
            .arg(payload.seqLength)
            .arg(payload.storedTokens)
            .arg(payload.capacity >= 0 ? QStringLiteral("/%1").arg(payload.capacity) : QString())
            .arg(payload.returnedTokens)
            .arg(EventExplainer::formatBytes(static_cast<double>(payload.bytes)));
    }
    static QString why(const trace::UpdateEvent& payload, const EventWhyContext& context) {
        const QString stored =
            inParentheses(EventExplainer::quoteTokens(context.tokens, payload.seqLength - payload.tokensIn, payload.seqLength));
        if (context.event.step == 0) {
            return eventTr("%1 (%2) stored the prompt's keys and values%3 during prefill, so later tokens "
                      "need not recompute them.")
                .arg(context.layer, kindName(context.event, context.state), stored);
        }
        return eventTr("%1 (%2) appended the new token's key and value%3: attention over the context "
                  "reads the cache instead of recomputing past tokens.")
            .arg(context.layer, kindName(context.event, context.state), stored);
    }
};

template <> struct EventLogText<trace::MaskSizesEvent> {
    static QString summary(const trace::MaskSizesEvent& payload) {
        return eventTr("query %1 × kv %2, kv_offset %3")
            .arg(payload.queryLength)
            .arg(payload.kvLength)
            .arg(payload.kvOffset);
    }
    static QString why(const trace::MaskSizesEvent& payload, const EventWhyContext& context) {
        return eventTr("The model asked %1 how many keys its mask spans: %2 columns starting at position "
                  "%3, because %4.")
            .arg(context.layer.toLower())
            .arg(payload.kvLength)
            .arg(payload.kvOffset)
            .arg(payload.kvOffset > 0 ? eventTr("positions before %1 are no longer held").arg(payload.kvOffset)
                                      : eventTr("every position since the start is still held"));
    }
};

template <> struct EventLogText<trace::WindowSlideEvent> {
    static QString summary(const trace::WindowSlideEvent& payload) {
        return eventTr("evicted %1, window [%2, %3) of %4")
            .arg(payload.positionsEvicted)
            .arg(payload.windowStart)
            .arg(payload.windowEnd)
            .arg(payload.windowSize);
    }
    static QString why(const trace::WindowSlideEvent& payload, const EventWhyContext& context) {
        // The evicted tokens are the ones just before the window's new start.
        const QString left = EventExplainer::quoteTokens(context.tokens, payload.windowStart - payload.positionsEvicted,
                                         payload.windowStart);
        return eventTr("%1 keeps only the last %2 tokens (its sliding window); the new token pushed the "
                  "oldest %3 out%4, so attention now starts at position %5.")
            .arg(context.layer, QString::number(payload.windowSize), QString::number(payload.positionsEvicted),
                 left.isEmpty() ? QString() : eventTr(": the window slid past %1").arg(left),
                 QString::number(payload.windowStart));
    }
};

template <> struct EventLogText<trace::QuantizeFlushEvent> {
    static QString summary(const trace::QuantizeFlushEvent& payload) {
        return eventTr("moved %1 tokens, residual %2 → %3, quantized %4, %5 → %6, rel. error %7%")
            .arg(payload.tokensMoved)
            .arg(payload.residualBefore)
            .arg(payload.residualAfter)
            .arg(payload.quantizedTokensAfter)
            .arg(EventExplainer::formatBytes(static_cast<double>(payload.bytesBefore)))
            .arg(EventExplainer::formatBytes(static_cast<double>(payload.bytesAfter)))
            .arg(payload.relativeError * 100.0, 0, 'f', 2);
    }
    static QString why(const trace::QuantizeFlushEvent& payload, const EventWhyContext& context) {
        if (context.event.layer >= 0 && static_cast<std::size_t>(context.event.layer) < context.state.layers.size() &&
            context.state.layers[static_cast<std::size_t>(context.event.layer)].kind != trace::LayerKind::Quantized) {
            // llama.cpp's cache: no residual, each update's tokens are quantised as they are stored.
            const QString stored = inParentheses(EventExplainer::quoteTokens(
                context.tokens, payload.quantizedTokensAfter - payload.tokensMoved, payload.quantizedTokensAfter));
            return eventTr("%1 quantised the %2 new tokens%3 as it stored them, as llama.cpp's cache does (no "
                      "full-precision residual): %4 → %5, at a relative error of %6%.")
                .arg(context.layer, QString::number(payload.tokensMoved), stored,
                     EventExplainer::formatBytes(static_cast<double>(payload.bytesBefore)),
                     EventExplainer::formatBytes(static_cast<double>(payload.bytesAfter)),
                     QString::number(payload.relativeError * 100.0, 'f', 2));
        }
        // The store holds the oldest tokens from position 0: the moved ones end it.
        const QString moved = inParentheses(EventExplainer::quoteTokens(
            context.tokens, payload.quantizedTokensAfter - payload.tokensMoved, payload.quantizedTokensAfter));
        return eventTr("%1's full-precision residual had grown to %2 tokens, past the residual length, so "
                  "they were quantized%3 into the compact store (%4 → %5), at a relative error of %6%.")
            .arg(context.layer, QString::number(payload.residualBefore), moved,
                 EventExplainer::formatBytes(static_cast<double>(payload.bytesBefore)),
                 EventExplainer::formatBytes(static_cast<double>(payload.bytesAfter)),
                 QString::number(payload.relativeError * 100.0, 'f', 2));
    }
};

template <> struct EventLogText<trace::TransferEvent> {
    static QString summary(const trace::TransferEvent& payload) {
        return eventTr("%1 on %2 stream, %3 in %4 (%5)")
            .arg(QString::fromUtf8(toString(payload.direction)))
            .arg(QString::fromUtf8(toString(payload.lane)))
            .arg(EventExplainer::formatBytes(static_cast<double>(payload.bytes)))
            .arg(microseconds(payload.endNs - payload.beginNs))
            .arg(QString::fromUtf8(toString(payload.timing)));
    }
    static QString why(const trace::TransferEvent& payload, const EventWhyContext& context) {
        if (payload.direction == trace::TransferDirection::Offload) {
            return eventTr("%1 is done for this step, so the offloading cache moved its keys and values to "
                      "host memory on the compute stream, freeing device memory until it is needed "
                      "again. Times are %2.")
                .arg(context.layer, QString::fromUtf8(toString(payload.timing)));
        }
        return eventTr("%1 runs next, so its keys and values were copied back to the device on the side "
                  "stream while the previous layer computed, hiding the copy. Times are %2.")
            .arg(context.layer, QString::fromUtf8(toString(payload.timing)));
    }
};

template <> struct EventLogText<trace::CropEvent> {
    static QString summary(const trace::CropEvent& payload) {
        return eventTr("max_length %1, seq %2 → %3")
            .arg(payload.maxLength)
            .arg(payload.seqLengthBefore)
            .arg(payload.seqLengthAfter);
    }
    static QString why(const trace::CropEvent& payload, const EventWhyContext& context) {
        return eventTr("The generator rewound: cropping drops the tail tokens%1 so generation resumes from "
                  "position %2.")
            .arg(inParentheses(EventExplainer::quoteTokens(context.tokens, payload.seqLengthAfter, payload.seqLengthBefore)),
                 QString::number(payload.seqLengthAfter));
    }
};

template <> struct EventLogText<trace::ReorderEvent> {
    static QString summary(const trace::ReorderEvent& payload) {
        return eventTr("beam rows ← [%1]").arg(idList(payload.beamIndices));
    }
    static QString why(const trace::ReorderEvent& payload, const EventWhyContext& context) {
        return eventTr("Beam search kept the best beams: each cache row now holds the history of the beam "
                  "it continues.");
    }
};

template <> struct EventLogText<trace::BatchRepeatEvent> {
    static QString summary(const trace::BatchRepeatEvent& payload) {
        return eventTr("×%1, batch %2 → %3").arg(payload.repeats).arg(payload.batchBefore).arg(payload.batchAfter);
    }
    static QString why(const trace::BatchRepeatEvent& payload, const EventWhyContext& context) {
        return eventTr("Each batch row was repeated %1 times so every beam or sample starts from the same "
                  "cached prompt.")
            .arg(payload.repeats);
    }
};

template <> struct EventLogText<trace::BatchSelectEvent> {
    static QString summary(const trace::BatchSelectEvent& payload) {
        return eventTr("rows [%1], batch %2 → %3")
            .arg(idList(payload.indices))
            .arg(payload.batchBefore)
            .arg(payload.batchAfter);
    }
    static QString why(const trace::BatchSelectEvent& payload, const EventWhyContext& context) {
        return eventTr("Only the selected batch rows continue; the cache dropped the others' history.");
    }
};

template <> struct EventLogText<trace::ResetEvent> {
    static QString summary(const trace::ResetEvent& payload) {
        return eventTr("all token counts to 0");
    }
    static QString why(const trace::ResetEvent& payload, const EventWhyContext& context) {
        return eventTr("The cache was reset for a new generation; its buffers are zeroed in place and "
                  "keep their memory.");
    }
};

template <> struct EventLogText<trace::MemoryEvent> {
    static QString summary(const trace::MemoryEvent& payload) {
        return eventTr("device full precision %1, device quantized %2, host %3")
            .arg(EventExplainer::formatBytes(static_cast<double>(payload.deviceFullPrecision)))
            .arg(EventExplainer::formatBytes(static_cast<double>(payload.deviceQuantized)))
            .arg(EventExplainer::formatBytes(static_cast<double>(payload.host)));
    }
    static QString why(const trace::MemoryEvent& payload, const EventWhyContext& context) {
        return eventTr("Bytes per memory tier at the end of the step, for the memory view and the status "
                  "bar.");
    }
};

template <> struct EventLogText<trace::StepBeginEvent> {
    static QString summary(const trace::StepBeginEvent& payload) {
        return eventTr("input %1").arg(tokenLabel(payload.tokenId, payload.text));
    }
    static QString why(const trace::StepBeginEvent& payload, const EventWhyContext& context) {
        return context.event.step == 0 ? eventTr("Prefill: the whole prompt runs through the model at once.")
                               : eventTr("Decoding: the token picked last step is fed back as the only "
                                    "new query.");
    }
};

template <> struct EventLogText<trace::StepEndEvent> {
    static QString summary(const trace::StepEndEvent& payload) {
        return eventTr("produced %1 in %2")
            .arg(tokenLabel(payload.tokenId, payload.text), microseconds(payload.wallNs));
    }
    static QString why(const trace::StepEndEvent& payload, const EventWhyContext& context) {
        return eventTr("The model picked the next token from the last position's logits.");
    }
};

template <> struct EventLogText<trace::ComputeEvent> {
    static QString summary(const trace::ComputeEvent& payload) {
        return eventTr("attention update for %1 (%2)")
            .arg(microseconds(payload.endNs - payload.beginNs))
            .arg(QString::fromUtf8(toString(payload.timing)));
    }
    static QString why(const trace::ComputeEvent& payload, const EventWhyContext& context) {
        return eventTr("%1's attention occupied the compute stream; transfers are scheduled around it.")
            .arg(context.layer);
    }
};

template <> struct EventLogText<trace::ChannelErrorEvent> {
    static QString summary(const trace::ChannelErrorEvent& payload) {
        return eventTr("channel error over %1 tokens: keys %2, values %3 (RMS)")
            .arg(payload.tokens)
            .arg(ChannelErrorHistory::overall(payload.keyError), 0, 'g', 3)
            .arg(ChannelErrorHistory::overall(payload.valueError), 0, 'g', 3);
    }
    static QString why(const trace::ChannelErrorEvent& payload, const EventWhyContext& context) {
        QString text = eventTr("%1 has quantised %2 tokens so far; over them its keys' error is %3 and its "
                          "values' %4 (root mean square over every channel).")
                           .arg(context.layer)
                           .arg(payload.tokens)
                           .arg(ChannelErrorHistory::overall(payload.keyError), 0, 'g', 3)
                           .arg(ChannelErrorHistory::overall(payload.valueError), 0, 'g', 3);
        if (const auto worst = ChannelErrorHistory::worst(payload.keyError, payload.keySize, payload.heads)) {
            const double median = ChannelErrorHistory::headMedian(payload.keySize, payload.heads, worst->head);
            text += eventTr(" The worst key channel is head %1's channel %2 (error %3)")
                        .arg(worst->head)
                        .arg(worst->channel)
                        .arg(worst->error, 0, 'g', 3);
            if (median > 0.0) {
                text += eventTr(", whose keys are %1× the head's median channel: a block of 32 values shares "
                           "one scale, so a large channel coarsens its whole block unless the rotation "
                           "spreads it over the head")
                            .arg(worst->size / median, 0, 'g', 3);
            }
            text += QLatin1Char('.');
        }
        return text + eventTr(" The Channel errors dock maps every layer's channels.");
    }
};

template <> struct EventLogText<trace::SpeculationEvent> {
    static QString summary(const trace::SpeculationEvent& payload) {
        const std::int64_t rejected = payload.drafted() - payload.accepted;
        QString text = eventTr("%1 drafted %2 at %3, accepted %4, rolled back %5")
                           .arg(QString::fromUtf8(trace::toString(payload.source)))
                           .arg(payload.drafted())
                           .arg(positionRange(payload.firstPosition, payload.firstPosition + payload.drafted()))
                           .arg(payload.accepted)
                           .arg(rejected);
        if (!payload.lengthsBefore.empty() && !payload.lengthsAfter.empty()) {
            text += eventTr("; seq %1 → %2").arg(payload.lengthsBefore.front()).arg(payload.lengthsAfter.front());
        }
        return text;
    }
    static QString why(const trace::SpeculationEvent& payload, const EventWhyContext& context) {
        const QString source = payload.source == trace::DraftSource::AssistantModel
                                   ? eventTr("The assistant model")
                                   : eventTr("Prompt lookup (the text's last words found earlier in it)");
        if (payload.drafted() == 0) {
            return eventTr("%1 found no draft this step, so the model verified nothing and added its own next token "
                           "only, as plain decoding does.")
                .arg(source);
        }
        const auto drafts = [&payload](std::int64_t begin, std::int64_t end) {
            QStringList pieces;
            for (std::int64_t draft = begin; draft < end && draft - begin < 3; ++draft) {
                pieces << quoted(std::string(payload.piece(static_cast<std::size_t>(draft))));
            }
            if (end - begin > 3) {
                pieces << QStringLiteral("…");
            }
            return pieces.join(QStringLiteral(", "));
        };
        const std::int64_t kept = payload.firstPosition + payload.accepted;
        const std::int64_t end = payload.firstPosition + payload.drafted();
        QString text = eventTr("%1 drafted %2 token(s) (%3), which the step wrote into every layer at %4 and verified "
                               "in one forward pass. ")
                           .arg(source)
                           .arg(payload.drafted())
                           .arg(drafts(0, payload.drafted()))
                           .arg(positionRange(payload.firstPosition, end));
        if (payload.accepted == payload.drafted()) {
            text += eventTr("The model agreed with every draft: nothing was rolled back, and its own next token "
                            "follows them.");
        } else {
            text += eventTr("The model agreed with the first %1; the other %2 (%3) were cropped from every layer, "
                            "%4 rolled back, and the model's own token takes position %5 instead.")
                        .arg(payload.accepted)
                        .arg(payload.drafted() - payload.accepted)
                        .arg(drafts(payload.accepted, payload.drafted()))
                        .arg(positionRange(kept, end))
                        .arg(kept);
        }
        // Sliding layers hold fewer tokens but count every one: a crop rolls them back through the past they
        // recorded while the drafts pushed older tokens out of the window.
        QStringList sliding;
        for (std::size_t layer = 0; layer < context.state.layers.size(); ++layer) {
            if (context.state.layers[layer].initialized && trace::isSlidingWindow(context.state.layers[layer].kind)) {
                sliding << QString::number(layer);
            }
        }
        if (!sliding.isEmpty() && payload.accepted < payload.drafted()) {
            text += eventTr(" Sliding-window layer(s) %1 had let older tokens leave their window for the drafts; "
                            "they kept them aside until this verification and took them back with the crop.")
                        .arg(sliding.join(QStringLiteral(", ")));
        }
        return text;
    }
};

template <> struct EventLogText<trace::LogitsEvent> {
    static QString summary(const trace::LogitsEvent& payload) {
        return eventTr("%1 log-probabilities%2")
            .arg(payload.logProbs.size())
            .arg(payload.complete ? eventTr(" (whole vocabulary)") : eventTr(" (top tokens)"));
    }
    static QString why(const trace::LogitsEvent& payload, const EventWhyContext& context) {
        return eventTr("Kept so that compare mode can measure how far two caches' predictions drift.");
    }
};

template <> struct EventLogText<trace::CompressionEvent> {
    static QString summary(const trace::CompressionEvent& payload) {
        if (!payload.keptPerHead.empty()) {
            // Heads keeping different numbers (AdaKV): the range.
            const auto [fewest, most] = std::minmax_element(payload.keptPerHead.begin(), payload.keptPerHead.end());
            return eventTr("press kept %1 to %2 of %3 tokens per head (%4 heads)")
                .arg(*fewest)
                .arg(*most)
                .arg(payload.lengthBefore)
                .arg(payload.heads);
        }
        return eventTr("press kept %1 of %2 tokens per head (%3 heads)")
            .arg(payload.lengthAfter)
            .arg(payload.lengthBefore)
            .arg(payload.heads);
    }
    static QString why(const trace::CompressionEvent& payload, const EventWhyContext& context) {
        return PressExplainer::sentence(context.event, context.press, context.tokens) + slidingLayersLeftAlone(context.state);
    }
};

/// "3 blocks", "1 block".
QString blockCount(std::size_t count) {
    return count == 1 ? eventTr("1 block") : eventTr("%1 blocks").arg(count);
}

template <> struct EventLogText<trace::ServerCacheEvent> {
    static QString summary(const trace::ServerCacheEvent& payload) {
        const QString where = QString::fromStdString(payload.medium);
        switch (payload.change) {
        case trace::ServerCacheChange::Stored:
            return eventTr("server stored %1 in %2 (group %3)%4")
                .arg(blockCount(payload.blockHashes.size()), where)
                .arg(payload.group)
                .arg(payload.text.empty() ? QString() : QStringLiteral(": ") + quoted(payload.text.substr(0, 48)));
        case trace::ServerCacheChange::Removed:
            return eventTr("server removed %1 from %2").arg(blockCount(payload.blockHashes.size()), where);
        case trace::ServerCacheChange::Cleared:
            return eventTr("server cleared its prefix cache");
        }
        return {};
    }
    static QString why(const trace::ServerCacheEvent& payload, const EventWhyContext&) {
        switch (payload.change) {
        case trace::ServerCacheChange::Stored:
            return payload.hasParent
                       ? eventTr("Full blocks of a request were hashed and kept for reuse; they continue the "
                                 "cached block %1, so a later prompt with the same start finds them.")
                             .arg(payload.parentHash)
                       : eventTr("Full blocks of a request were hashed and kept for reuse; they start a prompt, so "
                                 "a later prompt with the same first tokens finds them.");
        case trace::ServerCacheChange::Removed:
            return eventTr("The server needed the room: these cached blocks were the least recently used free ones "
                           "(or moved to another medium), and their prefix can no longer be reused there.");
        case trace::ServerCacheChange::Cleared:
            return eventTr("The server reset its prefix cache (an admin request or a weight update): nothing "
                           "cached before can be reused.");
        }
        return {};
    }
};

template <> struct EventLogText<trace::ServerStatusEvent> {
    static QString summary(const trace::ServerStatusEvent& payload) {
        QString text = eventTr("message %1%2").arg(payload.messageSequence).arg(payload.replayed ? eventTr(" (replayed)") : QString());
        if (payload.lostMessages > 0) {
            text += eventTr(", %1 lost").arg(payload.lostMessages);
        }
        if (payload.prefixCacheQueries > 0) {
            text += eventTr(", hit rate %1%").arg(100.0 * static_cast<double>(payload.prefixCacheHits) /
                                                   static_cast<double>(payload.prefixCacheQueries), 0, 'f', 1);
        }
        return text;
    }
    static QString why(const trace::ServerStatusEvent& payload, const EventWhyContext&) {
        return payload.replayed ? eventTr("Sent before kvscope attached (or lost on the way) and fetched from the "
                                          "server's replay socket, so the cache shown is complete.")
                                : eventTr("The server published this step's cache changes.");
    }
};

} // namespace

QString EventExplainer::quoteTokens(const TokenLookup& tokens, std::int64_t begin, std::int64_t end) {
    if (!tokens || end <= begin) {
        return {};
    }
    // Three tokens read as a phrase; more are named by the first and the last.
    std::vector<std::int64_t> positions;
    if (end - begin <= 3) {
        for (std::int64_t position = begin; position < end; ++position) {
            positions.push_back(position);
        }
    } else {
        positions = {begin, end - 1};
    }
    QStringList parts;
    for (const std::int64_t position : positions) {
        const std::optional<std::string> piece = tokens(position);
        if (!piece) {
            return {};
        }
        parts << quoted(*piece);
    }
    return parts.join(end - begin <= 3 ? QStringLiteral(", ") : QStringLiteral(" … "));
}

QString EventExplainer::formatBytes(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int unit = 0;
    while (std::fabs(bytes) >= 1024.0 && unit < 4) {
        bytes /= 1024.0;
        ++unit;
    }
    return QString::number(bytes, 'f', unit == 0 ? 0 : 1) + QLatin1Char(' ') + QLatin1String(units[unit]);
}

QString EventExplainer::summary(const trace::Event& event) {
    if (trace::isPagedKind(event.kind())) {
        return PagedExplainer::summary(event);
    }
    return std::visit(
        [](const auto& payload) -> QString {
            using Row = EventLogText<std::decay_t<decltype(payload)>>;
            if constexpr (requires { Row::summary(payload); }) {
                return Row::summary(payload);
            } else {
                return {};
            }
        },
        event.payload);
}

QString EventExplainer::why(const trace::Event& event, const trace::StepState& state, const TokenLookup& tokens,
                            const std::optional<config::PressSettings>& press, const PagedHistory* paged) {
    if (trace::isPagedKind(event.kind())) {
        return PagedExplainer::sentence(event, paged);
    }
    const EventWhyContext context{event, state, tokens, press, layerName(event)};
    return std::visit(
        [&context](const auto& payload) -> QString {
            using Row = EventLogText<std::decay_t<decltype(payload)>>;
            if constexpr (requires { Row::why(payload, context); }) {
                return Row::why(payload, context);
            } else {
                return {};
            }
        },
        event.payload);
}

} // namespace kvscope::gui
