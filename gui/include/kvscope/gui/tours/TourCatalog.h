// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/tours/Tour.h"

#include <QByteArray>
#include <QStringList>
#include <vector>

namespace kvscope::gui {

/// The built-in guided tours (resources/tours/<name>.json, compiled in through kvscope.qrc), in their
/// "order". Adding a tour is its JSON file plus its line in the qrc.
class TourCatalog {
public:
    static const std::vector<Tour>& tours();
    /// Null when no tour has that name.
    static const Tour* find(const QString& name);
    static QStringList names();
    /// `kvscope --list-tours`: [{"name", "title", "preset", "settings": {option: value}}], the preset
    /// being `defaultPreset` where the tour names none.
    static QByteArray listJson(const QString& defaultPreset);
    /// Why a resource could not be read as a tour, for each one that could not (empty when all are tours).
    static QStringList problems();
};

} // namespace kvscope::gui
