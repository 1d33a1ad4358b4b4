// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/runtime/FidelityReference.h"

#include "kvscope/model/ModelError.h"
#include "kvscope/model/SafetensorsHeader.h"
#include "kvscope/runtime/GenerationError.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <system_error>

namespace kvscope::runtime {

namespace {

constexpr const char* kFormat = "kvscope fidelity reference";
constexpr const char* kVersion = "1";
constexpr const char* kRemake = "make one with kvscope-cli fidelity --save-reference FILE";

/// `name`'s values, checked to be `dtype` of `rank` dimensions (8-byte elements, little-endian).
template <typename Value>
std::vector<Value> valuesOf(const model::SafetensorsHeader& header, std::span<const std::uint8_t> file,
                            const std::string& name, const char* dtype, std::size_t rank,
                            const std::string& where) {
    const auto found = header.entries().find(name);
    if (found == header.entries().end()) {
        throw GenerationError(where + " has no tensor `" + name + "`: it is not a fidelity reference (" +
                              kRemake + ")");
    }
    const model::SafetensorsHeader::Entry& entry = found->second;
    if (entry.dtype != dtype || entry.shape.size() != rank) {
        throw GenerationError(where + ": tensor `" + name + "` must be " + dtype + " of " +
                              std::to_string(rank) + " dimension(s), not " + entry.dtype + " of " +
                              std::to_string(entry.shape.size()) + " (" + kRemake + ")");
    }
    // SafetensorsHeader checked that [begin, end) lies in the data section and is the shape's size.
    std::vector<Value> values((entry.end - entry.begin) / sizeof(Value));
    if (!values.empty()) {
        std::memcpy(values.data(), file.data() + header.dataStart() + entry.begin,
                    values.size() * sizeof(Value));
    }
    return values;
}

std::string metadataOf(const model::SafetensorsHeader& header, const std::string& key,
                       const std::string& where) {
    const auto found = header.metadata().find(key);
    if (found == header.metadata().end()) {
        throw GenerationError(where + " names no `" + key + "` in its metadata (" + kRemake + ")");
    }
    return found->second;
}

std::string countOf(std::size_t count, const std::string& what) {
    return std::to_string(count) + " " + what;
}

} // namespace

std::span<const double> FidelityReference::row(std::size_t token) const {
    return {logProbabilities.data() + token * static_cast<std::size_t>(vocab),
            static_cast<std::size_t>(vocab)};
}

FidelityReference FidelityReference::parse(std::span<const std::uint8_t> file, const std::string& where) {
    model::SafetensorsHeader header;
    try {
        header = model::SafetensorsHeader::parse(file, where, {{"F64", 8}, {"I64", 8}});
    } catch (const model::ModelError& error) {
        throw GenerationError(std::string(error.what()) + " (" + kRemake + ")");
    }
    const auto format = header.metadata().find("format");
    if (format == header.metadata().end() || format->second != kFormat) {
        throw GenerationError(where + " is not a fidelity reference (its metadata has no format \"" +
                              kFormat + "\"): " + kRemake);
    }
    if (metadataOf(header, "version", where) != kVersion) {
        throw GenerationError(where + " is a fidelity reference of version " +
                              metadataOf(header, "version", where) + "; this kvscope reads version " +
                              kVersion + ": " + kRemake);
    }
    FidelityReference reference;
    reference.origin = {metadataOf(header, "model", where), metadataOf(header, "weights", where),
                        metadataOf(header, "cache", where), metadataOf(header, "device", where)};
    reference.prompt = valuesOf<std::int64_t>(header, file, "prompt", "I64", 1, where);
    reference.tokens = valuesOf<std::int64_t>(header, file, "tokens", "I64", 1, where);
    reference.logProbabilities = valuesOf<double>(header, file, "log_probabilities", "F64", 2, where);
    const std::vector<std::int64_t>& shape = header.entries().at("log_probabilities").shape;
    reference.vocab = shape[1];
    if (reference.prompt.empty() || reference.tokens.empty() || reference.vocab < 1) {
        throw GenerationError(where + " holds an empty prompt, no tokens or an empty vocabulary (" + kRemake +
                              ")");
    }
    if (shape[0] != static_cast<std::int64_t>(reference.tokens.size())) {
        throw GenerationError(where + " holds " + countOf(reference.tokens.size(), "tokens") + " but " +
                              std::to_string(shape[0]) +
                              " rows of log-probabilities; it needs one per token (" + kRemake + ")");
    }
    for (const std::int64_t token : reference.tokens) {
        if (token < 0 || token >= reference.vocab) {
            throw GenerationError(where + " holds token " + std::to_string(token) +
                                  ", outside its vocabulary of " + std::to_string(reference.vocab) + " (" +
                                  kRemake + ")");
        }
    }
    return reference;
}

FidelityReference FidelityReference::read(const std::filesystem::path& path) {
    const std::string where = "fidelity reference `" + path.string() + "`";
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw GenerationError("cannot open " + where +
                              " (make it with kvscope-cli fidelity --save-reference " + path.string() + ")");
    }
    const std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>(in),
                                          std::istreambuf_iterator<char>()};
    return parse(bytes, where);
}

void FidelityReference::write(const std::filesystem::path& path) const {
    const std::map<std::string, std::string> metadata = {{"format", kFormat},     {"version", kVersion},
                                                         {"model", origin.model}, {"weights", origin.weights},
                                                         {"cache", origin.cache}, {"device", origin.device}};
    struct Tensor {
        const char* name;
        const char* dtype;
        std::vector<std::int64_t> shape;
        const void* data;
        std::uint64_t bytes;
    };
    // Data in name order, as safetensors writers lay it out.
    const std::vector<Tensor> tensors = {{"log_probabilities",
                                          "F64",
                                          {static_cast<std::int64_t>(tokens.size()), vocab},
                                          logProbabilities.data(),
                                          logProbabilities.size() * sizeof(double)},
                                         {"prompt",
                                          "I64",
                                          {static_cast<std::int64_t>(prompt.size())},
                                          prompt.data(),
                                          prompt.size() * sizeof(std::int64_t)},
                                         {"tokens",
                                          "I64",
                                          {static_cast<std::int64_t>(tokens.size())},
                                          tokens.data(),
                                          tokens.size() * sizeof(std::int64_t)}};
    nlohmann::json header = {{"__metadata__", metadata}};
    std::uint64_t offset = 0;
    for (const Tensor& tensor : tensors) {
        header[tensor.name] = {{"dtype", tensor.dtype},
                               {"shape", tensor.shape},
                               {"data_offsets", {offset, offset + tensor.bytes}}};
        offset += tensor.bytes;
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' '); // 8-byte aligned data, as the safetensors library pads
    std::filesystem::path partial = path;
    partial += ".partial";
    {
        std::ofstream out(partial, std::ios::binary | std::ios::trunc);
        const std::uint64_t length = text.size(); // little-endian on every platform kvscope runs on
        out.write(reinterpret_cast<const char*>(&length), 8);
        out.write(text.data(), static_cast<std::streamsize>(text.size()));
        for (const Tensor& tensor : tensors) {
            out.write(static_cast<const char*>(tensor.data), static_cast<std::streamsize>(tensor.bytes));
        }
        if (!out.flush()) {
            throw GenerationError("cannot write `" + partial.string() +
                                  "` (is the folder writable and the disk not full?)");
        }
    }
    std::error_code error;
    std::filesystem::rename(partial, path, error);
    if (error) {
        throw GenerationError("cannot rename `" + partial.string() + "` to `" + path.string() +
                              "`: " + error.message());
    }
}

void FidelityReference::checkMadeFor(const std::vector<std::int64_t>& expectedPrompt,
                                     std::int64_t expectedTokens, const Origin& expected,
                                     const std::string& where) const {
    const std::string fix =
        ": give the settings it was made with, or make one for these with --save-reference FILE";
    const auto refuse = [&](const std::string& what, const std::string& made, const std::string& given) {
        throw GenerationError(where + " was made for another " + what + " (" + made + ", not " + given + ")" +
                              fix);
    };
    if (origin.model != expected.model) {
        refuse("model", origin.model, expected.model);
    }
    if (origin.weights != expected.weights) {
        refuse("set of weights", "digest " + origin.weights, "digest " + expected.weights);
    }
    if (prompt != expectedPrompt) {
        refuse("prompt", countOf(prompt.size(), "tokens"),
               countOf(expectedPrompt.size(), "tokens") +
                   (prompt.size() == expectedPrompt.size() ? ", other ones" : ""));
    }
    if (static_cast<std::int64_t>(tokens.size()) != expectedTokens) {
        refuse("number of tokens", "--tokens " + std::to_string(tokens.size()),
               "--tokens " + std::to_string(expectedTokens));
    }
    if (origin.cache != expected.cache) {
        refuse("cache", origin.cache, expected.cache);
    }
    if (origin.device != expected.device) {
        refuse("device", origin.device, expected.device);
    }
}

} // namespace kvscope::runtime
