#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Measures what recording adds to generation: 128 new tokens on CPU with the test decoder of 8
layers and hidden size 512 (a 32000-token vocabulary, so logits take the top-256 path), through a
DynamicCache, with and without `kvscope.record`. Runs alternate and the medians are compared, so
that a machine shared with other work slows both alike. The issue's bound is 10%.

    /usr/bin/python3 tests/python/bench_overhead.py [--repeats 5] [--threads 1]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import conftest  # noqa: E402  (installs the reference cache_utils as transformers.cache_utils)
import torch  # noqa: E402

import kvscope  # noqa: E402
from tiny_decoder import ByteTokenizer, Config, TinyDecoder  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    cu = conftest.REFERENCE
    model = TinyDecoder(Config(vocab_size=32000, hidden_size=512, num_hidden_layers=8, num_attention_heads=8)).eval()
    prompt = torch.randint(0, 32000, (1, 16), generator=torch.Generator().manual_seed(0))
    tokenizer = ByteTokenizer()
    model.generate(prompt, cu.DynamicCache(), 8)  # warm up
    plain, recorded, size = [], [], 0
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "bench.kvsess")
        for _ in range(args.repeats):
            start = time.perf_counter()
            reference = model.generate(prompt, cu.DynamicCache(), args.tokens)
            plain.append(time.perf_counter() - start)
            start = time.perf_counter()
            with kvscope.record(path, model=model, tokenizer=tokenizer):
                tokens = model.generate(prompt, cu.DynamicCache(), args.tokens)
            recorded.append(time.perf_counter() - start)
            assert torch.equal(reference, tokens)
            size = os.path.getsize(path)
    base, with_recorder = statistics.median(plain), statistics.median(recorded)
    print("generate %d tokens, 8 layers, hidden 512, %d thread(s), median of %d: plain %.3f s, recorded %.3f s, "
          "overhead %.1f%%, session %d bytes" % (args.tokens, args.threads, args.repeats, base, with_recorder,
                                                  100.0 * (with_recorder / base - 1.0), size))


if __name__ == "__main__":
    main()
