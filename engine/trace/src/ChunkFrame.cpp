// SPDX-License-Identifier: GPL-3.0-or-later
#include "ChunkFrame.h"

#include "ByteReader.h"
#include "Crc32c.h"
#include "kvscope/trace/SessionFormat.h"

#include <string>
#include <zstd.h>

namespace kvscope::trace {

namespace {

// No writer produces a chunk that inflates beyond this ratio; a header claiming more is damage,
// and refusing it keeps a few bad bytes from allocating gigabytes.
constexpr std::uint64_t kMaxInflation = 4096;
constexpr std::uint64_t kMaxRawChunkBytes = std::uint64_t{1} << 30;

} // namespace

ChunkFrame ChunkFrame::header(std::span<const std::uint8_t> bytes, std::uint64_t available) {
    if (available < SessionFormat::kChunkHeaderBytes || bytes.size() < SessionFormat::kChunkHeaderBytes) {
        throw Invalid("the file ends inside a chunk header (" + std::to_string(available) + " of " +
                      std::to_string(SessionFormat::kChunkHeaderBytes) + " bytes)");
    }
    ByteReader in(bytes.first(SessionFormat::kChunkHeaderBytes));
    ChunkFrame frame;
    frame.m_type = in.get<std::uint32_t>();
    in.get<std::uint16_t>(); // chunk version: 1 for every type of format 1.0
    frame.m_flags = in.get<std::uint16_t>();
    frame.m_storedBytes = in.get<std::uint64_t>();
    frame.m_rawBytes = in.get<std::uint64_t>();
    const std::uint64_t left = available - SessionFormat::kChunkHeaderBytes;
    if (frame.m_storedBytes > left || left - frame.m_storedBytes < SessionFormat::kChunkTrailerBytes) {
        throw Invalid("a chunk of " + std::to_string(frame.m_storedBytes) + " bytes does not fit in the " +
                      std::to_string(left) + " bytes left (truncated file or damaged length)");
    }
    return frame;
}

std::uint64_t ChunkFrame::frameBytes() const {
    return SessionFormat::kChunkHeaderBytes + m_storedBytes + SessionFormat::kChunkTrailerBytes;
}

void ChunkFrame::checkSum(std::span<const std::uint8_t> frame) const {
    const auto covered = frame.first(SessionFormat::kChunkHeaderBytes + m_storedBytes);
    ByteReader crc(frame.subspan(covered.size(), SessionFormat::kChunkTrailerBytes));
    if (Crc32c::compute(covered) != crc.get<std::uint32_t>()) {
        throw Invalid("the chunk's checksum does not match (damaged bytes)");
    }
}

bool ChunkFrame::compressed() const {
    if ((m_flags & ~std::uint16_t{SessionFormat::Zstd}) != 0) {
        throw Invalid("the chunk has unknown flags " + std::to_string(m_flags));
    }
    return (m_flags & SessionFormat::Zstd) != 0;
}

void ChunkFrame::checkLengths() const {
    if (!compressed()) {
        if (m_rawBytes != m_storedBytes) {
            throw Invalid("an uncompressed chunk claims " + std::to_string(m_rawBytes) + " bytes but stores " +
                          std::to_string(m_storedBytes));
        }
        return;
    }
    if (m_rawBytes > kMaxRawChunkBytes || m_rawBytes > (m_storedBytes + 64) * kMaxInflation) {
        throw Invalid("the chunk's compressed payload does not match its length " + std::to_string(m_rawBytes));
    }
}

void ChunkFrame::payload(std::span<const std::uint8_t> frame, std::vector<std::uint8_t>& raw,
                         ZSTD_DCtx_s* context) const {
    const auto stored = frame.subspan(SessionFormat::kChunkHeaderBytes, m_storedBytes);
    if ((m_flags & ~std::uint16_t{SessionFormat::Zstd}) != 0) {
        throw Invalid("the chunk has unknown flags " + std::to_string(m_flags));
    }
    if ((m_flags & SessionFormat::Zstd) == 0) {
        if (m_rawBytes != m_storedBytes) {
            throw Invalid("an uncompressed chunk claims " + std::to_string(m_rawBytes) +
                          " bytes but stores " + std::to_string(m_storedBytes));
        }
        raw.assign(stored.begin(), stored.end());
        return;
    }
    if (m_rawBytes > kMaxRawChunkBytes || m_rawBytes > (m_storedBytes + 64) * kMaxInflation ||
        ZSTD_getFrameContentSize(stored.data(), stored.size()) != m_rawBytes) {
        throw Invalid("the chunk's compressed payload does not match its length " +
                      std::to_string(m_rawBytes));
    }
    raw.resize(m_rawBytes);
    const std::size_t produced =
        context != nullptr
            ? ZSTD_decompressDCtx(context, raw.data(), raw.size(), stored.data(), stored.size())
            : ZSTD_decompress(raw.data(), raw.size(), stored.data(), stored.size());
    if (ZSTD_isError(produced) || produced != m_rawBytes) {
        throw Invalid("the chunk's compressed payload does not decompress");
    }
}

} // namespace kvscope::trace
