#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Makes the press fidelity table of docs/presses.md with `kvscope-cli fidelity`.

For every trained preset, every press at ratios 0.25, 0.5 and 0.75: the uncompressed model writes 128
greedy tokens after a fixed English prompt, the pressed model reads the same prompt and is fed the same
tokens, and the table gives the mean KL divergence (nats) of its next-token distributions from the
uncompressed ones, and the share of tokens whose top-1 agree. A prefill press removes `ratio` of the
prompt; a decoding press keeps `(1 - ratio)` of the prompt's tokens: `decoding` as target_size with a
compression every 16 passes, `h2o` as its budget with a quarter of it as the recent window.
Run from the repository root after a build:
    scripts/press-fidelity.py [--cli build/dev/engine/cli/kvscope-cli] [--write docs/presses.md]
Without --write it prints the tables. Deterministic: the same build and weights give the same table.
"""
import argparse
import json
import subprocess
import sys

PRESETS = ["llama", "mistral", "llama4", "gemma2", "gemma3", "gemma3n", "qwen3-next"]
RATIOS = [0.25, 0.5, 0.75]
TOKENS = 128
PROMPT = (
    "A man who does not read good books has no advantage over the man who cannot read them. "
    "The best way to keep your word is not to give it, and the best way out is always through. "
    "It is a good thing for an uneducated man to read books of quotations, for the memory is a net "
    "that holds what it catches. Never put off until tomorrow what you can do the day after tomorrow."
)
BEGIN = "<!-- fidelity-table:begin (scripts/press-fidelity.py writes this part) -->"
END = "<!-- fidelity-table:end -->"


def presses(cli):
    listed = json.loads(subprocess.run([cli, "presses"], check=True, capture_output=True, text=True).stdout)
    return [press["name"] for press in listed["presses"]]


def prompt_tokens(cli, preset):
    """The prompt's length in the preset's tokens, from a ratio-0 measurement of one token."""
    result = measure(cli, preset, "knorm", ["--ratio", "0"], 1)
    return result["prompt_tokens"]


def measure(cli, preset, press, press_arguments, tokens=TOKENS):
    command = [cli, "fidelity", "--preset", preset, "--prompt", PROMPT, "--tokens", str(tokens), "--press", press]
    done = subprocess.run(command + press_arguments, capture_output=True, text=True)
    if done.returncode != 0:
        return {"refused": done.stderr.strip().removeprefix("kvscope-cli: ")}
    return json.loads(done.stdout)


def arguments(press, ratio, length):
    kept = max(1, int(length * (1 - ratio)))
    if press == "decoding":
        return ["--interval", "16", "--target-size", str(kept)]
    if press == "h2o":
        return ["--press-option", f"budget={kept}", "--press-option", f"recent_window={max(1, kept // 4)}"]
    return ["--ratio", str(ratio)]


def cell(result):
    if "refused" in result:
        return "refused"
    if not result["compressed_layers"]:
        return "no layer pressed"
    return f"{result['mean_kl']:.3f} / {100 * result['top1_agreement']:.0f}%"


def tables(cli):
    names = presses(cli)
    lengths = {preset: prompt_tokens(cli, preset) for preset in PRESETS}
    results = {}
    refusals = {}
    for preset in PRESETS:
        for press in names:
            for ratio in RATIOS:
                result = measure(cli, preset, press, arguments(press, ratio, lengths[preset]))
                results[(preset, press, ratio)] = result
                if "refused" in result:
                    refusals.setdefault(press, result["refused"])
                print(f"{preset} {press} {ratio}: {cell(result)}", file=sys.stderr)
    lines = [
        f"The prompt is {len(PROMPT)} bytes of English ({', '.join(f'{p} {lengths[p]}' for p in PRESETS)} "
        f"tokens); each cell is the mean KL divergence in nats over {TOKENS} tokens / the top-1 agreement.",
        "",
    ]
    for ratio in RATIOS:
        lines.append(f"**Ratio {ratio}** (prefill presses remove {int(100 * ratio)}% of the prompt; decoding "
                     f"presses keep {int(100 * (1 - ratio))}% of its length)")
        lines.append("")
        lines.append("| press | " + " | ".join(PRESETS) + " |")
        lines.append("| --- |" + " --- |" * len(PRESETS))
        for press in names:
            lines.append(f"| `{press}` | " + " | ".join(cell(results[(preset, press, ratio)]) for preset in PRESETS) + " |")
        lines.append("")
    for press, reason in refusals.items():
        lines.append(f"`{press}` was refused: {reason}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", default="build/dev/engine/cli/kvscope-cli")
    parser.add_argument("--write", help="the markdown file whose fidelity-table part to replace")
    options = parser.parse_args()
    text = tables(options.cli)
    if not options.write:
        sys.stdout.write(text)
        return
    with open(options.write, encoding="utf-8") as file:
        document = file.read()
    if BEGIN not in document or END not in document:
        sys.exit(f"{options.write} has no fidelity-table markers ({BEGIN} ... {END})")
    head, rest = document.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(options.write, "w", encoding="utf-8") as file:
        file.write(head + BEGIN + "\n" + text + END + tail)


if __name__ == "__main__":
    main()
