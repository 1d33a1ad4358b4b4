// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/SpeculationHistory.h"

#include <algorithm>
#include <span>
#include <variant>

namespace kvscope::gui {

void SpeculationHistory::reset() {
    m_verifications.clear();
    m_reader.reset();
}

void SpeculationHistory::update(const trace::Timeline& timeline) {
    m_reader.read(
        timeline, [this] { m_verifications.clear(); },
        [this](const trace::Event& event, std::int64_t step) {
            if (const auto* speculation = std::get_if<trace::SpeculationEvent>(&event.payload)) {
                m_verifications.push_back({step, *speculation, speculation->firstPosition + speculation->accepted + 1});
            }
        });
}

const SpeculationHistory::Verification* SpeculationHistory::at(std::int64_t step) const {
    const auto found = std::lower_bound(m_verifications.begin(), m_verifications.end(), step,
                                        [](const Verification& v, std::int64_t value) { return v.step < value; });
    return found != m_verifications.end() && found->step == step ? &*found : nullptr;
}

std::int64_t SpeculationHistory::producedPosition(std::int64_t promptLength, std::int64_t step) const {
    if (promptLength <= 0) {
        return -1;
    }
    // The last verification at or before the step; the steps after it added one token each.
    const auto after = std::upper_bound(m_verifications.begin(), m_verifications.end(), step,
                                        [](std::int64_t value, const Verification& v) { return value < v.step; });
    if (after == m_verifications.begin()) {
        return promptLength + step;
    }
    const Verification& last = *std::prev(after);
    return last.textEnd - 1 + (step - last.step);
}

std::optional<std::pair<std::int64_t, std::int64_t>> SpeculationHistory::producer(std::int64_t promptLength,
                                                                                  std::int64_t position) const {
    if (position < promptLength || promptLength <= 0) {
        return std::nullopt;
    }
    // The first verification whose text reaches past the position either added it or comes after its step.
    const auto holder = std::upper_bound(m_verifications.begin(), m_verifications.end(), position,
                                         [](std::int64_t value, const Verification& v) { return value < v.textEnd; });
    if (holder != m_verifications.end() && position >= holder->event.firstPosition) {
        return std::make_pair(holder->step, position - holder->event.firstPosition);
    }
    if (holder == m_verifications.begin()) {
        return std::make_pair(position - promptLength, std::int64_t{0});
    }
    const Verification& previous = *std::prev(holder);
    return std::make_pair(previous.step + 1 + (position - previous.textEnd), std::int64_t{0});
}

SpeculationHistory::DraftMark SpeculationHistory::markAt(std::int64_t promptLength, std::int64_t position) const {
    const auto produced = producer(promptLength, position);
    if (!produced) {
        return {};
    }
    const Verification* verification = at(produced->first);
    if (verification == nullptr) {
        return {};
    }
    const std::int64_t accepted = verification->event.accepted;
    if (produced->second < accepted) {
        return {DraftMark::Kind::Accepted, verification->step, verification};
    }
    if (produced->second == accepted && verification->event.drafted() > accepted) {
        return {DraftMark::Kind::Replacement, verification->step, verification};
    }
    return {};
}

} // namespace kvscope::gui
