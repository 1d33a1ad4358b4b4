// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/SessionReader.h"

#include "ByteReader.h"
#include "ChunkFrame.h"
#include "Crc32c.h"
#include "EventCodec.h"
#include "FileBytes.h"
#include "kvscope/trace/SessionError.h"
#include "kvscope/trace/StateReducer.h"
#include "kvscope/trace/Timeline.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <zstd.h>

namespace kvscope::trace {

namespace {

// A chunk is damaged: the message says what, `offset` where.
struct Damage {
    std::uint64_t offset;
    std::string what;
};

struct Header {
    FormatVersion version;
    SessionMetadata metadata;
    std::uint64_t length = 0;
};

struct Chunk {
    std::uint32_t type = 0;
    std::uint64_t offset = 0;
    std::uint64_t frameBytes = 0;
    std::vector<std::uint8_t> raw; // decompressed payload
};

std::string at(std::uint64_t offset) {
    return " at byte " + std::to_string(offset);
}

Header parseHeader(std::span<const std::uint8_t> bytes, const std::string& name) {
    const auto& magic = SessionFormat::kMagic;
    const std::size_t compared = std::min(bytes.size(), magic.size());
    if (compared == 0 || !std::equal(bytes.begin(), bytes.begin() + compared,
                                     reinterpret_cast<const std::uint8_t*>(magic.data()))) {
        throw SessionError(name + " is not a kvscope session file (it does not start with \"KVSESS\")");
    }
    if (bytes.size() < SessionFormat::kFixedHeaderBytes) {
        throw SessionError(name + ": the header is truncated (" + std::to_string(bytes.size()) +
                           " bytes, at least " + std::to_string(SessionFormat::kFixedHeaderBytes) +
                           " needed)");
    }
    ByteReader in(bytes);
    in.take(magic.size());
    Header header;
    header.version.major = in.get<std::uint16_t>();
    header.version.minor = in.get<std::uint16_t>();
    if (header.version.major > SessionFormat::kMajor || header.version.major == 0) {
        throw SessionError(name + " has session format version " + header.version.toString() +
                           "; this kvscope reads format " + std::to_string(SessionFormat::kMajor) +
                           ".x (written as " + FormatVersion{}.toString() +
                           "): open it with a newer kvscope");
    }
    header.length = in.get<std::uint32_t>();
    in.get<std::uint32_t>(); // flags: none defined in 1.x; later minors may add optional ones
    in.get<std::int64_t>();  // creation time, also in the metadata
    const std::uint64_t jsonLength = in.get<std::uint32_t>();
    if (header.length < SessionFormat::kFixedHeaderBytes + jsonLength + 4 || header.length > bytes.size()) {
        throw SessionError(name + ": the header is damaged or truncated (it claims " +
                           std::to_string(header.length) + " bytes with " + std::to_string(jsonLength) +
                           " bytes of metadata; the file has " + std::to_string(bytes.size()) + ")");
    }
    const auto covered = bytes.first(header.length - 4);
    ByteReader crcReader(bytes.subspan(header.length - 4, 4));
    if (Crc32c::compute(covered) != crcReader.get<std::uint32_t>()) {
        throw SessionError(name + ": the header's checksum does not match (damaged metadata)");
    }
    const auto json = in.take(jsonLength);
    header.metadata =
        SessionMetadata::fromJson(std::string_view(reinterpret_cast<const char*>(json.data()), json.size()));
    return header;
}

// One decompression context per read: creating one per chunk costs more than the chunk itself.
class Decompressor {
public:
    Decompressor() : m_context(ZSTD_createDCtx()) {}
    ~Decompressor() { ZSTD_freeDCtx(m_context); }
    Decompressor(const Decompressor&) = delete;
    Decompressor& operator=(const Decompressor&) = delete;
    // Null when it could not be made: ChunkFrame then decompresses without one.
    ZSTD_DCtx* context() const { return m_context; }

private:
    ZSTD_DCtx* m_context;
};

// Reads and checks the chunk frame at `offset`; throws Damage.
Chunk readChunk(std::span<const std::uint8_t> bytes, std::uint64_t offset, Decompressor& decompressor) {
    try {
        const auto rest = bytes.subspan(offset);
        const ChunkFrame frame = ChunkFrame::header(rest, rest.size());
        const auto framed = rest.first(frame.frameBytes());
        frame.checkSum(framed);
        Chunk chunk;
        chunk.offset = offset;
        chunk.type = frame.type();
        chunk.frameBytes = frame.frameBytes();
        frame.payload(framed, chunk.raw, decompressor.context());
        return chunk;
    } catch (const ChunkFrame::Invalid& invalid) {
        throw Damage{offset, invalid.what()};
    }
}

// Where chunks are read from: a whole file in memory, or a file on disk read chunk by chunk.
class ByteSource {
public:
    virtual ~ByteSource() = default;
    virtual std::uint64_t size() const = 0;
    // Bytes [offset, offset + length) clamped to the end; may point into `buffer`.
    virtual std::span<const std::uint8_t> view(std::uint64_t offset, std::uint64_t length,
                                               std::vector<std::uint8_t>& buffer) const = 0;
};

class MemorySource final : public ByteSource {
public:
    explicit MemorySource(std::span<const std::uint8_t> bytes) : m_bytes(bytes) {}
    std::uint64_t size() const override { return m_bytes.size(); }
    std::span<const std::uint8_t> view(std::uint64_t offset, std::uint64_t length,
                                       std::vector<std::uint8_t>&) const override {
        if (offset >= m_bytes.size()) {
            return {};
        }
        return m_bytes.subspan(
            offset, static_cast<std::size_t>(std::min<std::uint64_t>(length, m_bytes.size() - offset)));
    }

private:
    std::span<const std::uint8_t> m_bytes;
};

class FileSource final : public ByteSource {
public:
    explicit FileSource(const FileBytes& file) : m_file(file) {}
    std::uint64_t size() const override { return m_file.size(); }
    std::span<const std::uint8_t> view(std::uint64_t offset, std::uint64_t length,
                                       std::vector<std::uint8_t>& buffer) const override {
        return m_file.read(offset, length, buffer);
    }

private:
    const FileBytes& m_file;
};

// readChunk on a chunk read alone from `source`: only its own bytes are read. Damage offsets are the file's.
Chunk readChunkAt(const ByteSource& source, std::uint64_t offset, Decompressor& decompressor,
                  std::vector<std::uint8_t>& buffer) {
    const std::uint64_t left = source.size() - std::min(offset, source.size());
    std::uint64_t frameBytes = left;
    if (left >= SessionFormat::kChunkHeaderBytes) {
        const auto headBytes = source.view(offset, SessionFormat::kChunkHeaderBytes, buffer);
        if (headBytes.size() != SessionFormat::kChunkHeaderBytes) {
            throw Damage{offset, "the file ends inside a chunk header (it shrank while it was read)"};
        }
        try {
            frameBytes = ChunkFrame::header(headBytes, left).frameBytes();
        } catch (const ChunkFrame::Invalid&) {
            // Read what is left: readChunk below says what is wrong, in the same words as a whole read.
        }
    }
    const auto frame = source.view(offset, frameBytes, buffer);
    if (frame.size() != frameBytes) {
        throw Damage{offset, "the file ends inside a chunk (it shrank while it was read)"};
    }
    try {
        Chunk chunk = readChunk(frame, 0, decompressor);
        chunk.offset = offset;
        return chunk;
    } catch (Damage& damage) {
        damage.offset += offset;
        throw;
    }
}

struct StepChunk {
    std::int64_t step = 0;
    std::vector<Event> events;
    std::int64_t skippedEvents = 0;
    std::map<std::string, std::int64_t> lost;
};

StepChunk decodeStep(const Chunk& chunk) {
    try {
        ByteReader in(chunk.raw);
        StepChunk decoded;
        decoded.step = in.get<std::int64_t>();
        const std::size_t count = in.getCount(1 + 4); // kind and length, at least
        decoded.events.reserve(count);
        EventCodec::Skipped skipped;
        for (std::size_t i = 0; i < count; ++i) {
            if (auto event = EventCodec::decode(in, &skipped)) {
                decoded.events.push_back(std::move(*event));
            } else if (skipped.kind == EventCodec::kLostKind) {
                ++decoded.lost[skipped.lostOperation];
            } else {
                ++decoded.skippedEvents;
            }
        }
        if (!in.atEnd()) {
            throw EventCodec::Invalid(std::to_string(in.remaining()) + " bytes follow the step's last event");
        }
        if (decoded.step < 0) {
            throw EventCodec::Invalid("negative step " + std::to_string(decoded.step));
        }
        return decoded;
    } catch (const std::runtime_error& error) {
        throw Damage{chunk.offset, std::string("a step chunk does not decode: ") + error.what()};
    }
}

StepState decodeSnapshot(const Chunk& chunk) {
    try {
        ByteReader in(chunk.raw);
        StepState state = EventCodec::decodeStepState(in);
        if (!in.atEnd()) {
            throw EventCodec::Invalid(std::to_string(in.remaining()) + " bytes follow the snapshot");
        }
        return state;
    } catch (const std::runtime_error& error) {
        throw Damage{chunk.offset, std::string("a snapshot chunk does not decode: ") + error.what()};
    }
}

struct Index {
    std::vector<StepChunkLocation> steps;
    std::vector<StepChunkLocation> snapshots;
};

Index decodeIndex(const Chunk& chunk) {
    try {
        ByteReader in(chunk.raw);
        Index index;
        for (auto* list : {&index.steps, &index.snapshots}) {
            list->resize(in.getCount(16));
            for (StepChunkLocation& position : *list) {
                position.step = in.get<std::int64_t>();
                position.offset = in.get<std::uint64_t>();
            }
        }
        if (!in.atEnd()) {
            throw EventCodec::Invalid(std::to_string(in.remaining()) + " bytes follow the index");
        }
        return index;
    } catch (const std::runtime_error& error) {
        throw Damage{chunk.offset, std::string("the index chunk does not decode: ") + error.what()};
    }
}

// The footer after the index chunk: its offset, then the end magic. nullopt when absent or wrong.
std::optional<std::uint64_t> footerIndexOffset(std::span<const std::uint8_t> tail) {
    if (tail.size() != SessionFormat::kFooterBytes) {
        return std::nullopt;
    }
    ByteReader in(tail);
    const auto offset = in.get<std::uint64_t>();
    const auto magic = in.take(8);
    if (!std::equal(magic.begin(), magic.end(),
                    reinterpret_cast<const std::uint8_t*>(SessionFormat::kEndMagic.data()))) {
        return std::nullopt;
    }
    return offset;
}

std::vector<std::uint8_t> readFile(const std::filesystem::path& path) {
    std::ifstream file(path, std::ios::binary);
    if (!file) {
        throw SessionError("cannot open session file " + path.string());
    }
    file.seekg(0, std::ios::end);
    const auto size = static_cast<std::size_t>(file.tellg());
    file.seekg(0);
    std::vector<std::uint8_t> bytes(size);
    if (size > 0 && !file.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size))) {
        throw SessionError("cannot read session file " + path.string());
    }
    return bytes;
}

Header parseHeaderFrom(const ByteSource& source, const std::string& name, std::vector<std::uint8_t>& buffer) {
    // The header's length is at byte 12; read that much (parseHeader checks it against the file).
    std::uint64_t length = SessionFormat::kFixedHeaderBytes;
    const auto fixed = source.view(0, SessionFormat::kFixedHeaderBytes, buffer);
    if (fixed.size() == SessionFormat::kFixedHeaderBytes) {
        ByteReader in(fixed);
        in.take(12);
        length = std::max<std::uint64_t>(length, in.get<std::uint32_t>());
    }
    const auto bytes = source.view(0, length, buffer);
    Header header = parseHeader(bytes, name);
    if (header.length > source.size()) {
        throw SessionError(name + ": the header is truncated");
    }
    return header;
}

// The chunks after the header, in order, up to the index footer or the first damage. Each step chunk's
// events go to `visit` (which may move them away); everything else lands in `contents`.
void readChunks(const ByteSource& source, const Header& header, const std::string& name,
                SessionContents& contents, const SessionReader::StepVisitor& visit) {
    contents.version = header.version;
    contents.metadata = header.metadata;
    contents.fileBytes = source.size();

    std::vector<StepChunkLocation> stepChunks;
    std::vector<StepChunkLocation> snapshots;
    std::set<std::int64_t> steps;
    std::vector<std::uint8_t> buffer;
    std::uint64_t offset = header.length;
    Decompressor decompressor;
    try {
        while (offset < source.size()) {
            const Chunk chunk = readChunkAt(source, offset, decompressor, buffer);
            contents.payloadBytes += chunk.raw.size();
            switch (static_cast<SessionFormat::ChunkType>(chunk.type)) {
            case SessionFormat::ChunkType::Step: {
                StepChunk step = decodeStep(chunk);
                if (!stepChunks.empty() && step.step < stepChunks.back().step) {
                    throw Damage{offset, "step " + std::to_string(step.step) + " follows step " +
                                             std::to_string(stepChunks.back().step) +
                                             " (chunks out of order)"};
                }
                stepChunks.push_back({step.step, offset});
                steps.insert(step.step);
                contents.skippedEvents += step.skippedEvents;
                for (const auto& [operation, count] : step.lost) {
                    contents.lost[operation] += count;
                }
                visit(StepChunkLocation{step.step, offset}, step.events);
                break;
            }
            case SessionFormat::ChunkType::Snapshot:
                snapshots.push_back({decodeSnapshot(chunk).step, offset});
                break;
            case SessionFormat::ChunkType::Index: {
                const Index index = decodeIndex(chunk);
                const std::uint64_t end = offset + chunk.frameBytes;
                const auto footer =
                    source.size() - end == SessionFormat::kFooterBytes
                        ? footerIndexOffset(source.view(end, SessionFormat::kFooterBytes, buffer))
                        : std::nullopt;
                if (!footer || *footer != offset) {
                    throw Damage{end, "the footer after the index is missing or damaged"};
                }
                if (index.steps != stepChunks || index.snapshots != snapshots) {
                    throw Damage{offset, "the index does not list the chunks the file holds"};
                }
                contents.complete = true;
                contents.intactSteps = static_cast<std::int64_t>(steps.size());
                return;
            }
            case SessionFormat::ChunkType::Overview:
            case SessionFormat::ChunkType::OverviewLocator:
            case SessionFormat::ChunkType::Columns:
            case SessionFormat::ChunkType::Spans:
                break; // 1.6: what Timeline::openFile reads instead of this pass; nothing to fold here
            default:
                ++contents.skippedChunks; // a chunk type from a newer minor version
                break;
            }
            offset += chunk.frameBytes;
        }
        throw Damage{offset, "the file ends without its index footer: the session was not finished (the "
                             "recording stopped or crashed)"};
    } catch (const Damage& damage) {
        contents.intactSteps = static_cast<std::int64_t>(steps.size());
        contents.damage = name + ": " + damage.what + at(damage.offset) + "; " +
                          std::to_string(steps.size()) + " steps intact";
    }
}

} // namespace

SessionContents SessionReader::read(const std::filesystem::path& path) {
    const std::vector<std::uint8_t> bytes = readFile(path);
    return read(bytes, path.string());
}

SessionContents SessionReader::read(std::span<const std::uint8_t> bytes, const std::string& name) {
    const MemorySource source(bytes);
    std::vector<std::uint8_t> buffer;
    const Header header = parseHeaderFrom(source, name, buffer);
    SessionContents contents;
    // Per-chunk event lists joined once at the end: growing one vector event by event would
    // reallocate and copy the whole session over and over (most of the read time at 4k steps).
    std::vector<std::vector<Event>> chunkEvents;
    readChunks(source, header, name, contents, [&](const StepChunkLocation&, std::vector<Event>& events) {
        chunkEvents.push_back(std::move(events));
    });
    std::size_t total = 0;
    for (const auto& events : chunkEvents) {
        total += events.size();
    }
    contents.events.reserve(total);
    for (auto& events : chunkEvents) {
        std::move(events.begin(), events.end(), std::back_inserter(contents.events));
    }
    return contents;
}

SessionContents SessionReader::scan(const std::filesystem::path& path, const StepVisitor& visit) {
    const FileBytes file(path);
    const FileSource source(file);
    std::vector<std::uint8_t> buffer;
    const Header header = parseHeaderFrom(source, path.string(), buffer);
    SessionContents contents;
    readChunks(source, header, path.string(), contents, visit);
    return contents;
}

std::vector<Event> SessionReader::readStepChunk(const FileBytes& file, std::uint64_t offset,
                                                const std::string& name) {
    const FileSource source(file);
    // A view decodes steps one at a time as the user moves: one context per thread, not per step.
    thread_local Decompressor decompressor;
    std::vector<std::uint8_t> buffer;
    try {
        const Chunk chunk = readChunkAt(source, offset, decompressor, buffer);
        if (static_cast<SessionFormat::ChunkType>(chunk.type) != SessionFormat::ChunkType::Step) {
            throw Damage{offset, "the chunk there is not a step chunk any more"};
        }
        return std::move(decodeStep(chunk).events);
    } catch (const Damage& damage) {
        throw SessionError(name + ": " + damage.what + at(damage.offset) +
                           " (the file was damaged or rewritten after it was opened; open it again)");
    }
}

StepState SessionReader::stateAt(const std::filesystem::path& path, std::int64_t step) {
    std::ifstream file(path, std::ios::binary);
    if (!file) {
        throw SessionError("cannot open session file " + path.string());
    }
    file.seekg(0, std::ios::end);
    const auto size = static_cast<std::uint64_t>(file.tellg());
    auto readRange = [&](std::uint64_t offset, std::uint64_t length) {
        std::vector<std::uint8_t> range(
            static_cast<std::size_t>(std::min(length, size - std::min(offset, size))));
        file.seekg(static_cast<std::streamoff>(offset));
        file.read(reinterpret_cast<char*>(range.data()), static_cast<std::streamsize>(range.size()));
        return range;
    };
    auto fullRead = [&]() {
        const SessionContents contents = read(path);
        Timeline timeline;
        timeline.emitAll(contents.events);
        if (step < 0 || step >= timeline.stepCount()) {
            throw SessionError(path.string() + ": step " + std::to_string(step) +
                               " is not in the session (0.." + std::to_string(timeline.stepCount() - 1) +
                               " are intact)");
        }
        return timeline.stateAt(step);
    };
    if (size < SessionFormat::kFooterBytes) {
        return fullRead();
    }
    const auto footer =
        footerIndexOffset(readRange(size - SessionFormat::kFooterBytes, SessionFormat::kFooterBytes));
    if (!footer || *footer >= size) {
        return fullRead();
    }
    Decompressor decompressor;
    // Reads only the chunk's own bytes; Damage messages keep the file offset.
    auto chunkAt = [&](std::uint64_t offset) -> Chunk {
        const auto headerBytes = readRange(offset, SessionFormat::kChunkHeaderBytes);
        if (headerBytes.size() < SessionFormat::kChunkHeaderBytes) {
            throw Damage{offset, "the index points past the end of the file"};
        }
        ByteReader in(headerBytes);
        in.get<std::uint64_t>();
        const auto storedBytes = in.get<std::uint64_t>();
        if (storedBytes > size - offset) {
            throw Damage{offset, "a chunk does not fit in the file"};
        }
        const auto frame = readRange(offset, SessionFormat::kChunkHeaderBytes + storedBytes + 4);
        Chunk chunk = readChunk(frame, 0, decompressor);
        chunk.offset = offset;
        return chunk;
    };
    try {
        const Chunk indexChunk = chunkAt(*footer);
        if (static_cast<SessionFormat::ChunkType>(indexChunk.type) != SessionFormat::ChunkType::Index) {
            return fullRead();
        }
        const Index index = decodeIndex(indexChunk);
        if (index.steps.empty() || step < 0 || step > index.steps.back().step) {
            throw SessionError(path.string() + ": step " + std::to_string(step) +
                               " is not in the session (0.." +
                               std::to_string(index.steps.empty() ? -1 : index.steps.back().step) + ")");
        }
        StepState state;
        std::int64_t folded = -1; // the newest step opened in `state`
        const auto snapshot =
            std::find_if(index.snapshots.rbegin(), index.snapshots.rend(),
                         [&](const StepChunkLocation& position) { return position.step <= step; });
        if (snapshot != index.snapshots.rend()) {
            state = decodeSnapshot(chunkAt(snapshot->offset));
            folded = snapshot->step;
        }
        const std::int64_t snapshotStep = folded;
        for (const StepChunkLocation& position : index.steps) {
            // A step may span several chunks (events after its StepEnd): fold all of them.
            if (position.step <= snapshotStep) {
                continue;
            }
            if (position.step > step) {
                break;
            }
            const StepChunk chunk = decodeStep(chunkAt(position.offset));
            for (std::int64_t opened = folded + 1; opened <= chunk.step; ++opened) {
                StateReducer::beginStep(state, opened);
            }
            folded = std::max(folded, chunk.step);
            for (const Event& event : chunk.events) {
                StateReducer::apply(state, event);
            }
        }
        for (std::int64_t opened = folded + 1; opened <= step; ++opened) {
            StateReducer::beginStep(state, opened);
        }
        return state;
    } catch (const Damage&) {
        return fullRead(); // the full read says where the damage is, or serves the intact steps
    }
}

} // namespace kvscope::trace
