// SPDX-License-Identifier: GPL-3.0-or-later
#include "SessionOverviewFile.h"

#include "ByteReader.h"
#include "ChunkFrame.h"
#include "EventCodec.h"
#include "FileBytes.h"
#include "PayloadStream.h"
#include "SpanBlock.h"
#include "kvscope/trace/SessionFormat.h"
#include "kvscope/trace/SessionReader.h"

#include <algorithm>
#include <future>
#include <stdexcept>

namespace kvscope::trace {

namespace {

/// Chunk frames read through one window of the file: walking 130k frames costs a few large reads, not two
/// small ones a frame.
class FrameWalker {
public:
    explicit FrameWalker(const FileBytes& file) : m_file(file) {}

    /// Bytes [offset, offset + length), or an empty span when the file does not hold them.
    std::span<const std::uint8_t> view(std::uint64_t offset, std::uint64_t length) {
        if (offset < m_start || offset + length > m_start + m_window.size()) {
            m_start = offset;
            m_file.read(offset, std::max<std::uint64_t>(length, kWindow), m_window);
        }
        if (offset + length > m_start + m_window.size()) {
            return {};
        }
        return std::span<const std::uint8_t>(m_window).subspan(offset - m_start, length);
    }

    /// The frame at `offset` ending at or before `end`, its checksum verified unless `headerOnly` (the overview's,
    /// which PayloadStream checks as it reads it); nullopt otherwise.
    std::optional<ChunkFrame> frameAt(std::uint64_t offset, std::uint64_t end, bool headerOnly = false) {
        if (offset > end) {
            return std::nullopt;
        }
        try {
            const auto header =
                view(offset, std::min<std::uint64_t>(SessionFormat::kChunkHeaderBytes, end - offset));
            const ChunkFrame frame = ChunkFrame::header(header, end - offset);
            if (headerOnly) {
                return frame;
            }
            const auto bytes = view(offset, frame.frameBytes());
            if (bytes.empty()) {
                return std::nullopt;
            }
            frame.checkSum(bytes);
            return frame;
        } catch (const ChunkFrame::Invalid&) {
            return std::nullopt;
        }
    }

    /// The raw payload of a checked frame at `offset`; nullopt when it does not decompress as its header
    /// says.
    std::optional<std::vector<std::uint8_t>> payload(std::uint64_t offset, const ChunkFrame& frame) {
        const auto bytes = view(offset, frame.frameBytes());
        std::vector<std::uint8_t> raw;
        try {
            if (bytes.empty()) {
                return std::nullopt;
            }
            frame.payload(bytes, raw, nullptr);
        } catch (const ChunkFrame::Invalid&) {
            return std::nullopt;
        }
        if (m_window.size() > kWindow) {
            // A frame larger than the window (a 1.8 offloaded session's overview: 100 MB and more) is not kept
            // beside its payload: the next view reads what it needs again.
            std::vector<std::uint8_t>().swap(m_window);
        }
        return raw;
    }

private:
    static constexpr std::uint64_t kWindow = 8u << 20;
    const FileBytes& m_file;
    std::vector<std::uint8_t> m_window;
    std::uint64_t m_start = 0;
};

/// The OverviewLocator chunk before the index: a frame holding the overview's offset.
constexpr std::uint64_t kOverviewLocatorBytes =
    SessionFormat::kChunkHeaderBytes + 8 + SessionFormat::kChunkTrailerBytes;

/// Where a finished file keeps its index and overview, and the chunks its index lists: read from the end.
struct OverviewFileLayout {
    std::uint64_t headerLength = 0;
    std::uint64_t indexOffset = 0;
    std::optional<ChunkFrame> indexFrame;
    std::vector<StepChunkLocation> steps;
    std::vector<StepChunkLocation> snapshots;
    std::uint64_t locatorOffset = 0;
    std::uint64_t overviewOffset = 0;
    std::optional<ChunkFrame> overviewFrame;
};

/// The footer: where the index starts; false where the file does not end with one.
bool readOverviewFileFooter(FrameWalker& walker, std::uint64_t size, OverviewFileLayout& layout) {
    const auto footer = walker.view(size - SessionFormat::kFooterBytes, SessionFormat::kFooterBytes);
    if (footer.empty() ||
        !std::equal(footer.begin() + 8, footer.end(),
                    reinterpret_cast<const std::uint8_t*>(SessionFormat::kEndMagic.data()))) {
        return false;
    }
    layout.indexOffset = ByteReader(footer.first(8)).get<std::uint64_t>();
    return layout.indexOffset >= layout.headerLength + kOverviewLocatorBytes &&
           layout.indexOffset < size - SessionFormat::kFooterBytes;
}

/// The index the footer points at: the Step and Snapshot chunks; false where it does not read.
bool readOverviewFileIndex(FrameWalker& walker, std::uint64_t size, OverviewFileLayout& layout) {
    const std::uint64_t indexEnd = size - SessionFormat::kFooterBytes;
    layout.indexFrame = walker.frameAt(layout.indexOffset, indexEnd);
    if (!layout.indexFrame || layout.indexFrame->frameBytes() != indexEnd - layout.indexOffset ||
        layout.indexFrame->type() != static_cast<std::uint32_t>(SessionFormat::ChunkType::Index)) {
        return false;
    }
    const auto indexRaw = walker.payload(layout.indexOffset, *layout.indexFrame);
    if (!indexRaw) {
        return false;
    }
    ByteReader indexIn(*indexRaw);
    for (auto* list : {&layout.steps, &layout.snapshots}) {
        list->resize(indexIn.getCount(16));
        for (StepChunkLocation& position : *list) {
            position.step = indexIn.get<std::int64_t>();
            position.offset = indexIn.get<std::uint64_t>();
        }
    }
    return indexIn.atEnd();
}

/// The locator before the index and the overview it points at; false where either does not read.
bool readOverviewFileLocator(FrameWalker& walker, OverviewFileLayout& layout) {
    layout.locatorOffset = layout.indexOffset - kOverviewLocatorBytes;
    const auto locator = walker.frameAt(layout.locatorOffset, layout.indexOffset);
    if (!locator || locator->frameBytes() != kOverviewLocatorBytes ||
        locator->type() != static_cast<std::uint32_t>(SessionFormat::ChunkType::OverviewLocator)) {
        return false;
    }
    const auto locatorRaw = walker.payload(layout.locatorOffset, *locator);
    if (!locatorRaw || locatorRaw->size() != 8) {
        return false;
    }
    layout.overviewOffset = ByteReader(*locatorRaw).get<std::uint64_t>();
    // Its checksum is checked as it is read: a 1.8 offloaded session's overview is over 100 MB stored.
    layout.overviewFrame = walker.frameAt(layout.overviewOffset, layout.locatorOffset, true);
    return layout.overviewOffset >= layout.headerLength && layout.overviewFrame &&
           layout.overviewFrame->frameBytes() == layout.locatorOffset - layout.overviewOffset &&
           layout.overviewFrame->type() == static_cast<std::uint32_t>(SessionFormat::ChunkType::Overview);
}

/// What the walk over every frame from the header to the index found.
struct OverviewFileFrames {
    std::uint64_t payloadBytes = 0;
    std::int64_t skippedChunks = 0;
    std::size_t stepAt = 0;
    std::size_t snapshotAt = 0;
    std::vector<std::pair<std::uint64_t, ChunkFrame>> columnBlocks; // 1.7: the overview's rows before its own
    std::vector<std::pair<std::uint64_t, ChunkFrame>> spanBlocks;   // 1.9: its transfers and compute spans
    std::uint64_t blockSpans = 0;
};

/// Files one frame of the walk by its chunk type; false where the file is not as its index says (a Step or
/// Snapshot chunk the index does not list in that order, a second index).
bool fileOverviewFileFrame(OverviewFileFrames& frames, const OverviewFileLayout& layout, std::uint64_t offset,
                           const ChunkFrame& frame) {
    switch (static_cast<SessionFormat::ChunkType>(frame.type())) {
    case SessionFormat::ChunkType::Step:
        return frames.stepAt < layout.steps.size() && layout.steps[frames.stepAt++].offset == offset;
    case SessionFormat::ChunkType::Snapshot:
        return frames.snapshotAt < layout.snapshots.size() &&
               layout.snapshots[frames.snapshotAt++].offset == offset;
    case SessionFormat::ChunkType::Index:
        return false;
    case SessionFormat::ChunkType::Columns:
        frames.columnBlocks.emplace_back(offset, frame);
        return true;
    case SessionFormat::ChunkType::Spans:
        frames.spanBlocks.emplace_back(offset, frame);
        frames.blockSpans += SpanBlock::spansIn(frame.rawBytes());
        return true;
    case SessionFormat::ChunkType::Overview:
    case SessionFormat::ChunkType::OverviewLocator:
        return true;
    default:
        ++frames.skippedChunks;
        return true;
    }
}

/// Every frame from the header to the index, checksums only: the Step and Snapshot chunks must be the ones
/// the index lists, in order. nullopt at damage (the pass reads up to it and says where).
std::optional<OverviewFileFrames> walkOverviewFileFrames(FrameWalker& walker, const OverviewFileLayout& layout) {
    OverviewFileFrames frames;
    frames.payloadBytes = layout.indexFrame->rawBytes();
    for (std::uint64_t offset = layout.headerLength; offset < layout.indexOffset;) {
        const auto frame = walker.frameAt(offset, layout.indexOffset, offset == layout.overviewOffset);
        if (!frame) {
            return std::nullopt;
        }
        frames.payloadBytes += frame->rawBytes();
        if (!fileOverviewFileFrame(frames, layout, offset, *frame)) {
            return std::nullopt;
        }
        offset += frame->frameBytes();
    }
    if (frames.stepAt != layout.steps.size() || frames.snapshotAt != layout.snapshots.size()) {
        return std::nullopt;
    }
    return frames;
}

/// The spans of the Spans chunks (1.9), in order; nullopt where a block does not decode. The sizes of the
/// blocks say how many spans they hold (each is checked as it is decoded), so room for all is made once.
std::optional<TimedSpans> readOverviewFileSpans(const FileBytes& file, const OverviewFileFrames& frames) {
    FrameWalker spansWalker(file);
    TimedSpans read;
    read.reserve(frames.blockSpans);
    try {
        for (const auto& [offset, frame] : frames.spanBlocks) {
            const std::size_t before = read.size();
            const auto raw = spansWalker.payload(offset, frame);
            if (!raw || SpanBlock::decode(*raw, read) != before) {
                return std::nullopt;
            }
        }
    } catch (const std::runtime_error&) {
        return std::nullopt;
    }
    return read;
}

/// The overview, decoded as it is decompressed (a long session's keyframes are tens of MB raw, a 1.8
/// offloaded one's spans hundreds), with the spans of its retained events (none in a file kvscope wrote
/// since 1.9) and then the Spans chunks', read on a thread of their own meanwhile: an offloaded session has
/// millions of spans, and each part takes a few tenths of a second. nullopt where they do not agree.
std::optional<SessionOverview> readOverviewFileOverview(FrameWalker& walker, const FileBytes& file,
                                                        const OverviewFileLayout& layout,
                                                        const OverviewFileFrames& frames, std::uint16_t minor) {
    std::future<std::optional<TimedSpans>> blockSpansRead =
        std::async(std::launch::async, [&file, &frames] { return readOverviewFileSpans(file, frames); });
    const auto readBlock = [&](std::size_t index) {
        const auto& [offset, frame] = frames.columnBlocks[index];
        auto raw = walker.payload(offset, frame);
        if (!raw) {
            throw EventCodec::Invalid("a columns chunk that does not decompress");
        }
        return std::move(*raw);
    };
    PayloadStream overviewRaw(file, layout.overviewOffset, *layout.overviewFrame);
    SessionOverview overview = SessionOverview::decode(overviewRaw, frames.columnBlocks.size(), readBlock, minor);
    std::optional<TimedSpans> fromBlocks = blockSpansRead.get();
    if (!fromBlocks || fromBlocks->size() != overview.spanBlockSpans()) {
        return std::nullopt;
    }
    TimedSpans& spans = overview.spans();
    if (spans.size() == 0) {
        spans = std::move(*fromBlocks);
    } else {
        spans.reserve(spans.size() + fromBlocks->size());
        for (const TimedSpan& span : fromBlocks->spans()) {
            spans.append(span);
        }
    }
    return overview;
}

} // namespace

std::optional<SessionOverviewFile::Opened>
SessionOverviewFile::read(const FileBytes& file, const std::string& name, SessionContents& contents) {
    FrameWalker walker(file);
    // The header through SessionReader: the same checks and messages as the pass (the rest of that read
    // finds no chunk and says so, which is ignored here).
    const auto fixed = walker.view(0, SessionFormat::kFixedHeaderBytes);
    if (fixed.empty()) {
        return std::nullopt;
    }
    ByteReader lengthIn(fixed.subspan(12, 4));
    OverviewFileLayout layout;
    layout.headerLength = lengthIn.get<std::uint32_t>();
    const auto headerBytes = walker.view(0, std::min<std::uint64_t>(layout.headerLength, file.size()));
    const std::vector<std::uint8_t> copy(headerBytes.begin(), headerBytes.end());
    SessionContents header = SessionReader::read(copy, name);
    const std::uint64_t size = file.size();
    if (header.version.major != SessionFormat::kMajor || header.version.minor < 6 ||
        layout.headerLength < SessionFormat::kFixedHeaderBytes || layout.headerLength > size ||
        size < layout.headerLength + SessionFormat::kFooterBytes || !readOverviewFileFooter(walker, size, layout)) {
        return std::nullopt;
    }
    try {
        if (!readOverviewFileIndex(walker, size, layout) || !readOverviewFileLocator(walker, layout)) {
            return std::nullopt;
        }
        const std::optional<OverviewFileFrames> frames = walkOverviewFileFrames(walker, layout);
        if (!frames) {
            return std::nullopt;
        }
        std::optional<SessionOverview> overview =
            readOverviewFileOverview(walker, file, layout, *frames, header.version.minor);
        if (!overview) {
            return std::nullopt;
        }
        Opened opened{std::move(*overview), {}, {}};
        // The steps the index files its chunks under must end where the overview's do.
        std::int64_t filed = -1;
        std::int64_t distinct = 0;
        opened.chunkSteps.reserve(layout.steps.size());
        opened.chunkOffsets.reserve(layout.steps.size());
        for (const StepChunkLocation& position : layout.steps) {
            if (position.step < 0 || position.step < filed) {
                return std::nullopt;
            }
            distinct += position.step != filed ? 1 : 0; // steps never decrease: a new one is a change
            filed = position.step;
            opened.chunkSteps.push_back(position.step);
            opened.chunkOffsets.push_back(position.offset);
        }
        if (filed != opened.overview.lastStep()) {
            return std::nullopt;
        }
        contents = std::move(header);
        contents.damage.clear();
        contents.complete = true;
        contents.intactSteps = distinct;
        contents.fileBytes = size;
        contents.payloadBytes = frames->payloadBytes;
        contents.skippedChunks = frames->skippedChunks;
        return opened;
    } catch (const std::runtime_error&) {
        // ByteReader::Overrun, EventCodec::Invalid: an overview that does not read; the pass decides.
        return std::nullopt;
    }
}

} // namespace kvscope::trace
