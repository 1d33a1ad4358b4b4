// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/paged/Workload.h"

#include "kvscope/paged/PagedError.h"

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace kvscope::paged {

namespace {

using nlohmann::json;

constexpr const char* kRequestFields =
    "id, arrival_step, prompt, prompt_ids, max_tokens, ignore_eos, cache_salt";

std::string typeName(const json& value) {
    return std::string(value.type_name());
}

[[noreturn]] void fail(const std::string& source, const std::string& message) {
    throw PagedError(source + ": " + message);
}

std::int64_t integerField(const std::string& source, const std::string& where, const json& object,
                          const char* key, std::int64_t fallback, std::int64_t minimum, const char* example) {
    const auto it = object.find(key);
    if (it == object.end())
        return fallback;
    if (!it->is_number_integer())
        fail(source, where + " \"" + key + "\" is " + typeName(*it) + ": it must be an integer >= " +
                         std::to_string(minimum) + ", e.g. \"" + key + "\": " + example);
    if (it->is_number_unsigned() &&
        it->get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        fail(source, where + " \"" + key + "\" is too large: it must be an integer >= " +
                         std::to_string(minimum) + " that fits 64 bits");
    const auto value = it->get<std::int64_t>();
    if (value < minimum)
        fail(source, where + " \"" + key + "\" is " + std::to_string(value) +
                         ": it must be >= " + std::to_string(minimum) + ", e.g. \"" + key + "\": " + example);
    return value;
}

WorkloadRequest parseRequest(const std::string& source, const json& item, std::size_t index,
                             std::set<std::string>& ids) {
    std::string where = "request " + std::to_string(index);
    if (!item.is_object())
        fail(source, where + " is " + typeName(item) +
                         ": each request is an object such as {\"id\": \"r0\", "
                         "\"prompt\": \"Hello\", \"max_tokens\": 16}");
    for (const auto& [key, value] : item.items()) {
        static const std::set<std::string> known{"id",         "arrival_step", "prompt",    "prompt_ids",
                                                 "max_tokens", "ignore_eos",   "cache_salt"};
        if (!known.contains(key))
            fail(source,
                 where + " has an unknown field \"" + key + "\": allowed fields are " + kRequestFields);
    }
    WorkloadRequest request;
    const auto id = item.find("id");
    if (id == item.end() || !id->is_string() || id->get<std::string>().empty())
        fail(source, where + " needs an \"id\": a non-empty string naming it, e.g. \"id\": \"r" +
                         std::to_string(index) + "\"");
    request.id = id->get<std::string>();
    where = "request '" + request.id + "'";
    if (!ids.insert(request.id).second)
        fail(source, where + " appears twice: every request needs its own \"id\"");
    request.arrivalStep = integerField(source, where, item, "arrival_step", 0, 0, "0");
    request.maxTokens = integerField(source, where, item, "max_tokens", 16, 1, "16");

    const auto prompt = item.find("prompt");
    const auto promptIds = item.find("prompt_ids");
    if ((prompt == item.end()) == (promptIds == item.end()))
        fail(source,
             where + (prompt == item.end() ? " has no prompt" : " has both \"prompt\" and \"prompt_ids\"") +
                 ": give exactly one, \"prompt\": \"text\" or \"prompt_ids\": [1, 2, 3]");
    if (prompt != item.end()) {
        if (!prompt->is_string() || prompt->get<std::string>().empty())
            fail(source, where + " \"prompt\" must be a non-empty string, e.g. \"prompt\": \"Hello\"");
        request.prompt = prompt->get<std::string>();
    } else {
        if (!promptIds->is_array() || promptIds->empty())
            fail(source, where +
                             " \"prompt_ids\" must be a non-empty array of token ids, e.g. \"prompt_ids\": "
                             "[1, 2, 3]");
        request.promptIds.reserve(promptIds->size());
        for (std::size_t i = 0; i < promptIds->size(); ++i) {
            const json& token = (*promptIds)[i];
            if (!token.is_number_integer() ||
                (token.is_number_unsigned() &&
                 token.get<std::uint64_t>() > std::numeric_limits<std::int32_t>::max()) ||
                (!token.is_number_unsigned() &&
                 (token.get<std::int64_t>() < 0 ||
                  token.get<std::int64_t>() > std::numeric_limits<std::int32_t>::max())))
                fail(source, where + " \"prompt_ids\"[" + std::to_string(i) + "] is " + token.dump() +
                                 ": token ids are integers 0..2147483647");
            request.promptIds.push_back(token.get<std::int64_t>());
        }
    }
    if (const auto ignoreEos = item.find("ignore_eos"); ignoreEos != item.end()) {
        if (!ignoreEos->is_boolean())
            fail(source, where + " \"ignore_eos\" is " + typeName(*ignoreEos) + ": it must be true or false");
        request.ignoreEos = ignoreEos->get<bool>();
    }
    if (const auto salt = item.find("cache_salt"); salt != item.end()) {
        if (!salt->is_string())
            fail(source, where + " \"cache_salt\" is " + typeName(*salt) +
                             ": it must be a string (requests share cached prefixes only with equal salts)");
        request.cacheSalt = salt->get<std::string>();
    }
    return request;
}

/// An integer of the "pool" object in [1, maximum]; nullopt when absent.
std::optional<std::int64_t> poolField(const std::string& source, const json& pool, const char* key,
                                      std::int64_t maximum, const char* example) {
    const auto it = pool.find(key);
    if (it == pool.end())
        return std::nullopt;
    const std::string range = "an integer from 1 to " + std::to_string(maximum);
    if (!it->is_number_integer())
        fail(source, "\"pool\" \"" + std::string(key) + "\" is " + typeName(*it) + ": it must be " + range +
                         ", e.g. \"" + key + "\": " + example);
    const bool inRange =
        it->is_number_unsigned()
            ? it->get<std::uint64_t>() >= 1 && it->get<std::uint64_t>() <= static_cast<std::uint64_t>(maximum)
            : it->get<std::int64_t>() >= 1 && it->get<std::int64_t>() <= maximum;
    if (!inRange)
        fail(source, "\"pool\" \"" + std::string(key) + "\" is " + it->dump() + ": it must be " + range +
                         ", e.g. \"" + key + "\": " + example);
    return it->get<std::int64_t>();
}

WorkloadPool parsePool(const std::string& source, const json& pool) {
    static constexpr const char* kPoolFields = "block_size, num_blocks, max_num_batched_tokens, max_num_seqs";
    if (!pool.is_object())
        fail(source,
             "\"pool\" is " + typeName(pool) +
                 ": it is the pool the workload suggests, an object such as {\"num_blocks\": 28} (fields " +
                 kPoolFields + ")");
    for (const auto& [key, value] : pool.items()) {
        static const std::set<std::string> known{"block_size", "num_blocks", "max_num_batched_tokens",
                                                 "max_num_seqs"};
        if (!known.contains(key))
            fail(source, "\"pool\" has an unknown field \"" + key + "\": allowed fields are " + kPoolFields);
    }
    WorkloadPool result;
    result.blockSize = poolField(source, pool, "block_size", WorkloadPool::kMaxBlockSize, "16");
    if (const auto blocks = poolField(source, pool, "num_blocks", WorkloadPool::kMaxNumBlocks, "28"))
        result.numBlocks = static_cast<std::int32_t>(*blocks);
    result.maxNumBatchedTokens =
        poolField(source, pool, "max_num_batched_tokens", WorkloadPool::kMaxNumBatchedTokens, "256");
    if (const auto seqs = poolField(source, pool, "max_num_seqs", WorkloadPool::kMaxNumSeqs, "8"))
        result.maxNumSeqs = static_cast<std::int32_t>(*seqs);
    return result;
}

} // namespace

Workload Workload::parse(std::string_view text, const std::string& source) {
    const json document = json::parse(text, nullptr, false);
    if (document.is_discarded())
        fail(source,
             "is not valid JSON: a workload is {\"requests\": [{\"id\": \"r0\", \"prompt\": \"Hello\"}]}");
    if (!document.is_object())
        fail(source, "holds " + typeName(document) + ": a workload is an object {\"requests\": [...]}");
    for (const auto& [key, value] : document.items()) {
        if (key != "requests" && key != "description" && key != "pool")
            fail(source,
                 "has an unknown field \"" + key + "\": allowed fields are requests, description, pool");
    }
    Workload workload;
    if (const auto description = document.find("description"); description != document.end()) {
        if (!description->is_string())
            fail(source, "\"description\" is " + typeName(*description) + ": it must be a string");
        workload.description = description->get<std::string>();
    }
    if (const auto pool = document.find("pool"); pool != document.end())
        workload.pool = parsePool(source, *pool);
    const auto requests = document.find("requests");
    if (requests == document.end() || !requests->is_array() || requests->empty())
        fail(source,
             "needs \"requests\": a non-empty array such as [{\"id\": \"r0\", \"prompt\": \"Hello\"}]");
    std::set<std::string> ids;
    workload.requests.reserve(requests->size());
    for (std::size_t i = 0; i < requests->size(); ++i)
        workload.requests.push_back(parseRequest(source, (*requests)[i], i, ids));
    return workload;
}

Workload Workload::load(const std::filesystem::path& path) {
    std::ifstream file(path, std::ios::binary);
    if (!file)
        throw PagedError("cannot open workload file " + path.string() +
                         ": check the path, or name a built-in workload");
    std::ostringstream text;
    text << file.rdbuf();
    return parse(text.str(), path.string());
}

} // namespace kvscope::paged
