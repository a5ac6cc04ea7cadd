#!/usr/bin/env python3
"""Writes the input files of the e2e tests into a directory (no numpy: the
.npz and .safetensors bytes are built by hand, see e2e_lib).

  make_files.py DIR

MLP files (inputs: input0 f32[rows, 784] features, input1 i32[rows] labels
in [0, 10)); a global batch of the MLP at N ranks is 32 N rows:

  mlp-ab.npz          two global batches of 64 rows (A then B), 128 rows
  mlp-ba.npz          the same batches in the other order (B then A)
  mlp-a.npz           one global batch of 64 rows (A)
  mlp-shape.npz       input0 is f32[128, 783]: wrong row length
  mlp-rows.npz        input0 is f32[100, 784]: not a multiple of 64 rows
  mlp-dtype.npz       input1 is f32 instead of i32 (float labels)
  mlp-i64.npz         mlp-ab.npz with input1 as i64 (numpy's default
                      integer), which the runtime takes for its i32
  mlp-missing.npz     no input1
  mlp-labels.npz      one label is 10: out of the range [0, 10)
  mlp-count.npz       input0 holds 2 global batches, input1 1
  mlp-zeros.safetensors        every MLP parameter zero
  mlp-missing.safetensors      the MLP's parameters without fc2.b
  mlp-badshape.safetensors     fc1.b as f32[127]
  garbage.npz         not a zip file
  garbage.safetensors not a safetensors file

GPT-2 (e2e_lib.GPT2_ARGS; inputs input0 tokens, input1 positions, input2
targets, all i32[rows, 12]; 2 rows per rank):

  gpt2-ab.npz         two global batches of 4 rows (N = 2)
  gpt2-tokens.npz     as gpt2-ab.npz, one token id is 100 (vocabulary 100)
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_lib as lib  # noqa: E402
from e2e_lib import Tensor  # noqa: E402

FEATURES = 784
CLASSES = 10


def features(rng, rows, width=FEATURES):
    return Tensor.from_values(
        "F32", [rows, width], [rng.uniform() * 2 - 1 for _ in range(rows * width)]
    )


def labels(rng, rows, dtype="I32"):
    return Tensor.from_values(dtype, [rows], [rng.below(CLASSES) for _ in range(rows)])


def concat(a, b):
    return Tensor(a.dtype, [a.shape[0] + b.shape[0]] + a.shape[1:], a.data + b.data)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = lib.Lcg(2024)
    xa, ya = features(rng, 64), labels(rng, 64)
    xb, yb = features(rng, 64), labels(rng, 64)
    path = lambda name: os.path.join(out, name)  # noqa: E731

    lib.write_npz(path("mlp-ab.npz"), {"input0": concat(xa, xb), "input1": concat(ya, yb)})
    lib.write_npz(path("mlp-ba.npz"), {"input0": concat(xb, xa), "input1": concat(yb, ya)})
    lib.write_npz(path("mlp-a.npz"), {"input0": xa, "input1": ya})
    lib.write_npz(path("mlp-shape.npz"),
                  {"input0": features(rng, 128, FEATURES - 1), "input1": concat(ya, yb)})
    lib.write_npz(path("mlp-rows.npz"), {"input0": features(rng, 100), "input1": labels(rng, 100)})
    lib.write_npz(path("mlp-dtype.npz"),
                  {"input0": concat(xa, xb),
                   "input1": Tensor.from_values(
                       "F32", [128], [float(v) for v in concat(ya, yb).values()])})
    lib.write_npz(path("mlp-i64.npz"),
                  {"input0": concat(xa, xb),
                   "input1": Tensor.from_values("I64", [128], concat(ya, yb).values())})
    lib.write_npz(path("mlp-missing.npz"), {"input0": concat(xa, xb)})
    bad = concat(ya, yb).values()
    bad[77] = CLASSES
    lib.write_npz(path("mlp-labels.npz"),
                  {"input0": concat(xa, xb), "input1": Tensor.from_values("I32", [128], bad)})
    lib.write_npz(path("mlp-count.npz"), {"input0": concat(xa, xb), "input1": ya})
    with open(path("garbage.npz"), "wb") as f:
        f.write(b"this is not a zip archive\n" * 4)
    with open(path("garbage.safetensors"), "wb") as f:
        f.write(b"\xff" * 8 + b"{not json")

    shapes = {"fc1.w": [784, 128], "fc1.b": [128], "fc2.w": [128, 10], "fc2.b": [10]}
    zeros = {name: Tensor("F32", shape, bytes(4 * lib.math.prod(shape)))
             for name, shape in shapes.items()}
    lib.write_safetensors(path("mlp-zeros.safetensors"), zeros)
    lib.write_safetensors(path("mlp-missing.safetensors"),
                          {k: v for k, v in zeros.items() if k != "fc2.b"})
    lib.write_safetensors(path("mlp-badshape.safetensors"),
                          dict(zeros, **{"fc1.b": Tensor("F32", [127], bytes(4 * 127))}))

    vocab, seq, rows = 100, 12, 8  # two global batches of 4 rows
    tokens = [rng.below(vocab) for _ in range(rows * seq)]
    positions = [i % seq for i in range(rows * seq)]
    targets = [(7 * t + 3) % vocab for t in tokens]
    def gpt2(tokens):  # noqa: E306
        return {"input0": Tensor.from_values("I32", [rows, seq], tokens),
                "input1": Tensor.from_values("I32", [rows, seq], positions),
                "input2": Tensor.from_values("I32", [rows, seq], targets)}
    lib.write_npz(path("gpt2-ab.npz"), gpt2(tokens))
    bad = list(tokens)
    bad[50] = vocab
    lib.write_npz(path("gpt2-tokens.npz"), gpt2(bad))


if __name__ == "__main__":
    main()
