// SPDX-License-Identifier: GPL-3.0-or-later
#include "SentencePieceModel.h"

#include "kvscope/config/AddressSanitizer.h"
#include "kvscope/tokenizer/TokenizerError.h"

#include <dlfcn.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

namespace kvscope::tokenizer {

namespace {

using PieceCallback = void (*)(void*, int, const char*, std::size_t, std::uint32_t, std::uint32_t);

} // namespace

struct SentencePieceModel::Module {
    void* (*load)(const char*, char*, std::size_t) = nullptr;
    void (*free)(void*) = nullptr;
    int (*encode)(void*, const char*, std::size_t, PieceCallback, void*) = nullptr;
    char* (*decode)(void*, const int*, std::size_t, std::size_t*) = nullptr;
    void (*freeString)(char*) = nullptr;
    int (*pieceToId)(void*, const char*, std::size_t) = nullptr;
    std::size_t (*idToPiece)(void*, int, char*, std::size_t) = nullptr;
    int (*info)(void*, int) = nullptr;
    int (*isControl)(void*, int) = nullptr;

    // Loaded once per process and kept: the module is tiny and unloading C++ code is fragile.
    static const Module& instance() {
        static std::once_flag once;
        static Module module;
        static std::string error;
        std::call_once(once, [] {
            void* library = nullptr;
            std::string tried;
            // The build tree's module, then an installed one beside the program (<prefix>/bin/kvscope
            // loads <prefix>/<libdir>/kvscope/libkvscope_sentencepiece.so), then the loader's search path.
            std::error_code noExecutable;
            const std::string installed =
                (std::filesystem::read_symlink("/proc/self/exe", noExecutable).parent_path().parent_path() /
                 KVSCOPE_SENTENCEPIECE_INSTALLED)
                    .string();
            for (const char* path : {KVSCOPE_SENTENCEPIECE_MODULE, installed.c_str(), "libkvscope_sentencepiece.so"}) {
#ifdef KVSCOPE_ASAN
                // AddressSanitizer refuses RTLD_DEEPBIND, and without it the module's libsentencepiece
                // binds to LibTorch's libprotobuf (a FATAL version check). A link-map namespace of its own
                // keeps the two apart as well; the module is built without sanitizers for it (the
                // sanitizer runtime lives in the main namespace only: engine/tokenizer/CMakeLists.txt).
                library = dlmopen(LM_ID_NEWLM, path, RTLD_NOW | RTLD_LOCAL);
#else
                // Its own (bundled) protobuf first: LibTorch's libprotobuf may already be in the process.
                library = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
#endif
                if (library != nullptr) {
                    break;
                }
                tried += std::string("\n  ") + dlerror();
            }
            if (library == nullptr) {
                error = "SentencePiece: cannot load the kvscope_sentencepiece module:" + tried;
                return;
            }
            const auto symbol = [&](auto& function, const char* name) {
                function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(dlsym(library, name));
                if (function == nullptr && error.empty()) {
                    error = std::string("SentencePiece: the module lacks ") + name;
                }
            };
            symbol(module.load, "kvscope_spm_load");
            symbol(module.free, "kvscope_spm_free");
            symbol(module.encode, "kvscope_spm_encode");
            symbol(module.decode, "kvscope_spm_decode");
            symbol(module.freeString, "kvscope_spm_free_string");
            symbol(module.pieceToId, "kvscope_spm_piece_to_id");
            symbol(module.idToPiece, "kvscope_spm_id_to_piece");
            symbol(module.info, "kvscope_spm_info");
            symbol(module.isControl, "kvscope_spm_is_control");
        });
        if (!error.empty()) {
            throw TokenizerError(error);
        }
        return module;
    }
};

SentencePieceModel::SentencePieceModel(const std::filesystem::path& modelFile) : m_module(Module::instance()) {
    char error[512] = {};
    m_handle = m_module.load(modelFile.c_str(), error, sizeof error);
    if (m_handle == nullptr) {
        throw TokenizerError("SentencePiece model " + modelFile.string() + ": " + error);
    }
}

SentencePieceModel::~SentencePieceModel() { m_module.free(m_handle); }

Encoding SentencePieceModel::encode(std::string_view text) const {
    Encoding encoding;
    m_module.encode(
        m_handle, text.data(), text.size(),
        [](void* context, int id, const char* piece, std::size_t length, std::uint32_t begin, std::uint32_t end) {
            auto* out = static_cast<Encoding*>(context);
            out->ids.push_back(id);
            out->tokens.emplace_back(piece, length);
            out->offsets.emplace_back(begin, end);
        },
        &encoding);
    return encoding;
}

std::string SentencePieceModel::decode(std::span<const std::int32_t> ids) const {
    const int size = m_module.info(m_handle, 0);
    for (const std::int32_t id : ids) {
        if (id < 0 || id >= size) {
            throw TokenizerError("SentencePiece: id " + std::to_string(id) + " is outside the vocabulary of " +
                                 std::to_string(size));
        }
    }
    const std::vector<int> values(ids.begin(), ids.end());
    std::size_t length = 0;
    char* text = m_module.decode(m_handle, values.data(), values.size(), &length);
    std::string out(text, length);
    m_module.freeString(text);
    return out;
}

std::optional<std::int32_t> SentencePieceModel::pieceToId(std::string_view piece) const {
    const int id = m_module.pieceToId(m_handle, piece.data(), piece.size());
    return id >= 0 ? std::optional<std::int32_t>(id) : std::nullopt;
}

std::optional<std::string> SentencePieceModel::idToPiece(std::int32_t id) const {
    if (id < 0 || id >= m_module.info(m_handle, 0)) {
        return std::nullopt;
    }
    std::string piece(64, '\0');
    const std::size_t length = m_module.idToPiece(m_handle, id, piece.data(), piece.size());
    if (length > piece.size()) {
        piece.resize(length);
        m_module.idToPiece(m_handle, id, piece.data(), piece.size());
    }
    piece.resize(length);
    return piece;
}

std::size_t SentencePieceModel::vocabSize() const { return static_cast<std::size_t>(m_module.info(m_handle, 0)); }

std::optional<std::int32_t> SentencePieceModel::bosId() const {
    const int id = m_module.info(m_handle, 1);
    return id >= 0 ? std::optional<std::int32_t>(id) : std::nullopt;
}

std::optional<std::int32_t> SentencePieceModel::eosId() const {
    const int id = m_module.info(m_handle, 2);
    return id >= 0 ? std::optional<std::int32_t>(id) : std::nullopt;
}

bool SentencePieceModel::isControl(std::int32_t id) const { return m_module.isControl(m_handle, id) != 0; }

} // namespace kvscope::tokenizer
