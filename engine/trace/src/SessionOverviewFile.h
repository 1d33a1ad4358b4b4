// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "SessionOverview.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvscope::trace {

class FileBytes;
struct SessionContents;

/// Opens a finished session file by its Overview chunk (format 1.6, sessions/FORMAT.md) instead of decoding
/// every frame: the header, the footer's index, the overview; and every chunk's frame walked once with its
/// checksum (no decompression, no decoding), so that a file damaged before it is opened still opens through
/// the pass, up to the damage, as before.
class SessionOverviewFile {
public:
    struct Opened {
        SessionOverview overview;
        std::vector<std::int64_t> chunkSteps;    ///< every Step chunk's step, in file order (the index)
        std::vector<std::uint64_t> chunkOffsets; ///< and where its frame starts
    };

    /// The overview and the index; nullopt for a file to open through the pass: an older version, an
    /// unfinished or damaged file, a session written without an overview (a serving pool), or an overview
    /// that does not agree with the index. Fills `contents` (version, metadata, sizes, complete) when it
    /// returns one. SessionError for a damaged header, as the pass.
    static std::optional<Opened> read(const FileBytes& file, const std::string& name,
                                      SessionContents& contents);
};

} // namespace kvscope::trace
