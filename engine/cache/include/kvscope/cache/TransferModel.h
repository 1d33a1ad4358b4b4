// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <optional>

namespace kvscope::cache {

/// The cost model for host<->device copies when there is no second device to time them (CPU runs):
/// a copy of `bytes` takes `latencyUs + bytes / bandwidthGBps`. Also says what one layer update costs
/// on the modeled compute lane: its measured wall time, or a fixed cost when one is configured.
class TransferModel {
public:
    static constexpr double kDefaultBandwidthGBps = 25.0; ///< PCIe 4.0 x16, pinned memory, one direction
    static constexpr double kDefaultLatencyUs = 10.0;     ///< launch plus DMA setup of one copy

    /// Refuses a bandwidth that is not a positive finite number and a negative or non-finite latency
    /// or compute cost.
    explicit TransferModel(double bandwidthGBps = kDefaultBandwidthGBps, double latencyUs = kDefaultLatencyUs,
                           std::optional<double> computeUsPerUpdate = std::nullopt);

    double bandwidthGBps() const { return m_bandwidthGBps; }
    double latencyUs() const { return m_latencyUs; }
    /// A fixed cost of one layer update; empty means "use the measured wall time of the update".
    const std::optional<double>& computeUsPerUpdate() const { return m_computeUsPerUpdate; }

    /// Duration of one copy of `bytes` (negative byte counts are refused).
    int64_t transferNs(int64_t bytes) const;
    /// Duration of one layer update on the compute lane, given its measured wall time.
    int64_t computeNs(int64_t measuredNs) const;

    bool operator==(const TransferModel&) const = default;

private:
    double m_bandwidthGBps;
    double m_latencyUs;
    std::optional<double> m_computeUsPerUpdate;
};

} // namespace kvscope::cache
