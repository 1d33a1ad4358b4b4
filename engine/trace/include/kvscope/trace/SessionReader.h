// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/trace/Event.h"
#include "kvscope/trace/SessionFormat.h"
#include "kvscope/trace/SessionMetadata.h"
#include "kvscope/trace/StepChunkLocation.h"
#include "kvscope/trace/StepState.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace kvscope::trace {

/// What could be read from a session file.
struct SessionContents {
    FormatVersion version;
    SessionMetadata metadata;
    std::vector<Event> events;      ///< of the intact steps, in file order
    std::int64_t intactSteps = 0;   ///< step chunks read back whole
    bool complete = false;          ///< the index footer was found and agrees with the chunks
    std::string damage;             ///< empty when the file is whole; else what is wrong and at which byte
    std::int64_t skippedChunks = 0; ///< chunks of types this reader does not know (from newer minors)
    std::int64_t skippedEvents = 0; ///< events of kinds this reader does not know (from newer minors)
    /// Operations the recorder could not record (`lost` annotations, sessions/FORMAT.md), per operation.
    std::map<std::string, std::int64_t> lost;
    std::uint64_t fileBytes = 0;
    std::uint64_t payloadBytes = 0; ///< decompressed bytes of the chunks read
};

class FileBytes;

/// Reads session files (sessions/FORMAT.md). A file damaged anywhere after its header is read up to
/// the first damage (truncation, bad CRC, bad length, undecodable payload) and says so in `damage`;
/// no sequence of bytes makes it crash, hang or allocate more than the file's size justifies.
class SessionReader {
public:
    /// SessionError when the file cannot be opened, is not a session file, has a damaged header, or
    /// has a higher major version than this reader (both versions named).
    static SessionContents read(const std::filesystem::path& path);
    static SessionContents read(std::span<const std::uint8_t> bytes, const std::string& name = "<memory>");

    /// Receives each intact step chunk's events in file order; it may move them away.
    using StepVisitor = std::function<void(const StepChunkLocation&, std::vector<Event>&)>;
    /// read() without keeping the events: the file is read chunk by chunk with positioned reads and each
    /// step chunk's events go to `visit`, so memory stays that of one chunk whatever the file's size
    /// (contents.events stays empty). Damage is reported in the contents as read() does.
    static SessionContents scan(const std::filesystem::path& path, const StepVisitor& visit);
    /// Decodes the step chunk at `offset` of a file opened earlier (a file-backed Timeline's frames):
    /// SessionError naming the file, the byte and what is wrong when the chunk no longer reads back.
    static std::vector<Event> readStepChunk(const FileBytes& file, std::uint64_t offset,
                                            const std::string& name);

    /// The state after `step` using the index footer: the nearest snapshot at or before it plus the
    /// step chunks after that, without reading the rest. Falls back to a full read when the file has
    /// no footer. SessionError when the step is not in the file's intact steps.
    static StepState stateAt(const std::filesystem::path& path, std::int64_t step);
};

} // namespace kvscope::trace
