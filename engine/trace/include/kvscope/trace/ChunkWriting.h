// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

namespace kvscope::trace {

/// Which thread compresses a session file's chunks and hands them to the operating system.
enum class ChunkWriting {
    /// A thread of the writer's own, which takes the chunks handed to it every couple of milliseconds: the
    /// thread that emits events only encodes them (the default).
    Background,
    /// The thread that emits, before emit() returns: for a reader that follows the file chunk by chunk as
    /// it is written (SessionSpill's timeline).
    CallersThread,
};

} // namespace kvscope::trace
