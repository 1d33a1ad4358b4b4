// SPDX-License-Identifier: GPL-3.0-or-later
#include "PayloadStream.h"

#include "ByteReader.h"
#include "Crc32c.h"
#include "FileBytes.h"
#include "kvscope/trace/SessionFormat.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <zstd.h>

namespace kvscope::trace {

namespace {

// Stored bytes read at a time, and the least room decompressed bytes are given: a few MB in all.
constexpr std::size_t kInputSlice = 1u << 20;
constexpr std::size_t kOutputRoom = 4u << 20;

} // namespace

PayloadStream::PayloadStream(const FileBytes& file, std::uint64_t offset, const ChunkFrame& frame)
    : m_remaining(frame.rawBytes()), m_file(&file), m_frame(frame), m_compressed(frame.compressed()),
      m_storedAt(offset + SessionFormat::kChunkHeaderBytes),
      m_storedEnd(offset + SessionFormat::kChunkHeaderBytes + frame.storedBytes()) {
    frame.checkLengths();
    std::vector<std::uint8_t> header;
    const auto bytes = file.read(offset, SessionFormat::kChunkHeaderBytes, header);
    if (bytes.size() != SessionFormat::kChunkHeaderBytes) {
        throw ChunkFrame::Invalid("the file ends inside a chunk header");
    }
    m_crc = Crc32c::compute(bytes);
    if (m_compressed) {
        m_stream = ZSTD_createDCtx();
    }
}

PayloadStream::~PayloadStream() { ZSTD_freeDCtx(m_stream); }

bool PayloadStream::readStored() {
    if (m_storedAt >= m_storedEnd) {
        return false;
    }
    const auto bytes = m_file->read(m_storedAt, std::min<std::uint64_t>(kInputSlice, m_storedEnd - m_storedAt), m_input);
    if (bytes.empty()) {
        throw ChunkFrame::Invalid("the file ends inside a chunk");
    }
    m_input.resize(bytes.size());
    m_storedAt += bytes.size();
    m_inputAt = 0;
    m_crc = Crc32c::compute(bytes, m_crc);
    return true;
}

void PayloadStream::fill(std::size_t count) {
    if (m_end - m_begin >= count) {
        return;
    }
    // The unread bytes moved to the front, then more made after them.
    if (m_begin > 0) {
        std::memmove(m_buffer.data(), m_buffer.data() + m_begin, m_end - m_begin);
        m_end -= m_begin;
        m_begin = 0;
    }
    while (m_end < count) {
        // Grown only when full, so never far ahead of the bytes made: a damaged length may ask for more than the
        // payload holds.
        if (m_end == m_buffer.size()) {
            m_buffer.resize(std::max(kOutputRoom, 2 * m_buffer.size()));
        }
        if (!m_compressed) {
            if (m_inputAt == m_input.size() && !readStored()) {
                return;
            }
            const std::size_t n = std::min(m_input.size() - m_inputAt, m_buffer.size() - m_end);
            std::memcpy(m_buffer.data() + m_end, m_input.data() + m_inputAt, n);
            m_inputAt += n;
            m_end += n;
            m_produced += n;
            continue;
        }
        if (m_frameEnded) {
            return;
        }
        // With every stored byte read, zstd may still hold output it had no room for: one more call flushes it.
        const bool lastInput = m_inputAt == m_input.size() && !readStored();
        ZSTD_inBuffer in{m_input.data(), m_input.size(), m_inputAt};
        ZSTD_outBuffer out{m_buffer.data(), m_buffer.size(), m_end};
        const std::size_t result = ZSTD_decompressStream(m_stream, &out, &in);
        if (ZSTD_isError(result)) {
            throw ChunkFrame::Invalid("the chunk's compressed payload does not decompress");
        }
        if (lastInput && out.pos == m_end) {
            return; // the stored bytes end before the frame does: finish() says so
        }
        m_produced += out.pos - m_end;
        m_inputAt = in.pos;
        m_end = out.pos;
        m_frameEnded = result == 0;
        if (m_produced > m_frame.rawBytes()) {
            throw ChunkFrame::Invalid("the chunk's compressed payload is longer than its length " +
                                      std::to_string(m_frame.rawBytes()));
        }
    }
}

std::span<const std::uint8_t> PayloadStream::peek(std::size_t count) {
    count = static_cast<std::size_t>(std::min<std::uint64_t>(count, m_remaining));
    fill(count);
    return std::span<const std::uint8_t>(m_buffer.data() + m_begin, std::min(count, m_end - m_begin));
}

void PayloadStream::skip(std::size_t count) {
    m_begin += count;
    m_remaining -= count;
}

void PayloadStream::finish() {
    // Whatever the reader left: decompressed (a longer payload is damage), then the checksum over every stored byte.
    while (m_remaining > 0) {
        const auto left = peek(kOutputRoom);
        if (left.empty()) {
            break;
        }
        skip(left.size());
    }
    fill(1);
    if (m_end > m_begin || m_produced != m_frame.rawBytes() || (m_compressed && !m_frameEnded)) {
        throw ChunkFrame::Invalid("the chunk's compressed payload does not match its length " +
                                  std::to_string(m_frame.rawBytes()));
    }
    while (readStored()) {
    }
    std::vector<std::uint8_t> trailer;
    const auto bytes = m_file->read(m_storedEnd, SessionFormat::kChunkTrailerBytes, trailer);
    if (bytes.size() != SessionFormat::kChunkTrailerBytes || ByteReader(bytes).get<std::uint32_t>() != m_crc) {
        throw ChunkFrame::Invalid("the chunk's checksum does not match (damaged bytes)");
    }
}

} // namespace kvscope::trace
