// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: reading any config.json must either refuse (ConfigError, or ModelError from the
// architecture built on it) or give a config whose layer types, JSON round trip and architecture come
// out without crashing, hanging or throwing anything else.
// Build: CC=clang CXX=clang++ cmake --preset dev -B build/fuzz && ninja -C build/fuzz ModelConfigFuzzer
// Run:   build/fuzz/tests/fuzz/ModelConfigFuzzer -max_len=4096 -rss_limit_mb=2048
// tests/fuzz/model-config-seeds
#include "kvscope/config/ConfigError.h"
#include "kvscope/config/ModelConfig.h"
#include "kvscope/model/Architecture.h"
#include "kvscope/model/ModelError.h"

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const nlohmann::json document =
        nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
    if (document.is_discarded()) {
        return 0;
    }
    try {
        const auto config = kvscope::config::ModelConfig::fromJson(document);
        // Layer lists as long as num_hidden_layers: only build them for sizes a model could have.
        if (config.numHiddenLayers <= 4096) {
            (void)config.dynamicLayerTypes();
            (void)config.staticLayerTypes();
            const kvscope::model::Architecture architecture(config);
            (void)architecture.patternSummary();
        }
        (void)kvscope::config::ModelConfig::fromJson(config.toJson());
    } catch (const kvscope::config::ConfigError&) {
    } catch (const kvscope::model::ModelError&) {
    }
    return 0;
}
