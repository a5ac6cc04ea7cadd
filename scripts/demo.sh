#!/usr/bin/env bash
# Sets up, builds and runs the demo: GPT-2, built in C++ with the graph
# builder (examples/gpt2/gpt2_train), is compiled for ZeRO stage 3 on 4
# ranks; the compile-time plan says what each rank will hold and send; then
# gpt2_train trains it on 4 CPU ranks over MPI on the shipped corpus
# (byte-level Shakespeare, examples/gpt2/data/), the loss going down, and
# prints what rank 0 measured beside the plan. Ends with zero-verify
# catching a rank-dependent collective.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ZERO_BUILD_DIR:-$root/build}"

bash "$root/scripts/setup.sh"
# Only the two programs the demo runs (scripts/test.sh builds the rest); the
# plan prints as soon as they are linked. ccache keeps what they compiled for
# the next build of any tree.
echo "demo: building zero-opt and gpt2_train into $build (a few minutes the first time)"
build_log="$build.demo-build.log"
if ! ZERO_TARGETS="zero-opt gpt2_train" bash "$root/scripts/build.sh" >"$build_log" 2>&1; then
  tail -n 40 "$build_log"
  echo "demo: the build failed; its whole output is in $build_log" >&2
  exit 1
fi

zero_opt="$build/bin/zero-opt"
gpt2_train="$build/bin/gpt2_train"
step="$(mktemp --suffix=.mlir)"
trap 'rm -f "$step"' EXIT

echo "== the plan: GPT-2 (gpt2_train --size mini) at ZeRO stage 3 on 4 ranks =="
# The differentiated step the builder made, through zero-opt's report.
"$gpt2_train" --size mini -n 4 --stage 3 --plan-only --save-step "$step" >/dev/null
"$zero_opt" --zero-pipeline="stage=3 ranks=4 report=text reduce-bucket-bytes=0" \
  "$step" -o /dev/null

echo
echo "== gpt2_train --size mini -n 4 --stage 3 --steps 300 (examples/gpt2/data/coriolanus.txt) =="
"$gpt2_train" --size mini -n 4 --stage 3 --steps 300 --log-every 25
echo "(every flag: docs/frontend.md)"

echo
echo "== zero-verify rejects a collective under a rank-dependent branch =="
if "$zero_opt" --zero-verify --mlir-print-op-on-diagnostic=false - -o /dev/null <<'MLIR'
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @step(%x: tensor<8xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %g: tensor<4xf32>) -> tensor<4xf32>
      attributes {train.step} {
    %c0 = arith.constant 0 : index
    %first = tensor.extract %x[%c0] : tensor<8xf32>
    %zero = arith.constant 0.0 : f32
    %positive = arith.cmpf ogt, %first, %zero : f32
    %r = scf.if %positive -> tensor<4xf32> {
      %sum = dist.all_reduce sum %g axis 0 : tensor<4xf32>
      scf.yield %sum : tensor<4xf32>
    } else {
      scf.yield %g : tensor<4xf32>
    }
    return %r : tensor<4xf32>
  }
}
MLIR
then
  echo "demo: expected zero-verify to reject the step" >&2
  exit 1
fi
echo "(rejected, as expected)"

echo
echo "== the verifier rejects a wrong shard size =="
if "$build/bin/zero-opt" --mlir-print-op-on-diagnostic=false - <<'MLIR'
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @f(%g: tensor<10xf32>) -> tensor<4xf32> {
    %s = dist.reduce_scatter sum %g axis 0 dim 0 : tensor<10xf32> -> tensor<4xf32>
    return %s : tensor<4xf32>
  }
}
MLIR
then
  echo "demo: expected a verifier error" >&2
  exit 1
fi
echo "(rejected, as expected)"
