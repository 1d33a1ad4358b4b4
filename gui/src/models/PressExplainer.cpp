// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/PressExplainer.h"

#include "kvscope/config/PressDescriptions.h"
#include "kvscope/trace/CompressionLayout.h"

#include <QCoreApplication>
#include <algorithm>
#include <map>

namespace kvscope::gui {
namespace {

QString pressTr(const char* text) {
    return QCoreApplication::translate("PressExplainer", text);
}

QString text(const std::string& value) {
    return QString::fromStdString(value);
}

/// Why the press dropped what it dropped, for `dropped` tokens: the registration's sentence template
/// (config::PressDescription::sentence) filled with the session's options.
QString rule(const config::PressSettings& press, std::int64_t dropped) {
    return text(config::PressDescriptions::rule(press, dropped));
}

/// Up to three positions every head dropped, lowest mean score first (by position without scores).
std::vector<std::int64_t> namedPositions(const trace::CompressionLayout& layout) {
    std::map<std::int64_t, std::pair<int, double>> counts; // position -> heads, score sum
    bool scored = true;
    for (std::int32_t head = 0; head < layout.heads(); ++head) {
        const auto positions = layout.droppedPositions(head);
        const auto scores = layout.droppedScores(head);
        scored = scored && scores.size() == positions.size();
        for (std::size_t index = 0; index < positions.size(); ++index) {
            auto& [heads, sum] = counts[positions[index]];
            ++heads;
            sum += index < scores.size() ? scores[index] : 0.0;
        }
    }
    std::vector<std::pair<double, std::int64_t>> ranked;
    for (const auto& [position, count] : counts) {
        if (count.first == layout.heads()) {
            ranked.emplace_back(scored ? count.second / count.first : static_cast<double>(position),
                                position);
        }
    }
    std::sort(ranked.begin(), ranked.end());
    std::vector<std::int64_t> positions;
    for (std::size_t index = 0; index < ranked.size() && index < 3; ++index) {
        positions.push_back(ranked[index].second);
    }
    return positions;
}

} // namespace

QString PressExplainer::displayName(const std::string& press) {
    const config::PressDescription* description = config::PressDescriptions::find(press);
    return description != nullptr ? text(description->displayName) : text(press);
}

std::string PressExplainer::optionValue(const config::PressSettings& press, const std::string& option) {
    return config::PressDescriptions::optionValue(press, option);
}

QString PressExplainer::channelList(const trace::CompressionLayout& layout) {
    // "head 0: 3, 9; head 1: 1, 14".
    QStringList heads;
    for (std::int32_t head = 0; head < layout.heads(); ++head) {
        QStringList channels;
        for (const std::int32_t channel : layout.prunedChannels(head)) {
            channels << QString::number(channel);
        }
        heads << pressTr("head %1: %2").arg(head).arg(channels.join(QStringLiteral(", ")));
    }
    return heads.join(QStringLiteral("; "));
}

QString PressExplainer::channelSentence(const trace::Event& event, const QString& who,
                                        const trace::CompressionLayout& layout) {
    // "ThinK zeroed 2 key channels per head in layer 0 (head 0: 3, 9; head 1: 1, 14); ...".
    return pressTr("%1 zeroed %2 key channels per head in layer %3 (%4); all %5 tokens stay, and the cache keeps "
              "its "
              "size: zeroed channels save no memory.")
        .arg(who)
        .arg(layout.prunedChannelCount())
        .arg(event.layer)
        .arg(channelList(layout))
        .arg(layout.keptCount(0));
}

QString PressExplainer::rotationSentence(const trace::CompressionLayout& layout) {
    if (!layout.rerotated()) {
        return {};
    }
    // Each head's moves in position order; heads that moved alike are said once.
    constexpr std::size_t kShown = 8;
    const auto movesOf = [&](std::int32_t head) {
        const auto from = layout.keptPositions(head);
        const auto to = layout.rotaryPositions(head);
        std::vector<std::pair<std::int64_t, std::int64_t>> moves;
        for (std::size_t index = 0; index < from.size() && index < to.size(); ++index) {
            moves.emplace_back(from[index], to[index]);
        }
        std::sort(moves.begin(), moves.end());
        return moves;
    };
    const auto listOf = [&](const std::vector<std::pair<std::int64_t, std::int64_t>>& moves, bool old) {
        QStringList items;
        for (std::size_t index = 0; index < moves.size() && index < kShown; ++index) {
            items << QString::number(old ? moves[index].first : moves[index].second);
        }
        if (moves.size() > kShown) {
            items << QStringLiteral("…");
        }
        return items.join(QStringLiteral(", "));
    };
    const auto first = movesOf(0);
    bool alike = true;
    for (std::int32_t head = 1; head < layout.heads(); ++head) {
        alike = alike && movesOf(head) == first;
    }
    const auto clause = [&](const std::vector<std::pair<std::int64_t, std::int64_t>>& moves) {
        return pressTr("positions %1 now sit at %2").arg(listOf(moves, true), listOf(moves, false));
    };
    QString sentence = pressTr(" Re-rotated keys: ");
    if (alike) {
        sentence += clause(first) + (layout.heads() > 1 ? pressTr(" in every head") : QString());
    } else {
        QStringList heads;
        for (std::int32_t head = 0; head < layout.heads(); ++head) {
            heads << pressTr("head %1: %2").arg(head).arg(clause(movesOf(head)));
        }
        sentence += heads.join(QStringLiteral("; "));
    }
    return sentence + pressTr("; tokens generated later keep their own positions.");
}

QString PressExplainer::sentence(const trace::Event& event, const std::optional<config::PressSettings>& press,
                                 const EventExplainer::TokenLookup& tokens) {
    const auto* compression = std::get_if<trace::CompressionEvent>(&event.payload);
    if (compression == nullptr) {
        return {};
    }
    const trace::CompressionLayout layout(*compression);
    const QString who = press ? displayName(press->name) : pressTr("A cache press");
    const bool evicted = compression->lengthAfter < compression->lengthBefore;
    if (!compression->prunedChannels.empty() && !evicted) {
        return channelSentence(event, who, layout);
    }
    const QString what = event.step == 0 ? pressTr("prompt tokens") : pressTr("tokens");
    QString kept = QString::number(compression->lengthAfter);
    if (!compression->keptPerHead.empty() && layout.consistent()) {
        const auto [fewest, most] =
            std::minmax_element(compression->keptPerHead.begin(), compression->keptPerHead.end());
        kept = *fewest == *most ? QString::number(*fewest) : pressTr("%1 to %2").arg(*fewest).arg(*most);
    }
    QString sentence = pressTr("%1 kept %2 of %3 %4 in layer %5")
                           .arg(who, kept)
                           .arg(compression->lengthBefore)
                           .arg(what)
                           .arg(event.layer);
    if (layout.heads() > 1 && !compression->keptPerHead.empty()) {
        sentence += pressTr(" per head");
    }
    const std::int64_t dropped = layout.consistent() && layout.heads() > 0 && compression->keptPerHead.empty()
                                     ? layout.droppedCount(0)
                                     : compression->droppedCount;
    sentence += QStringLiteral(": ") + rule(press.value_or(config::PressSettings{}), dropped);
    if (layout.consistent() && tokens) {
        QStringList quotes;
        for (const std::int64_t position : namedPositions(layout)) {
            const QString quote = EventExplainer::quoteTokens(tokens, position, position + 1);
            if (!quote.isEmpty()) {
                quotes << quote;
            }
        }
        if (!quotes.isEmpty()) {
            sentence += pressTr(", among them %1").arg(quotes.join(QStringLiteral(", ")));
        }
    }
    sentence += QLatin1Char('.');
    // Keys the decision itself rewrote, from the event: re-rotated positions, zeroed channels (a composed
    // stage's as much as a press's own).
    sentence += rotationSentence(layout);
    if (!compression->prunedChannels.empty()) {
        sentence += pressTr(" It also zeroed %1 key channels per head (%2), which saves no memory.")
                        .arg(layout.prunedChannelCount())
                        .arg(channelList(layout));
    }
    // What the decision did to the cache besides, from the registration's policy (honest memory figures).
    if (const config::PressDescription* described =
            press ? config::PressDescriptions::find(press->name) : nullptr) {
        if (!described->policy.savesMemory()) {
            sentence += described->policy.rewritesKeys()
                            ? pressTr(" The cache keeps every slot: rewriting keys saves no memory.")
                            : pressTr(" The cache keeps every slot: masking saves no memory.");
        }
        if (described->policy.rewritesKeys() && !layout.rerotated()) {
            sentence += pressTr(" The kept keys were rewritten, so they differ from what the model computed.");
        }
    }
    // Defaults the inspector fitted to a short prompt (kvscope-cli run keeps them and refuses instead).
    for (const auto& [option, original] : press ? press->fitted : std::map<std::string, std::string>{}) {
        sentence += pressTr(" The inspector set %1 to %2 (default %3) to fit the short prompt.")
                        .arg(text(option), text(optionValue(*press, option)), text(original));
    }
    return sentence;
}

} // namespace kvscope::gui
