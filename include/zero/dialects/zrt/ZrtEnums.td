//===- ZrtEnums.td - Enumerations of the zrt dialect -------*- tablegen -*-===//

#ifndef ZERO_ZRT_ENUMS
#define ZERO_ZRT_ENUMS

include "mlir/IR/EnumAttr.td"

def Zrt_BufferRole : I32EnumAttr<"BufferRole", "what a persistent buffer holds", [
    I32EnumAttrCase<"param", 0>,
    I32EnumAttrCase<"frozen", 1>,
    I32EnumAttrCase<"master", 2>,
    I32EnumAttrCase<"slot", 3>,
    I32EnumAttrCase<"grad_accum", 4>,
    I32EnumAttrCase<"input", 5>,
    I32EnumAttrCase<"output", 6>,
    I32EnumAttrCase<"scaler", 7>
  ]> {
  let cppNamespace = "::zero::zrt";
}

def Zrt_StepKind : I32EnumAttr<"StepKind", "what one zrt.step body runs", [
    I32EnumAttrCase<"step", 0>,
    I32EnumAttrCase<"micro", 1>,
    I32EnumAttrCase<"apply", 2>
  ]> {
  let cppNamespace = "::zero::zrt";
}

def Zrt_MemorySpace : I32EnumAttr<"MemorySpace",
    "where a buffer lives and what memory a stream's work touches", [
    I32EnumAttrCase<"device", 0>,
    I32EnumAttrCase<"host", 1>
  ]> {
  let cppNamespace = "::zero::zrt";
}

#endif // ZERO_ZRT_ENUMS
