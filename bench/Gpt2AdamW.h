//===- Gpt2AdamW.h - The AdamW the update benchmarks bind -------*- C++ -*-===//
//
// The attributes zero-lower-to-runtime gives GPT-2's train.optimizer (AdamW
// with GPT-2's settings and a constant rate, so no schedule): what
// zero-bench-adamw and zero-bench-host-adamw bind their kernel with.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_BENCH_GPT2ADAMW_H
#define ZERO_BENCH_GPT2ADAMW_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace zero::bench {

inline mlir::DictionaryAttr gpt2AdamWParams(mlir::Builder &builder) {
  return builder.getDictionaryAttr({
      builder.getNamedAttr("lr", builder.getF64FloatAttr(6e-4)),
      builder.getNamedAttr("beta1", builder.getF64FloatAttr(0.9)),
      builder.getNamedAttr("beta2", builder.getF64FloatAttr(0.95)),
      builder.getNamedAttr("eps", builder.getF64FloatAttr(1e-8)),
      builder.getNamedAttr("weight_decay", builder.getF64FloatAttr(0.1)),
  });
}

} // namespace zero::bench

#endif // ZERO_BENCH_GPT2ADAMW_H
