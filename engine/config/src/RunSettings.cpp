// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/RunSettings.h"

#include "kvscope/config/ConfigError.h"

#include <algorithm>

namespace kvscope::config {
namespace {

void requireAtLeast(std::int64_t value, std::int64_t minimum, const char* setting) {
    if (value < minimum) {
        throw ConfigError(std::string(setting) + " must be at least " + std::to_string(minimum) + ", got " +
                          std::to_string(value));
    }
}

std::string joined(const std::vector<int>& values) {
    std::string text;
    for (int value : values) {
        text += (text.empty() ? "" : ", ") + std::to_string(value);
    }
    return text;
}

} // namespace

void validate(const RunSettings& settings) {
    const int sources = !settings.preset.empty() + !settings.configPath.empty() + !settings.checkpointDir.empty();
    if (sources > 1) {
        throw ConfigError("give one model source: a preset, a config.json or a checkpoint folder");
    }
    if (!settings.tokenizerPath.empty() && !settings.checkpointDir.empty()) {
        throw ConfigError("a tokenizer pairs with a preset or a config.json; a checkpoint folder brings its own "
                          "(its tokenizer.json or tokenizer.model)");
    }
    requireAtLeast(settings.tokens, 1, "tokens");
    requireAtLeast(settings.beams, 1, "beams");
    requireAtLeast(settings.topK, 0, "top-k");
    if (!(settings.temperature >= 0.0)) {
        throw ConfigError("temperature must be at least 0 (0 = greedy), got " + std::to_string(settings.temperature));
    }
    const CacheSettings& cache = settings.cache;
    requireAtLeast(cache.groupSize, 0, "group size");
    requireAtLeast(cache.residualLength, 1, "residual length");
    requireAtLeast(cache.maxCacheLen, 0, "max cache length");
    if (cache.kind == CacheKind::Quantized) {
        const std::vector<int> widths = allowedBitWidths(cache.backend);
        if (std::find(widths.begin(), widths.end(), cache.nbits) == widths.end()) {
            throw ConfigError("nbits " + std::to_string(cache.nbits) + " is not supported by the " +
                              std::string(toString(cache.backend)) + " quantizer (allowed: " + joined(widths) + ")");
        }
    }
}

} // namespace kvscope::config
