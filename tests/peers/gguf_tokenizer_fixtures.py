# SPDX-License-Identifier: GPL-3.0-or-later
"""llama.cpp's own tokenizer (llama-cpp-python, vocab_only) on the tokenizer conformance texts, for a GGUF
file: what kvscope's tokenizer built from the file's tokenizer.ggml metadata must give.

    python gguf_tokenizer_fixtures.py CORPUS.json OUT.json [FILE.gguf|smollm2]

OUT.json: {"peer", "file", "cases": [{"name", "text", "ids", "decoded"}]} where ids are
`tokenize(text, add_bos=False, special=True)` (special tokens in the text are parsed, as Transformers' added
tokens are) and decoded is llama.cpp's `llama_detokenize(ids, remove_special=False, unparse_special=True)` as
UTF-8 (invalid bytes replaced). That is the C API's own text: it drops the space a SentencePiece vocabulary puts
in front, where llama-cpp-python's `Llama.detokenize` (pieces joined in Python) keeps it unless bos comes first.
"""
import json
import os
import sys

import ctypes

import llama_cpp
import smollm2


def detokenize(llm, ids):
    """llama.cpp's llama_detokenize, growing the buffer as it asks."""
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    tokens = (llama_cpp.llama_token * max(1, len(ids)))(*ids)
    size = 64
    while True:
        buffer = ctypes.create_string_buffer(size)
        n = llama_cpp.llama_detokenize(vocab, tokens, len(ids), buffer, size, False, True)
        if n >= 0:
            return buffer.raw[:n]
        size = -n




def main():
    corpus_path, out_path = sys.argv[1], sys.argv[2]
    path = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] != "smollm2" else smollm2.path("gguf_tokenizer_fixtures.py")
    llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
    with open(corpus_path, encoding="utf-8") as f:
        corpus = json.load(f)
    cases = []
    for case in corpus:
        text = case["text"]
        ids = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        decoded = detokenize(llm, ids).decode("utf-8", errors="replace")
        cases.append({"name": case["name"], "text": text, "ids": [int(i) for i in ids], "decoded": decoded})
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"peer": f"llama-cpp-python {llama_cpp.__version__}", "file": os.path.abspath(path),
                   "cases": cases}, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
