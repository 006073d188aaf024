#!/usr/bin/env bash
# The tests under conditions that change floating-point rounding (issue 18, item 2), one pytest
# run per condition, each with its own empty JAX compilation cache (a cache filled under other
# XLA flags would hand back code compiled for another condition):
#   default       as `make test` runs it, but with a cold cache
#   one-thread    XLA_FLAGS=--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1
#   one-core      taskset -c 0 (skipped where taskset is missing)
#   other-isa     XLA_FLAGS=--xla_cpu_max_isa=SSE4_2: XLA's CPU code without AVX or FMA
#                 (x86 only), so sums and products round differently
# Usage: tests/variation.sh [PYTEST ARGS...]   (default: the whole suite, as `make test`)
#        make test-variation                   (the same)
# Prints one line per condition and exits non-zero if any failed; the pytest output of each is
# in $VARIATION_LOGS (default: a new folder under /tmp), named after the condition.
set -u
cd "$(dirname "$0")/.."
python=${PYTHON_BIN:-.venv/bin/python}
if [ $# -eq 0 ]; then set -- -n 2 --dist loadfile --nbmake tests notebooks; fi
logs=${VARIATION_LOGS:-$(mktemp -d -t bayes-slr-variation.XXXXXX)}
mkdir -p "$logs"
conditions=(default one-thread one-core)
case "$(uname -m)" in x86_64 | amd64 | AMD64) conditions+=(other-isa) ;; esac
failed=0
for condition in "${conditions[@]}"; do
  cache=$(mktemp -d -t bayes-slr-cache.XXXXXX)
  prefix=()
  flags=${XLA_FLAGS:-}
  case $condition in
    one-thread) flags="$flags --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" ;;
    one-core)
      if ! command -v taskset >/dev/null; then echo "$condition: skipped (no taskset)"; continue; fi
      prefix=(taskset -c 0) ;;
    other-isa) flags="$flags --xla_cpu_max_isa=SSE4_2" ;;
  esac
  start=$(date +%s)
  XLA_FLAGS=$flags BAYES_SLR_CACHE=$cache "${prefix[@]}" "$python" -m pytest -p no:cacheprovider \
    "$@" >"$logs/$condition.log" 2>&1
  code=$?
  rm -rf "$cache" "$cache-other-rounding"  # the latter: tests/experiments/test_golden_variation.py
  summary=$(grep -E '^(=+ )?[0-9]+ (passed|failed)|^=+ .*(passed|failed|error)' "$logs/$condition.log" | tail -1)
  echo "$condition: exit $code in $(($(date +%s) - start)) s: ${summary:-no summary} (log $logs/$condition.log)"
  [ $code -eq 0 ] || failed=1
done
exit $failed
