// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/tours/Tour.h"

#include "kvscope/trace/Event.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>

namespace kvscope::gui {

namespace {

bool isEventName(const QString& name) {
    for (std::size_t kind = 0; kind < trace::kEventKindCount; ++kind) {
        if (name == QLatin1String(trace::toString(static_cast<trace::EventKind>(kind)))) {
            return true;
        }
    }
    return false;
}

QString eventNames() {
    QStringList names;
    for (std::size_t kind = 0; kind < trace::kEventKindCount; ++kind) {
        names << QString::fromLatin1(trace::toString(static_cast<trace::EventKind>(kind)));
    }
    return names.join(QStringLiteral(", "));
}

} // namespace

std::optional<TourTrigger> TourTrigger::parse(const QString& text, QString* error) {
    static const QRegularExpression step(QStringLiteral("^step (\\d+)$"));
    static const QRegularExpression first(QStringLiteral("^first ([a-z_]+)(?: layer (\\d+))?$"));
    TourTrigger trigger;
    const QString trimmed = text.trimmed();
    if (trimmed == QLatin1String("prefill")) {
        return trigger;
    }
    if (trimmed == QLatin1String("last")) {
        trigger.kind = Kind::Last;
        return trigger;
    }
    if (const auto match = step.match(trimmed); match.hasMatch()) {
        trigger.kind = Kind::Step;
        trigger.step = match.captured(1).toLongLong();
        return trigger;
    }
    if (const auto match = first.match(trimmed); match.hasMatch()) {
        if (!isEventName(match.captured(1))) {
            *error = QStringLiteral("unknown event `%1` (allowed: %2)").arg(match.captured(1), eventNames());
            return std::nullopt;
        }
        trigger.kind = Kind::FirstEvent;
        trigger.event = match.captured(1);
        if (!match.captured(2).isEmpty()) {
            trigger.layer = match.captured(2).toInt();
        }
        return trigger;
    }
    *error = QStringLiteral(
                 "`%1` is not a time (allowed: prefill, step N, first EVENT, first EVENT layer L, last)")
                 .arg(text);
    return std::nullopt;
}

std::variant<Tour, QString> Tour::fromJson(const QString& name, const QByteArray& json) {
    QJsonParseError parseError;
    const QJsonDocument document = QJsonDocument::fromJson(json, &parseError);
    if (!document.isObject()) {
        return QStringLiteral("tour %1: not a JSON object (%2)").arg(name, parseError.errorString());
    }
    const QJsonObject object = document.object();
    Tour tour;
    tour.name = name;
    tour.title = object.value(QStringLiteral("title")).toString();
    tour.summary = object.value(QStringLiteral("summary")).toString();
    if (tour.title.isEmpty() || tour.summary.isEmpty()) {
        return QStringLiteral("tour %1: needs a \"title\" and a \"summary\" (text)").arg(name);
    }
    for (const QJsonValue argument : object.value(QStringLiteral("arguments")).toArray()) {
        if (!argument.isString()) {
            return QStringLiteral("tour %1: \"arguments\" must be a list of texts (kvscope's options)")
                .arg(name);
        }
        tour.arguments << argument.toString();
    }
    for (const QJsonValue value : object.value(QStringLiteral("notes")).toArray()) {
        const QJsonObject note = value.toObject();
        QString error;
        const auto trigger = TourTrigger::parse(note.value(QStringLiteral("when")).toString(), &error);
        if (!trigger) {
            return QStringLiteral("tour %1: note %2: %3").arg(name).arg(tour.notes.size() + 1).arg(error);
        }
        const QString text = note.value(QStringLiteral("text")).toString();
        if (text.isEmpty()) {
            return QStringLiteral("tour %1: note %2 has no \"text\"").arg(name).arg(tour.notes.size() + 1);
        }
        tour.notes.push_back({*trigger, text});
    }
    if (tour.notes.empty()) {
        return QStringLiteral("tour %1: needs at least one note in \"notes\"").arg(name);
    }
    return tour;
}

QString Tour::argument(const QString& option) const {
    const qsizetype at = arguments.lastIndexOf(option);
    return at >= 0 && at + 1 < arguments.size() ? arguments.at(at + 1) : QString();
}

} // namespace kvscope::gui
