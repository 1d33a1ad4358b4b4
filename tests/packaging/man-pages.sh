#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Writes both man pages with scripts/man-page.py and checks them: groff finds nothing to warn about,
# every command of kvscope-cli has its section, and no option of any --help is lost on the way.
# Usage: man-pages.sh SOURCE_DIR KVSCOPE_CLI [KVSCOPE]
set -euo pipefail
source="$1"
cli="$2"
gui="${3:-}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
fail() { echo "man-pages: $*" >&2; exit 1; }
export QT_QPA_PLATFORM=offscreen

options_of() { "$@" --help 2>&1 | grep -oE '^  +(-[a-zA-Z], ?)?--[a-z][a-z0-9-]*' | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u; }

check_page() {
  local page="$1"
  local warnings
  warnings="$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings=w -l "$page" 2>&1 > /dev/null || true)"
  [[ -z "$warnings" ]] || fail "groff warns on $(basename "$page"): $warnings"
}

python3 "$source/scripts/man-page.py" kvscope-cli "$cli" "$out/kvscope-cli.1"
check_page "$out/kvscope-cli.1"
grep -q '^\.TH KVSCOPE-CLI 1 .*"kvscope-cli [0-9.]*"' "$out/kvscope-cli.1" || fail "kvscope-cli.1 has no version in .TH"
for command in $("$cli" --help | sed -n '/^Subcommands:/,$p' | grep -oE '^  [a-z]+'); do
  grep -q "^\.SS kvscope-cli $command\$" "$out/kvscope-cli.1" || fail "kvscope-cli.1 lacks the command $command"
done
# Every option of the longest command (each --help costs a LibTorch start, so one command stands for all).
for option in $(options_of "$cli" run); do
  grep -qF -- "${option//-/\\-}" "$out/kvscope-cli.1" || fail "kvscope-cli.1 lacks run $option"
done

if [[ -n "$gui" ]]; then
  python3 "$source/scripts/man-page.py" kvscope "$gui" "$out/kvscope.1"
  check_page "$out/kvscope.1"
  for option in $(options_of "$gui"); do
    [[ "$option" == "--help-all" ]] && continue
    grep -qF -- "${option//-/\\-}" "$out/kvscope.1" || fail "kvscope.1 lacks $option"
  done
fi
echo "man-pages: ok"
