#!/usr/bin/env bash
# N=8 vs N=1 in llama.cpp itself, outside our server (#18): llama.cpp's own `llama-batched-bench`,
# built from the llama.cpp source node-llama-cpp ships (node_modules/node-llama-cpp/llama/
# gitRelease.bundle, so no network), on the default model and optionally a second GGUF. It runs the
# layout our server cannot choose (one KV stream shared by all sequences, `-kvu`, with the prompt
# read once and shared, `-pps`) beside the one node-llama-cpp uses (`-no-kvu`), so a reader can see
# whether a unified KV cache would bring a turn of 8 candidates to ≤ 3x one candidate here.
#
# Usage: bash bench/llama-batched.sh [extra.gguf]     (needs cmake and a C++ compiler; a 10-25 min build
#        on 2 cores the first time, cached in ${TBRL_CACHE_DIR:-~/.cache/tbrl}/llama-batched-bench)
# Prints, per model, layout and thread count: the 16-token generation time of 1 and of 8 sequences
# after a 1,700-token prompt, and their ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=node_modules/node-llama-cpp/llama/gitRelease.bundle
[ -f "$bundle" ] || { echo "no $bundle: run npm ci first" >&2; exit 2; }
for tool in cmake c++ git; do command -v "$tool" >/dev/null || { echo "needs $tool (apt-get install -y cmake g++ git)" >&2; exit 2; }; done
cache=${TBRL_CACHE_DIR:-$HOME/.cache/tbrl}/llama-batched-bench
bin=$cache/build/bin/llama-batched-bench
if [ ! -x "$bin" ]; then
  rm -rf "$cache" && mkdir -p "$(dirname "$cache")"
  git clone -q "$bundle" "$cache"
  cmake -S "$cache" -B "$cache/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DGGML_NATIVE=ON \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF >/dev/null
  cmake --build "$cache/build" --target llama-batched-bench -j"$(nproc)" >/dev/null
fi
models=("${TBRL_MODEL_DIR:-$HOME/.cache/tbrl/models}/SmolLM2-135M-Instruct.Q4_1.gguf" "$@")
echo "llama.cpp $(git -C "$cache" log -1 --format=%h) from node-llama-cpp's bundle; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for model in "${models[@]}"; do
  for threads in 1 2; do
    # llama.cpp's workers spin: with more threads than idle cores a step waits for a descheduled one
    # (measured beside a CI run: N=1 took 8 s instead of 0.4), so only 1 thread on a busy machine.
    if [ "$threads" -gt 1 ] && awk -v l="$(cut -d' ' -f1 /proc/loadavg)" -v c="$(nproc)" 'BEGIN {exit !(l > c - 1)}'; then
      echo "$(basename "$model"): $threads threads skipped, load average $(cut -d' ' -f1 /proc/loadavg) leaves no idle core"; continue
    fi
    for kv in -kvu -no-kvu; do
      rows=$("$bin" -m "$model" -c 16384 -b 2048 -ub 512 -npp 1700 -ntg 16 -npl 1,8 -pps "$kv" -t "$threads" 2>/dev/null | grep -E '^\| +1700 ')
      # Columns: PP | TG | B | N_KV | T_PP s | S_PP t/s | T_TG s | ...
      t1=$(awk -F'|' '$4+0 == 1 {print $8+0}' <<<"$rows"); t8=$(awk -F'|' '$4+0 == 8 {print $8+0}' <<<"$rows")
      printf '%-40s %2s thread(s) %-7s N=1 %6.3f s  N=8 %6.3f s  N=8/N=1 %5.2fx  (load %s)\n' \
        "$(basename "$model")" "$threads" "$kv" "$t1" "$t8" "$(awk -v a="$t8" -v b="$t1" 'BEGIN {print a / b}')" "$(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done
