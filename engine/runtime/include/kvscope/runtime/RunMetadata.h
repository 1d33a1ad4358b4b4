// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "kvscope/runtime/CacheFactory.h"
#include "kvscope/runtime/Generator.h"
#include "kvscope/runtime/ModelSource.h"
#include "kvscope/runtime/TextCodec.h"
#include "kvscope/trace/SessionMetadata.h"

#include <cstdint>
#include <string>

namespace kvscope::runtime {

/// What a session file's header records about a generation run: one record for `kvscope-cli run
/// --out` and the GUI's live sessions, so that files from either read and compare alike.
class RunMetadata {
public:
    /// `promptIds` are the prompt as `text` encoded it; their pieces go in the record.
    static trace::SessionMetadata build(const ModelSource::Loaded& loaded, const config::RunSettings& run,
                                        const TextCodec& text, const std::vector<std::int64_t>& promptIds,
                                        std::int64_t createdUnixNs);
    /// Now, as session files stamp their creation.
    static std::int64_t nowUnixNs();
};

} // namespace kvscope::runtime
