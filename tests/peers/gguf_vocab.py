# SPDX-License-Identifier: GPL-3.0-or-later
"""A vocabulary-only GGUF file written from a Hugging Face tokenizer.json as llama.cpp's converter writes
vocabularies, so that llama.cpp (vocab_only) and kvscope tokenize from the same file.

    python gguf_vocab.py TOKENIZER_JSON [--pre PRE] OUT.gguf

- A SentencePiece-style BPE (byte fallback, Llama 2) becomes a `llama` tokenizer (`_set_vocab_sentencepiece`):
  every piece with its score and type (normal, unknown, control, byte). tokenizer.json keeps no scores;
  SentencePiece's BPE trainer numbers pieces in the order it merged them, so a piece's score is minus its id, as
  in Llama 2's tokenizer.model.
- A byte-level BPE (Llama 3, Qwen 3) becomes a `gpt2` tokenizer (`_set_vocab_gpt2`) with the merges and
  `tokenizer.ggml.pre` PRE: added tokens are control tokens when special, user-defined otherwise; ids no token
  has are `[PAD<id>]`, unused.
"""
import argparse
import json
import re
import sys

import gguf


def hyperparameters(writer):
    """What llama.cpp reads before the vocabulary (no tensors: vocab_only)."""
    writer.add_block_count(1)
    writer.add_context_length(64)
    writer.add_embedding_length(64)
    writer.add_feed_forward_length(64)
    writer.add_head_count(1)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(64)


def token_table(document):
    model = document["model"]
    added = {item["id"]: item for item in document.get("added_tokens", [])}
    size = max(list(model["vocab"].values()) + list(added)) + 1
    tokens = [None] * size
    for token, index in model["vocab"].items():
        tokens[index] = token
    for index, item in added.items():
        tokens[index] = item["content"]
    return tokens, added


def sentencepiece(writer, document):
    model = document["model"]
    tokens, added = token_table(document)
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
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(tokens.index(model["unk_token"]))
    writer.add_bos_token_id(tokens.index("<s>"))
    writer.add_eos_token_id(tokens.index("</s>"))
    writer.add_add_bos_token(True)
    writer.add_add_space_prefix(True)


def byte_level(writer, document, pre):
    tokens, added = token_table(document)
    types = []
    for index, token in enumerate(tokens):
        if token is None:
            tokens[index] = f"[PAD{index}]"
            types.append(gguf.TokenType.UNUSED)
        elif index in added:
            types.append(gguf.TokenType.CONTROL if added[index]["special"] else gguf.TokenType.USER_DEFINED)
        else:
            types.append(gguf.TokenType.NORMAL)
    merges = [m if isinstance(m, str) else " ".join(m) for m in document["model"]["merges"]]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    if "<|begin_of_text|>" in tokens:  # Llama 3's bos
        writer.add_bos_token_id(tokens.index("<|begin_of_text|>"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tokenizer_json")
    parser.add_argument("out")
    parser.add_argument("--pre", help="tokenizer.ggml.pre of a byte-level BPE")
    given = parser.parse_args()
    with open(given.tokenizer_json, encoding="utf-8") as f:
        document = json.load(f)
    writer = gguf.GGUFWriter(given.out, "llama")
    writer.add_name("vocabulary")
    hyperparameters(writer)
    if document["model"].get("byte_fallback"):
        sentencepiece(writer, document)
    else:
        if not given.pre:
            sys.exit("gguf_vocab.py: a byte-level BPE needs --pre (llama.cpp's tokenizer.ggml.pre)")
        byte_level(writer, document, given.pre)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main()
