// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/window/QtRunOptions.h"

#include <QCommandLineParser>

namespace kvscope::gui {

void QtRunOptions::addTo(QCommandLineParser& parser, const config::RunSettings& defaults) {
    addTo(parser, defaults, config::RunOptionTable::options());
}

void QtRunOptions::addTo(QCommandLineParser& parser, const config::RunSettings& defaults,
                         const std::vector<config::RunOption>& options) {
    for (const config::RunOption& option : options) {
        const QString name = QString::fromStdString(option.name);
        const QString help = QString::fromStdString(option.help);
        if (option.valueName.empty()) {
            parser.addOption(QCommandLineOption(name, help));
            continue;
        }
        // QCommandLineParser's help does not show default values: say them as kvscope-cli's help does.
        const std::string current = option.current(defaults);
        const QString described =
            current.empty() ? help
                            : QStringLiteral("%1 [default: %2]").arg(help, QString::fromStdString(current));
        parser.addOption(QCommandLineOption(name, described, QString::fromStdString(option.valueName)));
    }
}

QString QtRunOptions::apply(const QCommandLineParser& parser, config::RunSettings& settings) {
    return apply(parser, settings, config::RunOptionTable::options());
}

QString QtRunOptions::apply(const QCommandLineParser& parser, config::RunSettings& settings,
                            const std::vector<config::RunOption>& options) {
    const auto given = [&parser](const std::string& name) {
        return parser.isSet(QString::fromStdString(name));
    };
    for (const config::RunOption& option : options) {
        const QString name = QString::fromStdString(option.name);
        if (!parser.isSet(name)) {
            continue;
        }
        if (const std::string conflict = config::RunOptionTable::conflict(option, given); !conflict.empty()) {
            return QString::fromStdString(conflict);
        }
        QStringList values;
        if (option.valueName.empty()) {
            values << QString();
        } else if (option.repeatable) {
            values = parser.values(name);
        } else {
            values << parser.value(name);
        }
        for (const QString& value : values) {
            if (const std::string refusal = option.apply(settings, value.toStdString()); !refusal.empty()) {
                return QStringLiteral("--%1: %2").arg(name, QString::fromStdString(refusal));
            }
        }
    }
    return {};
}

} // namespace kvscope::gui
