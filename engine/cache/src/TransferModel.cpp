// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/cache/TransferModel.h"

#include "kvscope/cache/CacheError.h"

#include <cmath>
#include <string>

namespace kvscope::cache {

TransferModel::TransferModel(double bandwidthGBps, double latencyUs, std::optional<double> computeUsPerUpdate)
    : m_bandwidthGBps(bandwidthGBps), m_latencyUs(latencyUs), m_computeUsPerUpdate(computeUsPerUpdate) {
    if (!std::isfinite(bandwidthGBps) || bandwidthGBps <= 0.0) {
        throw CacheError(ErrorKind::Value, "transfer model: host-device bandwidth must be a positive number of GB/s, got " +
                                               std::to_string(bandwidthGBps));
    }
    if (!std::isfinite(latencyUs) || latencyUs < 0.0) {
        throw CacheError(ErrorKind::Value, "transfer model: copy latency must be >= 0 microseconds, got " +
                                               std::to_string(latencyUs));
    }
    if (computeUsPerUpdate && (!std::isfinite(*computeUsPerUpdate) || *computeUsPerUpdate < 0.0)) {
        throw CacheError(ErrorKind::Value, "transfer model: compute cost per update must be >= 0 microseconds, got " +
                                               std::to_string(*computeUsPerUpdate));
    }
}

int64_t TransferModel::transferNs(int64_t bytes) const {
    if (bytes < 0) {
        throw CacheError(ErrorKind::Value, "transfer model: a copy cannot move " + std::to_string(bytes) + " bytes");
    }
    // 1 GB/s moves one byte per nanosecond, so bytes / (GB/s) is already in nanoseconds.
    return std::llround(m_latencyUs * 1e3 + static_cast<double>(bytes) / m_bandwidthGBps);
}

int64_t TransferModel::computeNs(int64_t measuredNs) const {
    if (m_computeUsPerUpdate) {
        return std::llround(*m_computeUsPerUpdate * 1e3);
    }
    return measuredNs;
}

} // namespace kvscope::cache
