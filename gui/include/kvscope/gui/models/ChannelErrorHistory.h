// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/gui/models/RetainedEventReader.h"
#include "kvscope/trace/Event.h"
#include "kvscope/trace/Timeline.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace kvscope::gui {

/// Every channel error report of a session's quantising layers (llama.cpp's cache), per layer in step order,
/// read from its Timeline once and then as it grows, as PressHistory reads presses: the channel error view asks
/// for each layer's latest report at the current step. Also the few figures views and explanations quote.
class ChannelErrorHistory {
public:
    struct Report {
        std::int64_t step = 0;
        trace::ChannelErrorEvent event;
    };
    /// One channel of a report's keys or values.
    struct Channel {
        int head = 0;
        int channel = 0;
        float error = 0.0F;
        float size = 0.0F;
    };

    /// Forgets everything (a new session).
    void reset();
    /// Reads the timeline's retained events added since the last call (a live run's new events).
    void update(const trace::Timeline& timeline);
    bool empty() const { return m_reports == 0; }
    /// Layers with at least one report, plus the layers below them: the rows a view draws.
    int layerCount() const { return static_cast<int>(m_byLayer.size()); }
    /// The latest report of `layer` at or before `step`; null before its first.
    const Report* latestAt(std::int32_t layer, std::int64_t step) const;

    /// Whether a report's lists fit its heads (keys and values each errors and sizes of heads x a head dimension): a
    /// damaged file's that do not are not kept.
    static bool consistent(const trace::ChannelErrorEvent& report);
    /// The channel of largest error in `errors` (heads x dim, head after head) with its size from `sizes` (the
    /// same order); nullopt when there is none or the lists do not fit `heads`.
    static std::optional<Channel> worst(const std::vector<float>& errors, const std::vector<float>& sizes,
                                        int heads);
    /// The root mean square over every channel of `values`: a layer's error over all its channels.
    static double overall(const std::vector<float>& values);
    /// The median of head `head`'s channels in `values` (heads x dim); 0 when the lists do not fit `heads`.
    static double headMedian(const std::vector<float>& values, int heads, int head);

private:
    std::vector<std::vector<Report>> m_byLayer;
    std::size_t m_reports = 0;
    RetainedEventReader m_reader;
};

} // namespace kvscope::gui
