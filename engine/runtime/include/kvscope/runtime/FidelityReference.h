// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace kvscope::runtime {

/// The uncompressed half of a fidelity measurement (PressFidelity): the prompt, the greedy tokens the model
/// wrote after it and the next-token log-probabilities that chose them, made once and measured against by
/// every press (`kvscope-cli fidelity --save-reference` / `--reference`). Saved as a .safetensors file
/// (F64 `log_probabilities` [tokens, vocab], I64 `prompt` and `tokens`, the origin in `__metadata__`).
/// Torch-free: tests/fuzz/FidelityReferenceFuzzer holds its reader to refusing bad files cleanly.
struct FidelityReference {
    /// What a reference was made with besides its prompt and token count; a reference made with other
    /// settings is refused (their log-probabilities would differ).
    struct Origin {
        std::string model;   ///< the model source, as `kvscope-cli fidelity` prints it
        std::string weights; ///< PressFidelity::weightsDigest of the parameters
        std::string cache;   ///< the cache settings, as JSON
        std::string device;  ///< cpu or cuda

        bool operator==(const Origin&) const = default;
    };

    std::vector<std::int64_t> prompt;
    /// The greedy tokens; row t of `logProbabilities` is the distribution that chose tokens[t].
    std::vector<std::int64_t> tokens;
    std::int64_t vocab = 0;
    std::vector<double> logProbabilities; ///< tokens.size() rows of `vocab` values
    Origin origin;

    /// Row `token` of logProbabilities.
    std::span<const double> row(std::size_t token) const;

    /// Reads a file written by write(); throws GenerationError naming `path` and the problem.
    static FidelityReference read(const std::filesystem::path& path);
    /// The same from a file's bytes; `where` names the file in messages.
    static FidelityReference parse(std::span<const std::uint8_t> file, const std::string& where);
    /// Writes to a temporary name and renames it, so an interrupted write never leaves half a file.
    void write(const std::filesystem::path& path) const;
    /// Throws GenerationError unless this reference was made for `prompt`, `tokens` tokens and `origin`,
    /// naming what differs, both values, and the fix; `where` names the file.
    void checkMadeFor(const std::vector<std::int64_t>& prompt, std::int64_t tokens, const Origin& origin,
                      const std::string& where) const;
};

} // namespace kvscope::runtime
