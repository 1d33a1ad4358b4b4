// SPDX-License-Identifier: GPL-3.0-or-later
// Real weights in every block type real files use, written by llama.cpp itself (gguf_requantised.py: SmolLM2 cut
// to two layers, quantised by llama_model_quantize into five files holding Q2_K to Q6_K, Q4_0, Q5_0, Q5_1, Q8_0,
// IQ4_NL and IQ4_XS):
// kvscope reads each file as gguf-py does (every tensor info, and one tensor of each type dequantised bit for
// bit, with every kernel level this processor runs), and its logits at every prompt position equal
// Transformers' (gguf_file=) within 1e-4, its products going through the block kernels.
#include "GgufPyOracle.h"
#include "ModelTestHelpers.h"
#include "kvscope/cache/DynamicCache.h"
#include "kvscope/gguf/BlockType.h"
#include "kvscope/gguf/GgufFile.h"
#include "kvscope/model/ModelCache.h"
#include "kvscope/model/ModelLoader.h"

#include <ATen/ATen.h>
#include <algorithm>
#include <cstdlib>
#include <gtest/gtest.h>
#include <iostream>
#include <nlohmann/json.hpp>

using kvscope::gguf::BlockType;
using kvscope::gguf::KernelLevel;

namespace {

/// The files, made once for the tests below.
const std::filesystem::path& requantised() {
    static const kvscope::testing::TemporaryDirectory directory("kvscope-gguf-requantised");
    static const bool made = [] {
        const std::filesystem::path peers = std::filesystem::path(KVSCOPE_SOURCE_DIR) / "tests" / "peers";
        const std::string command = "'" + (peers / "peer-python.sh").string() + "' '" +
                                    (peers / "gguf_requantised.py").string() + "' '" + directory.path().string() + "'";
        const bool ran = std::system(command.c_str()) == 0;
        if (!ran) {
            ADD_FAILURE() << "the peers (gguf_requantised.py: llama.cpp, Transformers, gguf-py) failed: " << command;
        }
        return ran;
    }();
    (void)made;
    return directory.path();
}

/// Each ftype and the block types llama.cpp must have used in it (ffn_down's, 1536 wide, and the fallbacks of the
/// 576-wide rest).
const std::vector<std::pair<std::string, std::vector<std::string>>> kFtypes = {
    {"Q4_K_M", {"Q4_K", "Q6_K", "Q5_0", "Q8_0"}},
    {"Q5_K_M", {"Q5_K", "Q6_K", "Q5_1", "Q8_0"}},
    {"Q2_K", {"Q2_K", "Q4_0"}},
    {"Q3_K_M", {"Q3_K", "Q4_0"}},
    {"IQ4_XS", {"IQ4_XS", "IQ4_NL"}},
};

} // namespace

TEST(RequantisedPeerTest, LlamaCppsFilesReadAsGgufPyReadsThem) {
    const nlohmann::json record = kvscope::testing::ggufpy::readJson(requantised() / "requantised.json");
    const KernelLevel best = BlockType::supportedKernelLevel();
    for (const auto& [ftype, blockTypes] : kFtypes) {
        SCOPED_TRACE(ftype);
        const std::vector<std::string> types = record.at("ftypes").at(ftype).at("types").get<std::vector<std::string>>();
        for (const std::string& blockType : blockTypes) {
            EXPECT_NE(std::find(types.begin(), types.end(), blockType), types.end()) << "llama.cpp wrote no " << blockType;
        }
        const kvscope::gguf::GgufFile file(requantised() / (ftype + ".gguf"));
        const std::filesystem::path folder = requantised() / ftype;
        const nlohmann::json real = kvscope::testing::ggufpy::readJson(folder / "real.json");
        for (int level = 0; level <= static_cast<int>(best); ++level) {
            SCOPED_TRACE(BlockType::kernelLevelName(BlockType::useKernelLevel(static_cast<KernelLevel>(level))));
            kvscope::testing::ggufpy::expectAsGgufPy(file, real, folder / "real",
                                                     real.at("dequantised").get<std::vector<std::string>>());
        }
    }
    BlockType::useKernelLevel(best);
}

TEST(RequantisedPeerTest, EachFilesLogitsAreTransformers) {
    const nlohmann::json record = kvscope::testing::ggufpy::readJson(requantised() / "requantised.json");
    const std::vector<int64_t> prompt = record.at("prompt").get<std::vector<int64_t>>();
    for (const auto& [ftype, blockTypes] : kFtypes) {
        SCOPED_TRACE(ftype);
        const auto model = kvscope::model::ModelLoader::fromGguf(requantised() / (ftype + ".gguf"));
        const int64_t vocab = record.at("ftypes").at(ftype).at("vocab").get<int64_t>();
        const at::Tensor expected = kvscope::testing::readFloatRows(requantised() / (ftype + ".f32"), vocab);
        ASSERT_EQ(expected.size(0), static_cast<int64_t>(prompt.size()));
        // The prompt a token at a time, then all at once: the decode kernels and the prefill's widened slices.
        kvscope::model::ModelCache stepped(std::make_unique<kvscope::cache::DynamicCache>(model->config()));
        const at::Tensor ids = at::tensor(prompt, at::kLong).unsqueeze(0);
        const at::Tensor oneByOne = kvscope::testing::cachedLogits(*model, stepped, ids, 1)[0];
        kvscope::model::ModelCache whole(std::make_unique<kvscope::cache::DynamicCache>(model->config()));
        const at::Tensor atOnce = model->forward(ids, &whole)[0];
        double worst = 0.0;
        for (int64_t position = 0; position < expected.size(0); ++position) {
            for (const at::Tensor& ours : {oneByOne, atOnce}) {
                const double difference = kvscope::testing::maxAbsDifference(ours[position], expected[position]);
                worst = std::max(worst, difference);
                EXPECT_LE(difference, 1e-4) << "position " << position;
            }
        }
        std::cout << ftype << ": max |logit - Transformers| " << worst << "\n";
    }
}
