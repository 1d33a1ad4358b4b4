# SPDX-License-Identifier: GPL-3.0-or-later
"""The peers' llama.cpp is the portable build (scripts/peers-env.sh): AVX2, FMA and F16C compiled in, nothing
newer, so that it runs, and computes the same numbers, on every x86-64 machine with AVX2. ggml reports the
instruction sets it was compiled with (ggml_cpu_has_* are #if defined(__AVX512F__) ...), not the processor's."""
import sys

import llama_cpp

info = llama_cpp.llama_print_system_info().decode()
print(f"llama-cpp-python {llama_cpp.__version__}: {info}")
# "CPU : SSE3 = 1 | AVX = 1 | ...": the names set to 1.
features = {name.strip() for name, _, value in (part.split(":")[-1].partition("=") for part in info.split("|"))
            if value.strip() == "1"}
required = {"AVX", "AVX2", "FMA", "F16C"}
forbidden = {"AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16", "AVX_VNNI", "AMX_INT8", "AMX_BF16", "BMI2"}
missing = required - features
extra = forbidden & features
if missing or extra:
    sys.exit(f"llama.cpp is not the portable build: missing {sorted(missing)}, compiled in {sorted(extra)}; "
             "make the peers' environment again with scripts/peers-env.sh")
print("portable build:", sorted(features & (required | {"SSE3", "SSSE3", "SSE4_2"})))
