// SPDX-License-Identifier: GPL-3.0-or-later
// Composed (kvpress's ComposedPress): two prefill presses in a row, the second on what the first kept.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(composed) {
    kvscope::config::PressDescription press;
    press.name = "composed";
    press.referenceName = "ComposedPress";
    press.displayName = "Composed";
    press.kind = "wrapper";
    press.phase = "prefill";
    press.summary = "two prefill presses in a row: first at --ratio, then second at second_ratio on what the "
                    "first kept";
    press.options = {
        {"first", "stage", "snapkv", "the press applied first, at --ratio (its options as first.NAME)"},
        {"second", "stage", "knorm",
         "the press applied next, on what the first kept (options as second.NAME)"},
        {"second_ratio", "float", "0.5", "the second press's compression ratio"}};
    press.sentence =
        "{first} at the run's ratio, then {second} at {second_ratio} on what it kept; the {dropped} "
        "ranked lowest by either were dropped";
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/config/PressDescriptions.h"
#include "kvscope/press/PressCatalog.h"
#include "kvscope/press/PressFactory.h"
#include "kvscope/press/TopKSelection.h"

#include <ATen/ATen.h>
#include <array>
#include <vector>

namespace {

using namespace kvscope::press;

/// After each layer's prefill: the first press's decision on the cache, then the second's on the cache the
/// first left (the same hidden rows and rotary rows, as kvpress hands every press the same kwargs). The kept
/// slots compose; keys rewritten by either stage carry over, with what the event says of them: how far a
/// KeyRerotation stage moved each kept key (rotationShift) and the channels a ThinK stage zeroed
/// (pruned_channels). Logged scores are the first press's.
class ComposedPress : public CachePress {
public:
    ComposedPress(std::unique_ptr<CachePress> first, std::unique_ptr<CachePress> second, double secondRatio)
        : m_stages{std::move(first), std::move(second)}, m_secondRatio(secondRatio) {}
    bool wantsAttentionWeights(int64_t layer, int64_t passIndex) const override {
        return m_stages[0]->wantsAttentionWeights(layer, passIndex) ||
               m_stages[1]->wantsAttentionWeights(layer, passIndex);
    }
    PressAction onPass(const PressInputs& inputs, const PressPass& pass) override {
        PressAction composed;
        if (pass.index != 0) {
            return composed;
        }
        PressInputs current = inputs;
        PressPass stagePass = pass;
        at::Tensor kept;
        at::Tensor keys;
        at::Tensor shift;                       // rotation moved per kept slot, summed over the stages
        std::vector<at::Tensor> prunedChannels; // per stage that zeroed key channels
        for (size_t stage = 0; stage < m_stages.size(); ++stage) {
            stagePass.ratio = stage == 0 ? pass.ratio : m_secondRatio;
            PressAction action = m_stages[stage]->onPass(current, stagePass);
            const std::string prefix = "stages." + std::to_string(stage) + ".";
            for (auto& [name, value] : action.details) {
                composed.details[prefix + name] = value;
            }
            if (action.scores.defined()) {
                composed.details[prefix + "scores"] = action.scores;
            }
            if (stage == 0) {
                composed.scores = action.scores;
            }
            if (!action.kept.defined() && !action.keys.defined()) {
                continue;
            }
            at::Tensor stageKept = action.kept.defined()
                                       ? action.kept
                                       : at::arange(current.keys.size(2), pass.positions.options())
                                             .expand({current.keys.size(0), current.keys.size(1), -1});
            // The next stage sees the slots in kvpress's cache order: its scores sum over them (KeyDiff's
            // anchor, ThinK's channels), and SnapKV's window ties make that order differ from ours.
            if (stage + 1 < m_stages.size() && action.kept.defined() && action.scores.defined() &&
                !action.keys.defined() && !action.rotationShift.defined()) {
                stageKept = TopKSelection::torchOrder(action.scores, stageKept);
            }
            composed.details[prefix + "kept"] = stageKept;
            if (const auto channels = action.details.find("pruned_channels");
                channels != action.details.end()) {
                prunedChannels.push_back(channels->second);
            }
            // A later stage keeps a subset of the earlier one's slots: their shifts follow them and add up.
            if (shift.defined() || action.rotationShift.defined()) {
                const at::Tensor carried =
                    shift.defined() ? shift.gather(-1, stageKept) : at::zeros_like(stageKept);
                shift = action.rotationShift.defined() ? carried + action.rotationShift : carried;
            }
            current.keys =
                action.keys.defined() ? action.keys : TopKSelection::gather(current.keys, stageKept);
            current.values = TopKSelection::gather(current.values, stageKept);
            stagePass.positions = stagePass.positions.gather(-1, stageKept);
            kept = kept.defined() ? kept.gather(-1, stageKept) : stageKept;
            if (action.keys.defined() || keys.defined()) {
                keys = current.keys;
            }
        }
        composed.kept = kept;
        composed.keys = keys;
        composed.rotationShift = shift;
        // What the hook logs of a channel stage (ThinK first or second): the channels zeroed per head.
        if (!prunedChannels.empty()) {
            composed.details["pruned_channels"] = unionOf(prunedChannels, inputs.keys.size(-1));
        }
        return composed;
    }

    /// The channels [B, Hkv, n] zeroed by any stage, ascending per head. A zeroed channel scores 0, the
    /// least, so a second ThinK zeroes them again and every head's union has the larger stage's count; were
    /// the counts to differ between heads (ties among zero scores), the larger stage's own list stands.
    static at::Tensor unionOf(const std::vector<at::Tensor>& stages, int64_t headDim) {
        if (stages.size() == 1) {
            return stages[0];
        }
        const at::Tensor& first = stages[0];
        at::Tensor zeroed =
            at::zeros({first.size(0), first.size(1), headDim}, first.options().dtype(at::kBool));
        for (const at::Tensor& channels : stages) {
            zeroed.scatter_(-1, channels.to(at::kLong), true);
        }
        const at::Tensor counts = zeroed.sum(-1);
        if (!at::equal(counts, counts.flatten()[0].expand_as(counts))) {
            return stages[0].size(-1) >= stages[1].size(-1) ? stages[0] : stages[1];
        }
        const int64_t count = counts.flatten()[0].item<int64_t>();
        // nonzero lists each row's channels in ascending order, row after row.
        return zeroed.nonzero()
            .select(1, 2)
            .view({first.size(0), first.size(1), count})
            .to(first.scalar_type());
    }

private:
    std::array<std::unique_ptr<CachePress>, 2> m_stages;
    double m_secondRatio;
};

} // namespace

KVSCOPE_PRESS_FACTORY(composed) {
    PressFactory factory;
    factory.generation = [](const kvscope::config::PressSettings& settings) -> std::unique_ptr<CachePress> {
        using kvscope::config::PressDescriptions;
        const auto own = PressDescriptions::splitOptions(settings.name, settings.options).first;
        const PressOptions options = PressCatalog::optionsOf(settings.name, own);
        std::array<std::unique_ptr<CachePress>, 2> stages;
        const double secondRatio = options.real("second_ratio", 0.0, 0.999999);
        for (size_t stage = 0; stage < stages.size(); ++stage) {
            const std::string option = stage == 0 ? "first" : "second";
            const std::string name = options.text(option);
            const kvscope::config::PressDescription* staged = PressDescriptions::find(name);
            if (staged == nullptr || staged->phase != "prefill" || staged->policy.effect == "masks" ||
                name == settings.name) {
                throw std::invalid_argument(
                    "press composed option " + option + "=" + name +
                    ": expected a prefill press that does not mask (kvpress's ComposedPress "
                    "refuses AdaKV): " +
                    PressDescriptions::stagePressNames(settings.name));
            }
            stages[stage] =
                PressCatalog::generation({name, stage == 0 ? settings.ratio : secondRatio,
                                          PressDescriptions::stageOptions(settings.options, option)});
        }
        return std::make_unique<ComposedPress>(std::move(stages[0]), std::move(stages[1]), secondRatio);
    };
    return factory;
}
#endif
