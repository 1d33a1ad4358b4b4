// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/tours/TourCatalog.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <algorithm>

// kvscope.qrc is compiled into the static kvscope_gui: without a reference the linker drops it, so its
// readers register it (Q_INIT_RESOURCE must be called outside any namespace).
static void registerResources() { Q_INIT_RESOURCE(kvscope); }

namespace kvscope::gui {

namespace {

struct Loaded {
    std::vector<Tour> tours;
    QStringList problems;
};

const Loaded& loaded() {
    static const Loaded result = [] {
        registerResources();
        Loaded out;
        std::vector<std::pair<double, Tour>> ordered;
        const QDir folder(QStringLiteral(":/kvscope/tours"));
        for (const QFileInfo& entry :
             folder.entryInfoList({QStringLiteral("*.json")}, QDir::Files, QDir::Name)) {
            QFile file(entry.filePath());
            if (!file.open(QIODevice::ReadOnly)) {
                out.problems << QStringLiteral("tour %1: cannot be read").arg(entry.baseName());
                continue;
            }
            const QByteArray json = file.readAll();
            auto parsed = Tour::fromJson(entry.baseName(), json);
            if (const auto* error = std::get_if<QString>(&parsed)) {
                out.problems << *error;
                continue;
            }
            const double order =
                QJsonDocument::fromJson(json).object().value(QStringLiteral("order")).toDouble(1e9);
            ordered.emplace_back(order, std::move(std::get<Tour>(parsed)));
        }
        std::stable_sort(ordered.begin(), ordered.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        for (auto& [order, tour] : ordered) {
            out.tours.push_back(std::move(tour));
        }
        return out;
    }();
    return result;
}

} // namespace

const std::vector<Tour>& TourCatalog::tours() {
    return loaded().tours;
}

QStringList TourCatalog::problems() {
    return loaded().problems;
}

const Tour* TourCatalog::find(const QString& name) {
    for (const Tour& tour : tours()) {
        if (tour.name == name) {
            return &tour;
        }
    }
    return nullptr;
}

QStringList TourCatalog::names() {
    QStringList names;
    for (const Tour& tour : tours()) {
        names << tour.name;
    }
    return names;
}

QByteArray TourCatalog::listJson(const QString& defaultPreset) {
    QJsonArray list;
    for (const Tour& tour : tours()) {
        QJsonObject settings;
        for (qsizetype at = 0; at < tour.arguments.size(); ++at) {
            const QString& argument = tour.arguments.at(at);
            if (!argument.startsWith(QLatin1String("--")) || argument == QLatin1String("--preset")) {
                continue;
            }
            const QString option = argument.mid(2);
            const bool hasValue =
                at + 1 < tour.arguments.size() && !tour.arguments.at(at + 1).startsWith(QLatin1String("--"));
            // A repeated option (--press-option) keeps every value.
            const QJsonValue value = hasValue ? QJsonValue(tour.arguments.at(++at)) : QJsonValue(true);
            if (settings.contains(option)) {
                QJsonArray values = settings.value(option).isArray() ? settings.value(option).toArray()
                                                                     : QJsonArray{settings.value(option)};
                values.append(value);
                settings.insert(option, values);
            } else {
                settings.insert(option, value);
            }
        }
        const QString preset = tour.argument(QStringLiteral("--preset"));
        list.append(QJsonObject{{QStringLiteral("name"), tour.name},
                                {QStringLiteral("title"), tour.title},
                                {QStringLiteral("preset"), preset.isEmpty() ? defaultPreset : preset},
                                {QStringLiteral("settings"), settings}});
    }
    return QJsonDocument(list).toJson(QJsonDocument::Indented);
}

} // namespace kvscope::gui
