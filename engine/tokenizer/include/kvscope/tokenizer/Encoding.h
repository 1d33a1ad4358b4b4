// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kvscope::tokenizer {

/// The result of encoding one text: ids, their token strings and byte offsets into the input.
/// Offsets are [begin, end) byte ranges of the original UTF-8 text; tokens that no input text
/// produced (a bos added by the post-processor) have the empty range (0, 0), as Hugging Face does.
struct Encoding {
    std::vector<std::int32_t> ids;
    std::vector<std::string> tokens;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> offsets;

    std::size_t size() const { return ids.size(); }
};

} // namespace kvscope::tokenizer
