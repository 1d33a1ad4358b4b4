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
    const std::uint64_t headerLength = lengthIn.get<std::uint32_t>();
    const auto headerBytes = walker.view(0, std::min<std::uint64_t>(headerLength, file.size()));
    const std::vector<std::uint8_t> copy(headerBytes.begin(), headerBytes.end());
    SessionContents header = SessionReader::read(copy, name);
    if (header.version.major != SessionFormat::kMajor || header.version.minor < 6 ||
        headerLength < SessionFormat::kFixedHeaderBytes || headerLength > file.size()) {
        return std::nullopt;
    }

    // Footer, index, locator, overview.
    const std::uint64_t size = file.size();
    if (size < headerLength + SessionFormat::kFooterBytes) {
        return std::nullopt;
    }
    const auto footer = walker.view(size - SessionFormat::kFooterBytes, SessionFormat::kFooterBytes);
    if (footer.empty() ||
        !std::equal(footer.begin() + 8, footer.end(),
                    reinterpret_cast<const std::uint8_t*>(SessionFormat::kEndMagic.data()))) {
        return std::nullopt;
    }
    const std::uint64_t indexEnd = size - SessionFormat::kFooterBytes;
    const std::uint64_t indexOffset = ByteReader(footer.first(8)).get<std::uint64_t>();
    constexpr std::uint64_t kLocatorBytes =
        SessionFormat::kChunkHeaderBytes + 8 + SessionFormat::kChunkTrailerBytes;
    if (indexOffset < headerLength + kLocatorBytes || indexOffset >= indexEnd) {
        return std::nullopt;
    }
    try {
        const auto indexFrame = walker.frameAt(indexOffset, indexEnd);
        if (!indexFrame || indexFrame->frameBytes() != indexEnd - indexOffset ||
            indexFrame->type() != static_cast<std::uint32_t>(SessionFormat::ChunkType::Index)) {
            return std::nullopt;
        }
        const auto indexRaw = walker.payload(indexOffset, *indexFrame);
        if (!indexRaw) {
            return std::nullopt;
        }
        std::vector<StepChunkLocation> steps;
        std::vector<StepChunkLocation> snapshots;
        ByteReader indexIn(*indexRaw);
        for (auto* list : {&steps, &snapshots}) {
            list->resize(indexIn.getCount(16));
            for (StepChunkLocation& position : *list) {
                position.step = indexIn.get<std::int64_t>();
                position.offset = indexIn.get<std::uint64_t>();
            }
        }
        if (!indexIn.atEnd()) {
            return std::nullopt;
        }
        const std::uint64_t locatorOffset = indexOffset - kLocatorBytes;
        const auto locator = walker.frameAt(locatorOffset, indexOffset);
        if (!locator || locator->frameBytes() != kLocatorBytes ||
            locator->type() != static_cast<std::uint32_t>(SessionFormat::ChunkType::OverviewLocator)) {
            return std::nullopt;
        }
        const auto locatorRaw = walker.payload(locatorOffset, *locator);
        if (!locatorRaw || locatorRaw->size() != 8) {
            return std::nullopt;
        }
        const std::uint64_t overviewOffset = ByteReader(*locatorRaw).get<std::uint64_t>();
        // Its checksum is checked as it is read: a 1.8 offloaded session's overview is over 100 MB stored.
        const auto overviewFrame = walker.frameAt(overviewOffset, locatorOffset, true);
        if (overviewOffset < headerLength || !overviewFrame ||
            overviewFrame->frameBytes() != locatorOffset - overviewOffset ||
            overviewFrame->type() != static_cast<std::uint32_t>(SessionFormat::ChunkType::Overview)) {
            return std::nullopt;
        }

        // Every frame from the header to the index, checksums only: the Step and Snapshot chunks must be
        // the ones the index lists, in order.
        std::uint64_t payloadBytes = indexFrame->rawBytes();
        std::int64_t skippedChunks = 0;
        std::size_t stepAt = 0;
        std::size_t snapshotAt = 0;
        std::vector<std::pair<std::uint64_t, ChunkFrame>>
            columnBlocks; // 1.7: the overview's rows before its own
        std::vector<std::pair<std::uint64_t, ChunkFrame>> spanBlocks; // 1.9: its transfers and compute spans
        std::uint64_t blockSpans = 0;
        for (std::uint64_t offset = headerLength; offset < indexOffset;) {
            const auto frame = walker.frameAt(offset, indexOffset, offset == overviewOffset);
            if (!frame) {
                return std::nullopt; // damage: the pass reads up to it and says where
            }
            payloadBytes += frame->rawBytes();
            switch (static_cast<SessionFormat::ChunkType>(frame->type())) {
            case SessionFormat::ChunkType::Step:
                if (stepAt >= steps.size() || steps[stepAt++].offset != offset) {
                    return std::nullopt;
                }
                break;
            case SessionFormat::ChunkType::Snapshot:
                if (snapshotAt >= snapshots.size() || snapshots[snapshotAt++].offset != offset) {
                    return std::nullopt;
                }
                break;
            case SessionFormat::ChunkType::Index:
                return std::nullopt;
            case SessionFormat::ChunkType::Columns:
                columnBlocks.emplace_back(offset, *frame);
                break;
            case SessionFormat::ChunkType::Spans:
                spanBlocks.emplace_back(offset, *frame);
                blockSpans += SpanBlock::spansIn(frame->rawBytes());
                break;
            case SessionFormat::ChunkType::Overview:
            case SessionFormat::ChunkType::OverviewLocator:
                break;
            default:
                ++skippedChunks;
                break;
            }
            offset += frame->frameBytes();
        }
        if (stepAt != steps.size() || snapshotAt != snapshots.size()) {
            return std::nullopt;
        }
        const auto readBlock = [&](std::size_t index) {
            const auto& [offset, frame] = columnBlocks[index];
            auto raw = walker.payload(offset, frame);
            if (!raw) {
                throw EventCodec::Invalid("a columns chunk that does not decompress");
            }
            return std::move(*raw);
        };
        // The Spans chunks (1.9) are read on a thread of their own while the overview is decoded here: an offloaded
        // session has millions of spans, and each part takes a few tenths of a second. The sizes of the blocks say
        // how many spans they hold (each is checked as it is decoded), so room for all is made once.
        std::future<std::optional<TimedSpans>> blockSpansRead =
            std::async(std::launch::async, [&file, &spanBlocks, blockSpans]() -> std::optional<TimedSpans> {
                FrameWalker spansWalker(file);
                TimedSpans read;
                read.reserve(blockSpans);
                try {
                    for (const auto& [offset, frame] : spanBlocks) {
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
            });
        // Decompressed as it is decoded: a long session's keyframes are tens of MB raw (a 1.8 offloaded one's spans
        // hundreds).
        PayloadStream overviewRaw(file, overviewOffset, *overviewFrame);
        Opened opened{SessionOverview::decode(overviewRaw, columnBlocks.size(), readBlock, header.version.minor),
                      {},
                      {}};
        // The spans of the overview's retained events (none in a file kvscope wrote since 1.9), then the blocks'.
        std::optional<TimedSpans> fromBlocks = blockSpansRead.get();
        if (!fromBlocks || fromBlocks->size() != opened.overview.spanBlockSpans()) {
            return std::nullopt;
        }
        TimedSpans& spans = opened.overview.spans();
        if (spans.size() == 0) {
            spans = std::move(*fromBlocks);
        } else {
            spans.reserve(spans.size() + fromBlocks->size());
            for (const TimedSpan& span : fromBlocks->spans()) {
                spans.append(span);
            }
        }
        // The steps the index files its chunks under must end where the overview's do.
        std::int64_t filed = -1;
        std::int64_t distinct = 0;
        opened.chunkSteps.reserve(steps.size());
        opened.chunkOffsets.reserve(steps.size());
        for (const StepChunkLocation& position : steps) {
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
        contents.payloadBytes = payloadBytes;
        contents.skippedChunks = skippedChunks;
        return opened;
    } catch (const std::runtime_error&) {
        // ByteReader::Overrun, EventCodec::Invalid: an overview that does not read; the pass decides.
        return std::nullopt;
    }
}

} // namespace kvscope::trace
