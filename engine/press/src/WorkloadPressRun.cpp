// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/press/WorkloadPressRun.h"

#include "kvscope/config/PressDescriptions.h"
#include "kvscope/model/TensorOps.h"
#include "kvscope/press/TopKSelection.h"

#include <ATen/ATen.h>
#include <cmath>
#include <stdexcept>
#include <string>

namespace kvscope::press {

std::map<std::string, std::string> WorkloadPressRun::holdingAt(const std::string& name,
                                                               std::map<std::string, std::string> given,
                                                               int64_t tokens) {
    for (const config::PressOption& option : config::PressDescriptions::describe(name).options) {
        if (option.name == "target_size" || option.name == "budget") {
            given.emplace(option.name, std::to_string(tokens));
        }
    }
    return given;
}

WorkloadPressRun::WorkloadPressRun(const PressWorkload& workload, std::unique_ptr<CachePress> press,
                                   double ratio)
    : m_workload(&workload), m_press(std::move(press)), m_ratio(ratio) {}

WorkloadPressRun WorkloadPressRun::withPress(std::unique_ptr<CachePress> press) const {
    WorkloadPressRun run(*m_workload, std::move(press), m_ratio);
    run.m_passes = m_passes;
    run.m_seen = m_seen;
    run.m_queryLength = m_queryLength;
    // Shared, never written in place: decide() and next() make new tensors.
    run.m_keys = m_keys;
    run.m_values = m_values;
    run.m_positions = m_positions;
    return run;
}

PressInputs WorkloadPressRun::prefill(int64_t tokens) {
    if (m_passes != 0 || tokens < 1 || tokens > m_workload->tokens()) {
        throw std::invalid_argument("a workload run's prefill comes first and reads 1 to " +
                                    std::to_string(m_workload->tokens()) + " tokens, not " +
                                    std::to_string(tokens));
    }
    const PressInputs& all = m_workload->inputs();
    m_keys = all.keys.narrow(2, 0, tokens);
    m_values = all.values.narrow(2, 0, tokens);
    m_positions = at::arange(tokens, at::kLong).expand({1, m_keys.size(1), tokens}).contiguous();
    m_seen = tokens;
    m_queryLength = tokens;
    return inputsOf(0, tokens);
}

PressInputs WorkloadPressRun::next() {
    if (m_passes == 0 || m_seen >= m_workload->tokens()) {
        throw std::invalid_argument(
            "a workload run's decoding pass follows its prefill and stays within the " +
            std::to_string(m_workload->tokens()) + " tokens of the workload");
    }
    const PressInputs& all = m_workload->inputs();
    m_keys = at::cat({m_keys, all.keys.narrow(2, m_seen, 1)}, 2);
    m_values = at::cat({m_values, all.values.narrow(2, m_seen, 1)}, 2);
    m_positions = at::cat({m_positions, at::full({1, m_keys.size(1), 1}, m_seen, at::kLong)}, 2);
    m_queryLength = 1;
    return inputsOf(m_seen++, 1);
}

PressInputs WorkloadPressRun::inputsOf(int64_t first, int64_t count) const {
    PressInputs inputs = m_workload->inputs();
    inputs.keys = m_keys;
    inputs.values = m_values;
    inputs.hiddenStates = inputs.hiddenStates.narrow(1, first, count);
    inputs.cos = inputs.cos.narrow(1, first, count);
    inputs.sin = inputs.sin.narrow(1, first, count);
    if (m_press->wantsAttentionWeights(0, m_passes)) {
        // The pass's queries against the cache as it stands, causal within the pass.
        const int64_t length = m_keys.size(2);
        const at::Tensor mask =
            at::ones({count, length}, at::kBool).tril(length - count).view({1, 1, count, length});
        model::ops::attend(m_workload->queries(first, count), m_keys, m_values, mask,
                           1.0 / std::sqrt(static_cast<double>(inputs.headDim)), 0.0, &inputs.attentions);
    }
    return inputs;
}

PressAction WorkloadPressRun::decide(const PressInputs& inputs) {
    PressAction action = m_press->onPass(inputs, PressPass{m_passes++, m_queryLength, m_ratio, m_positions});
    at::Tensor kept = action.kept;
    if (action.keys.defined() && !kept.defined()) {
        kept =
            at::arange(m_positions.size(2), m_positions.options()).expand(m_positions.sizes()).contiguous();
    }
    if (kept.defined() && !action.masked.defined()) {
        m_keys = action.keys.defined() ? action.keys : TopKSelection::gather(m_keys, kept);
        m_values = TopKSelection::gather(m_values, kept);
        m_positions = TopKSelection::gather(m_positions, kept);
    }
    return action;
}

} // namespace kvscope::press
