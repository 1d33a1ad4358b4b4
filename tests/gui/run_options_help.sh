#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# `kvscope --help` and `kvscope-cli run --help` list the same run options (config::RunOptionTable); each
# tool's own options are listed here by hand.
# Usage: run_options_help.sh KVSCOPE_CLI KVSCOPE
cli=$1
gui=$2
# The option an option line of a help text starts with ("  --tokens N=32 ...", "  -h, --help ...").
options() {
    sed -n 's/^ *\(-[a-zA-Z?], \)*\(--[a-z][a-z0-9-]*\).*/\2/p' | sort -u
}
cli_only='--check --help --no-progress --out'
# The serving options are `kvscope-cli serve`'s (kvscope --workload), the attach options `kvscope-cli attach`'s
# (kvscope --attach), not run's.
gui_only='--compare --compare-without-press --events --help --help-all --layer --position --press-scores --screenshot --size --step --synthetic
--workload --block-size --num-blocks --max-num-batched-tokens --max-num-seqs --no-prefix-caching --free-policy --prefix-caching-hash-algo
--version --tour --list-tours --compare-serving
--attach --replay --topic --metrics --seconds'
without() {
    grep -v -x -F -e "$(printf '%s\n' $1)"
}
cli_run=$("$cli" run --help 2>&1 | options | without "$cli_only")
gui_run=$("$gui" --help 2>&1 | options | without "$gui_only")
status=0
if [ "$cli_run" != "$gui_run" ]; then
    echo "FAIL the run options differ (< kvscope-cli run, > kvscope):"
    listed=$(mktemp)
    printf '%s\n' "$cli_run" >"$listed"
    printf '%s\n' "$gui_run" | diff "$listed" - || true
    rm -f "$listed"
    status=1
fi
for expected in --preset --threads --press-option --ignore-eos; do
    case " $(echo $cli_run) " in
    *" $expected "*) ;;
    *) echo "FAIL $expected is not among the run options: $cli_run"; status=1 ;;
    esac
done
# The serving options (paged::ServingOptionTable) are listed by both kvscope-cli serve and kvscope, with the
# same defaults.
# An option's default as kvscope-cli shows it (`--block-size N=16`) and as kvscope does (`[default: 16]`,
# maybe on a continuation line): empty when it has none.
cli_default() {
    sed -n "s/^ *--$1 [A-Z|]*=\([^ ]*\).*/\1/p" | head -1
}
gui_default() {
    awk -v option="--$1" '
        $1 == option { on = 1; text = $0; next }
        on && /^ *--/ { on = 0 }
        on { text = text " " $0 }
        END { print text }' | tr -s " " | sed -n 's/.*\[default: *\([^]]*\)\].*/\1/p'
}
serve_help=$("$cli" serve --help 2>&1)
gui_help=$("$gui" --help 2>&1)
for option in workload block-size num-blocks max-num-batched-tokens max-num-seqs no-prefix-caching free-policy prefix-caching-hash-algo \
    compare-serving; do
    if ! printf '%s\n' "$serve_help" | grep -q -E "^ *--$option( |=|\$)"; then
        echo "FAIL kvscope-cli serve --help does not list --$option"; status=1
    fi
    if ! printf '%s\n' "$gui_help" | grep -q -E "^ *--$option( |=|\$)"; then
        echo "FAIL kvscope --help does not list --$option"; status=1
    fi
    cli_value=$(printf '%s\n' "$serve_help" | cli_default "$option")
    gui_value=$(printf '%s\n' "$gui_help" | gui_default "$option")
    if [ "$cli_value" != "$gui_value" ]; then
        echo "FAIL --$option: default '$cli_value' in kvscope-cli serve, '$gui_value' in kvscope"; status=1
    fi
done
[ $status -eq 0 ] && echo "ok: both list the same $(echo "$cli_run" | wc -l) run options"
# The attach options are kvscope-cli attach's, with the same names in kvscope (--attach ENDPOINT for its argument).
attach_help=$("$cli" attach --help 2>&1)
for option in replay topic metrics seconds tokenizer; do
    if ! printf '%s\n' "$attach_help" | grep -q -E "^ *--$option( |=|\$)"; then
        echo "FAIL kvscope-cli attach --help does not list --$option"; status=1
    fi
    if ! printf '%s\n' "$gui_help" | grep -q -E "^ *--$option( |=|\$)"; then
        echo "FAIL kvscope --help does not list --$option"; status=1
    fi
done
exit $status
