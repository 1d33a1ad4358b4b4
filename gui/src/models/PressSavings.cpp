// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/PressSavings.h"

#include "kvscope/gui/models/EventExplainer.h"

#include <QCoreApplication>
#include <algorithm>
#include <map>

namespace kvscope::gui {
namespace {

QString savingsTr(const char* text) {
    return QCoreApplication::translate("PressSavings", text);
}

} // namespace

PressSavings::Figures PressSavings::of(std::span<const PressHistory::Compression> compressions,
                                       const trace::StepState& state, std::int64_t step) {
    Figures figures;
    // Per layer: the slots its decisions evicted.
    std::map<std::int32_t, std::int64_t> evictedPerLayer;
    for (const PressHistory::Compression& compression : compressions) {
        if (compression.step > step) {
            break; // in step order
        }
        const trace::CompressionEvent& event = compression.event;
        ++figures.decisions;
        figures.zeroedChannels = figures.zeroedChannels || !event.prunedChannels.empty();
        figures.rerotated = figures.rerotated || !event.rotaryPositions.empty();
        const std::int64_t evicted = std::max(0, event.lengthBefore - event.lengthAfter);
        if (evicted == 0) {
            // The cache kept its length (FORMAT.md): masked slots, or keys rewritten in place.
            figures.masked = figures.masked || (event.droppedCount > 0 && event.prunedChannels.empty());
            continue;
        }
        figures.evictedSlots += evicted;
        evictedPerLayer[compression.layer] += evicted;
    }
    for (const auto& [index, evicted] : evictedPerLayer) {
        if (index < 0 || static_cast<std::size_t>(index) >= state.layers.size()) {
            continue;
        }
        // A cached token costs the layer's bytes over the tokens it holds (the bytes follow each eviction).
        const trace::LayerState& layer = state.layers[static_cast<std::size_t>(index)];
        const std::int64_t held = layer.storedTokens;
        if (held > 0) {
            figures.bytes += static_cast<double>(evicted) *
                             static_cast<double>(layer.bytesDevice + layer.bytesHost) /
                             static_cast<double>(held);
        }
    }
    figures.layers = static_cast<std::int32_t>(evictedPerLayer.size());
    return figures;
}

QString PressSavings::note(const QString& press, const Figures& figures) {
    if (figures.decisions == 0) {
        return {};
    }
    if (figures.evictedSlots == 0) {
        const QString how = figures.masked ? savingsTr("%1 masks slots per head: the cache keeps every token")
                            : figures.rerotated
                                ? savingsTr("%1 re-rotates keys in place: every token and byte stays")
                                : savingsTr("%1 rewrites keys in place: every token and byte stays");
        return how.arg(press) + savingsTr(", this press saves no memory (0 B saved)");
    }
    QString note = savingsTr("%1 evicted %2 token slots per KV head in %3 layers: %4 saved")
                       .arg(press)
                       .arg(figures.evictedSlots)
                       .arg(figures.layers)
                       .arg(EventExplainer::formatBytes(figures.bytes));
    if (figures.zeroedChannels) {
        note += savingsTr("; its zeroed key channels save nothing");
    }
    return note;
}

} // namespace kvscope::gui
