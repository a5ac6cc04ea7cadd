//===- OptionEnums.td - The choices of the ZeRO options ----*- tablegen -*-===//
//
// The enum-valued knobs a user sets through the pass options (Passes.td),
// zero-run's and gpt2_train's flags, the builder's GraphConfig and the
// Python Config. Declared once here, so that every front end parses and
// prints a choice by the same name (symbolize*/stringify*).
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_SUPPORT_OPTIONENUMS
#define ZERO_SUPPORT_OPTIONENUMS

include "mlir/IR/EnumAttr.td"

def Zero_MeshScheme : I32EnumAttr<"MeshScheme",
    "how ZeRO stages 1-3 shard a two-level mesh [R, S], axis 0 across nodes", [
    // Cut over axis 1 (within the node), replicated across nodes.
    I32EnumAttrCase<"hybrid", 0>,
    // Cut over both axes into R * S shards, axis 1 major.
    I32EnumAttrCase<"full", 1>
  ]> {
  let cppNamespace = "::zero";
  // Option values, not attributes.
  let genSpecializedAttr = 0;
}

def Zero_OffloadPlacement : I32EnumAttr<"OffloadPlacement",
    "what zero-offload places in host memory", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"optimizer", 1>,
    I32EnumAttrCase<"optimizerAndParams", 2, "optimizer+params">,
    // The least offload, in that order, that fits the device budget.
    I32EnumAttrCase<"automatic", 3, "auto">
  ]> {
  let cppNamespace = "::zero";
  // Option values, not attributes.
  let genSpecializedAttr = 0;
}

def Zero_ReduceDtype : I32EnumAttr<"ReduceDtype",
    "the type gradients are averaged across ranks in", [
    // Each gradient in its own type: a bf16 gradient is reduced in bf16.
    I32EnumAttrCase<"gradient", 0>,
    // 16-bit gradients widened to f32 before they are reduced (FSDP's
    // MixedPrecision reduce_dtype=torch.float32).
    I32EnumAttrCase<"f32", 1>
  ]> {
  let cppNamespace = "::zero";
  // Option values, not attributes.
  let genSpecializedAttr = 0;
}

def Zero_ReportFormat : I32EnumAttr<"ReportFormat",
    "how zero-report writes the plan", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"text", 1>,
    I32EnumAttrCase<"json", 2>,
    // An SVG of the predicted step; needs a machine model.
    I32EnumAttrCase<"timeline", 3>
  ]> {
  let cppNamespace = "::zero";
  // Option values, not attributes.
  let genSpecializedAttr = 0;
}

#endif // ZERO_SUPPORT_OPTIONENUMS
