// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/press/CachePress.h"
#include "kvscope/press/PressInputs.h"
#include "kvscope/press/PressWorkload.h"

#include <ATen/core/Tensor.h>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace kvscope::press {

/// Any registered press (PressCatalog::generation) applied to a PressWorkload's layer as a generation
/// applies it (runtime::CachePressHook, without a model): a prefill pass over the first tokens, then
/// one-token decoding passes, each decision's kept slots and rewritten keys applied to the run's own copy
/// of the layer's cache (a mask is not: the cache keeps every slot). Building a pass's inputs (attention
/// weights included, for a press that wants them) is apart from deciding on them, so that benchmarks time
/// the press alone (`kvscope-cli bench press`, tests/bench/PressBenchmark).
class WorkloadPressRun {
public:
    /// `given` with the cache size a decoding press holds (its `target_size`, `budget`) set to `tokens` where
    /// press `name` declares it and `given` does not: the cache a benchmark times the press at.
    static std::map<std::string, std::string>
    holdingAt(const std::string& name, std::map<std::string, std::string> given, int64_t tokens);

    /// `workload` must outlive the run.
    WorkloadPressRun(const PressWorkload& workload, std::unique_ptr<CachePress> press, double ratio);

    /// The prefill pass's inputs: the cache holds the workload's first `tokens` tokens.
    PressInputs prefill(int64_t tokens);
    /// The next decoding pass's inputs: the workload's next token appended to the cache.
    PressInputs next();
    /// The press decides on the pass whose inputs prefill() or next() gave; the decision is applied.
    PressAction decide(const PressInputs& inputs);

    /// This run as it stands (its cache, its passes so far) with another press: a benchmark decides on the
    /// same inputs with a fresh press each time.
    WorkloadPressRun withPress(std::unique_ptr<CachePress> press) const;

    /// Slots the layer's cache holds.
    int64_t cached() const { return m_keys.defined() ? m_keys.size(2) : 0; }
    /// Tokens the layer has read (the next token's position).
    int64_t seen() const { return m_seen; }

private:
    PressInputs inputsOf(int64_t first, int64_t count) const;

    const PressWorkload* m_workload;
    std::unique_ptr<CachePress> m_press;
    double m_ratio;
    int64_t m_passes = 0;
    int64_t m_seen = 0;
    int64_t m_queryLength = 0;
    at::Tensor m_keys;
    at::Tensor m_values;
    at::Tensor m_positions; ///< [1, Hkv, L] of each cached slot
};

} // namespace kvscope::press
