# SPDX-License-Identifier: GPL-3.0-or-later
"""A vocabulary-only GGUF file with a SentencePiece (`llama`) tokenizer, written from a Llama-2-style Hugging Face
tokenizer.json as llama.cpp's converter writes SentencePiece vocabularies (`_set_vocab_sentencepiece`): every
piece with its score and type (normal, unknown, control, byte). tokenizer.json keeps no scores; SentencePiece's
BPE trainer numbers pieces in the order it merged them, so a piece's score is minus its id, as in Llama 2's
tokenizer.model. llama.cpp (vocab_only) and kvscope then tokenize from the same file.

    python gguf_spm_vocab.py TOKENIZER_JSON OUT.gguf
"""
import json
import re
import sys

import gguf


def main():
    source, out = sys.argv[1], sys.argv[2]
    with open(source, encoding="utf-8") as f:
        document = json.load(f)
    model = document["model"]
    tokens = [None] * len(model["vocab"])
    for token, index in model["vocab"].items():
        tokens[index] = token
    added = {item["id"]: item for item in document.get("added_tokens", [])}
    types, scores = [], []
    for index, token in enumerate(tokens):
        if token == model.get("unk_token"):
            types.append(gguf.TokenType.UNKNOWN)
            scores.append(0.0)
        elif index in added:
            types.append(gguf.TokenType.CONTROL if added[index]["special"] else gguf.TokenType.USER_DEFINED)
            scores.append(0.0)
        elif re.fullmatch(r"<0x[0-9A-F]{2}>", token):
            types.append(gguf.TokenType.BYTE)
            scores.append(0.0)
        else:
            types.append(gguf.TokenType.NORMAL)
            scores.append(-float(index))
    writer = gguf.GGUFWriter(out, "llama")
    writer.add_name("SentencePiece vocabulary")
    # The hyperparameters llama.cpp reads before it reads the vocabulary (no tensors: vocab_only).
    writer.add_block_count(1)
    writer.add_context_length(64)
    writer.add_embedding_length(64)
    writer.add_feed_forward_length(64)
    writer.add_head_count(1)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(64)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(tokens.index(model["unk_token"]))
    writer.add_bos_token_id(tokens.index("<s>"))
    writer.add_eos_token_id(tokens.index("</s>"))
    writer.add_add_bos_token(True)
    writer.add_add_space_prefix(True)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main()
