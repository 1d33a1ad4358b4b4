// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/runtime/ModelSource.h"

#include "kvscope/config/ModelConfig.h"
#include "kvscope/model/LanguageModel.h"
#include "kvscope/model/ModelLoader.h"
#include "kvscope/runtime/ByteTextCodec.h"
#include "kvscope/runtime/GenerationError.h"
#include "kvscope/runtime/HuggingFaceTextCodec.h"
#include "kvscope/config/ModelFileLocator.h"
#include "kvscope/runtime/PresetCatalog.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace kvscope::runtime {

namespace {

/// The tokenizer at `path` for a model of `vocabulary` ids; refused when the tokenizer has more ids.
std::unique_ptr<TextCodec> pairedTokenizer(const std::string& path, std::int64_t vocabulary) {
    auto text = HuggingFaceTextCodec::fromPath(path);
    if (text->vocabSize() > vocabulary) {
        throw GenerationError("the tokenizer of " + path + " has " + std::to_string(text->vocabSize()) +
                              " ids but the model's vocabulary has " + std::to_string(vocabulary) +
                              ": they do not belong together");
    }
    return text;
}

} // namespace

ModelSource::Loaded ModelSource::load(const config::RunSettings& settings, const at::Device& device) {
    Loaded loaded;
    if (!settings.modelFile.empty()) {
        const std::filesystem::path file = config::ModelFileLocator::resolve(settings.modelFile);
        // The tokenizer first: building it takes several times its vocabulary's size for a while (Gemma 3's
        // 262144 pieces), and the model's arrays then reuse that memory instead of adding to it.
        loaded.text = HuggingFaceTextCodec::fromGguf(file);
        loaded.model = model::ModelLoader::fromGguf(file, device, settings.ggufWeights);
        loaded.name = file.string();
        loaded.source = {{"model", loaded.name}};
    } else if (!settings.checkpointDir.empty()) {
        loaded.model = model::ModelLoader::fromCheckpoint(settings.checkpointDir, device);
        loaded.name = settings.checkpointDir;
        loaded.source = {{"checkpoint", loaded.name}};
        if (HuggingFaceTextCodec::folderHasTokenizer(settings.checkpointDir)) {
            loaded.text = pairedTokenizer(settings.checkpointDir, loaded.model->architecture().vocabSize());
        }
    } else {
        const std::uint64_t seed = settings.weightSeed.value_or(0);
        if (!settings.configPath.empty()) {
            loaded.model = model::ModelLoader::builtin(config::ModelConfig::fromFile(settings.configPath), seed, device);
            loaded.name = settings.configPath;
            loaded.source = {{"config", loaded.name}, {"weight_seed", seed}};
        } else {
            const PresetCatalog catalog;
            loaded.name = settings.preset.empty() ? PresetCatalog::defaultPreset() : settings.preset;
            const std::filesystem::path trained = catalog.weightsPath(loaded.name);
            if (!settings.weightSeed && !trained.empty()) {
                loaded.model = model::ModelLoader::fromWeightsFile(catalog.load(loaded.name), trained, device);
                loaded.source = {{"preset", loaded.name}, {"weights", trained.filename().string()}};
            } else {
                loaded.model = model::ModelLoader::builtin(catalog.load(loaded.name), seed, device);
                loaded.source = {{"preset", loaded.name}, {"weight_seed", seed}};
            }
        }
        if (!settings.tokenizerPath.empty()) {
            loaded.text = pairedTokenizer(settings.tokenizerPath, loaded.model->architecture().vocabSize());
            loaded.source["tokenizer"] = settings.tokenizerPath;
        }
    }
    if (!loaded.text) {
        loaded.text = std::make_unique<ByteTextCodec>();
    }
#if defined(__GLIBC__)
    // What loading freed (parsed metadata, a tokenizer's intermediate JSON) goes back to the system: glibc keeps
    // freed heap pages otherwise (about 100 MB after Gemma 3's 262144-piece tokenizer) for the whole session.
    ::malloc_trim(0);
#endif
    return loaded;
}

} // namespace kvscope::runtime
