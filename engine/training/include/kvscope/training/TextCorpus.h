// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <filesystem>
#include <string>

namespace kvscope::training {

/// Text for training a byte-level model, split into training and held-out text. Windows are token
/// ids as the byte tokenizer encodes a prompt: a bos, then the bytes.
class TextCorpus {
public:
    /// `training` and `heldOut` as given; each must hold more than `minimumBytes`.
    TextCorpus(std::string training, std::string heldOut);
    /// Reads `corpus`; the held-out text is `heldOut` when given, else the last `heldOutFraction` of
    /// the corpus (cut at a line break). Throws TrainingError naming a missing or too small file.
    static TextCorpus fromFiles(const std::filesystem::path& corpus, const std::filesystem::path& heldOut,
                                double heldOutFraction = 0.05);

    const std::string& training() const { return m_training; }
    const std::string& heldOut() const { return m_heldOut; }
    /// Ids [batch, 1 + length]: bos, then `length` bytes from a random offset of the training text.
    at::Tensor sampleBatch(int64_t batch, int64_t length, at::Generator& generator) const;
    /// Ids [windows, 1 + length] of consecutive held-out windows from the start (at most `maxWindows`).
    at::Tensor heldOutBatch(int64_t length, int64_t maxWindows) const;
    /// The fewest bytes a part must hold: one window of the shortest useful length.
    static constexpr int64_t minimumBytes = 16;

private:
    std::string m_training;
    std::string m_heldOut;
};

} // namespace kvscope::training
