// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/ModelError.h"

namespace kvscope::model {

ModelError::ModelError(const std::string& message) : std::runtime_error(message) {}

} // namespace kvscope::model
