#!/usr/bin/env bash
# Regenerate the benchmark logs, run every benchmark present, rewrite BENCHMARKS.md.
#
#   bench/run_all.sh                              # quick: a 20 MiB, 1024-rank log (today's engine: ~1 min total)
#   bench/run_all.sh --size 200MiB --size 1GiB    # the real targets; any bench_diagnose.py option works
#   KEEP_DATA=1 bench/run_all.sh                  # reuse logs already in bench/out/ when they match
#   ONLY_DIAGNOSE=1 bench/run_all.sh ...          # run bench_diagnose.py alone and rewrite only its
#                                                 # sections of BENCHMARKS.md (the others are kept as they are)
#
# Generated data goes to bench/out/ (git-ignored). Timings are reported, never asserted.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT="$ROOT/bench/out"
mkdir -p "$OUT"
if [[ -x "$ROOT/.venv/bin/python" ]]; then
    PY="$ROOT/.venv/bin/python"
    export PATH="$ROOT/.venv/bin:$PATH"
else
    PY=$(command -v python3)
fi

DIAG_ARGS=("$@")
if [[ ${#DIAG_ARGS[@]} -eq 0 ]]; then
    DIAG_ARGS=(--quick)
fi
REGEN=(--regen)
if [[ "${KEEP_DATA:-0}" == 1 ]]; then
    REGEN=()
fi

load_before=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
status=0
echo "== bench_diagnose.py ${DIAG_ARGS[*]}" >&2
if ! "$PY" bench/bench_diagnose.py "${REGEN[@]}" "${DIAG_ARGS[@]}" > "$OUT/bench_diagnose.stdout"; then
    echo "bench_diagnose.py failed" >&2
    status=1
fi

# the other benchmarks, when present: run with their defaults, output kept verbatim
OTHERS=(bench_check bench_lsp bench_watch bench_fleet)
if [[ "${ONLY_DIAGNOSE:-0}" == 1 ]]; then
    OTHERS=()
fi
for name in "${OTHERS[@]}"; do
    rm -f "$OUT/$name.stdout"
    if [[ -f "bench/$name.py" ]]; then
        echo "== $name.py" >&2
        if ! "$PY" "bench/$name.py" > "$OUT/$name.stdout" 2> "$OUT/$name.stderr"; then
            echo "$name.py failed (see $OUT/$name.stderr)" >&2
            echo "(failed: $(tail -n 3 "$OUT/$name.stderr" | tr '\n' ' '))" >> "$OUT/$name.stdout"
            status=1
        fi
    fi
done

# ------------------------------------------------------------------------------ BENCHMARKS.md
cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //' || true)
[[ -n "$cpu" ]] || cpu=$(uname -m)
mem_gib=$(awk '/MemTotal/ {printf "%.1f", $2 / 1048576}' /proc/meminfo 2>/dev/null || echo "?")
pyver=$("$PY" -c 'import platform; print(platform.python_version())')
grepver=$(grep --version | head -n1)
rgver=$(command -v rg >/dev/null && { rg --version 2>/dev/null | head -n1; } || echo "ripgrep not installed")
commit=$(git rev-parse --short HEAD 2>/dev/null || echo "?")
now=$(date -u '+%Y-%m-%d %H:%M UTC')

# With ONLY_DIAGNOSE=1 the sections after the diagnose ones (from the first "## " heading that is not
# about `rootrank diagnose`) are carried over from the BENCHMARKS.md there is.
kept=""
if [[ "${ONLY_DIAGNOSE:-0}" == 1 && -f "$ROOT/BENCHMARKS.md" ]]; then
    kept=$(awk '/^## / && !/rootrank diagnose/ {on=1} on' "$ROOT/BENCHMARKS.md")
fi

{
    echo "# Benchmarks"
    echo
    echo "Written by \`bench/run_all.sh ${DIAG_ARGS[*]}\` on $now at commit \`$commit\`; do not edit by hand."
    if [[ -n "$kept" ]]; then
        echo "This run (\`ONLY_DIAGNOSE=1\`) regenerated the \`rootrank diagnose\` speed sections; the sections from \`rootrank check\` on are kept from earlier runs."
    fi
    echo "How to run them: [bench/README.md](bench/README.md). Timings are machine-dependent: read the ratios."
    if [[ -n "${ROOTRANK_OTHER_GENERATOR:-}" ]]; then
        other=$(cd "$ROOTRANK_OTHER_GENERATOR" && echo "$(basename "$(dirname "$PWD")")/$(basename "$PWD")")
        echo "With \`ROOTRANK_OTHER_GENERATOR\` set: also logs of an independent generator (\`$other/gen_log.py\`, last section)."
    fi
    echo
    echo "Machine: $(nproc) CPUs ($cpu), ${mem_gib} GiB RAM, $(uname -sr), Python $pyver, $grepver, $rgver;"
    echo "load average (1, 5, 15 min) before the run: $load_before, after: $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "A load above the CPU count means other work shared the machine: the grep figures (tenths of a"
    echo "second at 20 MiB) suffer most; rerun with \`--size 200MiB\` or on an idle machine for stable ratios."
    echo
    echo "## \`rootrank diagnose\` on a large multi-rank log, against grep"
    echo
    if [[ -s "$OUT/bench_diagnose.md" ]]; then
        cat "$OUT/bench_diagnose.md"
    else
        echo "(bench_diagnose.py produced no report)"
    fi
    if [[ -n "$kept" ]]; then
        echo
        echo "$kept"
    fi
    for name in "${OTHERS[@]}"; do
        if [[ -f "$OUT/$name.stdout" ]]; then
            echo
            case $name in
                bench_check) echo "## \`rootrank check\` (bench/bench_check.py)" ;;
                bench_lsp) echo "## Language server (bench/bench_lsp.py)" ;;
                bench_watch) echo "## \`rootrank watch\` (bench/bench_watch.py)" ;;
                bench_fleet) echo "## \`rootrank scan\` and \`diagnose --ray\`: local against Ray (bench/bench_fleet.py)" ;;
            esac
            echo
            echo '```text'
            cat "$OUT/$name.stdout"
            echo '```'
        fi
    done
} > "$ROOT/BENCHMARKS.md"

echo "wrote BENCHMARKS.md" >&2
exit $status
