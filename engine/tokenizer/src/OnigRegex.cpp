// SPDX-License-Identifier: GPL-3.0-or-later
#include "OnigRegex.h"

#include "Unicode.h"
#include "kvscope/tokenizer/TokenizerError.h"

#include <oniguruma.h>

#include <mutex>

namespace kvscope::tokenizer {

namespace {

void initializeOniguruma() {
    static std::once_flag once;
    std::call_once(once, [] {
        OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
        onig_initialize(encodings, 1);
    });
}

// A match region per thread: onig_search writes into it, and allocating one per search would cost
// more than the search on short words.
struct RegionHolder {
    OnigRegion* region = onig_region_new();
    ~RegionHolder() { onig_region_free(region, 1); }
};

} // namespace

OnigRegex::OnigRegex(std::string_view pattern, std::string_view component) : m_pattern(pattern) {
    initializeOniguruma();
    regex_t* regex = nullptr;
    OnigErrorInfo errorInfo{};
    const auto* begin = reinterpret_cast<const OnigUChar*>(m_pattern.data());
    const int status = onig_new(&regex, begin, begin + m_pattern.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8,
                                ONIG_SYNTAX_ONIGURUMA, &errorInfo);
    if (status != ONIG_NORMAL) {
        OnigUChar message[ONIG_MAX_ERROR_MESSAGE_LEN];
        onig_error_code_to_str(message, status, &errorInfo);
        throw TokenizerError(std::string(component) + ": cannot compile regex '" + m_pattern +
                             "': " + reinterpret_cast<const char*>(message));
    }
    m_regex = regex;
}

OnigRegex::~OnigRegex() {
    if (m_regex != nullptr) {
        onig_free(static_cast<regex_t*>(m_regex));
    }
}

void OnigRegex::findAll(std::string_view text, std::vector<std::pair<std::size_t, std::size_t>>& matches) const {
    matches.clear();
    thread_local RegionHolder holder;
    auto* regex = static_cast<regex_t*>(m_regex);
    const auto* start = reinterpret_cast<const OnigUChar*>(text.data());
    const auto* end = start + text.size();
    std::size_t position = 0;
    bool haveLastEnd = false;
    std::size_t lastMatchEnd = 0;
    while (position <= text.size()) {
        const int found =
            onig_search(regex, start, end, start + position, end, holder.region, ONIG_OPTION_NONE);
        if (found < 0) {
            if (found != ONIG_MISMATCH) {
                throw TokenizerError("regex '" + m_pattern + "': search failed (Oniguruma code " +
                                     std::to_string(found) + ")");
            }
            break;
        }
        const auto matchBegin = static_cast<std::size_t>(holder.region->beg[0]);
        const auto matchEnd = static_cast<std::size_t>(holder.region->end[0]);
        if (matchBegin == matchEnd && haveLastEnd && lastMatchEnd == matchEnd) {
            // An empty match glued to the previous match: step one character and search again.
            if (position >= text.size()) {
                break;
            }
            position += Unicode::sequenceLength(static_cast<unsigned char>(text[position]));
            continue;
        }
        matches.emplace_back(matchBegin, matchEnd);
        haveLastEnd = true;
        lastMatchEnd = matchEnd;
        position = matchEnd;
        if (matchBegin == matchEnd) {
            if (position >= text.size()) {
                break;
            }
            position += Unicode::sequenceLength(static_cast<unsigned char>(text[position]));
        }
    }
}

} // namespace kvscope::tokenizer
