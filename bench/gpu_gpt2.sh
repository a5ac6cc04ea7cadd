#!/usr/bin/env bash
# GPU benchmarks of gpt2_train (docs/benchmarks.md, "GPU benchmarks"):
#
#   1. GPT-2 124M and 355M, bf16, ZeRO stages 0-3, one GPU (--backend cuda):
#      mean step time (step 1 excluded), tokens/s and MFU, as gpt2_train's
#      "gpu:" line prints them, and the state and arena measured on the GPU
#      against the compile-time plan; plus stage 0 with --cuda-graph.
#   2. N = 4 ranks on --backend cuda-host-staged: per-rank state measured on
#      rank 0 against the compile-time plan, per stage.
#   3. Host overhead: steps/s of the tiny "mini" model, where the host's
#      per-step work dominates, with and without --cuda-graph.
#
# Usage: bench/gpu_gpt2.sh [build-dir]   (default: build)
# Environment: STEPS (default 20), STAGED_STEPS (4), MINI_STEPS (200; 0
# leaves part 3 out), SIZES (sizes of part 1, default "124M 355M"), STAGES
# (its stages, default "0 1 2 3"; --cuda-graph runs with stage 0 when 0 is
# among them), STAGED_SIZES (sizes of part 2, default "124M 355M"; empty
# leaves it out), RUN_TIMEOUT (seconds per run, default none), BATCH (the
# size's default global batch), PEAK_TFLOPS (passed on as --peak-tflops
# when set), OUT (where each run's log goes; default a temporary
# directory). Figures go to stdout as markdown tables, a row as soon as its
# run ends, so that a run cut short keeps the rows before it. Exits 1 when a
# run failed (after every table), 0 otherwise.
# scripts/gpu-check.sh runs the short version: SIZES=124M STAGES="0 3"
# STAGED_SIZES= and few steps.
set -u

build=${1:-build}
gpt2_train=$build/bin/gpt2_train
steps=${STEPS:-20}
staged_steps=${STAGED_STEPS:-4}
mini_steps=${MINI_STEPS:-200}
sizes=${SIZES-124M 355M}
stages=${STAGES-0 1 2 3}
staged_sizes=${STAGED_SIZES-124M 355M}
run_timeout=${RUN_TIMEOUT:-}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
failed=0
extra=()
[[ -n ${BATCH:-} ]] && extra+=(--batch "$BATCH")
[[ -n ${PEAK_TFLOPS:-} ]] && extra+=(--peak-tflops "$PEAK_TFLOPS")

if [[ ! -x $gpt2_train ]]; then
  echo "gpu_gpt2.sh: $gpt2_train not found (build it: ninja -C $build gpt2_train)" >&2
  exit 1
fi

# run LOG ARGS...: runs gpt2_train, keeps its output in $out/LOG.log, and
# echoes "ok" or "failed (exit N)" (or "timed out", after $RUN_TIMEOUT s).
# Called in $(...): the callers count the failures.
run() {
  local log=$out/$1.log limit=()
  shift
  # --foreground keeps gpt2_train in this script's process group, so that a
  # `timeout` around the whole script (scripts/gpu-check.sh) stops it too.
  [[ -n $run_timeout ]] && limit=(timeout --foreground --kill-after=5 "$run_timeout")
  "${limit[@]}" "$gpt2_train" --log-every 0 "$@" >"$log" 2>&1
  local status=$?
  if ((status == 0)); then
    echo ok
  elif [[ -n $run_timeout ]] && ((status == 124 || status == 137)); then
    echo "timed out after $run_timeout s (see $log)"
  else
    echo "failed (exit $status, see $log)"
  fi
}

# memory LOG: "state (plan) | arena high water (planned)" from the
# "measured on rank 0" line.
memory() {
  local cells
  cells=$(sed -nE 's/^measured on rank 0: state (.*) \(plan (.*)\), arena high water (.*) of the planned (.*) arena .*/\1 (\2) | \3 (\4)/p' \
    "$out/$1.log" | head -1)
  echo "${cells:-? | ?}"
}

# gpu_field LOG FIELD: a figure of the "gpu:" line (ms, tokens, mfu).
gpu_field() {
  local line
  line=$(grep '^gpu: ' "$out/$1.log" | tail -1)
  case $2 in
  ms) sed -nE 's/.*mean step ([0-9.]+) ms.*/\1/p' <<<"$line" ;;
  tokens) sed -nE 's/.*, ([0-9]+) tokens\/s.*/\1/p' <<<"$line" ;;
  mfu) sed -nE 's/.*MFU ([0-9.]+)%.*/\1%/p' <<<"$line" ;;
  esac
}

echo "## GPT-2 on one GPU (--backend cuda, bf16, $steps steps)"
echo
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
echo
echo "| size | stage | CUDA graph | step (ms) | tokens/s | MFU | state (plan) | arena high water (planned) |"
echo "|---|---|---|---|---|---|---|---|"
for size in $sizes; do
  for stage in $stages; do
    for graph in no yes; do
      [[ $graph == yes && $stage != 0 ]] && continue
      args=(--size "$size" --stage "$stage" --precision bf16 --backend cuda
        --steps "$steps" "${extra[@]}")
      [[ $graph == yes ]] && args+=(--cuda-graph)
      log=n1-$size-s$stage-graph-$graph
      status=$(run "$log" "${args[@]}")
      [[ $status == ok ]] || failed=$((failed + 1))
      if [[ $status == ok ]]; then
        echo "| $size | $stage | $graph | $(gpu_field "$log" ms) |" \
          "$(gpu_field "$log" tokens) | $(gpu_field "$log" mfu) | $(memory "$log") |"
      else
        echo "| $size | $stage | $graph | $status | | | | |"
      fi
    done
  done
done

if [[ -n $staged_sizes ]]; then
echo
echo "## Per-rank memory, N = 4 on --backend cuda-host-staged (bf16, $staged_steps steps)"
echo
echo "| size | stage | state measured on rank 0 | state planned | arena high water | arena planned |"
echo "|---|---|---|---|---|---|"
for size in $staged_sizes; do
  for stage in 0 1 2 3; do
    log=n4-$size-s$stage
    status=$(run "$log" --size "$size" --stage "$stage" -n 4 --precision bf16 \
      --backend cuda-host-staged --steps "$staged_steps" "${extra[@]}")
    [[ $status == ok ]] || failed=$((failed + 1))
    if [[ $status == ok ]]; then
      # "measured on rank 0: state X (plan Y), arena high water Z of the
      # planned W arena ..."
      sed -nE 's/^measured on rank 0: state (.*) \(plan (.*)\), arena high water (.*) of the planned (.*) arena .*/| '"$size"' | '"$stage"' | \1 | \2 | \3 | \4 |/p' \
        "$out/$log.log"
    else
      echo "| $size | $stage | $status | | | |"
    fi
  done
done
fi

if ((mini_steps > 0)); then
echo
echo "## Host overhead: mini (f32, $mini_steps steps, --backend cuda)"
echo
echo "| CUDA graph | step (ms) | steps/s |"
echo "|---|---|---|"
for graph in no yes; do
  args=(--size mini --stage 0 --backend cuda --steps "$mini_steps")
  [[ $graph == yes ]] && args+=(--cuda-graph)
  log=mini-graph-$graph
  status=$(run "$log" "${args[@]}")
  [[ $status == ok ]] || failed=$((failed + 1))
  if [[ $status == ok ]]; then
    ms=$(gpu_field "$log" ms)
    echo "| $graph | $ms | $(awk -v ms="$ms" 'BEGIN { printf "%.0f", 1000 / ms }') |"
  else
    echo "| $graph | $status | |"
  fi
done
fi
echo
echo "logs: $out"
if ((failed > 0)); then
  echo "gpu_gpt2.sh: $failed run(s) failed or timed out"
  exit 1
fi
