// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/ByteTokenizer.h"
#include "kvscope/training/TextCorpus.h"
#include "kvscope/training/TrainingError.h"

#include "ModelTestHelpers.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <fstream>

using kvscope::model::ByteTokenizer;
using kvscope::training::TextCorpus;
using kvscope::training::TrainingError;

namespace {

std::string textOf(const at::Tensor& row) {
    std::string text;
    for (int64_t column = 1; column < row.size(0); ++column) {
        text.push_back(static_cast<char>(row[column].item<int64_t>()));
    }
    return text;
}

} // namespace

TEST(TextCorpusTest, TrainingWindowsAreABosAndBytesOfTheTrainingText) {
    const std::string training = "the quick brown fox jumps over the lazy dog, again and again";
    const TextCorpus corpus(training, "held-out text that is long enough");
    auto generator = at::make_generator<at::CPUGeneratorImpl>(3);
    const at::Tensor batch = corpus.sampleBatch(8, 10, generator);
    ASSERT_EQ(batch.sizes(), (std::vector<int64_t>{8, 11}));
    for (int64_t row = 0; row < 8; ++row) {
        EXPECT_EQ(batch[row][0].item<int64_t>(), ByteTokenizer::kBos);
        EXPECT_NE(training.find(textOf(batch[row])), std::string::npos) << textOf(batch[row]);
    }
    // The same seed draws the same windows; another seed others.
    auto again = at::make_generator<at::CPUGeneratorImpl>(3);
    EXPECT_TRUE(at::equal(corpus.sampleBatch(8, 10, again), batch));
    auto other = at::make_generator<at::CPUGeneratorImpl>(4);
    EXPECT_FALSE(at::equal(corpus.sampleBatch(8, 10, other), batch));
}

TEST(TextCorpusTest, HeldOutWindowsCoverTheHeldOutTextInOrder) {
    const TextCorpus corpus("training text that is long enough", "0123456789abcdefghij");
    const at::Tensor windows = corpus.heldOutBatch(6, 100);
    ASSERT_EQ(windows.size(0), 3); // 20 bytes hold three whole windows of 6
    EXPECT_EQ(textOf(windows[0]), "012345");
    EXPECT_EQ(textOf(windows[2]), "cdefgh");
    EXPECT_EQ(corpus.heldOutBatch(6, 2).size(0), 2);
    EXPECT_THROW(corpus.heldOutBatch(21, 1), TrainingError);
}

TEST(TextCorpusTest, WithoutAHeldOutFileTheCorpusTailIsHeldOutAtALineBreak) {
    kvscope::testing::TemporaryDirectory directory("kvscope-corpus");
    std::string text;
    for (int line = 0; line < 40; ++line) {
        text += "line number " + std::to_string(line) + "\n";
    }
    std::ofstream(directory.path() / "corpus.txt") << text;
    const TextCorpus corpus = TextCorpus::fromFiles(directory.path() / "corpus.txt", {}, 0.25);
    EXPECT_EQ(corpus.training() + corpus.heldOut(), text);
    EXPECT_EQ(corpus.training().back(), '\n');
    EXPECT_NEAR(static_cast<double>(corpus.heldOut().size()) / static_cast<double>(text.size()), 0.25, 0.05);

    std::ofstream(directory.path() / "held-out.txt") << "a separate held-out text";
    const TextCorpus separate = TextCorpus::fromFiles(directory.path() / "corpus.txt", directory.path() / "held-out.txt");
    EXPECT_EQ(separate.training(), text);
    EXPECT_EQ(separate.heldOut(), "a separate held-out text");
}

TEST(TextCorpusTest, RefusesMissingAndTooSmallText) {
    kvscope::testing::TemporaryDirectory directory("kvscope-corpus");
    try {
        TextCorpus::fromFiles(directory.path() / "absent.txt", {});
        FAIL() << "a missing corpus was read";
    } catch (const TrainingError& error) {
        EXPECT_NE(std::string(error.what()).find("absent.txt"), std::string::npos) << error.what();
    }
    EXPECT_THROW(TextCorpus("short", "held-out text that is long enough"), TrainingError);
    std::ofstream(directory.path() / "corpus.txt") << "enough text for both parts of the corpus\nand a second line\n";
    EXPECT_THROW(TextCorpus::fromFiles(directory.path() / "corpus.txt", {}, 1.5), TrainingError);
}
