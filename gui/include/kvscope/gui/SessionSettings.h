#pragma once

#include "kvscope/trace/RunSettings.h"

namespace kvscope::gui {

// What the New session dialog asks for: the engine's own run settings.
using SessionSettings = trace::RunSettings;

} // namespace kvscope::gui
