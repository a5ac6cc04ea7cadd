#!/usr/bin/env bash
# Sets up, builds and runs the demo: zero-opt verifies the hand-written MLP
# training step, prints it, and shows the dist dialect's shard arithmetic on
# a reduce-scatter / all-gather pair over four ranks.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ZERO_BUILD_DIR:-$root/build}"

bash "$root/scripts/setup.sh"
bash "$root/scripts/build.sh" >/dev/null

echo "== zero-opt examples/mlp.mlir (verified, printed) =="
"$build/bin/zero-opt" "$root/examples/mlp.mlir"

echo
echo "== zero-opt examples/collectives.mlir (10 elements over 4 ranks: shards of 3) =="
"$build/bin/zero-opt" "$root/examples/collectives.mlir"

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
