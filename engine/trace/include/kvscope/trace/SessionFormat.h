// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace kvscope::trace {

/// Constants of the session file format (sessions/FORMAT.md is the specification).
struct SessionFormat {
    static constexpr std::array<char, 8> kMagic{'K', 'V', 'S', 'E', 'S', 'S', '\0', '\0'};
    static constexpr std::array<char, 8> kEndMagic{'K', 'V', 'E', 'N', 'D', '\0', '\0', '\0'};
    static constexpr std::uint16_t kMajor = 1; ///< readers refuse a higher major
    static constexpr std::uint16_t kMinor = 10; ///< readers accept any minor of their major
    /// A snapshot chunk (the state after the last complete step) precedes the first chunk of every
    /// kSnapshotInterval-th step, so seeking folds at most that many steps after the nearest snapshot.
    static constexpr std::int64_t kSnapshotInterval = 256;

    enum class ChunkType : std::uint32_t {
        Step = 1,     ///< one step's events
        Snapshot = 2, ///< the StepState after a step
        Index = 3,    ///< footer: (step, offset) of every step chunk, then of every snapshot
        Overview = 4, ///< 1.6: what a file-backed timeline keeps (keyframes, chart columns, retained events)
        OverviewLocator = 5, ///< 1.6: the Overview chunk's offset, right before the index
        Columns = 6,         ///< 1.7: a block of the overview's chart columns, written as the run goes
        Spans = 7,           ///< 1.9: a block of the transfers and compute spans as columns, for the overview
    };
    /// Steps of chart columns per Columns chunk: the writer holds at most this many rows of them.
    static constexpr std::int64_t kColumnBlockSteps = 4096;
    /// Transfers and compute spans per Spans chunk (at least; the writer takes a block at a step chunk's start).
    static constexpr std::size_t kSpanBlockSpans = 65536;

    enum ChunkFlags : std::uint16_t {
        Zstd = 1, ///< payload is one zstd frame
    };

    /// Bytes before the header's JSON: magic, major, minor, header length, flags, created, JSON length.
    static constexpr std::size_t kFixedHeaderBytes = 8 + 2 + 2 + 4 + 4 + 8 + 4;
    /// Chunk frame: type, version, flags, stored length, raw length; the payload; CRC-32C.
    static constexpr std::size_t kChunkHeaderBytes = 4 + 2 + 2 + 8 + 8;
    static constexpr std::size_t kChunkTrailerBytes = 4;
    /// Trailer after the index chunk: its offset and the end magic.
    static constexpr std::size_t kFooterBytes = 8 + 8;
};

/// major.minor of a file.
struct FormatVersion {
    std::uint16_t major = SessionFormat::kMajor;
    std::uint16_t minor = SessionFormat::kMinor;
    std::string toString() const { return std::to_string(major) + "." + std::to_string(minor); }
    bool operator==(const FormatVersion&) const = default;
};

} // namespace kvscope::trace
