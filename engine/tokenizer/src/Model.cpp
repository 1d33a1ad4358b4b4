// SPDX-License-Identifier: GPL-3.0-or-later
#include "Model.h"

#include "BpeModel.h"
#include "ComponentJson.h"
#include "UnigramModel.h"

#include <nlohmann/json.hpp>

namespace kvscope::tokenizer {

std::unique_ptr<Model> Model::fromJson(const nlohmann::json& json) {
    if (!json.is_object()) {
        throw TokenizerError("model: expected a JSON object");
    }
    std::string type = json.contains("type") && json["type"].is_string() ? json["type"].get<std::string>() : "";
    if (type.empty()) {
        // Older files leave the type out; the keys tell BPE (merges) from Unigram (scored list).
        if (json.contains("merges")) {
            type = "BPE";
        } else if (json.contains("vocab") && json["vocab"].is_array()) {
            type = "Unigram";
        }
    }
    if (type == "BPE") {
        return std::make_unique<BpeModel>(json);
    }
    if (type == "Unigram") {
        return std::make_unique<UnigramModel>(json);
    }
    ComponentJson::refuse("model", "type", type.empty() ? "(none)" : type, "BPE, Unigram");
}

} // namespace kvscope::tokenizer
