// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/runtime/GenerationError.h"

namespace kvscope::runtime {

GenerationError::GenerationError(const std::string& message) : std::runtime_error(message) {}

} // namespace kvscope::runtime
