// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/PressExplainer.h"

#include "kvscope/config/PressDescriptions.h"
#include "kvscope/trace/CompressionLayout.h"

#include <QCoreApplication>
#include <algorithm>
#include <map>

namespace kvscope::gui {
namespace {

QString tr(const char* text) {
    return QCoreApplication::translate("PressExplainer", text);
}

QString text(const std::string& value) {
    return QString::fromStdString(value);
}

/// Why the press dropped what it dropped, for `dropped` tokens: "the 32 whose ... were dropped".
QString rule(const config::PressSettings& press, std::int64_t dropped) {
    const auto option = [&](const char* name) { return text(PressExplainer::optionValue(press, name)); };
    const std::string& name = press.name;
    if (name == "streaming_llm") {
        return tr("the first %1 (attention sinks) and the most recent stay, the %2 in between were dropped")
            .arg(option("n_sink"))
            .arg(dropped);
    }
    if (name == "knorm") {
        return tr("the %1 whose keys had the largest norm were dropped").arg(dropped);
    }
    if (name == "snapkv") {
        return tr("the %1 whose attention from the last %2 queries was lowest were dropped")
            .arg(dropped)
            .arg(option("window_size"));
    }
    if (name == "pyramidkv") {
        return tr("with a budget that shrinks towards the last layer (beta %1), the %2 whose attention from "
                  "the "
                  "last %3 queries was lowest were dropped")
            .arg(option("beta"))
            .arg(dropped)
            .arg(option("window_size"));
    }
    if (name == "tova") {
        return tr("the %1 the last query attended to least (averaged over heads) were dropped").arg(dropped);
    }
    if (name == "observed_attention") {
        return tr("the %1 that received the least attention during the prefill were dropped").arg(dropped);
    }
    if (name == "expected_attention") {
        return tr("the %1 with the lowest attention expected from the next %2 queries were dropped")
            .arg(dropped)
            .arg(option("n_future_positions"));
    }
    if (name == "random") {
        return tr("%1 chosen at random (seed %2) were dropped").arg(dropped).arg(option("seed"));
    }
    if (name == "h2o") {
        return tr("within a budget of %1 it keeps the %2 newest and the heavy hitters of accumulated "
                  "attention; "
                  "the %3 others were dropped")
            .arg(option("budget"), press.options.count("recent_window") != 0
                                       ? option("recent_window")
                                       : QString::number(config::PressDescriptions::h2oRecentWindow(
                                             option("budget").toLongLong())))
            .arg(dropped);
    }
    if (name == "keydiff") {
        return tr("the %1 whose keys pointed most like the head's average key were dropped").arg(dropped);
    }
    if (name == "lagkv") {
        return tr("the first %1 and the last partition stay; the %2 that varied least against the next "
                  "%3-token partition were dropped")
            .arg(option("n_sink"))
            .arg(dropped)
            .arg(option("lag_size"));
    }
    if (name == "non_causal_attention") {
        return tr("the %1 that received the least attention from every query of their %2-token chunk, "
                  "weighted by value norm, were dropped")
            .arg(dropped)
            .arg(option("chunk_size"));
    }
    if (name == "leverage") {
        return tr("the %1 whose pre-RoPE keys had the lowest leverage (random sketch of %2 columns, seed %3) "
                  "were dropped")
            .arg(dropped)
            .arg(option("sketch_dimension"), option("seed"));
    }
    if (name == "cur") {
        return tr("the first %1 stay; the %2 with the lowest %3 leverage (squared norms) were dropped")
            .arg(option("num_sinks"))
            .arg(dropped)
            .arg(option("leverage_type"));
    }
    if (name == "compactor") {
        return tr("the first %1 and last %2 stay; the %3 with the lowest blend of key leverage and "
                  "non-causal attention were dropped")
            .arg(option("sink_size_start"), option("sink_size_end"))
            .arg(dropped);
    }
    if (name == "cap") {
        return tr("the first %1 stay; the %2 whose values added the least capacity for the next %3 queries "
                  "were dropped")
            .arg(option("n_sink"))
            .arg(dropped)
            .arg(option("n_future_positions"));
    }
    if (name == "simlayerkv") {
        if (dropped == 0) {
            return tr("the layer is not lazy (its last %1 queries put at most %2 of their attention on the "
                      "first %3 and the last %4 tokens), so it keeps every token")
                .arg(option("n_last"), option("lazy_threshold"), option("n_initial"), option("n_recent"));
        }
        return tr("the layer is lazy (its last %1 queries put more than %2 of their attention on the first "
                  "%3 "
                  "and the recent tokens): it keeps only those, the %4 others were dropped")
            .arg(option("n_last"), option("lazy_threshold"), option("n_initial"))
            .arg(dropped);
    }
    if (name == "decoding" || name == "adakv") {
        const config::PressSettings base{PressExplainer::optionValue(press, "base"), press.ratio,
                                         config::PressDescriptions::splitOptions(name, press.options).second};
        const QString prefix =
            name == "decoding"
                ? tr("every %1 steps it brings the cache back to %2 tokens per head by %3's scores: ")
                      .arg(option("compression_interval"), option("target_size"),
                           PressExplainer::displayName(base.name))
                : tr("heads share one budget by %1's scores (each keeps at least %2 of its share): ")
                      .arg(PressExplainer::displayName(base.name), option("alpha_safeguard"));
        return prefix + rule(base, dropped);
    }
    return tr("the %1 it ranked lowest were dropped").arg(dropped);
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
    static const std::map<std::string, const char*> names = {{"streaming_llm", "StreamingLLM"},
                                                             {"knorm", "Knorm"},
                                                             {"snapkv", "SnapKV"},
                                                             {"tova", "TOVA"},
                                                             {"pyramidkv", "PyramidKV"},
                                                             {"observed_attention", "Observed attention"},
                                                             {"expected_attention", "Expected attention"},
                                                             {"random", "The random press"},
                                                             {"adakv", "AdaKV"},
                                                             {"decoding", "DecodingPress"},
                                                             {"h2o", "H2O"},
                                                             {"keydiff", "KeyDiff"},
                                                             {"lagkv", "LagKV"},
                                                             {"non_causal_attention", "NonCausalAttn"},
                                                             {"leverage", "LeverageScore"},
                                                             {"cur", "CUR"},
                                                             {"compactor", "Compactor"},
                                                             {"cap", "CAP"},
                                                             {"think", "ThinK"},
                                                             {"simlayerkv", "SimLayerKV"}};
    const auto found = names.find(press);
    return found != names.end() ? QString::fromLatin1(found->second) : text(press);
}

std::string PressExplainer::optionValue(const config::PressSettings& press, const std::string& option) {
    if (const auto given = press.options.find(option); given != press.options.end()) {
        return given->second;
    }
    const auto declaredDefault = [&option](const std::string& name) -> std::optional<std::string> {
        if (const config::PressDescription* description = config::PressDescriptions::find(name)) {
            for (const config::PressOption& declared : description->options) {
                if (declared.name == option) {
                    return declared.defaultValue;
                }
            }
        }
        return std::nullopt;
    };
    if (const std::optional<std::string> own = declaredDefault(press.name)) {
        return *own;
    }
    // A wrapper's base press declares the options the wrapper does not.
    if (option != "base") {
        if (const std::string base = optionValue(press, "base"); !base.empty()) {
            return declaredDefault(base).value_or(std::string());
        }
    }
    return {};
}

QString PressExplainer::channelSentence(const trace::Event& event, const QString& who,
                                        const trace::CompressionLayout& layout) {
    // "ThinK zeroed 2 key channels per head in layer 0 (head 0: 3, 9; head 1: 1, 14); ...".
    QStringList heads;
    for (std::int32_t head = 0; head < layout.heads(); ++head) {
        QStringList channels;
        for (const std::int32_t channel : layout.prunedChannels(head)) {
            channels << QString::number(channel);
        }
        heads << tr("head %1: %2").arg(head).arg(channels.join(QStringLiteral(", ")));
    }
    return tr("%1 zeroed %2 key channels per head in layer %3 (%4); all %5 tokens stay, and the cache keeps "
              "its "
              "size: zeroed channels save no memory.")
        .arg(who)
        .arg(layout.prunedChannelCount())
        .arg(event.layer)
        .arg(heads.join(QStringLiteral("; ")))
        .arg(layout.keptCount(0));
}

QString PressExplainer::sentence(const trace::Event& event, const std::optional<config::PressSettings>& press,
                                 const EventExplainer::TokenLookup& tokens) {
    const auto* compression = std::get_if<trace::CompressionEvent>(&event.payload);
    if (compression == nullptr) {
        return {};
    }
    const trace::CompressionLayout layout(*compression);
    const QString who = press ? displayName(press->name) : tr("A cache press");
    if (!compression->prunedChannels.empty()) {
        return channelSentence(event, who, layout);
    }
    const QString what = event.step == 0 ? tr("prompt tokens") : tr("tokens");
    QString kept = QString::number(compression->lengthAfter);
    if (!compression->keptPerHead.empty() && layout.consistent()) {
        const auto [fewest, most] =
            std::minmax_element(compression->keptPerHead.begin(), compression->keptPerHead.end());
        kept = *fewest == *most ? QString::number(*fewest) : tr("%1 to %2").arg(*fewest).arg(*most);
    }
    QString sentence = tr("%1 kept %2 of %3 %4 in layer %5")
                           .arg(who, kept)
                           .arg(compression->lengthBefore)
                           .arg(what)
                           .arg(event.layer);
    if (layout.heads() > 1 && !compression->keptPerHead.empty()) {
        sentence += tr(" per head");
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
            sentence += tr(", among them %1").arg(quotes.join(QStringLiteral(", ")));
        }
    }
    sentence += QLatin1Char('.');
    // Defaults the inspector fitted to a short prompt (kvscope-cli run keeps them and refuses instead).
    for (const auto& [option, original] : press ? press->fitted : std::map<std::string, std::string>{}) {
        sentence += tr(" The inspector set %1 to %2 (default %3) to fit the short prompt.")
                        .arg(text(option), text(optionValue(*press, option)), text(original));
    }
    return sentence;
}

} // namespace kvscope::gui
