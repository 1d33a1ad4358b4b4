// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/Event.h"

#include <array>

namespace kvscope::trace {

namespace {

constexpr std::array<std::string_view, kEventKindCount> kEventKindNames{
    "update",
    "mask_sizes",
    "window_slide",
    "quantize_flush",
    "transfer",
    "crop",
    "reorder",
    "batch_repeat",
    "batch_select",
    "reset",
    "memory",
    "step_begin",
    "step_end",
    "compute",
    "logits",
    "compression",
    "paged_pool",
    "request_arrived",
    "request_admitted",
    "request_scheduled",
    "request_preempted",
    "request_finished",
    "block_allocated",
    "block_touched",
    "block_cached",
    "block_freed",
    "block_evicted",
    "request_tokens",
    "channel_error",
    "speculation",
    "server_cache",
    "server_status",
};

} // namespace

std::string_view toString(EventKind kind) {
    const auto index = static_cast<std::size_t>(kind);
    return index < kEventKindNames.size() ? kEventKindNames[index] : std::string_view("unknown");
}

std::string_view toString(TransferDirection direction) {
    switch (direction) {
    case TransferDirection::Offload:
        return "offload";
    case TransferDirection::Prefetch:
        return "prefetch";
    }
    return "unknown";
}

std::string_view toString(TransferLane lane) {
    switch (lane) {
    case TransferLane::Compute:
        return "compute";
    case TransferLane::Prefetch:
        return "prefetch";
    }
    return "unknown";
}

std::string_view toString(TimingSource timing) {
    switch (timing) {
    case TimingSource::Measured:
        return "measured";
    case TimingSource::Modeled:
        return "modeled";
    }
    return "unknown";
}

std::string_view toString(DraftSource source) {
    switch (source) {
    case DraftSource::PromptLookup:
        return "prompt_lookup";
    case DraftSource::AssistantModel:
        return "assistant_model";
    }
    return "unknown";
}

std::string_view SpeculationEvent::piece(std::size_t draft) const {
    // A piece ends where pieceEnds says and starts where the previous one ended; lists that do not fit the text
    // (a damaged or foreign file) give no piece rather than reading past it.
    if (draft >= pieceEnds.size() || pieceEnds.size() != draftIds.size()) {
        return {};
    }
    const std::int64_t begin = draft == 0 ? 0 : pieceEnds[draft - 1];
    const std::int64_t end = pieceEnds[draft];
    if (begin < 0 || end < begin || end > static_cast<std::int64_t>(draftText.size())) {
        return {};
    }
    return std::string_view(draftText).substr(static_cast<std::size_t>(begin), static_cast<std::size_t>(end - begin));
}

std::string_view toString(FinishReason reason) {
    switch (reason) {
    case FinishReason::Eos:
        return "eos";
    case FinishReason::MaxTokens:
        return "max_tokens";
    case FinishReason::MaxModelLen:
        return "max_model_len";
    }
    return "unknown";
}

std::string_view toString(ServerCacheChange change) {
    switch (change) {
    case ServerCacheChange::Stored:
        return "stored";
    case ServerCacheChange::Removed:
        return "removed";
    case ServerCacheChange::Cleared:
        return "cleared";
    }
    return "unknown";
}

bool isServerKind(EventKind kind) { return kind == EventKind::ServerCache || kind == EventKind::ServerStatus; }

bool isPagedKind(EventKind kind) {
    return (static_cast<std::uint8_t>(kind) >= static_cast<std::uint8_t>(EventKind::PagedPool) &&
            static_cast<std::uint8_t>(kind) <= static_cast<std::uint8_t>(EventKind::BlockEvicted)) ||
           kind == EventKind::RequestTokens;
}

std::optional<EventKind> eventKindFromString(std::string_view name) {
    for (std::size_t i = 0; i < kEventKindNames.size(); ++i) {
        if (kEventKindNames[i] == name)
            return static_cast<EventKind>(i);
    }
    return std::nullopt;
}

} // namespace kvscope::trace
