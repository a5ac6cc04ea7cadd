//===- TrainFusedOps.td - Matmuls with epilogues, add + norm *- tablegen -*-===//
//
// A linear layer's matmul fused with what follows it: the bias, the GELU, the
// GELU's gradient, or the bias gradient summed from the same gradient. Each
// op is defined as the chain of unfused ops it replaces, and the CPU backend
// runs exactly that chain, so fusing never changes a result there. The CUDA
// backend runs each as one cuBLASLt matmul with the matching epilogue
// (CUBLASLT_EPILOGUE_BIAS, _GELU_AUX_BIAS, _DGELU, _BGRADB).
//
// `train-fuse-epilogues` writes them, after the ZeRO passes; nothing upstream
// of it sees them, so they have no gradients. The right operand is a 2-D
// weight (a linear layer), so each is one GEMM on any backend.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_TRAIN_FUSED_OPS
#define ZERO_TRAIN_FUSED_OPS

def Train_MatmulBiasOp : Train_ComputeOp<"matmul_bias", "linear"> {
  let summary = "A linear layer: `bias_add(matmul(lhs, rhs), bias)`";
  let description = [{
    The matmul's result is rounded to the result type before the bias is
    added, as in the chain it replaces.

    ```mlir
    %y = train.matmul_bias %x, %w, %b
        : tensor<32x64xf32>, tensor<64x256xf32>, tensor<256xf32> -> tensor<32x256xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$lhs, Train_FloatTensor:$rhs,
                       Train_FloatTensor:$bias, UnitAttr:$transpose_a,
                       UnitAttr:$transpose_b);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $bias (`transpose_a` $transpose_a^)?
    (`transpose_b` $transpose_b^)? attr-dict `:` type($lhs) `,` type($rhs) `,`
    type($bias) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Train_MatmulBiasGeluOp : Train_ComputeOp<"matmul_bias_gelu", "linear", [
    TypesMatchWith<"pre has the type of result", "result", "pre", "$_self">]> {
  let summary = "`gelu(bias_add(matmul(lhs, rhs), bias))`, keeping the GELU's input";
  let description = [{
    `pre` is `bias_add(matmul(lhs, rhs), bias)`, which the backward's
    `gelu_grad` (or `matmul_gelu_grad`) reads; `result` is its GELU, `exact`
    as `train.gelu`'s.

    ```mlir
    %h, %pre = train.matmul_bias_gelu %x, %w, %b
        : tensor<32x64xf32>, tensor<64x256xf32>, tensor<256xf32> -> tensor<32x256xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$lhs, Train_FloatTensor:$rhs,
                       Train_FloatTensor:$bias, UnitAttr:$transpose_a,
                       UnitAttr:$transpose_b, UnitAttr:$exact);
  let results = (outs Train_FloatTensor:$result, Train_FloatTensor:$pre);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $bias (`transpose_a` $transpose_a^)?
    (`transpose_b` $transpose_b^)? (`exact` $exact^)? attr-dict `:`
    type($lhs) `,` type($rhs) `,` type($bias) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Train_MatmulGeluGradOp : Train_ComputeOp<"matmul_gelu_grad", "grad", [
    AllTypesMatch<["pre", "result"]>]> {
  let summary = "`gelu_grad(pre, matmul(lhs, rhs))`: the gradient through a GELU";
  let description = [{
    The matmul gives the gradient of the GELU's result (rounded to the
    result type, as in the chain it replaces); `pre` is the GELU's input.

    ```mlir
    %dpre = train.matmul_gelu_grad %dh, %w, %pre transpose_b
        : tensor<32x64xf32>, tensor<256x64xf32> -> tensor<32x256xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$lhs, Train_FloatTensor:$rhs,
                       Train_FloatTensor:$pre, UnitAttr:$transpose_a,
                       UnitAttr:$transpose_b, UnitAttr:$exact);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $pre (`transpose_a` $transpose_a^)?
    (`transpose_b` $transpose_b^)? (`exact` $exact^)? attr-dict `:`
    type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Train_MatmulBiasGradOp : Train_ComputeOp<"matmul_bias_grad", "wgrad"> {
  let summary = "A weight gradient and its bias gradient from one read of the output gradient";
  let description = [{
    `result` is `matmul(lhs, rhs)` and `bias_grad` is
    `reduce_sum(rhs) dims [0]`: with `rhs` the gradient of a linear layer's
    output ([rows, features]) and `lhs` its input, the weight's and the
    bias's gradients.

    ```mlir
    %dw, %db = train.matmul_bias_grad %x, %dy transpose_a
        : tensor<32x64xf32>, tensor<32x256xf32> -> tensor<64x256xf32>, tensor<256xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$lhs, Train_FloatTensor:$rhs,
                       UnitAttr:$transpose_a);
  let results = (outs Train_FloatTensor:$result, Train_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_a` $transpose_a^)? attr-dict `:` type($lhs) `,`
    type($rhs) `->` type($result) `,` type($bias_grad)
  }];
  let hasVerifier = 1;
}

// A residual connection's add fused with the layer norm that reads it, as
// in every pre-norm transformer block (`x = x + f(x); ln(x)`): the sum is
// normalized while it is in registers instead of being written and read
// back, and is still written, for the residual stream. Written by
// `train-fuse-residual-norm`.
def Train_AddLayerNormOp : Train_ComputeOp<"add_layer_norm", "ln", [
    AllTypesMatch<["lhs", "rhs", "sum", "result"]>,
    AllTypesMatch<["gamma", "beta"]>,
    TypesMatchWith<"rstd has the type of mean", "mean", "rstd", "$_self">]> {
  let summary = "`layer_norm(add(lhs, rhs))`, keeping the sum";
  let description = [{
    `sum` is `train.add %lhs, %rhs` (rounded to its type, as in the chain it
    replaces) and `result`, `mean` and `rstd` are `train.layer_norm` of it.

    ```mlir
    %x, %y, %mean, %rstd = train.add_layer_norm %res, %h, %gamma, %beta
        eps 1.0e-05 : tensor<2x16x64xf32>, tensor<64xf32> -> tensor<2x16xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$lhs, Train_FloatTensor:$rhs,
                       Train_FloatTensor:$gamma, Train_FloatTensor:$beta,
                       F64Attr:$eps);
  let results = (outs Train_FloatTensor:$sum, Train_FloatTensor:$result,
                      TensorOf<[F32]>:$mean, TensorOf<[F32]>:$rstd);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $gamma `,` $beta `eps` $eps attr-dict `:` type($lhs) `,`
    type($gamma) `->` type($mean)
  }];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    void $cppClass::getAsmResultNames(::mlir::OpAsmSetValueNameFn setNameFn) {
      setNameFn(getSum(), "sum");
      setNameFn(getResult(), "ln");
      setNameFn(getMean(), "ln_mean");
      setNameFn(getRstd(), "ln_rstd");
    }
  }];
}

#endif // ZERO_TRAIN_FUSED_OPS
