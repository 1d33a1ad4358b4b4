// SPDX-License-Identifier: GPL-3.0-or-later
// Compactor (kvpress's CompactorPress): leverage blended with non-causal attention.
#include "kvscope/config/PressRegistration.h"

KVSCOPE_PRESS_DESCRIPTION(compactor) {
    kvscope::config::PressDescription press;
    press.name = "compactor";
    press.referenceName = "CompactorPress";
    press.displayName = "Compactor";
    press.kind = "scorer";
    press.phase = "prefill";
    press.summary = "blend of leverage and non-causal attention scores; sinks at both ends kept";
    press.options = {{"sink_size_start", "int", "8", "first tokens always kept"},
                     {"sink_size_end", "int", "4", "last tokens always kept"},
                     {"chunk_size", "int", "256", "tokens per chunk of non-causal attention"},
                     {"sketch_dimension", "int", "48", "columns of the random Gaussian sketch"},
                     {"blending", "text", "ratio", "weight of the leverage scores (default: the compression ratio)"},
                     {"seed", "int", "0", "seed of the sketch (kvpress draws it from torch's global RNG)"}};
    press.sentence = "the first {sink_size_start} and last {sink_size_end} stay; the {dropped} with the lowest "
                     "blend of key leverage and non-causal attention were dropped";
    press.policy.values = true;
    press.policy.queries = true;
    press.policy.keyProjection = true;
    return press;
}

#if KVSCOPE_PRESS_ENGINE
#include "kvscope/press/CompactorPress.h"
#include "kvscope/press/PressFactory.h"

#include <limits>

KVSCOPE_PRESS_FACTORY(compactor) {
    kvscope::press::PressFactory factory;
    factory.scorer = [](const kvscope::press::PressOptions& options) {
        const std::string blending = options.text("blending");
        // kvpress's None (the fixtures' null): the compression ratio weighs the leverage.
        const std::optional<double> weight =
            blending == "ratio" || blending == "null"
                ? std::nullopt
                : std::optional<double>(options.real("blending", 0.0, std::numeric_limits<double>::max()));
        return std::make_shared<kvscope::press::CompactorPress>(
            options.integer("sink_size_start", 0), options.integer("sink_size_end", 0),
            options.integer("chunk_size", 1), options.integer("sketch_dimension", 1), weight,
            static_cast<uint64_t>(options.integer("seed", 0)));
    };
    return factory;
}
#endif
