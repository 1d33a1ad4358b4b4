// SPDX-License-Identifier: GPL-3.0-or-later
#include "ServingSessionEngine.h"

#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelLoader.h"
#include "kvscope/paged/PagedConfig.h"
#include "kvscope/paged/PagedError.h"
#include "kvscope/paged/Workload.h"
#include "kvscope/paged/WorkloadCatalog.h"
#include "kvscope/runtime/ModelSource.h"
#include "kvscope/runtime/RunMetadata.h"
#include "kvscope/serving/ServingLoop.h"
#include "kvscope/serving/ServingSessionSettings.h"

#include <nlohmann/json.hpp>

namespace kvscope::app {

struct ServingSessionEngine::State {
    config::RunSettings settings;
    paged::PagedConfig paged;
    std::filesystem::path workloadPath;
    paged::Workload workload;
    runtime::ModelSource::Loaded loaded;
    trace::SessionMetadata metadata;
    std::unique_ptr<serving::ServingLoop> loop;
};

ServingSessionEngine::ServingSessionEngine(const config::RunSettings& settings)
    : m_state(std::make_unique<State>()) {
    State& state = *m_state;
    state.settings = settings;
    config::validate(settings);
    if (!settings.serving) {
        throw paged::PagedError("a serving session needs a workload");
    }
    if (!settings.press.name.empty() || settings.cache.kind != config::CacheKind::Dynamic) {
        throw paged::PagedError(
            "serving pages a dynamic cache only: presses, quantized, static and offloaded "
            "caches are not paged; pick the dynamic cache without a press");
    }
    state.paged = paged::PagedConfig::fromSettings(*settings.serving);
    state.workloadPath = paged::WorkloadCatalog::resolve(settings.serving->workload);
    state.workload = paged::Workload::load(state.workloadPath);
    state.loaded = runtime::ModelSource::load(settings, model::ModelLoader::device(settings.device));
    if (const std::string why = serving::PagedModelRunner::refusal(state.loaded.model->architecture());
        !why.empty()) {
        throw paged::PagedError(why);
    }
    state.metadata = runtime::RunMetadata::build(state.loaded, settings, *state.loaded.text, {},
                                                 runtime::RunMetadata::nowUnixNs());
    state.metadata.cacheKind = "paged";
    state.metadata.cacheSettingsJson =
        serving::ServingSessionSettings::describe(state.paged, state.workloadPath, state.loaded.model->architecture())
            .dump();
    state.metadata.prompt = state.workload.description;
}

ServingSessionEngine::~ServingSessionEngine() = default;

void ServingSessionEngine::start(trace::EventSink& sink) {
    State& state = *m_state;
    const serving::SamplingSettings sampling{state.settings.temperature, state.settings.topK,
                                             state.settings.seed};
    state.loop = std::make_unique<serving::ServingLoop>(*state.loaded.model, *state.loaded.text, state.paged,
                                                        sampling, &sink);
    state.loop->add(state.workload);
    state.loop->step(); // step 0, as a live run's start is its prefill
}

bool ServingSessionEngine::step() {
    return m_state->loop && m_state->loop->step();
}

bool ServingSessionEngine::finished() const {
    return !m_state->loop || !m_state->loop->scheduler().hasUnfinishedRequests();
}

std::int64_t ServingSessionEngine::generatedCount() const {
    // Steps after the first, as a generation run counts tokens after its prefill.
    return m_state->loop ? std::max<std::int64_t>(0, m_state->loop->scheduler().step() - 1) : 0;
}

trace::SessionMetadata ServingSessionEngine::metadata() const {
    return m_state->metadata;
}

} // namespace kvscope::app
