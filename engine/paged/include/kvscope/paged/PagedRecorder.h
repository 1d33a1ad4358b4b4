// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/paged/PagedTypes.h"

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

namespace kvscope::trace {
class EventEmitter;
enum class FinishReason : std::uint8_t;
} // namespace kvscope::trace

namespace kvscope::paged {

struct PagedConfig;

/// Turns bookkeeping decisions into trace events (sessions/FORMAT.md, "Paged serving"); every method is one
/// branch when no emitter is set. The scheduler, the cache manager and the pool share one recorder.
class PagedRecorder {
public:
    explicit PagedRecorder(trace::EventEmitter* emitter = nullptr) : m_emitter(emitter) {}

    void setEmitter(trace::EventEmitter* emitter) { m_emitter = emitter; }
    trace::EventEmitter* emitter() const { return m_emitter; }
    bool enabled() const { return m_emitter != nullptr; }
    /// Stamps the events that follow with this step (the scheduler's step).
    void setStep(std::int64_t step);

    void pool(const PagedConfig& config, BlockId nullBlock);
    void arrived(std::string_view request, std::int64_t promptTokens, std::int64_t maxTokens);
    void admitted(std::string_view request, std::int64_t numTokens, std::int64_t cachedTokens, bool resumed);
    void scheduled(std::string_view request, std::int64_t firstPosition, std::int64_t numTokens,
                   bool samples);
    void preempted(std::string_view request, std::int64_t numComputedTokens);
    void finished(std::string_view request, trace::FinishReason reason, std::int64_t outputTokens);
    void allocated(std::string_view request, std::int32_t group, BlockId block, std::int32_t tableIndex);
    void touched(std::string_view request, std::int32_t group, BlockId block, std::int32_t tableIndex,
                 std::int32_t refCnt);
    void cached(std::string_view request, std::int32_t group, BlockId block, HashValue hash, HashValue parent,
                std::int64_t tokenBegin, std::int64_t tokenEnd);
    void freed(std::string_view request, std::int32_t group, BlockId block, std::int32_t tableIndex,
               std::int32_t refCnt, std::int32_t queuePosition, bool windowed);
    void evicted(std::int32_t group, BlockId block, HashValue hash);
    /// A request's tokens from firstPosition (its prompt at arrival, then each sampled token), with their
    /// text pieces when a piece function is set.
    void tokens(std::string_view request, std::int64_t firstPosition, std::span<const TokenId> ids);

    /// Gives the recorded tokens their text (a model's text codec); none: tokens are recorded without text.
    void setPieceFunction(std::function<std::string(TokenId)> pieceOf) { m_pieceOf = std::move(pieceOf); }

private:
    trace::EventEmitter* m_emitter = nullptr;
    std::function<std::string(TokenId)> m_pieceOf;
};

} // namespace kvscope::paged
