// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/model/ModelError.h"
#include "kvscope/model/SafetensorsCheckpoint.h"
#include "kvscope/model/SafetensorsFile.h"

#include "ModelTestHelpers.h"
#include "SafetensorsTestWriter.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <fstream>

using kvscope::model::ModelError;
using kvscope::model::SafetensorsCheckpoint;
using kvscope::model::SafetensorsFile;
using kvscope::testing::SafetensorsTestWriter;
using kvscope::testing::TemporaryDirectory;

namespace {

std::map<std::string, at::Tensor> sampleTensors() {
    return {{"a.weight", at::arange(12, at::kFloat).view({3, 4}) / 7.0},
            {"b.bias", at::tensor({-1.5f, 0.25f, 3.0f})},
            {"c.scalar", at::full({}, 2.5f)}};
}

void writeRaw(const std::filesystem::path& path, uint64_t headerLength, const std::string& header,
              const std::string& data) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(&headerLength), 8);
    out << header << data;
}

std::string refusalInSafetensorsFile(const std::filesystem::path& path) {
    try {
        SafetensorsFile file(path);
    } catch (const ModelError& error) {
        return error.what();
    }
    return "";
}

} // namespace

TEST(SafetensorsFileTest, ReadsEveryDtypeAsAViewOfTheMapping) {
    TemporaryDirectory directory("kvscope-safetensors");
    for (at::ScalarType dtype : {at::kFloat, at::kHalf, at::kBFloat16}) {
        const auto path = directory.path() / (kvscope::model::SafetensorsWriter::dtypeName(dtype) + ".safetensors");
        kvscope::model::SafetensorsWriter::writeFile(path, sampleTensors(), dtype, {{"format", "pt"}});
        SafetensorsFile file(path);
        EXPECT_EQ(file.names(), (std::vector<std::string>{"a.weight", "b.bias", "c.scalar"}));
        EXPECT_EQ(file.metadata().at("format"), "pt");
        for (const auto& [name, expected] : sampleTensors()) {
            const at::Tensor tensor = file.tensor(name);
            EXPECT_EQ(tensor.scalar_type(), dtype) << name;
            EXPECT_EQ(file.dtypeName(name), kvscope::model::SafetensorsWriter::dtypeName(dtype));
            EXPECT_EQ(tensor.sizes(), expected.sizes()) << name;
            EXPECT_TRUE(tensor.to(at::kFloat).equal(expected.to(dtype).to(at::kFloat))) << name;
        }
    }
}

TEST(SafetensorsFileTest, TensorsOutliveTheFileObject) {
    TemporaryDirectory directory("kvscope-safetensors");
    const auto path = directory.path() / "model.safetensors";
    kvscope::model::SafetensorsWriter::writeFile(path, sampleTensors(), at::kFloat);
    at::Tensor kept;
    {
        SafetensorsFile file(path);
        kept = file.tensor("a.weight");
    }
    EXPECT_FLOAT_EQ(kept[2][3].item<float>(), 11.0f / 7.0f);
}

TEST(SafetensorsFileTest, RefusesDamagedFiles) {
    TemporaryDirectory directory("kvscope-safetensors");
    const auto path = directory.path() / "bad.safetensors";
    std::ofstream(path, std::ios::binary) << "abc";
    EXPECT_NE(refusalInSafetensorsFile(path).find("too short"), std::string::npos) << refusalInSafetensorsFile(path);
    writeRaw(path, 1000, "{}", "");
    EXPECT_NE(refusalInSafetensorsFile(path).find("1000-byte header"), std::string::npos) << refusalInSafetensorsFile(path);
    writeRaw(path, 5, "{nope", "");
    EXPECT_NE(refusalInSafetensorsFile(path).find("not valid JSON"), std::string::npos) << refusalInSafetensorsFile(path);
    std::string header = R"({"x": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}})";
    writeRaw(path, header.size(), header, std::string(8, '\0'));
    EXPECT_NE(refusalInSafetensorsFile(path).find("allowed: F32, F16, BF16"), std::string::npos) << refusalInSafetensorsFile(path);
    header = R"({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})";
    writeRaw(path, header.size(), header, std::string(8, '\0'));
    EXPECT_NE(refusalInSafetensorsFile(path).find("truncated"), std::string::npos) << refusalInSafetensorsFile(path);
    header = R"({"x": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})";
    writeRaw(path, header.size(), header, std::string(8, '\0'));
    EXPECT_NE(refusalInSafetensorsFile(path).find("need 12"), std::string::npos) << refusalInSafetensorsFile(path);
    header = R"({"x": {"dtype": "F32", "shape": [2]}})";
    writeRaw(path, header.size(), header, std::string(8, '\0'));
    EXPECT_NE(refusalInSafetensorsFile(path).find("data_offsets"), std::string::npos) << refusalInSafetensorsFile(path);
    EXPECT_NE(refusalInSafetensorsFile(directory.path() / "missing.safetensors").find("cannot open"), std::string::npos);
}

TEST(SafetensorsFileTest, CheckpointReadsShardsThroughTheIndex) {
    TemporaryDirectory directory("kvscope-checkpoint");
    SafetensorsTestWriter::writeCheckpoint(directory.path(), {{"model_type", "llama"}}, sampleTensors(), at::kBFloat16, 2);
    SafetensorsCheckpoint checkpoint(directory.path());
    EXPECT_EQ(checkpoint.fileCount(), 2u);
    EXPECT_EQ(checkpoint.names().size(), 3u);
    EXPECT_EQ(checkpoint.dtypes(), std::vector<std::string>{"BF16"});
    EXPECT_TRUE(checkpoint.tensor("b.bias").to(at::kFloat).equal(at::tensor({-1.5f, 0.25f, 3.0f})));
    EXPECT_THROW(checkpoint.tensor("nope"), ModelError);
}

TEST(SafetensorsFileTest, CheckpointRefusals) {
    TemporaryDirectory directory("kvscope-checkpoint");
    auto message = [](const std::filesystem::path& path) -> std::string {
        try {
            SafetensorsCheckpoint checkpoint(path);
        } catch (const ModelError& error) {
            return error.what();
        }
        return "";
    };
    EXPECT_NE(message(directory.path() / "absent").find("not a directory"), std::string::npos);
    EXPECT_NE(message(directory.path()).find("no *.safetensors"), std::string::npos);
    // The same tensor in two files without an index.
    kvscope::model::SafetensorsWriter::writeFile(directory.path() / "one.safetensors", sampleTensors(), at::kFloat);
    kvscope::model::SafetensorsWriter::writeFile(directory.path() / "two.safetensors", sampleTensors(), at::kFloat);
    EXPECT_NE(message(directory.path()).find("in two files"), std::string::npos) << message(directory.path());
    // An index that places a tensor in a file that lacks it.
    std::ofstream(directory.path() / "model.safetensors.index.json")
        << R"({"weight_map": {"a.weight": "one.safetensors", "z": "one.safetensors"}})";
    EXPECT_NE(message(directory.path()).find("`z`"), std::string::npos) << message(directory.path());
}
