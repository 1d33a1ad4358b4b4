// SPDX-License-Identifier: GPL-3.0-or-later
// The loadable module that wraps Debian's libsentencepiece behind a C interface. libsentencepiece
// carries its own copy of protobuf-lite, whose symbols clash with the libprotobuf that LibTorch loads
// (a process linking both crashes while loading). SentencePieceModel therefore dlopens this module
// privately (RTLD_LOCAL, RTLD_DEEPBIND), so neither library ever sees the other's protobuf.
#include <sentencepiece_processor.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" {

/// One piece of an encoding, reported through a callback so that no C++ type crosses the boundary.
using KvscopeSpmPieceCallback = void (*)(void* context, int id, const char* piece, std::size_t length,
                                         std::uint32_t begin, std::uint32_t end);

__attribute__((visibility("default"))) void* kvscope_spm_load(const char* path, char* error, std::size_t errorSize) {
    auto* processor = new sentencepiece::SentencePieceProcessor();
    const auto status = processor->Load(path);
    if (!status.ok()) {
        std::snprintf(error, errorSize, "%s", status.ToString().c_str());
        delete processor;
        return nullptr;
    }
    return processor;
}

__attribute__((visibility("default"))) void kvscope_spm_free(void* handle) {
    delete static_cast<sentencepiece::SentencePieceProcessor*>(handle);
}

__attribute__((visibility("default"))) int kvscope_spm_encode(void* handle, const char* text, std::size_t length,
                                                              KvscopeSpmPieceCallback callback, void* context) {
    const auto* processor = static_cast<sentencepiece::SentencePieceProcessor*>(handle);
    const auto proto = processor->EncodeAsImmutableProto(std::string(text, length));
    for (const auto& piece : proto.pieces()) {
        callback(context, static_cast<int>(piece.id()), piece.piece().data(), piece.piece().size(), piece.begin(),
                 piece.end());
    }
    return 0;
}

/// Decoded text in a malloc'd buffer (free with kvscope_spm_free_string); ids must be in range.
__attribute__((visibility("default"))) char* kvscope_spm_decode(void* handle, const int* ids, std::size_t count,
                                                                std::size_t* length) {
    const auto* processor = static_cast<sentencepiece::SentencePieceProcessor*>(handle);
    const std::string text = processor->DecodeIds(std::vector<int>(ids, ids + count));
    char* out = static_cast<char*>(std::malloc(text.size() + 1));
    std::memcpy(out, text.data(), text.size());
    out[text.size()] = '\0';
    *length = text.size();
    return out;
}

__attribute__((visibility("default"))) void kvscope_spm_free_string(char* text) { std::free(text); }

/// -1 when piece is not in the vocabulary.
__attribute__((visibility("default"))) int kvscope_spm_piece_to_id(void* handle, const char* piece, std::size_t length) {
    const auto* processor = static_cast<sentencepiece::SentencePieceProcessor*>(handle);
    const std::string text(piece, length);
    const int id = processor->PieceToId(text);
    return id == processor->unk_id() && processor->IdToPiece(id) != text ? -1 : id;
}

/// The piece of id copied into buffer (truncated to size); returns its full length.
__attribute__((visibility("default"))) std::size_t kvscope_spm_id_to_piece(void* handle, int id, char* buffer,
                                                                          std::size_t size) {
    const auto* processor = static_cast<sentencepiece::SentencePieceProcessor*>(handle);
    const std::string& piece = processor->IdToPiece(id);
    std::memcpy(buffer, piece.data(), std::min(size, piece.size()));
    return piece.size();
}

/// 0 size, 1 bos id, 2 eos id, 3 unk id.
__attribute__((visibility("default"))) int kvscope_spm_info(void* handle, int what) {
    const auto* processor = static_cast<sentencepiece::SentencePieceProcessor*>(handle);
    switch (what) {
    case 0:
        return processor->GetPieceSize();
    case 1:
        return processor->bos_id();
    case 2:
        return processor->eos_id();
    default:
        return processor->unk_id();
    }
}

__attribute__((visibility("default"))) int kvscope_spm_is_control(void* handle, int id) {
    return static_cast<sentencepiece::SentencePieceProcessor*>(handle)->IsControl(id) ? 1 : 0;
}

} // extern "C"
