#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The inspector itself under random user input: kvscope runs in its own Xvfb display and takes seeded random
clicks, double clicks, drags, wheel turns and keys (xdotool) over its whole window, dialogs and menus included, in
each setting: a live session with a cache press, a serving session, a comparison of two session files, a guided
tour, and a live session that fails (its error box closed by the actions). A crash, an abort or a sanitizer report (the `asan` preset's build) fails the run; quitting through the File
menu, which random clicks do reach, is a normal end: the application is started again and the actions go on.

Usage: app_monkey.py KVSCOPE SESSIONS_DIR [--actions N] [--seed S] [--settings press,serving,compare,tour,failure]
Prints one line of figures per setting and exits 1 if any setting failed.
"""

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# What a sanitizer, the C++ runtime or glibc writes when something went wrong.
PROBLEMS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "stack smashing detected",
            "terminate called", "Segmentation fault", "Aborted", "double free", "corrupted")

SCREEN = (1600, 1000)

# Keys a user presses in the inspector and its dialogs: the transport's, navigation, and dialog keys. No
# modifier combinations: Ctrl+Q would quit and Ctrl+O/S open file dialogs, which the clicks reach anyway.
KEYS = ("Right", "Left", "space", "Home", "End", "Escape", "Tab", "Return", "Up", "Down", "Page_Up", "Page_Down",
        "plus", "minus", "Delete", "a", "1")


def settings(sessions):
    return {
        "press": ["--preset", "llama", "--press", "snapkv", "--ratio", "0.5", "--tokens", "400"],
        "serving": ["--workload", "chat-shared-system-prompt"],
        "compare": [os.path.join(sessions, "llama-dynamic.kvsess"), "--compare",
                    os.path.join(sessions, "llama-quantized-2bit.kvsess")],
        "tour": ["--tour", "sliding-window"],
        # A live session that fails after launch (SnapKV's window is longer than the prompt): the window says why
        # in an error box, which the actions close, and stays usable.
        "failure": ["--preset", "llama", "--press", "snapkv", "--ratio", "0.5", "--prompt", "a short prompt",
                    "--press-option", "window_size=64"],
    }


def xdotool(display, *args):
    return subprocess.run(["xdotool", *map(str, args)], env={**os.environ, "DISPLAY": display},
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=20).stdout


class App:
    """kvscope on `display`, its output in `log`."""

    def __init__(self, kvscope, arguments, display, home, log):
        env = {**os.environ, "DISPLAY": display, "QT_QPA_PLATFORM": "xcb", "HOME": home,
               "XDG_CONFIG_HOME": os.path.join(home, ".config"), "XDG_CACHE_HOME": os.path.join(home, ".cache"),
               # Qt and fontconfig keep allocations for the process's life: leaks are not what is looked for.
               "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0", "UBSAN_OPTIONS": "print_stacktrace=1"}
        env.pop("QT_QPA_PLATFORMTHEME", None)
        self.process = subprocess.Popen([kvscope, *arguments],
                                        cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT)

    def alive(self):
        return self.process.poll() is None

    def stop(self):
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def wait_for_window(display, app, seconds=120):
    """Waits for the main window and gives it the whole screen (Xvfb has no window manager to)."""
    deadline = time.time() + seconds
    while time.time() < deadline and app.alive():
        windows = xdotool(display, "search", "--onlyvisible", "--name", "kvscope").split()
        if windows:
            xdotool(display, "windowsize", windows[0], *SCREEN)
            return True
        time.sleep(0.3)
    return False


def act(display, rng):
    """One random action somewhere on the screen; returns its name."""
    x, y = rng.randrange(SCREEN[0]), rng.randrange(SCREEN[1])
    kind = rng.choices(("click", "double", "drag", "wheel", "key", "right"), weights=(30, 8, 12, 15, 30, 5))[0]
    if kind == "click":
        xdotool(display, "mousemove", x, y, "click", 1)
    elif kind == "double":
        xdotool(display, "mousemove", x, y, "click", "--repeat", 2, "--delay", 60, 1)
    elif kind == "drag":
        xdotool(display, "mousemove", x, y, "mousedown", 1, "mousemove", rng.randrange(SCREEN[0]),
                rng.randrange(SCREEN[1]), "mouseup", 1)
    elif kind == "wheel":
        xdotool(display, "mousemove", x, y, "click", "--repeat", rng.randint(1, 4), 4 if rng.random() < 0.5 else 5)
    elif kind == "right":
        xdotool(display, "mousemove", x, y, "click", 3)
        xdotool(display, "key", "Escape")
    else:
        xdotool(display, "key", rng.choice(KEYS))
    return kind


def run_setting(kvscope, name, arguments, actions, seed, work):
    # Xvfb picks a free display and says which once it is ready (-displayfd): no clash with another X server.
    ready, told = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(told), "-screen", "0", f"{SCREEN[0]}x{SCREEN[1]}x24",
                             "-nolisten", "tcp"], pass_fds=(told,), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    os.close(told)
    with os.fdopen(ready) as said:
        display = ":" + said.readline().strip()
    home = tempfile.mkdtemp(prefix=f"monkey-{name}-", dir=work)
    log_path = os.path.join(home, "kvscope.log")
    rng = random.Random(f"{seed}-{name}")
    counts = {}
    starts = 0
    problem = None
    began = time.time()
    try:
        with open(log_path, "w") as log:
            app = App(kvscope, arguments, display, home, log)
            starts = 1
            if not wait_for_window(display, app):
                problem = "no window came up"
            done = 0
            while problem is None and done < actions:
                if not app.alive():
                    code = app.process.returncode
                    if code != 0:
                        problem = f"kvscope ended with status {code} after {done} actions"
                        break
                    # Quit through the File menu: a user's normal end; start again and go on.
                    app = App(kvscope, arguments, display, home, log)
                    starts += 1
                    if not wait_for_window(display, app):
                        problem = "no window came up after a restart"
                        break
                kind = act(display, rng)
                counts[kind] = counts.get(kind, 0) + 1
                done += 1
                time.sleep(rng.uniform(0.01, 0.08))
            if problem is None:
                time.sleep(1.0)
                if not app.alive() and app.process.returncode != 0:
                    problem = f"kvscope ended with status {app.process.returncode} at the end"
                code = app.stop()
                if problem is None and code not in (0, -signal.SIGTERM):
                    problem = f"kvscope ended with status {code} when asked to close"
            else:
                app.stop()
    finally:
        xvfb.terminate()
        xvfb.wait()
    with open(log_path, errors="replace") as log:
        text = log.read()
    reports = [line for line in text.splitlines() if any(marker in line for marker in PROBLEMS)]
    if reports and problem is None:
        problem = f"{len(reports)} report(s): {reports[0]}"
    figures = ", ".join(f"{counts[kind]} {kind}" for kind in sorted(counts))
    status = "ok" if problem is None else "FAIL"
    print(f"{status} {name}: {sum(counts.values())} actions ({figures}), {starts} start(s), "
          f"{time.time() - began:.0f} s" + ("" if problem is None else f": {problem}"), flush=True)
    if problem is not None:
        print(text[-6000:], flush=True)
    return problem is None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kvscope")
    parser.add_argument("sessions", help="the repository's sessions/ folder (the comparison's two files)")
    parser.add_argument("--actions", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261204)
    parser.add_argument("--settings", default="press,serving,compare,tour,failure")
    options = parser.parse_args()
    for tool in ("Xvfb", "xdotool"):
        if shutil.which(tool) is None:
            print(f"app_monkey: {tool} is not installed (scripts/install-dependencies.sh installs it)")
            return 1
    kvscope = os.path.abspath(options.kvscope)
    every = settings(os.path.abspath(options.sessions))
    names = options.settings.split(",")
    unknown = [name for name in names if name not in every]
    if unknown:
        print(f"app_monkey: unknown setting {unknown[0]!r}; the settings are {', '.join(every)}")
        return 1
    work = tempfile.mkdtemp(prefix="kvscope-monkey-")
    try:
        results = [run_setting(kvscope, name, every[name], options.actions, options.seed + index, work)
                   for index, name in enumerate(names)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
