//===- FusionPasses.td - Fusions before the lowering -------*- tablegen -*-===//
//
// The passes zero-pipeline runs between the ZeRO passes and
// zero-lower-to-runtime under its `fuse-epilogues` option: rewrites of
// `train` ops into ones the backends run in fewer passes over memory, the
// same bits on the CPU. Included by Passes.td, in pipeline order.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_FUSION_PASSES
#define ZERO_FUSION_PASSES

include "mlir/Pass/PassBase.td"

def TrainFuseEpilogues : Pass<"train-fuse-epilogues", "::mlir::ModuleOp"> {
  let summary = "Fuses linear layers' bias, GELU and bias gradient into their matmuls";
  let description = [{
    Rewrites, in every function of the module, the chains that one matmul
    with a cuBLASLt epilogue computes:

    | chain | fused op |
    |---|---|
    | `bias_add(matmul(x, w), b)` | `train.matmul_bias` |
    | `gelu(bias_add(matmul(x, w), b))` | `train.matmul_bias_gelu` (the GELU's input kept as `pre`) |
    | `gelu_grad(pre, matmul(dy, w))` | `train.matmul_gelu_grad` |
    | `matmul(x, dy)` and `reduce_sum(dy)` over its rows | `train.matmul_bias_grad` |

    A chain is fused where the matmul is a linear layer's (a 2-D right
    operand; a batched left operand not transposed), the matmul's result
    feeds nothing else, and all of it lies in one block. A weight gradient
    is paired with the bias gradient of the same output gradient: `dy` (or
    its reshape to rows) as the matmul's right operand, summed over every
    leading dimension. The fused op takes the place in the step where no
    tensor lives longer than the ZeRO passes planned: a linear layer's at
    its matmul (the bias, gathered in the weight's bucket, is ready there),
    else at its last op where nothing between reads the chain's results or
    is a collective (a gather while the weight waits would raise the peak
    of gathered bytes); a weight gradient with the bias gradient computed
    before it at the weight gradient, where the bias gradient's reduction
    has not been issued before it (the weight gradient would otherwise be
    held longer before its own), and with one computed after it at the
    weight gradient too. Else the chain stays.

    The fused op keeps the matmul's discardable attributes (`train.recomputed`
    on a forward recomputed for the backward). zero-pipeline runs the pass
    right before `zero-lower-to-runtime`, after the ZeRO passes.

    ```mlir
    // %mm = train.matmul %x, %w ...; %y = train.bias_add %mm, %b ...
    // becomes
    %y = train.matmul_bias %x, %w, %b
        : tensor<32x64xf32>, tensor<64x256xf32>, tensor<256xf32> -> tensor<32x256xf32>
    ```
  }];
  let dependentDialects = ["::zero::train::TrainDialect"];
}

def TrainFuseLossCast : Pass<"train-fuse-loss-cast", "::mlir::ModuleOp"> {
  let summary = "Lets cross-entropy read 16-bit logits and write their 16-bit gradient, without f32 copies";
  let description = [{
    A 16-bit model takes its loss in f32: the frontends write
    `softmax_cross_entropy(cast(logits -> f32))` and train-autodiff casts
    the gradient back. The loss kernels widen each element as they load it
    and round each as they store it, the same conversions the casts do, so
    this pass drops both casts: the loss and its gradient read the 16-bit
    logits, and the gradient is written in their type. For GPT-2 124M in
    bf16 at 8,192 tokens (stage 0, one rank) the planned arena goes from
    8.15 GB to 6.51 GB, and two passes over 50,257-wide rows leave the step.

    A widening cast (bf16 or f16 to f32) is folded where every op that reads
    it is a `softmax_cross_entropy` or `softmax_cross_entropy_grad` (as the
    logits) and every use of each such gradient is a cast back to the
    logits' type; else both stay. Every backend gives the same bits either
    way. zero-pipeline runs it with `train-fuse-epilogues`, under the same
    `fuse-epilogues` option.

    ```mlir
    // %wide = train.cast %logits : tensor<8x100xbf16> -> tensor<8x100xf32>
    // %loss = train.softmax_cross_entropy %wide, %labels ...
    // %dwide = train.softmax_cross_entropy_grad %wide, %labels, %one ...
    // %dlogits = train.cast %dwide : tensor<8x100xf32> -> tensor<8x100xbf16>
    // becomes
    %loss = train.softmax_cross_entropy %logits, %labels
        : tensor<8x100xbf16>, tensor<8xi32> -> tensor<f32>
    %dlogits = train.softmax_cross_entropy_grad %logits, %labels, %one
        : tensor<8x100xbf16>, tensor<8xi32>
    ```
  }];
  let dependentDialects = ["::zero::train::TrainDialect"];
}

def TrainFuseResidualNorm : Pass<"train-fuse-residual-norm", "::mlir::ModuleOp"> {
  let summary = "Fuses a residual connection's add into the layer norm that reads the sum";
  let description = [{
    Rewrites `layer_norm(add(a, b))`, where `a`, `b` and the sum have one
    type (a residual connection, not a broadcast), into
    `train.add_layer_norm`, which normalizes the sum as it computes it and
    still returns it: the sum's other readers (the residual stream) read the
    fused op's `sum`. One pass over the widest activations leaves the step
    for each (GPT-2: two a block and the final norm).

    The fused op stands at the add where the norm's scale and shift are
    ready there, else at the norm where nothing between reads the sum or is
    a collective (as `train-fuse-epilogues` places a linear layer). The add
    and the norm must both be recomputed for the backward or neither (the
    fused op keeps the norm's discardable attributes). zero-pipeline runs
    it with `train-fuse-epilogues`, under the same `fuse-epilogues` option;
    the CPU runs the fused op as the add then the norm, the same bits.

    ```mlir
    // %x = train.add %res, %h : tensor<2x16x64xf32>
    // %y, %mean, %rstd = train.layer_norm %x, %gamma, %beta eps 1.0e-05 ...
    // becomes
    %x, %y, %mean, %rstd = train.add_layer_norm %res, %h, %gamma, %beta
        eps 1.0e-05 : tensor<2x16x64xf32>, tensor<64xf32> -> tensor<2x16xf32>
    ```
  }];
  let dependentDialects = ["::zero::train::TrainDialect"];
}

def TrainFuseAttentionLayout : Pass<"train-fuse-attention-layout", "::mlir::ModuleOp"> {
  let summary = "Lets attention read and write its heads seq-major, without the transposes around it";
  let description = [{
    A transformer splits a projection's `[batch, seq, features]` into heads
    as `[batch, seq, heads, head_dim]` and transposes that to `[batch,
    heads, seq, head_dim]` for attention, then transposes the result back;
    the backward transposes the result's gradient in and the three
    gradients out. This pass folds those transposes into
    `train.attention` and `train.attention_grad` (their `seq_major`
    layout), whose kernels read each head by strides: GPT-2 124M drops 96
    copies of a 6 MiB activation a step.

    A group is one `train.attention` and the `train.attention_grad`s that
    read its log-sum-exp and result. It is folded where each query, key,
    value and result-gradient operand is a `train.transpose` swapping the
    two dimensions before the last (`[0, 2, 1, 3]` at rank 4), the
    gradients read the forward's own query, key and value, and every
    reader of the result and of each gradient is such a transpose (or the
    group's gradient, for the result). Else the group stays: a rotary
    embedding or grouped-query heads applied after the transpose (Llama)
    need their transposed copies anyway. Transposes nothing else reads are
    erased; the new ops keep the old ones' discardable attributes
    (`train.recomputed`). Every backend gives the same bits either way.
    zero-pipeline runs it with `train-fuse-epilogues`, under the same
    `fuse-epilogues` option.

    ```mlir
    // %qt = train.transpose %q permutation [0, 2, 1, 3] ... (and %kt, %vt)
    // %o, %lse = train.attention %qt, %kt, %vt scale 1.250000e-01 causal ...
    // %ot = train.transpose %o permutation [0, 2, 1, 3] ...
    // becomes
    %ot, %lse = train.attention %q, %k, %v scale 1.250000e-01 causal seq_major
        : tensor<2x16x4x64xbf16> -> tensor<2x4x16xf32>
    ```
  }];
  let dependentDialects = ["::zero::train::TrainDialect"];
}

#endif // ZERO_FUSION_PASSES
