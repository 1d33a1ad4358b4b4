#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Builds the presets' training corpus from Debian's `fortunes` package: every fortune file except
the ASCII-art and non-English ones, `%` separators stripped, overstrikes and tabs undone, the fortunes
shuffled with a fixed seed and one in twenty (5%) held out for evaluation."""
import argparse
import pathlib
import random
import re

SKIPPED = {"ascii-art", "translate-me"}


def fortunes(folder: pathlib.Path):
    for path in sorted(folder.iterdir()):
        if path.suffix or path.is_symlink() or not path.is_file() or path.name in SKIPPED:
            continue  # .dat indexes, .u8 links to the same text
        text = path.read_bytes().decode("utf-8", errors="replace")
        for block in re.split(r"^%\s*$", text, flags=re.MULTILINE):
            block = re.sub(r".\x08", "", block)  # overstrike: "x^Hx" bold, "_^Hx" underline
            lines = [" ".join(line.split()) for line in block.splitlines()]
            block = "\n".join(line for line in lines if line)
            if block:
                yield block


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fortunes", default="/usr/share/games/fortunes", type=pathlib.Path)
    parser.add_argument("--train", required=True, type=pathlib.Path)
    parser.add_argument("--held-out", required=True, type=pathlib.Path)
    parser.add_argument("--seed", default=0, type=int)
    args = parser.parse_args()
    quotes = list(fortunes(args.fortunes))
    if not quotes:
        raise SystemExit(f"no fortunes found in {args.fortunes} (install Debian's `fortunes` package)")
    random.Random(args.seed).shuffle(quotes)
    held_out = [quote for index, quote in enumerate(quotes) if index % 20 == 0]
    train = [quote for index, quote in enumerate(quotes) if index % 20 != 0]
    args.train.write_text("\n\n".join(train) + "\n", encoding="utf-8")
    args.held_out.write_text("\n\n".join(held_out) + "\n", encoding="utf-8")
    print(f"{len(train)} fortunes ({args.train.stat().st_size} bytes) for training, "
          f"{len(held_out)} ({args.held_out.stat().st_size} bytes) held out")


if __name__ == "__main__":
    main()
