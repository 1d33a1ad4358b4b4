// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/trace/SessionMetadata.h"

#include "kvscope/trace/SessionError.h"

#include <gtest/gtest.h>

using namespace kvscope::trace;

TEST(SessionMetadataTest, RoundTripsEveryField) {
    SessionMetadata metadata;
    metadata.kvscopeVersion = "0.3.0";
    metadata.model = "gemma3";
    metadata.modelConfigJson = R"({"hidden_size":64,"layer_types":["sliding_attention","full_attention"]})";
    metadata.cacheKind = "quantized";
    metadata.cacheSettingsJson = R"({"backend":"hqq","nbits":4})";
    metadata.device = "cuda:0";
    metadata.seed = 18446744073709551615ULL;
    metadata.prompt = "Once upon a time \"quoted\"\n";
    metadata.createdUnixNs = 1'764'460'800'000'000'000;
    metadata.attentionChunkSizes = {0, 8192};
    metadata.tokenizer = "tokenizer.json of /models/llama3";
    metadata.promptPieces = {"<|begin_of_text|>", "Once", " upon", " é"};
    const SessionMetadata back = SessionMetadata::fromJson(metadata.toJson());
    EXPECT_EQ(back.kvscopeVersion, metadata.kvscopeVersion);
    EXPECT_EQ(back.seed, metadata.seed);
    EXPECT_EQ(back.prompt, metadata.prompt);
    EXPECT_EQ(back.device, "cuda:0");
    EXPECT_EQ(back.attentionChunkSizes, (std::vector<std::int64_t>{0, 8192}));
    EXPECT_EQ(back.tokenizer, metadata.tokenizer);
    EXPECT_EQ(back.promptPieces, metadata.promptPieces);
    EXPECT_EQ(SessionMetadata::fromJson(back.toJson()), back);
    EXPECT_NE(back.modelConfigJson.find("\"layer_types\""), std::string::npos);
}

TEST(SessionMetadataTest, MissingAndUnknownKeysAreTolerated) {
    const SessionMetadata metadata = SessionMetadata::fromJson(R"({"model":"llama","from_the_future":[1,2]})");
    EXPECT_EQ(metadata.model, "llama");
    EXPECT_EQ(metadata.device, "cpu");
    EXPECT_EQ(metadata.modelConfigJson, "{}");
}

TEST(SessionMetadataTest, WrongTypesAreRefusedNamingTheField) {
    for (const char* json : {R"({"seed":"seven"})", R"({"model":3})", R"({"model_config":[1]})", "[1,2]", "{",
                             R"({"attention_chunk_sizes":[1,"x"]})", R"({"attention_chunk_sizes":4})",
                             R"({"prompt_pieces":[1]})", R"({"tokenizer":7})"}) {
        try {
            SessionMetadata::fromJson(json);
            FAIL() << json;
        } catch (const SessionError& error) {
            EXPECT_NE(std::string(error.what()).find("metadata"), std::string::npos) << error.what();
        }
    }
    try {
        SessionMetadata::fromJson(R"({"seed":-1})");
        FAIL();
    } catch (const SessionError& error) {
        EXPECT_NE(std::string(error.what()).find("\"seed\""), std::string::npos) << error.what();
    }
}

TEST(SessionMetadataTest, RefusesConfigTextThatIsNotAnObject) {
    SessionMetadata metadata;
    metadata.modelConfigJson = "not json";
    EXPECT_THROW(metadata.toJson(), SessionError);
}

// Format 1.0 files have no attention_chunk_sizes: the reader takes them from the model config, as the
// mask view once did, so chunked layers still show as chunked.
TEST(SessionMetadataTest, ChunkSizesOfFormat10FilesComeFromTheModelConfig) {
    const SessionMetadata plain = SessionMetadata::fromJson(
        R"({"model_config":{"layer_types":["chunked_attention","full_attention"],"attention_chunk_size":8}})");
    EXPECT_EQ(plain.attentionChunkSizes, (std::vector<std::int64_t>{8, 0}));
    const SessionMetadata multimodal = SessionMetadata::fromJson(
        R"({"model_config":{"text_config":{"layer_types":["full_attention","chunked_attention"],"attention_chunk_size":4}}})");
    EXPECT_EQ(multimodal.attentionChunkSizes, (std::vector<std::int64_t>{0, 4}));
    EXPECT_TRUE(SessionMetadata::fromJson(R"({"model_config":{"layer_types":["full_attention"]}})")
                    .attentionChunkSizes.empty())
        << "no chunk size, no chunked layer";
    const SessionMetadata recorded = SessionMetadata::fromJson(
        R"({"attention_chunk_sizes":[0,0],"model_config":{"layer_types":["chunked_attention"],"attention_chunk_size":8}})");
    EXPECT_EQ(recorded.attentionChunkSizes, (std::vector<std::int64_t>{0, 0})) << "a 1.1 record wins";
}
