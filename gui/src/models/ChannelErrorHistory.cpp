// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/ChannelErrorHistory.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <variant>

namespace kvscope::gui {

void ChannelErrorHistory::reset() {
    m_byLayer.clear();
    m_reports = 0;
    m_reader.reset();
}

void ChannelErrorHistory::update(const trace::Timeline& timeline) {
    m_reader.read(
        timeline,
        [this] {
            m_byLayer.clear();
            m_reports = 0;
        },
        [this, &timeline](const trace::Event& event, std::int64_t step) {
            const auto* report = std::get_if<trace::ChannelErrorEvent>(&event.payload);
            // A layer index beyond the session's layers is a damaged file's: not a row to draw.
            if (report == nullptr || !consistent(*report) || event.layer < 0 ||
                event.layer >= std::max(timeline.layerCount(), 1)) {
                return;
            }
            if (static_cast<std::size_t>(event.layer) >= m_byLayer.size()) {
                m_byLayer.resize(static_cast<std::size_t>(event.layer) + 1);
            }
            m_byLayer[static_cast<std::size_t>(event.layer)].push_back({step, *report});
            ++m_reports;
        });
}

const ChannelErrorHistory::Report* ChannelErrorHistory::latestAt(std::int32_t layer, std::int64_t step) const {
    if (layer < 0 || static_cast<std::size_t>(layer) >= m_byLayer.size()) {
        return nullptr;
    }
    const std::vector<Report>& reports = m_byLayer[static_cast<std::size_t>(layer)];
    const auto after = std::upper_bound(reports.begin(), reports.end(), step,
                                        [](std::int64_t value, const Report& report) { return value < report.step; });
    return after == reports.begin() ? nullptr : &*(after - 1);
}

bool ChannelErrorHistory::consistent(const trace::ChannelErrorEvent& report) {
    const auto fits = [&](const std::vector<float>& errors, const std::vector<float>& sizes) {
        return !errors.empty() && errors.size() % static_cast<std::size_t>(report.heads) == 0 &&
               sizes.size() == errors.size();
    };
    return report.heads > 0 && report.tokens > 0 && fits(report.keyError, report.keySize) &&
           fits(report.valueError, report.valueSize);
}

std::optional<ChannelErrorHistory::Channel> ChannelErrorHistory::worst(const std::vector<float>& errors,
                                                                       const std::vector<float>& sizes, int heads) {
    if (heads <= 0 || errors.empty() || errors.size() % static_cast<std::size_t>(heads) != 0 ||
        sizes.size() != errors.size()) {
        return std::nullopt;
    }
    const auto dim = errors.size() / static_cast<std::size_t>(heads);
    const auto largest = static_cast<std::size_t>(std::max_element(errors.begin(), errors.end()) - errors.begin());
    return Channel{static_cast<int>(largest / dim), static_cast<int>(largest % dim), errors[largest], sizes[largest]};
}

double ChannelErrorHistory::overall(const std::vector<float>& values) {
    if (values.empty()) {
        return 0.0;
    }
    double sum = 0.0;
    for (const float value : values) {
        sum += static_cast<double>(value) * static_cast<double>(value);
    }
    return std::sqrt(sum / static_cast<double>(values.size()));
}

double ChannelErrorHistory::headMedian(const std::vector<float>& values, int heads, int head) {
    if (heads <= 0 || head < 0 || head >= heads || values.empty() ||
        values.size() % static_cast<std::size_t>(heads) != 0) {
        return 0.0;
    }
    const auto dim = values.size() / static_cast<std::size_t>(heads);
    std::vector<float> channels(values.begin() + static_cast<std::ptrdiff_t>(head * dim),
                                values.begin() + static_cast<std::ptrdiff_t>((head + 1) * dim));
    const auto middle = channels.begin() + static_cast<std::ptrdiff_t>(dim / 2);
    std::nth_element(channels.begin(), middle, channels.end());
    if (dim % 2 == 1) {
        return *middle;
    }
    const float upper = *middle;
    const float lower = *std::max_element(channels.begin(), middle);
    return (static_cast<double>(lower) + static_cast<double>(upper)) / 2.0;
}

} // namespace kvscope::gui
