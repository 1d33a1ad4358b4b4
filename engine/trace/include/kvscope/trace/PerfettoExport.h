// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"
#include "kvscope/trace/SessionMetadata.h"

#include <filesystem>
#include <ostream>
#include <span>

namespace kvscope::trace {

/// Writes a session as Chrome trace event JSON that Perfetto and chrome://tracing open
/// (sessions/FORMAT.md, "Perfetto export"): named lanes, slices for timed work, async slices for
/// overlapping transfers, counters for occupancy and memory, flows offload -> prefetch -> use.
class PerfettoExport {
public:
    static void write(std::ostream& out, const SessionMetadata& metadata, std::span<const Event> events);
    /// Atomic: writes `path` + ".tmp" and renames it; SessionError when the file cannot be written.
    static void write(const std::filesystem::path& path, const SessionMetadata& metadata,
                      std::span<const Event> events);
};

} // namespace kvscope::trace
