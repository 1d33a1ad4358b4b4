"""Tokenizer conformance fixtures written by `tokenizers`, the Rust library Transformers uses.

    python tokenizers_fixtures.py JS_FIXTURES_DIR OUT_DIR

Reads the fixtures scripts/tokenizer-fixtures.sh wrote with Hugging Face's JS tokenizers (the same real
tokenizer files and texts, seeded random ones included) and writes OUT_DIR/<name>.json in the same format
with the Rust library's ids and texts, so TokenizerConformanceTest checks kvscope against both. Decoding
adds what Transformers' decode() adds on top of the Rust library: the clean-up of spaces before punctuation
where the file's tokenizer_config.json sets `clean_up_tokenization_spaces` (Llama 3's does). The count of
cases where the two peers disagree is printed.
"""
import glob
import json
import os
import sys

import tokenizers
from tokenizers import Tokenizer
from transformers import PreTrainedTokenizerBase


def clean_up_setting(tokenizer_json):
    config = os.path.join(os.path.dirname(tokenizer_json), "tokenizer_config.json")
    if not os.path.exists(config):
        return False
    with open(config, encoding="utf-8") as f:
        return bool(json.load(f).get("clean_up_tokenization_spaces", False))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    source, out = sys.argv[1], sys.argv[2]
    repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    os.makedirs(out, exist_ok=True)
    files = sorted(glob.glob(os.path.join(source, "*.json")))
    if not files:
        sys.exit(f"no JS fixtures in {source}: run scripts/tokenizer-fixtures.sh first")
    for path in files:
        with open(path, encoding="utf-8") as f:
            js = json.load(f)
        tokenizer_json = js["tokenizer_json"]
        if js.get("repo_relative"):
            tokenizer_json = os.path.join(repo, js["repo_relative"])
        tokenizer = Tokenizer.from_file(tokenizer_json)
        clean_up = clean_up_setting(tokenizer_json)

        def decoded(ids, skip):
            text = tokenizer.decode(ids, skip_special_tokens=skip)
            return PreTrainedTokenizerBase.clean_up_tokenization(None, text) if clean_up else text

        encode, decode, differ = [], [], 0
        for case in js["encode"]:
            ids = tokenizer.encode(case["text"], add_special_tokens=True).ids
            ids_no_special = tokenizer.encode(case["text"], add_special_tokens=False).ids
            differ += ids != case["ids"] or ids_no_special != case["ids_no_special"]
            encode.append({"name": case["name"], "text": case["text"], "ids": ids, "ids_no_special": ids_no_special})
        for case in js["decode"]:
            text, skipped = decoded(case["ids"], False), decoded(case["ids"], True)
            differ += text != case["text"] or skipped != case["text_skip_special"]
            decode.append({"name": case["name"], "ids": case["ids"], "text": text, "text_skip_special": skipped})
        record = dict(js)
        record.update({"oracle": f"tokenizers (Rust) {tokenizers.__version__}", "encode": encode, "decode": decode})
        with open(os.path.join(out, os.path.basename(path)), "w", encoding="utf-8") as f:
            json.dump(record, f, ensure_ascii=False)
        print(f"{js['tokenizer']}: {len(encode)} encode and {len(decode)} decode cases; "
              f"{differ} differ from {js['oracle']}")


if __name__ == "__main__":
    main()
