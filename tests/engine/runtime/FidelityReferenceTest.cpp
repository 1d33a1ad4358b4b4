// SPDX-License-Identifier: GPL-3.0-or-later
// The saved uncompressed run of a fidelity measurement: a file round-trips bit for bit, damaged files and
// references made for other settings are refused with the problem named.
#include "kvscope/runtime/FidelityReference.h"

#include "kvscope/runtime/GenerationError.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <iterator>
#include <limits>

namespace {

using kvscope::runtime::FidelityReference;
using kvscope::runtime::GenerationError;

FidelityReference sample() {
    FidelityReference reference;
    reference.prompt = {1, 72, 101, 108};
    reference.tokens = {2, 0, 2};
    reference.vocab = 3;
    // Values a decimal text format would round: the file must keep every bit.
    reference.logProbabilities = {-0.1,
                                  -2.5,
                                  -3.0000000000000004,
                                  std::log(1.0 / 3.0),
                                  -1e-300,
                                  -0.7,
                                  -std::numeric_limits<double>::infinity(),
                                  -1.0 / 7.0,
                                  -0.2};
    reference.origin = {R"({"preset":"llama"})", "0123456789abcdef", R"({"kind":"dynamic"})", "cpu"};
    return reference;
}

std::filesystem::path temporary(const std::string& name) {
    return std::filesystem::temp_directory_path() / ("kvscope-fidelity-reference-test-" + name);
}

std::vector<std::uint8_t> bytesOf(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string refusal(const std::function<void()>& action) {
    try {
        action();
    } catch (const GenerationError& error) {
        return error.what();
    }
    ADD_FAILURE() << "nothing was refused";
    return {};
}

TEST(FidelityReferenceTest, RoundTripsEveryBit) {
    const FidelityReference written = sample();
    const auto path = temporary("round-trip.safetensors");
    written.write(path);
    const FidelityReference read = FidelityReference::read(path);
    std::filesystem::remove(path);
    EXPECT_EQ(read.prompt, written.prompt);
    EXPECT_EQ(read.tokens, written.tokens);
    EXPECT_EQ(read.vocab, 3);
    EXPECT_EQ(read.origin, written.origin);
    ASSERT_EQ(read.logProbabilities.size(), 9u);
    EXPECT_EQ(std::memcmp(read.logProbabilities.data(), written.logProbabilities.data(), 9 * sizeof(double)),
              0);
    EXPECT_EQ(read.row(1)[0], std::log(1.0 / 3.0));
    EXPECT_EQ(read.row(2).size(), 3u);
}

TEST(FidelityReferenceTest, RefusesFilesThatAreNoReference) {
    const auto path = temporary("damaged.safetensors");
    sample().write(path);
    const std::vector<std::uint8_t> good = bytesOf(path);
    std::filesystem::remove(path);

    const std::vector<std::uint8_t> truncated(good.begin(), good.end() - 5);
    EXPECT_NE(refusal([&] { FidelityReference::parse(truncated, "f"); }).find("truncated"),
              std::string::npos);

    std::vector<std::uint8_t> otherFormat = good;
    const std::string format = "kvscope fidelity reference";
    const auto at = std::search(otherFormat.begin(), otherFormat.end(), format.begin(), format.end());
    ASSERT_NE(at, otherFormat.end());
    *at = 'K';
    EXPECT_NE(
        refusal([&] { FidelityReference::parse(otherFormat, "f"); }).find("f is not a fidelity reference"),
        std::string::npos);

    // A token outside the vocabulary: the last I64 of the file is the last greedy token.
    std::vector<std::uint8_t> outside = good;
    const std::int64_t token = 3;
    std::memcpy(outside.data() + outside.size() - 8, &token, 8);
    EXPECT_NE(refusal([&] {
                  FidelityReference::parse(outside, "f");
              }).find("holds token 3, outside its vocabulary of 3"),
              std::string::npos);

    EXPECT_NE(refusal([] { FidelityReference::read(temporary("missing")); }).find("--save-reference"),
              std::string::npos);
}

TEST(FidelityReferenceTest, RefusesAReferenceMadeForOtherSettings) {
    const FidelityReference reference = sample();
    const FidelityReference::Origin origin = reference.origin;
    EXPECT_NO_THROW(reference.checkMadeFor(reference.prompt, 3, origin, "r"));

    EXPECT_EQ(
        refusal([&] {
            reference.checkMadeFor({1, 72, 101}, 3, origin, "r");
        }),
        "r was made for another prompt (4 tokens, not 3 tokens): give the settings it was made with, or make "
        "one for these with --save-reference FILE");
    EXPECT_NE(refusal([&] {
                  reference.checkMadeFor({1, 72, 101, 109}, 3, origin, "r");
              }).find("(4 tokens, not 4 tokens, other ones)"),
              std::string::npos);
    EXPECT_NE(refusal([&] {
                  reference.checkMadeFor(reference.prompt, 128, origin, "r");
              }).find("another number of tokens (--tokens 3, not --tokens 128)"),
              std::string::npos);
    FidelityReference::Origin other = origin;
    other.model = R"({"preset":"mistral"})";
    EXPECT_NE(refusal([&] { reference.checkMadeFor(reference.prompt, 3, other, "r"); }).find("another model"),
              std::string::npos);
    other = origin;
    other.weights = "fedcba9876543210";
    EXPECT_NE(refusal([&] {
                  reference.checkMadeFor(reference.prompt, 3, other, "r");
              }).find("another set of weights (digest 0123456789abcdef, not digest fedcba9876543210)"),
              std::string::npos);
    other = origin;
    other.cache = R"({"kind":"quantized"})";
    EXPECT_NE(refusal([&] { reference.checkMadeFor(reference.prompt, 3, other, "r"); }).find("another cache"),
              std::string::npos);
    other = origin;
    other.device = "cuda";
    EXPECT_NE(refusal([&] {
                  reference.checkMadeFor(reference.prompt, 3, other, "r");
              }).find("another device (cpu, not cuda)"),
              std::string::npos);
}

} // namespace
