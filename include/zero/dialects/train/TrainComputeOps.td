//===- TrainComputeOps.td - Compute of a training step -----*- tablegen -*-===//
//
// Enough for an MLP, GPT-2 and Llama: forward ops, and a gradient op for
// each op whose gradient is not a composition of others. All are Pure and
// work on f32, bf16 or f16 tensors (integer token ids and labels aside; the
// data-movement ops slice, pad and concat also move those).
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_TRAIN_COMPUTE_OPS
#define ZERO_TRAIN_COMPUTE_OPS

include "zero/dialects/train/TrainGradientInterface.td"

// An op `train-autodiff` can differentiate through; its rule is in
// dialects/train/TrainGradients.cpp.
def Train_Differentiable : DeclareOpInterfaceMethods<Train_GradientOpInterface>;

// Single-result ops name their result after `resultName` in printed IR.
class Train_ComputeOp<string mnemonic, string resultName, list<Trait> traits = []>
    : Train_Op<mnemonic, traits # [Pure,
        DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let extraClassDefinition = [{
    void $cppClass::getAsmResultNames(::mlir::OpAsmSetValueNameFn setNameFn) {
      for (::mlir::Value result : getOperation()->getResults())
        setNameFn(result, "}] # resultName # [{");
    }
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Train_UnaryOp<string mnemonic, string formula>
    : Train_ComputeOp<mnemonic, mnemonic, [SameOperandsAndResultType,
        Train_Differentiable]> {
  let summary = "Elementwise " # formula;
  let description = [{
    ```mlir
    %y = train.}] # mnemonic # [{ %x : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Train_NegOp : Train_UnaryOp<"neg", "negation, -x">;
def Train_ExpOp : Train_UnaryOp<"exp", "exponential, e^x">;
def Train_LogOp : Train_UnaryOp<"log", "natural logarithm, ln x">;
def Train_SqrtOp : Train_UnaryOp<"sqrt", "square root">;
def Train_RsqrtOp : Train_UnaryOp<"rsqrt", "reciprocal square root, 1 / sqrt(x)">;
def Train_TanhOp : Train_UnaryOp<"tanh", "hyperbolic tangent">;
def Train_ReluOp : Train_UnaryOp<"relu", "rectified linear unit, max(x, 0)">;
def Train_GeluOp : Train_ComputeOp<"gelu", "gelu", [SameOperandsAndResultType,
    Train_Differentiable]> {
  let summary = "Elementwise GELU, x times the standard normal CDF of x";
  let description = [{
    Without `exact`, the tanh approximation
    `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))` of GPT-2 (PyTorch's
    `gelu(approximate='tanh')`, Hugging Face's `gelu_new`); with `exact`,
    `0.5 x (1 + erf(x / sqrt(2)))` (PyTorch's default `gelu`, which
    GPT-NeoX, BERT and most encoders use). The two differ by up to 5e-4:
    enough to part a training from PyTorch's, so neither stands in for the
    other.

    ```mlir
    %y = train.gelu %x : tensor<4x8xf32>
    %z = train.gelu %x exact : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, UnitAttr:$exact);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input (`exact` $exact^)? attr-dict `:` type($input)";
}
def Train_SigmoidOp : Train_UnaryOp<"sigmoid", "logistic function, 1 / (1 + e^-x)">;
def Train_SiluOp : Train_UnaryOp<"silu",
    "SiLU (swish), x / (1 + e^-x), the gate of Llama's SwiGLU">;

class Train_BinaryOp<string mnemonic, string formula>
    : Train_ComputeOp<mnemonic, mnemonic, [SameOperandsAndResultType,
        Train_Differentiable]> {
  let summary = "Elementwise " # formula # " of two tensors of one type";
  let description = [{
    ```mlir
    %z = train.}] # mnemonic # [{ %x, %y : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$lhs, Train_FloatTensor:$rhs);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Train_AddOp : Train_BinaryOp<"add", "sum">;
def Train_SubOp : Train_BinaryOp<"sub", "difference">;
def Train_MulOp : Train_BinaryOp<"mul", "product">;
def Train_DivOp : Train_BinaryOp<"div", "quotient">;

def Train_ScaleOp : Train_ComputeOp<"scale", "scaled", [SameOperandsAndResultType,
    Train_Differentiable]> {
  let summary = "Multiplies every element by a constant";
  let description = [{
    ```mlir
    %s = train.scale %scores by 0.125 : tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, F64Attr:$factor);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input `by` $factor attr-dict `:` type($input)";
}

def Train_BiasAddOp : Train_ComputeOp<"bias_add", "biased", [
    AllTypesMatch<["input", "result"]>, Train_Differentiable]> {
  let summary = "Adds a 1-D bias along the last dimension";
  let description = [{
    Its gradient is `reduce_sum` of the result gradient over the leading
    dimensions.

    ```mlir
    %y = train.bias_add %x, %b : tensor<32x128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, Train_FloatTensor:$bias);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input `,` $bias attr-dict `:` type($input) `,` type($bias)";
  let hasVerifier = 1;
}

def Train_CausalMaskOp : Train_ComputeOp<"causal_mask", "masked", [
    SameOperandsAndResultType, Train_Differentiable]> {
  let summary = "Fills positions above the diagonal of the last two dimensions";
  let description = [{
    Element `[..., i, j]` with `j > i` becomes `fill`: `-inf` (printed as
    `0xFFF0000000000000`) before a softmax over attention scores, 0 for
    the gradient, which is the same op.

    ```mlir
    %m = train.causal_mask %scores fill 0xFFF0000000000000 : tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, F64Attr:$fill);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input `fill` $fill attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Train_KeyMaskOp : Train_ComputeOp<"key_mask", "masked", [
    AllTypesMatch<["input", "result"]>, Train_Differentiable]> {
  let summary = "Fills the positions of padding keys along the last dimension";
  let description = [{
    The padding mask of a tokenizer's `attention_mask`: `keep` is
    `[batch, keys]`, nonzero where the key is a real token. Element
    `[b, ..., j]` of the input, whose first dimension is the batch and
    last the keys, becomes `fill` where `keep[b, j]` is 0: `-inf` before a
    softmax over attention scores (with `train.softmax safe`, so that a
    query with no key left gets zeros, as PyTorch's attention does), 0 for
    the gradient, which is the same op.

    ```mlir
    %m = train.key_mask %scores, %keep fill 0xFFF0000000000000 : tensor<2x4x16x16xf32>, tensor<2x16xi64>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, Train_IndexTensor:$keep,
                       F64Attr:$fill);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $keep `fill` $fill attr-dict `:` type($input) `,` type($keep)
  }];
  let hasVerifier = 1;
}

def Train_DropoutOp : Train_ComputeOp<"dropout", "dropped", [
    SameOperandsAndResultType, Train_Differentiable]> {
  let summary = "Zeroes elements with probability `rate`, scales the rest";
  let description = [{
    PyTorch's dropout in training: element `i` is kept with probability
    `1 - rate` and then multiplied by `1 / (1 - rate)`, else 0. Whether it is
    kept depends only on the trainer's seed, `stream` (one per dropout of
    the step, so that two dropouts draw independently), the step, the
    micro-step and the element's index in the global batch: the first
    dimension is the batch, split over the ranks as the step's inputs are,
    so a run is bitwise the same at every ZeRO stage and rank count
    (runtime/Dropout.h). The gradient is the same op with the same stream:
    the same mask and scale. The evaluation program runs without it.

    ```mlir
    %d = train.dropout %h rate 1.000000e-01 stream 0 : tensor<8x16x64xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, F64Attr:$rate,
                       I64Attr:$stream);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $input `rate` $rate `stream` $stream attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Matmul, normalization, softmax
//===----------------------------------------------------------------------===//

def Train_MatmulOp : Train_ComputeOp<"matmul", "mm", [Train_Differentiable]> {
  let summary = "Matrix product with optional transposes and batching";
  let description = [{
    `[..., M, K] x [..., K, N] -> [..., M, N]` after transposing the last two
    dimensions of an operand whose `transpose_*` flag is set. Batch
    dimensions must match, or the right operand may be 2-D and shared by
    every batch (a linear layer). The gradient is two matmuls.

    ```mlir
    %y = train.matmul %x, %w : tensor<32x784xf32>, tensor<784x128xf32> -> tensor<32x128xf32>
    %dw = train.matmul %x, %dy transpose_a : tensor<32x784xf32>, tensor<32x128xf32> -> tensor<784x128xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$lhs, Train_FloatTensor:$rhs,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_a` $transpose_a^)? (`transpose_b` $transpose_b^)?
    attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Train_SoftmaxOp : Train_ComputeOp<"softmax", "softmax", [
    SameOperandsAndResultType, Train_Differentiable]> {
  let summary = "Softmax over the last dimension";
  let description = [{
    With `safe`, a row whose every element is `-inf` (an attention query
    whose keys are all masked) gives zeros, as PyTorch's
    `scaled_dot_product_attention` does; without, NaN, as `torch.softmax`
    does.

    ```mlir
    %p = train.softmax %scores : tensor<2x4x16x16xf32>
    %q = train.softmax %masked safe : tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, UnitAttr:$safe);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input (`safe` $safe^)? attr-dict `:` type($input)";
}

// MLIR 19's format type inference mixes up AllTypesMatch groups that hold two
// results (fixed upstream in llvm-project #122717), so the row statistics'
// type is spelled out once in the format and tied by TypesMatchWith.
def Train_LayerNormOp : Train_ComputeOp<"layer_norm", "ln", [
    AllTypesMatch<["input", "result"]>, AllTypesMatch<["gamma", "beta"]>,
    TypesMatchWith<"rstd has the type of mean", "mean", "rstd", "$_self">,
    Train_Differentiable]> {
  let summary = "Layer normalization over the last dimension, with scale and shift";
  let description = [{
    Returns the normalized tensor and, for the gradient, the f32 mean and
    reciprocal standard deviation of each row.

    ```mlir
    %y, %mean, %rstd = train.layer_norm %x, %gamma, %beta eps 1.0e-05
        : tensor<2x16x64xf32>, tensor<64xf32> -> tensor<2x16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, Train_FloatTensor:$gamma,
                       Train_FloatTensor:$beta, F64Attr:$eps);
  let results = (outs Train_FloatTensor:$result, TensorOf<[F32]>:$mean,
                      TensorOf<[F32]>:$rstd);
  let assemblyFormat = [{
    $input `,` $gamma `,` $beta `eps` $eps attr-dict `:` type($input) `,`
    type($gamma) `->` type($mean)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    void $cppClass::getAsmResultNames(::mlir::OpAsmSetValueNameFn setNameFn) {
      setNameFn(getResult(), "ln");
      setNameFn(getMean(), "ln_mean");
      setNameFn(getRstd(), "ln_rstd");
    }
  }];
}

// One op for softmax(q k^T scale [+ causal mask]) v, as FlashAttention
// computes it: the [seq, seq] scores and probabilities are never tensors of
// the step, so they take no memory between forward and backward and no
// memory traffic, and the backward recomputes them from the row log-sum-exp.
def Train_AttentionOp : Train_ComputeOp<"attention", "attn", [
    AllTypesMatch<["query", "key", "value", "result"]>, Train_Differentiable]> {
  let summary = "Fused scaled dot-product attention (FlashAttention's algorithm)";
  let description = [{
    `softmax(query key^T * scale) value` over the last two dimensions
    `[..., seq, head_dim]`, with `causal` the entries of key position j >
    query position i left out (PyTorch's `scaled_dot_product_attention`
    with `is_causal=True`). Also returns, for the gradient, each query row's
    f32 log-sum-exp of its scaled scores. Query, key and value have one
    type: as many key as query positions, one head per query head.

    ```mlir
    %o, %lse = train.attention %q, %k, %v scale 1.250000e-01 causal
        : tensor<2x4x16x64xbf16> -> tensor<2x4x16xf32>
    ```

    With `seq_major`, query, key, value and result are `[..., seq, heads,
    head_dim]`, the layout a linear layer's output has once its features
    are split into heads, and the op reads each head by strides: the same
    values as transposing them to `[..., heads, seq, head_dim]` around the
    op, without the transposes. The log-sum-exp stays `[..., heads, seq]`.
    `train-fuse-attention-layout` sets it.

    ```mlir
    %o, %lse = train.attention %q, %k, %v scale 1.250000e-01 causal seq_major
        : tensor<2x16x4x64xbf16> -> tensor<2x4x16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$query, Train_FloatTensor:$key,
                       Train_FloatTensor:$value, F64Attr:$scale,
                       UnitAttr:$causal, UnitAttr:$seq_major);
  let results = (outs Train_FloatTensor:$result,
                      TensorOf<[F32]>:$logsumexp);
  let assemblyFormat = [{
    $query `,` $key `,` $value `scale` $scale (`causal` $causal^)?
    (`seq_major` $seq_major^)? attr-dict `:` type($query) `->` type($logsumexp)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    void $cppClass::getAsmResultNames(::mlir::OpAsmSetValueNameFn setNameFn) {
      setNameFn(getResult(), "attn");
      setNameFn(getLogsumexp(), "attn_lse");
    }
  }];
}

//===----------------------------------------------------------------------===//
// Embedding and loss
//===----------------------------------------------------------------------===//

def Train_EmbeddingOp : Train_ComputeOp<"embedding", "embedded", [Train_Differentiable]> {
  let summary = "Looks up rows of a table by integer ids";
  let description = [{
    `[V, D]` table, ids of any shape `S` -> `S x D`.

    With `padding_idx = p`, the lookup is unchanged but row `p` of the table
    gets no gradient from it, as PyTorch's `nn.Embedding(padding_idx=p)`:
    positions holding the pad id do not train its row.

    ```mlir
    %e = train.embedding %wte, %tokens : tensor<256x64xf32>, tensor<2x16xi32> -> tensor<2x16x64xf32>
    %p = train.embedding %wte, %tokens {padding_idx = 0 : i64}
        : tensor<256x64xf32>, tensor<2x16xi32> -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$table, Train_IndexTensor:$ids,
                       OptionalAttr<I64Attr>:$padding_idx);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $ids attr-dict `:` type($table) `,` type($ids) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Train_SoftmaxCrossEntropyOp : Train_ComputeOp<"softmax_cross_entropy", "loss", [
    Train_Differentiable]> {
  let summary = "Mean softmax cross-entropy of logits against integer labels";
  let description = [{
    Logits `S x C`, labels `S` -> the f32 mean over all label positions.

    ```mlir
    %loss = train.softmax_cross_entropy %logits, %labels
        : tensor<32x10xf32>, tensor<32xi32> -> tensor<f32>
    ```

    With `ignore_index`, positions labelled so take no part (PyTorch's
    `ignore_index`), and the row terms of the others are summed and divided
    by `count`, the number of labels not ignored (`train.count_labels`).
    The count is an operand, not computed here, because under data
    parallelism the mean is over the global batch: `dist-data-parallel`
    averages the count over the ranks, so a rank with fewer real tokens
    weighs less, as in one process training on the whole batch. A count of
    0 (every label ignored) gives a NaN loss and a zero gradient, as PyTorch.

    With `label_smoothing` e in [0, 1] (PyTorch's), each row's target is
    (1 - e) on its label plus e / C on every class: the row's term is
    `logsumexp(x) - (1 - e) x[label] - e mean(x)`.

    ```mlir
    %count = train.count_labels %labels {ignore_index = -100 : i64}
        : tensor<32xi32> -> tensor<f32>
    %loss = train.softmax_cross_entropy %logits, %labels count %count
        {ignore_index = -100 : i64} : tensor<32x10xf32>, tensor<32xi32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$logits, Train_IndexTensor:$labels,
                       Optional<Train_ScalarF32>:$count,
                       OptionalAttr<I64Attr>:$ignore_index,
                       OptionalAttr<F64Attr>:$label_smoothing);
  let results = (outs Train_ScalarF32:$loss);
  let assemblyFormat = [{
    $logits `,` $labels (`count` $count^)? attr-dict `:` type($logits) `,`
        type($labels) `->` type($loss)
  }];
  let hasVerifier = 1;
}

def Train_CountLabelsOp : Train_ComputeOp<"count_labels", "count"> {
  let summary = "The number of labels other than `ignore_index`, as f32";
  let description = [{
    The denominator of a loss that ignores labels. `dist-data-parallel`
    averages it over the ranks right after it is computed, so every rank
    divides by the global batch's count (over N): see
    `train.softmax_cross_entropy`. Counts are exact in f32 up to 2^24
    labels a rank.

    ```mlir
    %count = train.count_labels %labels {ignore_index = -100 : i64}
        : tensor<4x31xi32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Train_IndexTensor:$labels, I64Attr:$ignore_index);
  let results = (outs Train_ScalarF32:$count);
  let assemblyFormat = [{
    $labels attr-dict `:` type($labels) `->` type($count)
  }];
}

//===----------------------------------------------------------------------===//
// Reductions and shape
//===----------------------------------------------------------------------===//

class Train_ReduceOp<string mnemonic, string what>
    : Train_ComputeOp<mnemonic, "reduced", [Train_Differentiable]> {
  let summary = "Reduces (" # what # ") over the given dimensions, dropping them";
  let description = [{
    ```mlir
    %db = train.}] # mnemonic # [{ %dy dims [0] : tensor<32x128xf32> -> tensor<128xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, DenseI64ArrayAttr:$dims);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input `dims` $dims attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Train_ReduceSumOp : Train_ReduceOp<"reduce_sum", "sum">;
def Train_ReduceMeanOp : Train_ReduceOp<"reduce_mean", "mean">;

def Train_ExpandOp : Train_ComputeOp<"expand", "expanded", [Train_Differentiable]> {
  let summary = "Repeats a tensor along new dimensions (the gradient of a reduction)";
  let description = [{
    The inverse of `reduce_sum` with the same `dims`: the result has the
    input's dimensions with new ones inserted at `dims`.

    ```mlir
    %g = train.expand %db dims [0] : tensor<128xf32> -> tensor<32x128xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, DenseI64ArrayAttr:$dims);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input `dims` $dims attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Train_ReshapeOp : Train_ComputeOp<"reshape", "reshaped", [Train_Differentiable]> {
  let summary = "Reinterprets a tensor with another shape of the same size";
  let description = [{
    ```mlir
    %h = train.reshape %x : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$input);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Train_TransposeOp : Train_ComputeOp<"transpose", "transposed", [Train_Differentiable]> {
  let summary = "Permutes dimensions: result dim i is input dim permutation[i]";
  let description = [{
    ```mlir
    %t = train.transpose %h permutation [0, 2, 1, 3]
        : tensor<2x16x4x16xf32> -> tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $input `permutation` $permutation attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

// Slice, pad and concat copy elements without looking at them, so they also
// move integer ids and labels (the shifted labels of a causal-LM loss).
def Train_MovableTensor : RankedTensorOf<[F32, BF16, F16, I32, I64]>;

def Train_SliceOp : Train_ComputeOp<"slice", "sliced", [Train_Differentiable]> {
  let summary = "Takes a contiguous range of positions along one dimension";
  let description = [{
    The result has the input's shape except in `dim`, where it holds the
    input's positions `[offset, offset + n)`, `n` being the result's extent
    there. Splitting GPT-2's fused query/key/value projection is three
    slices; a causal-LM loss drops the last position of the logits and the
    first of the labels with two. The gradient is `train.pad` of the result
    gradient back into the input's shape.

    ```mlir
    %k = train.slice %qkv dim 2 offset 64 : tensor<2x16x192xf32> -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins Train_MovableTensor:$input, I64Attr:$dim, I64Attr:$offset);
  let results = (outs Train_MovableTensor:$result);
  let assemblyFormat = [{
    $input `dim` $dim `offset` $offset attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Train_PadOp : Train_ComputeOp<"pad", "padded", [Train_Differentiable]> {
  let summary = "Places a tensor at an offset of one dimension of a zero tensor";
  let description = [{
    The inverse of `train.slice` with the same `dim` and `offset`, and its
    gradient: positions `[offset, offset + n)` of `dim` hold the input,
    every other position is zero. Its own gradient is that slice.

    ```mlir
    %dqkv = train.pad %dk dim 2 offset 64 : tensor<2x16x64xf32> -> tensor<2x16x192xf32>
    ```
  }];
  let arguments = (ins Train_MovableTensor:$input, I64Attr:$dim, I64Attr:$offset);
  let results = (outs Train_MovableTensor:$result);
  let assemblyFormat = [{
    $input `dim` $dim `offset` $offset attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Train_ConcatOp : Train_ComputeOp<"concat", "concat", [Train_Differentiable]> {
  let summary = "Joins tensors end to end along one dimension";
  let description = [{
    The operands agree in every dimension but `dim` and have one element
    type; the result's extent in `dim` is the sum of theirs, in operand
    order. The rotary embedding's rotate-half is a concat of two slices.
    The gradient of each operand is a `train.slice` of the result gradient.

    ```mlir
    %r = train.concat %neg_hi, %lo dim 3
        : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins Variadic<Train_MovableTensor>:$inputs, I64Attr:$dim);
  let results = (outs Train_MovableTensor:$result);
  let assemblyFormat = [{
    $inputs `dim` $dim attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Train_CastOp : Train_ComputeOp<"cast", "cast", [Train_Differentiable]> {
  let summary = "Converts between f32, bf16 and f16, rounding to nearest even";
  let description = [{
    ```mlir
    %h = train.cast %master : tensor<128xf32> -> tensor<128xbf16>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Gradient ops
//===----------------------------------------------------------------------===//

class Train_ActivationGradOp<string mnemonic, string forward, string saved>
    : Train_ComputeOp<mnemonic, "grad", [SameOperandsAndResultType]> {
  let summary = "Gradient of `train." # forward # "` from its " # saved # " and the result gradient";
  let description = [{
    ```mlir
    %dx = train.}] # mnemonic # [{ %saved, %dy : tensor<32x128xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$saved, Train_FloatTensor:$result_grad);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$saved `,` $result_grad attr-dict `:` type($result)";
}

def Train_ReluGradOp : Train_ActivationGradOp<"relu_grad", "relu", "input">;
def Train_GeluGradOp : Train_ComputeOp<"gelu_grad", "grad", [SameOperandsAndResultType]> {
  let summary = "Gradient of `train.gelu` from its input and the result gradient";
  let description = [{
    `exact` as the `train.gelu` it differentiates.

    ```mlir
    %dx = train.gelu_grad %x, %dy exact : tensor<32x128xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$saved, Train_FloatTensor:$result_grad,
                       UnitAttr:$exact);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$saved `,` $result_grad (`exact` $exact^)? attr-dict `:` type($result)";
}
def Train_TanhGradOp : Train_ActivationGradOp<"tanh_grad", "tanh", "result">;
def Train_SigmoidGradOp : Train_ActivationGradOp<"sigmoid_grad", "sigmoid", "result">;
def Train_SiluGradOp : Train_ActivationGradOp<"silu_grad", "silu", "input">;
def Train_SoftmaxGradOp : Train_ActivationGradOp<"softmax_grad", "softmax", "result">;

def Train_LayerNormGradOp : Train_ComputeOp<"layer_norm_grad", "ln_grad", [
    AllTypesMatch<["result_grad", "input", "input_grad"]>,
    AllTypesMatch<["gamma", "gamma_grad", "beta_grad"]>,
    AllTypesMatch<["mean", "rstd"]>]> {
  let summary = "Gradients of `train.layer_norm` with respect to input, scale and shift";
  let description = [{
    ```mlir
    %dx, %dgamma, %dbeta = train.layer_norm_grad %dy, %x, %gamma, %mean, %rstd
        : tensor<2x16x64xf32>, tensor<64xf32>, tensor<2x16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$result_grad, Train_FloatTensor:$input,
                       Train_FloatTensor:$gamma, TensorOf<[F32]>:$mean,
                       TensorOf<[F32]>:$rstd);
  let results = (outs Train_FloatTensor:$input_grad, Train_FloatTensor:$gamma_grad,
                      Train_FloatTensor:$beta_grad);
  let assemblyFormat = [{
    $result_grad `,` $input `,` $gamma `,` $mean `,` $rstd attr-dict `:`
    type($input) `,` type($gamma) `,` type($mean)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    void $cppClass::getAsmResultNames(::mlir::OpAsmSetValueNameFn setNameFn) {
      setNameFn(getInputGrad(), "ln_dx");
      setNameFn(getGammaGrad(), "ln_dgamma");
      setNameFn(getBetaGrad(), "ln_dbeta");
    }
  }];
}

def Train_AttentionGradOp : Train_ComputeOp<"attention_grad", "attn_grad", [
    AllTypesMatch<["result_grad", "query", "key", "value", "result",
                   "query_grad", "key_grad", "value_grad"]>]> {
  let summary = "Gradients of `train.attention` with respect to query, key and value";
  let description = [{
    Recomputes each block of probabilities from the query, the key and the
    forward's log-sum-exp, as FlashAttention's backward does, rather than
    reading them back.

    ```mlir
    %dq, %dk, %dv = train.attention_grad %do, %q, %k, %v, %o, %lse
        scale 1.250000e-01 causal : tensor<2x4x16x64xbf16> -> tensor<2x4x16xf32>
    ```

    `seq_major` as `train.attention`'s: every operand and gradient but the
    log-sum-exp is `[..., seq, heads, head_dim]`.
  }];
  let arguments = (ins Train_FloatTensor:$result_grad, Train_FloatTensor:$query,
                       Train_FloatTensor:$key, Train_FloatTensor:$value,
                       Train_FloatTensor:$result, TensorOf<[F32]>:$logsumexp,
                       F64Attr:$scale, UnitAttr:$causal, UnitAttr:$seq_major);
  let results = (outs Train_FloatTensor:$query_grad, Train_FloatTensor:$key_grad,
                      Train_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $result_grad `,` $query `,` $key `,` $value `,` $result `,` $logsumexp
    `scale` $scale (`causal` $causal^)? (`seq_major` $seq_major^)? attr-dict
    `:` type($query) `->` type($logsumexp)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    void $cppClass::getAsmResultNames(::mlir::OpAsmSetValueNameFn setNameFn) {
      setNameFn(getQueryGrad(), "attn_dq");
      setNameFn(getKeyGrad(), "attn_dk");
      setNameFn(getValueGrad(), "attn_dv");
    }
  }];
}

def Train_EmbeddingGradOp : Train_ComputeOp<"embedding_grad", "table_grad"> {
  let summary = "Gradient of `train.embedding` with respect to the table";
  let description = [{
    Scatter-adds each row of the result gradient into the row its id names;
    rows no id names get 0, and so does row `padding_idx` where it is set.

    ```mlir
    %dwte = train.embedding_grad %de, %tokens
        : tensor<2x16x64xf32>, tensor<2x16xi32> -> tensor<256x64xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$result_grad, Train_IndexTensor:$ids,
                       OptionalAttr<I64Attr>:$padding_idx);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $result_grad `,` $ids attr-dict `:` type($result_grad) `,` type($ids) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Train_SoftmaxCrossEntropyGradOp
    : Train_ComputeOp<"softmax_cross_entropy_grad", "logits_grad", [
        AllTypesMatch<["logits", "result"]>]> {
  let summary = "Gradient of `train.softmax_cross_entropy` with respect to the logits";
  let description = [{
    `(softmax(logits) - target) * loss_grad / count`, where `target` is
    `onehot(labels)`, or `(1 - e) onehot(labels) + e / C` with
    `label_smoothing` e, and `count` is the number of label positions, or
    the `count` operand with `ignore_index`; rows labelled `ignore_index`
    are zero.

    ```mlir
    %dlogits = train.softmax_cross_entropy_grad %logits, %labels, %one
        : tensor<32x10xf32>, tensor<32xi32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$logits, Train_IndexTensor:$labels,
                       Train_ScalarF32:$loss_grad,
                       Optional<Train_ScalarF32>:$count,
                       OptionalAttr<I64Attr>:$ignore_index,
                       OptionalAttr<F64Attr>:$label_smoothing);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $loss_grad (`count` $count^)? attr-dict `:`
        type($logits) `,` type($labels)
  }];
  let hasVerifier = 1;
}

#endif // ZERO_TRAIN_COMPUTE_OPS
