// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/BuildInfo.h"

#include "BuildInfoValues.h"

namespace kvscope::config {

std::string_view BuildInfo::version() {
    return KVSCOPE_BUILD_VERSION;
}

std::string_view BuildInfo::commit() {
    return KVSCOPE_BUILD_COMMIT;
}

std::string BuildInfo::versionLine(std::string_view program) {
    std::string line(program);
    line += ' ';
    line += version();
    line += " (commit ";
    line += commit();
    line += ')';
    return line;
}

} // namespace kvscope::config
