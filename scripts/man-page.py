#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes a program's man page from its --help, which each program generates from its command-line
table (config::RunOptionTable and the options beside it), so the page never drifts from the program.

Usage: man-page.py PROGRAM BINARY OUT
  PROGRAM  kvscope or kvscope-cli (picks the page's fixed sections)
  BINARY   the built program to ask for --help and --version (and, for kvscope-cli, each command's)
  OUT      the page to write (roff, section 1); OUT.gz is compressed as Debian installs pages
"""
import datetime
import gzip
import os
import re
import subprocess
import sys

# What --help cannot say: each page's fixed prose (roff-ready plain text, one paragraph per entry).
PAGES = {
    "kvscope": {
        "name": "inspect the key-value caches of transformer language models",
        "synopsis": ["[\\fIOPTIONS\\fR] [\\fIFILE\\fR]"],
        "description": [
            "kvscope steps a transformer language model token by token and shows what its key-value "
            "cache does at every step: the positions each layer keeps, what a sliding window drops, "
            "what a quantized cache flushes, what an offloaded cache moves, which tokens a press evicts "
            "and why, and, for a serving workload, a paged block pool shared by many requests.",
            "Given a session FILE (.kvsess) it replays it; given a model (--preset, --config, "
            "--checkpoint) it runs a live session; given --workload it serves a workload over a paged "
            "cache. Without a display it renders offscreen to a PNG (--screenshot).",
        ],
        "examples": [
            ("kvscope --preset gemma3 --cache quantized --nbits 2", "Step gemma3's built-in model live over a 2-bit quantized cache."),
            ("kvscope /usr/share/kvscope/sessions/llama-dynamic.kvsess", "Replay a sample session."),
            ("kvscope --workload chat-shared-system-prompt --screenshot pool.png", "Serve the built-in chat workload and render its block pool."),
        ],
        "see_also": "kvscope-cli(1)",
    },
    "kvscope-cli": {
        "name": "run, check and benchmark transformer KV caches from the command line",
        "synopsis": ["\\fICOMMAND\\fR [\\fIOPTIONS\\fR]", "\\-\\-version"],
        "description": [
            "kvscope-cli runs kvscope's cache engine without the window: it generates over any cache "
            "kind (run), serves workloads over a paged cache (serve), checks the engine against golden "
            "fixtures (conform), measures presses (fidelity) and speed (bench), and reads, replays and "
            "exports session files.",
            "Machine-readable output is one JSON document on standard output; messages go to standard "
            "error.",
        ],
        "examples": [
            ("kvscope-cli run --preset llama --press snapkv --ratio 0.5 --prompt-file p.txt", "Generate with SnapKV pressing half of the prefill cache."),
            ("kvscope-cli serve --workload chat-shared-system-prompt --no-prefix-caching", "Serve the chat workload without prefix caching."),
            ("kvscope-cli info session.kvsess", "Count a session's steps, layers and events."),
        ],
        "exit_status": [("0", "success"), ("1", "a check failed"), ("2", "bad input (the message says what and how to fix it)")],
        "see_also": "kvscope(1)",
    },
}

ENVIRONMENT = [
    ("KVSCOPE_PRESETS", "A folder of preset configs (<name>.json) to use instead of the installed ones."),
    ("KVSCOPE_WORKLOADS", "A folder of serving workloads (<name>.json) to use instead of the installed ones."),
]

FILES = [
    ("/usr/share/kvscope/presets", "The built-in model presets and their trained weights."),
    ("/usr/share/kvscope/workloads", "The built-in serving workloads."),
    ("/usr/share/kvscope/sessions", "Sample sessions, and FORMAT.md, the session file format."),
]


def run_help(binary, args):
    env = dict(os.environ, QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"))
    done = subprocess.run([binary, *args], capture_output=True, text=True, env=env, timeout=120)
    # Qt prints --help on standard error, CLI11 on standard output.
    text = done.stdout if done.stdout.strip() else done.stderr
    if done.returncode != 0 or not text.strip():
        raise SystemExit(f"man-page.py: `{binary} {' '.join(args)}` failed ({done.returncode}): {done.stderr.strip()}")
    return text


def blocks(help_text):
    """{heading: [(spec, description)]} for the 'Options:' and 'Subcommands:' blocks of a help text."""
    found, heading, entries = {}, None, None
    for line in help_text.splitlines():
        if re.match(r"^[A-Za-z][A-Za-z ]*:\s*$", line):
            heading, entries = line.strip().rstrip(":"), []
            found[heading] = entries
            continue
        if heading is None or not line.strip():
            continue
        # An entry starts at two spaces; its description follows after two or more spaces, or on the
        # next, deeper-indented lines.
        match = re.match(r"^  (\S.*?)(?:\s{2,}(\S.*))?$", line)
        if match and not line.startswith("   "):
            entries.append([match.group(1).strip(), match.group(2) or ""])
        elif entries:
            entries[-1][1] = (entries[-1][1] + " " + line.strip()).strip()
    return found


def roff(text):
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text.startswith((".", "'")) else text


def option_entries(entries, skip=("--help-all",)):
    out = []
    for spec, description in entries:
        names = spec.split(" ")[0].split(",")
        if any(name.strip() in skip for name in names):
            continue
        out.append(".TP\n\\fB" + roff(spec) + "\\fR\n" + roff(description))
    return out


def page(program, binary, date):
    fixed = PAGES[program]
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    version = version.split(" (")[0] if version else program
    lines = [f'.TH {program.upper()} 1 "{date}" "{version}" "User Commands"',
             ".SH NAME", f"{program} \\- {fixed['name']}", ".SH SYNOPSIS"]
    for synopsis in fixed["synopsis"]:
        lines += [f".B {program}", synopsis, ".br"]
    lines.append(".SH DESCRIPTION")
    for paragraph in fixed["description"]:
        lines += [roff(paragraph), ".PP"]
    top = blocks(run_help(binary, ["--help"]))
    lines.append(".SH OPTIONS")
    lines += option_entries(top.get("Options", []))
    commands = top.get("Subcommands", [])
    if commands:
        lines.append(".SH COMMANDS")
        pending = [([name], description) for name, description in commands]
        while pending:
            path, description = pending.pop(0)
            sub = blocks(run_help(binary, [*path, "--help"]))
            lines += [f".SS {program} {' '.join(path)}", roff(description)]
            entries = [e for e in sub.get("Options", []) if not e[0].startswith("-h,")]
            positionals = sub.get("Positionals", [])
            if positionals or entries:
                lines.append(".RS")
                lines += option_entries(positionals + entries)
                lines.append(".RE")
            pending = [([*path, name], text) for name, text in sub.get("Subcommands", [])] + pending
    if "exit_status" in fixed:
        lines.append(".SH EXIT STATUS")
        for code, meaning in fixed["exit_status"]:
            lines += [".TP", f"\\fB{code}\\fR", roff(meaning)]
    lines.append(".SH ENVIRONMENT")
    for name, meaning in ENVIRONMENT:
        lines += [".TP", f"\\fB{name}\\fR", roff(meaning)]
    lines.append(".SH FILES")
    for name, meaning in FILES:
        lines += [".TP", f"\\fI{roff(name)}\\fR", roff(meaning)]
    lines.append(".SH EXAMPLES")
    for command, meaning in fixed["examples"]:
        lines += [".TP", f"\\fB{roff(command)}\\fR", roff(meaning)]
    lines += [".SH SEE ALSO", fixed["see_also"]]
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in PAGES:
        raise SystemExit(__doc__)
    program, binary, out = sys.argv[1:]
    # Reproducible: the date of the source (SOURCE_DATE_EPOCH, as Debian's tools set it), else today.
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc) if epoch else datetime.datetime.now()
    text = page(program, binary, when.strftime("%Y-%m-%d"))
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    if out.endswith(".gz"):
        # mtime 0 and no file name in the header: the same page gives the same bytes (reproducible builds).
        with open(out, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as handle:
            handle.write(text.encode("utf-8"))
    else:
        with open(out, "w", encoding="utf-8") as handle:
            handle.write(text)


if __name__ == "__main__":
    main()
