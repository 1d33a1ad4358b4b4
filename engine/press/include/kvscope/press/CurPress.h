// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/Press.h"

#include <string>

namespace kvscope::press {

/// CUR: approximate leverage of each token from the squared norms of its key and/or value (optionally after
/// a random projection to 20 dimensions, optionally normalised within local windows); the first
/// `sinkCount` tokens are kept.
class CurPress : public Press {
public:
    /// `leverageType`: key, value, kv_avg or kv_product.
    CurPress(int64_t sinkCount = 4, std::string leverageType = "kv_product", bool randomLeverage = false,
             bool localApproximation = true, int64_t localWindowSize = 16, uint64_t seed = 0);
    std::string name() const override { return "cur"; }
    std::string referenceName() const override { return "CURPress"; }
    PressReads reads() const override { return {true, false, false}; }
    at::Tensor score(const PressInputs& inputs, int64_t keptCount) const override;
    /// The leverage types, in kvpress's words.
    static const char* leverageTypes() { return "key, value, kv_avg, kv_product"; }

private:
    /// Squared norms [B, Hkv, T], divided by their local window's sum when asked.
    at::Tensor squaredNorms(const at::Tensor& states) const;

    int64_t m_sinkCount;
    std::string m_leverageType;
    bool m_randomLeverage;
    bool m_localApproximation;
    int64_t m_localWindowSize;
    uint64_t m_seed;
};

} // namespace kvscope::press
