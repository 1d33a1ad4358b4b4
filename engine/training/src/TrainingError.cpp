// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/training/TrainingError.h"

namespace kvscope::training {

TrainingError::TrainingError(const std::string& message) : std::runtime_error(message) {}

} // namespace kvscope::training
