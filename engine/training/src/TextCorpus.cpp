// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/training/TextCorpus.h"

#include "kvscope/model/ByteTokenizer.h"
#include "kvscope/training/TrainingError.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <vector>

namespace kvscope::training {
namespace {

std::string readFile(const std::filesystem::path& path, const char* role) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw TrainingError(std::string("cannot read the ") + role + " file `" + path.string() + "`");
    }
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Rows of bos + `length` bytes starting at `offsets` of `text`.
at::Tensor windows(const std::string& text, const std::vector<int64_t>& offsets, int64_t length) {
    at::Tensor ids = at::empty({static_cast<int64_t>(offsets.size()), 1 + length}, at::kLong);
    auto rows = ids.accessor<int64_t, 2>();
    for (size_t row = 0; row < offsets.size(); ++row) {
        rows[static_cast<int64_t>(row)][0] = model::ByteTokenizer::kBos;
        for (int64_t column = 0; column < length; ++column) {
            rows[static_cast<int64_t>(row)][1 + column] =
                static_cast<unsigned char>(text[static_cast<size_t>(offsets[row] + column)]);
        }
    }
    return ids;
}

} // namespace

TextCorpus::TextCorpus(std::string training, std::string heldOut)
    : m_training(std::move(training)), m_heldOut(std::move(heldOut)) {
    if (static_cast<int64_t>(m_training.size()) <= minimumBytes || static_cast<int64_t>(m_heldOut.size()) <= minimumBytes) {
        throw TrainingError("the training and held-out text must each hold more than " + std::to_string(minimumBytes) +
                            " bytes (got " + std::to_string(m_training.size()) + " and " +
                            std::to_string(m_heldOut.size()) + ")");
    }
}

TextCorpus TextCorpus::fromFiles(const std::filesystem::path& corpus, const std::filesystem::path& heldOut,
                                 double heldOutFraction) {
    std::string text = readFile(corpus, "corpus");
    if (!heldOut.empty()) {
        return TextCorpus(std::move(text), readFile(heldOut, "held-out"));
    }
    if (!(heldOutFraction > 0.0 && heldOutFraction < 1.0)) {
        throw TrainingError("the held-out fraction must lie between 0 and 1 (exclusive), got " +
                            std::to_string(heldOutFraction));
    }
    size_t cut = static_cast<size_t>(static_cast<double>(text.size()) * (1.0 - heldOutFraction));
    const size_t lineBreak = text.find('\n', cut);
    cut = lineBreak == std::string::npos ? cut : lineBreak + 1;
    return TextCorpus(text.substr(0, cut), text.substr(cut));
}

at::Tensor TextCorpus::sampleBatch(int64_t batch, int64_t length, at::Generator& generator) const {
    const int64_t available = static_cast<int64_t>(m_training.size()) - length;
    if (length < 1 || available < 1) {
        throw TrainingError("a training window of " + std::to_string(length) + " bytes needs more than " +
                            std::to_string(length) + " bytes of training text (got " +
                            std::to_string(m_training.size()) + ")");
    }
    at::Tensor drawn = at::randint(available, {batch}, generator, at::TensorOptions().dtype(at::kLong));
    const std::vector<int64_t> offsets(drawn.data_ptr<int64_t>(), drawn.data_ptr<int64_t>() + batch);
    return windows(m_training, offsets, length);
}

at::Tensor TextCorpus::heldOutBatch(int64_t length, int64_t maxWindows) const {
    const int64_t count = std::min(maxWindows, static_cast<int64_t>(m_heldOut.size()) / std::max<int64_t>(length, 1));
    if (length < 1 || count < 1) {
        throw TrainingError("a held-out window of " + std::to_string(length) + " bytes needs at least that many bytes " +
                            "of held-out text (got " + std::to_string(m_heldOut.size()) + ")");
    }
    std::vector<int64_t> offsets;
    for (int64_t window = 0; window < count; ++window) {
        offsets.push_back(window * length);
    }
    return windows(m_heldOut, offsets, length);
}

} // namespace kvscope::training
