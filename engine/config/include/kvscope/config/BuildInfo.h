// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>
#include <string_view>

namespace kvscope::config {

/// The version and commit a binary was built from, for `--version` and a session's metadata.
class BuildInfo {
public:
    /// The project version ("0.1.0").
    static std::string_view version();
    /// The commit ("3f2a9c1d0b7e", "-dirty" appended when the tree had changes; "unknown" outside git).
    static std::string_view commit();
    /// What `--version` prints: "kvscope-cli 0.1.0 (commit 3f2a9c1d0b7e)".
    static std::string versionLine(std::string_view program);
};

} // namespace kvscope::config
