//===- DistEnums.td - Enumerations of the dist dialect -----*- tablegen -*-===//
//
// Plain C++ enumerations (no dialect dependency), so that the support library
// and its unit tests can use them without linking the dialect.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIST_ENUMS
#define ZERO_DIST_ENUMS

include "mlir/IR/EnumAttr.td"

def Dist_DeviceKind : I32EnumAttr<"DeviceKind", "kind of device a placement names", [
    I32EnumAttrCase<"cpu", 0>,
    I32EnumAttrCase<"cuda", 1>
  ]> {
  let cppNamespace = "::zero::dist";
  let genSpecializedAttr = 0;
}

def Dist_ReduceKind : I32EnumAttr<"ReduceKind", "reduction applied by a collective", [
    I32EnumAttrCase<"sum", 0>,
    I32EnumAttrCase<"mean", 1>,
    I32EnumAttrCase<"max", 2>
  ]> {
  let cppNamespace = "::zero::dist";
}

def Dist_SbpKind : I32EnumAttr<"SbpKind", "split, broadcast or partial", [
    I32EnumAttrCase<"split", 0, "S">,
    I32EnumAttrCase<"broadcast", 1, "B">,
    I32EnumAttrCase<"partial", 2, "P">
  ]> {
  let cppNamespace = "::zero::dist";
  let genSpecializedAttr = 0;
}

#endif // ZERO_DIST_ENUMS
