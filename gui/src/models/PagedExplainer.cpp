// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/gui/models/PagedExplainer.h"

#include "kvscope/gui/models/PagedHistory.h"

#include <QCoreApplication>
#include <QStringList>
#include <algorithm>
#include <optional>
#include <set>
#include <type_traits>
#include <variant>

namespace kvscope::gui {
namespace {

QString pagedTr(const char* text) {
    return QCoreApplication::translate("PagedExplainer", text);
}

QString id(const std::string& requestId) {
    return QString::fromStdString(requestId);
}

QString hashText(std::uint64_t hash) {
    return QStringLiteral("%1").arg(hash, 16, 16, QLatin1Char('0'));
}

QString plural(std::int64_t count, const char* one, const char* many) {
    return QStringLiteral("%1 %2").arg(count).arg(count == 1 ? pagedTr(one) : pagedTr(many));
}

/// " in group 1" where the pool has more than one layer group.
QString groupSuffix(const PagedHistory* history, std::int32_t group) {
    if (history == nullptr || !history->active() || history->pool().groupWindows.size() < 2) {
        return {};
    }
    return pagedTr(" in group %1").arg(group);
}

/// 'text' of a request's tokens [begin, end), shortened; empty when unknown.
QString quotedText(const PagedHistory* history, const std::string& request, std::int64_t begin,
                   std::int64_t end, int maxChars = 20) {
    if (history == nullptr) {
        return {};
    }
    const std::optional<std::string> text = history->text(request, begin, end);
    if (!text || begin >= end) {
        return {};
    }
    return QStringLiteral("'%1'").arg(PagedExplainer::preview(*text, maxChars));
}

/// " ('text')" or nothing.
QString pagedInParentheses(const QString& quoted) {
    return quoted.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(quoted);
}

QString tokenRange(std::int64_t begin, std::int64_t end) {
    return end - begin == 1 ? pagedTr("token %1").arg(begin) : pagedTr("tokens %1 to %2").arg(begin).arg(end - 1);
}

/// What a row's `sentence` knows besides the payload: the event, the serving history (may be null) and the
/// pool's block size (0 when unknown).
struct PagedSentenceContext {
    const trace::Event& event;
    const PagedHistory* history;
    std::int64_t blockSize;
};

/// The event log's text for paged serving, one row per paged kind of event (as trace's EventFields
/// describes each record once): `summary` states the payload's fields, `sentence` says what the scheduler
/// or the pool did and why. Other kinds have no row (EventExplainer's rows explain them).
template <typename Payload> struct PagedEventText {};

template <> struct PagedEventText<trace::PagedPoolEvent> {
    static QString summary(const trace::PagedPoolEvent& e) {
        return pagedTr("%1 blocks of %2 tokens, %3, prefix caching %4, free policy %5, budget %6 tokens, "
                  "%7 "
                  "sequences")
            .arg(e.numBlocks)
            .arg(e.blockSize)
            .arg(plural(static_cast<std::int64_t>(e.groupWindows.size()), "layer group",
                        "layer groups"))
            .arg(e.prefixCaching ? pagedTr("on") : pagedTr("off"))
            .arg(e.freePolicy == 0 ? pagedTr("document") : pagedTr("current"))
            .arg(e.maxNumBatchedTokens)
            .arg(e.maxNumSeqs);
    }
    static QString sentence(const trace::PagedPoolEvent& e, const PagedSentenceContext& context) {
        return pagedTr("The serving pool: %1 blocks of %2 token slots shared by every request. A "
                  "request's keys "
                  "and values live in the blocks its block table lists, so memory is handed out a "
                  "block at "
                  "a time as requests grow instead of reserved for the longest one.")
            .arg(e.numBlocks)
            .arg(e.blockSize);
    }
};

template <> struct PagedEventText<trace::RequestArrivedEvent> {
    static QString summary(const trace::RequestArrivedEvent& e) {
        return pagedTr("%1: %2, up to %3")
            .arg(id(e.requestId), plural(e.promptTokens, "prompt token", "prompt tokens"),
                 plural(e.maxTokens, "output", "outputs"));
    }
    static QString sentence(const trace::RequestArrivedEvent& e, const PagedSentenceContext& context) {
        const PagedHistory* history = context.history;
        return pagedTr("%1 arrived with %2%3 and joins the back of the waiting queue.")
            .arg(id(e.requestId), plural(e.promptTokens, "prompt token", "prompt tokens"),
                 pagedInParentheses(quotedText(history, e.requestId, 0, e.promptTokens)));
    }
};

template <> struct PagedEventText<trace::RequestAdmittedEvent> {
    static QString summary(const trace::RequestAdmittedEvent& e) {
        return pagedTr("%1: %2 tokens, %3 cached%4")
            .arg(id(e.requestId))
            .arg(e.numTokens)
            .arg(e.cachedTokens)
            .arg(e.resumed ? pagedTr(", resumed") : QString());
    }
    static QString sentence(const trace::RequestAdmittedEvent& e, const PagedSentenceContext& context) {
        const PagedHistory* history = context.history;
        const QString who = id(e.requestId);
        const QString resumed = e.resumed ? pagedTr(" (resumed after its preemption)") : QString();
        if (e.cachedTokens <= 0) {
            const bool caching =
                history == nullptr || !history->active() || history->pool().prefixCaching;
            return caching
                       ? pagedTr("%1 was admitted%2 with none of its %3 tokens in the prefix cache: it "
                            "computes them all.")
                             .arg(who, resumed)
                             .arg(e.numTokens)
                       : pagedTr("%1 was admitted%2; prefix caching is off, so it computes all %3 of its "
                            "tokens.")
                             .arg(who, resumed)
                             .arg(e.numTokens);
        }
        const std::vector<std::int32_t> hits =
            history != nullptr ? history->hitsOf(context.event.sequence) : std::vector<std::int32_t>{};
        QStringList cachers;
        if (history != nullptr) {
            for (const std::int32_t block : hits) {
                if (const PagedHistory::CacheRecord* record =
                        history->cachedBy(block, context.event.sequence)) {
                    const QString name = id(record->requestId);
                    if (!cachers.contains(name)) {
                        cachers << name;
                    }
                }
            }
        }
        const QString quoted = quotedText(history, e.requestId, 0, e.cachedTokens);
        QString sentence =
            hits.empty() ? pagedTr("%1%2 reused %3 of its %4 tokens from the prefix cache")
                               .arg(who, resumed)
                               .arg(e.cachedTokens)
                               .arg(e.numTokens)
                         : pagedTr("%1 reused %2 %3 (%4%5)")
                               .arg(who, hits.size() == 1 ? pagedTr("block") : pagedTr("blocks"),
                                    PagedExplainer::commaList(hits), plural(e.cachedTokens, "token", "tokens"),
                                    quoted.isEmpty() ? QString() : QStringLiteral(": ") + quoted);
        if (!cachers.isEmpty()) {
            cachers.sort();
            QString names = cachers.size() == 1
                                ? cachers.front()
                                : cachers.mid(0, cachers.size() - 1).join(QStringLiteral(", ")) +
                                      pagedTr(" and ") + cachers.back();
            sentence += pagedTr(" cached by %1").arg(names);
        }
        return sentence + pagedTr("%1; it computes the other %2.")
                              .arg(hits.empty() ? QString() : resumed)
                              .arg(e.numTokens - e.cachedTokens);
    }
};

template <> struct PagedEventText<trace::RequestScheduledEvent> {
    static QString summary(const trace::RequestScheduledEvent& e) {
        return pagedTr("%1: %2 (%3)%4")
            .arg(id(e.requestId), tokenRange(e.firstPosition, e.firstPosition + e.numTokens))
            .arg(e.numTokens)
            .arg(e.samples ? pagedTr(", samples") : QString());
    }
    static QString sentence(const trace::RequestScheduledEvent& e, const PagedSentenceContext& context) {
        const PagedHistory* history = context.history;
        const QString who = id(e.requestId);
        const std::int64_t prompt = history != nullptr ? history->promptTokens(e.requestId) : 0;
        const std::int64_t end = e.firstPosition + e.numTokens;
        const QString quoted = pagedInParentheses(quotedText(history, e.requestId, e.firstPosition, end));
        if (e.numTokens == 1 && e.firstPosition >= prompt && prompt > 0) {
            return pagedTr("%1 decodes: it computes the key and value of its last sampled token (position "
                      "%2%3)%4.")
                .arg(who)
                .arg(e.firstPosition)
                .arg(quoted.isEmpty() ? QString()
                                      : QStringLiteral(", ") + quoted.mid(2, quoted.size() - 3))
                .arg(e.samples ? pagedTr(" and samples the next") : QString());
        }
        return pagedTr("%1 computes %2%3 in this step's batch%4.")
            .arg(who, tokenRange(e.firstPosition, end), quoted,
                 e.samples
                     ? pagedTr(", then samples its next token")
                     : pagedTr("; the rest of its prompt waits for the next step (chunked prefill)"));
    }
};

template <> struct PagedEventText<trace::RequestPreemptedEvent> {
    static QString summary(const trace::RequestPreemptedEvent& e) {
        return pagedTr("%1: %2 computed tokens to recompute")
            .arg(id(e.requestId))
            .arg(e.numComputedTokens);
    }
    static QString sentence(const trace::RequestPreemptedEvent& e, const PagedSentenceContext& context) {
        const PagedHistory* history = context.history;
        const QString who = id(e.requestId);
        std::set<std::int32_t> blocks;
        std::string forWhom;
        if (history != nullptr) {
            for (const PagedHistory::Release& release : history->releasesOf(context.event.sequence)) {
                blocks.insert(release.block);
            }
            forWhom = history->preemptedFor(context.event.sequence);
        }
        const QString need =
            forWhom.empty()
                ? pagedTr("no free block for its next token")
                : pagedTr("no free block for %1's next token, and %2 was the last of the running "
                     "list")
                      .arg(id(forWhom), who);
        return pagedTr("%1 preempted: %2; its %3 freed and it will be recomputed.")
            .arg(who, need,
                 blocks.size() == 1 ? pagedTr("block was") : pagedTr("%1 blocks were").arg(blocks.size()));
    }
};

template <> struct PagedEventText<trace::RequestFinishedEvent> {
    static QString summary(const trace::RequestFinishedEvent& e) {
        return pagedTr("%1: %2, %3")
            .arg(id(e.requestId), QString::fromUtf8(trace::toString(e.reason)),
                 plural(e.outputTokens, "output", "outputs"));
    }
    static QString sentence(const trace::RequestFinishedEvent& e, const PagedSentenceContext& context) {
        const PagedHistory* history = context.history;
        const QString who = id(e.requestId);
        std::vector<std::int32_t> tail;
        std::vector<std::int32_t> head;
        std::vector<std::int32_t> shared;
        if (history != nullptr) {
            for (const PagedHistory::Release& release : history->releasesOf(context.event.sequence)) {
                if (release.refCnt > 0) {
                    shared.push_back(release.block);
                } else if (release.queuePosition >= 0 &&
                           release.queuePosition + 1 < release.queueLength) {
                    // Joined ahead of blocks already queued: the head (policy current, no hash).
                    head.push_back(release.block);
                } else {
                    tail.push_back(release.block);
                }
            }
        }
        QStringList parts;
        if (!tail.empty()) {
            parts << pagedTr("%1 the free queue's tail (newest last)")
                         .arg(tail.size() == 1 ? pagedTr("block %1 goes to").arg(tail.front())
                                               : pagedTr("blocks %1 go to").arg(PagedExplainer::commaList(tail)));
        }
        if (!head.empty()) {
            parts << pagedTr("%1 the free queue's head, reused first: %2")
                         .arg(head.size() == 1 ? pagedTr("block %1 goes to").arg(head.front())
                                               : pagedTr("blocks %1 go to").arg(PagedExplainer::commaList(head)),
                              head.size() == 1 ? pagedTr("it holds no hash") : pagedTr("they hold no hash"));
        }
        if (!shared.empty()) {
            parts << (shared.size() == 1 ? pagedTr("%1 stays shared") : pagedTr("%1 stay shared"))
                         .arg(PagedExplainer::andList(shared));
        }
        const std::int64_t prompt = history != nullptr ? history->promptTokens(e.requestId) : 0;
        const QString output = quotedText(history, e.requestId, prompt, prompt + e.outputTokens, 24);
        const QString reason =
            e.reason == trace::FinishReason::Eos         ? pagedTr("it sampled its end-of-sequence token")
            : e.reason == trace::FinishReason::MaxTokens ? pagedTr("it reached its max_tokens")
                                                  : pagedTr("it reached the model's maximum length");
        return pagedTr("%1 finished%2. %3 after %4%5.")
            .arg(who, parts.isEmpty() ? QString()
                                      : QStringLiteral(": ") + parts.join(QStringLiteral(", ")))
            .arg(reason.left(1).toUpper() + reason.mid(1),
                 plural(e.outputTokens, "output", "outputs"),
                 output.isEmpty() ? QString() : QStringLiteral(": ") + output);
    }
};

template <> struct PagedEventText<trace::BlockAllocatedEvent> {
    static QString summary(const trace::BlockAllocatedEvent& e) {
        return pagedTr("%1 ← block %2 (slot %3, group %4)")
            .arg(id(e.requestId))
            .arg(e.block)
            .arg(e.tableIndex)
            .arg(e.group);
    }
    static QString sentence(const trace::BlockAllocatedEvent& e, const PagedSentenceContext& context) {
        const PagedHistory* history = context.history;
        const QString range = context.blockSize > 0
                                  ? pagedTr(" for %1").arg(tokenRange(e.tableIndex * context.blockSize,
                                                                 (e.tableIndex + 1) * context.blockSize))
                                  : QString();
        return pagedTr("%1 needed a new block%2: it took block %3 from the head of the free queue (free "
                  "the "
                  "longest) as slot %4 of its table%5.")
            .arg(id(e.requestId), range)
            .arg(e.block)
            .arg(e.tableIndex)
            .arg(groupSuffix(history, e.group));
    }
};

template <> struct PagedEventText<trace::BlockTouchedEvent> {
    static QString summary(const trace::BlockTouchedEvent& e) {
        return pagedTr("%1 reuses block %2 (slot %3, group %4), ref %5")
            .arg(id(e.requestId))
            .arg(e.block)
            .arg(e.tableIndex)
            .arg(e.group)
            .arg(e.refCnt);
    }
    static QString sentence(const trace::BlockTouchedEvent& e, const PagedSentenceContext& context) {
        const PagedHistory* history = context.history;
        const PagedHistory::CacheRecord* record =
            history != nullptr ? history->cachedBy(e.block, context.event.sequence) : nullptr;
        QString what;
        if (record != nullptr) {
            what = pagedTr(": %1%2 were cached by %3")
                       .arg(tokenRange(record->tokenBegin, record->tokenEnd),
                            pagedInParentheses(quotedText(history, record->requestId, record->tokenBegin,
                                                     record->tokenEnd)),
                            id(record->requestId));
        }
        return pagedTr("%1 reuses block %2%3%4, so it skips computing them; the block's reference count "
                  "is now "
                  "%5%6.")
            .arg(id(e.requestId))
            .arg(e.block)
            .arg(groupSuffix(history, e.group), what)
            .arg(e.refCnt)
            .arg(e.refCnt == 1 ? pagedTr(" and it leaves the free queue") : QString());
    }
};

template <> struct PagedEventText<trace::BlockCachedEvent> {
    static QString summary(const trace::BlockCachedEvent& e) {
        return pagedTr("block %1 ← hash %2, %3 of %4")
            .arg(e.block)
            .arg(hashText(e.hash), tokenRange(e.tokenBegin, e.tokenEnd), id(e.requestId));
    }
    static QString sentence(const trace::BlockCachedEvent& e, const PagedSentenceContext& context) {
        const PagedHistory* history = context.history;
        return pagedTr("Block %1 is full: %2's %3%4 are cached under hash %5 (chained to the blocks "
                  "before "
                  "it), so a later request with the same first %6 tokens can reuse it.")
            .arg(e.block)
            .arg(id(e.requestId), tokenRange(e.tokenBegin, e.tokenEnd),
                 pagedInParentheses(quotedText(history, e.requestId, e.tokenBegin, e.tokenEnd)),
                 hashText(e.hash).left(8) + QStringLiteral("…"))
            .arg(e.tokenEnd);
    }
};

template <> struct PagedEventText<trace::BlockFreedEvent> {
    static QString summary(const trace::BlockFreedEvent& e) {
        return pagedTr("%1 → block %2 (slot %3, group %4), ref %5%6%7")
            .arg(id(e.requestId))
            .arg(e.block)
            .arg(e.tableIndex)
            .arg(e.group)
            .arg(e.refCnt)
            .arg(e.queuePosition >= 0 ? pagedTr(", free queue position %1").arg(e.queuePosition)
                                      : QString())
            .arg(e.windowed ? pagedTr(", out of the window") : QString());
    }
    static QString sentence(const trace::BlockFreedEvent& e, const PagedSentenceContext& context) {
        const PagedHistory* history = context.history;
        const QString who = id(e.requestId);
        if (e.windowed) {
            return pagedTr("Block %1 fell wholly out of %2's sliding window%3: %2 releases it and slot %4 "
                      "of "
                      "its table becomes a hole%5.")
                .arg(e.block)
                .arg(who, groupSuffix(history, e.group))
                .arg(e.tableIndex)
                .arg(e.queuePosition >= 0
                         ? pagedTr("; the block joins the free queue at position %1").arg(e.queuePosition)
                         : QString());
        }
        if (e.refCnt > 0) {
            return pagedTr("%1 released block %2; %3 still %4 it, so it stays out of the free queue.")
                .arg(who)
                .arg(e.block)
                .arg(plural(e.refCnt, "other request", "other requests"),
                     e.refCnt == 1 ? pagedTr("holds") : pagedTr("hold"));
        }
        const bool cached = history != nullptr && history->cachedAt(e.block, context.event.sequence);
        return pagedTr("%1 released block %2; no one else holds it, so it joins the free queue at "
                  "position %3%4.")
            .arg(who)
            .arg(e.block)
            .arg(e.queuePosition)
            .arg(cached ? pagedTr(", still cached: a later request can reuse it until it reaches the head "
                             "and is "
                             "evicted")
                        : QString());
    }
};

template <> struct PagedEventText<trace::BlockEvictedEvent> {
    static QString summary(const trace::BlockEvictedEvent& e) {
        return pagedTr("block %1 (group %2) forgets hash %3")
            .arg(e.block)
            .arg(e.group)
            .arg(hashText(e.hash));
    }
    static QString sentence(const trace::BlockEvictedEvent& e, const PagedSentenceContext& context) {
        const PagedHistory* history = context.history;
        const PagedHistory::CacheRecord* record =
            history != nullptr ? history->cachedBy(e.block, context.event.sequence) : nullptr;
        const QString held = record != nullptr ? quotedText(history, record->requestId,
                                                            record->tokenBegin, record->tokenEnd, 24)
                                               : QString();
        return pagedTr("block %1 evicted: least recently freed%2; its hash is forgotten, so no request "
                  "can reuse "
                  "those tokens any more.")
            .arg(e.block)
            .arg(held.isEmpty() ? QString() : pagedTr(", cached %1").arg(held));
    }
};

template <> struct PagedEventText<trace::RequestTokensEvent> {
    static QString summary(const trace::RequestTokensEvent& e) {
        return pagedTr("%1: %2 from position %3")
            .arg(id(e.requestId),
                 plural(static_cast<std::int64_t>(e.tokenIds.size()), "token", "tokens"))
            .arg(e.firstPosition);
    }
    static QString sentence(const trace::RequestTokensEvent& e, const PagedSentenceContext& context) {
        const PagedHistory* history = context.history;
        const QString who = id(e.requestId);
        const std::int64_t end = e.firstPosition + static_cast<std::int64_t>(e.tokenIds.size());
        const QString text = e.pieceEnds.size() == e.tokenIds.size() && !e.tokenIds.empty()
                                 ? QStringLiteral("'%1'").arg(PagedExplainer::preview(e.text, 40))
                                 : pagedTr("%1 (no text recorded)")
                                       .arg(plural(end - e.firstPosition, "token id", "token ids"));
        const std::int64_t prompt = history != nullptr ? history->promptTokens(e.requestId) : 0;
        if (e.firstPosition == 0 && (prompt == 0 || end == prompt)) {
            return pagedTr("%1's prompt: %2.").arg(who, text);
        }
        return pagedTr("%1 sampled %2 (position %3).").arg(who, text).arg(e.firstPosition);
    }
};
} // namespace

QString PagedExplainer::preview(const std::string& text, int maxChars) {
    QString shown = QString::fromUtf8(text);
    shown.replace(QLatin1Char('\n'), QStringLiteral("\\n"));
    if (shown.size() <= maxChars) {
        return shown;
    }
    QString cut = shown.left(maxChars);
    // A word cut in half reads worse than a shorter phrase: end at the last space, if one is not too early.
    const qsizetype space = cut.lastIndexOf(QLatin1Char(' '));
    if (space >= maxChars / 2) {
        cut = cut.left(space);
    }
    return cut + QStringLiteral(" ...");
}

QString PagedExplainer::commaList(const std::vector<std::int32_t>& ids) {
    QStringList parts;
    for (const std::int32_t value : ids) {
        parts << QString::number(value);
    }
    return parts.join(QStringLiteral(", "));
}

QString PagedExplainer::andList(const std::vector<std::int32_t>& ids) {
    if (ids.size() <= 1) {
        return commaList(ids);
    }
    return commaList({ids.begin(), ids.end() - 1}) + pagedTr(" and ") + QString::number(ids.back());
}

QString PagedExplainer::summary(const trace::Event& event) {
    return std::visit(
        [](const auto& e) -> QString {
            using Row = PagedEventText<std::decay_t<decltype(e)>>;
            if constexpr (requires { Row::summary(e); }) {
                return Row::summary(e);
            } else {
                return {};
            }
        },
        event.payload);
}

QString PagedExplainer::sentence(const trace::Event& event, const PagedHistory* history) {
    const PagedSentenceContext context{
        event, history, history != nullptr && history->active() ? history->pool().blockSize : 0};
    return std::visit(
        [&context](const auto& e) -> QString {
            using Row = PagedEventText<std::decay_t<decltype(e)>>;
            if constexpr (requires { Row::sentence(e, context); }) {
                return Row::sentence(e, context);
            } else {
                return {};
            }
        },
        event.payload);
}

} // namespace kvscope::gui
