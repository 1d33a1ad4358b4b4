// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <stdexcept>

namespace kvscope::paged {

/// Bad paged configuration or workload: the message names the problem, the allowed values and the fix.
class PagedError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

} // namespace kvscope::paged
