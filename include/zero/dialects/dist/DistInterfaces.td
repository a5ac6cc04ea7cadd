//===- DistInterfaces.td - Interfaces of the dist dialect --*- tablegen -*-===//

#ifndef ZERO_DIST_INTERFACES
#define ZERO_DIST_INTERFACES

include "mlir/IR/OpBase.td"

def Dist_CollectiveOpInterface : OpInterface<"CollectiveOpInterface"> {
  let description = [{
    An operation every rank of a placement axis must issue together, in the
    same order: the collectives and their `*_start` forms. Passes that reason
    about communication (bucketing, scheduling, the hang check, the report)
    see collectives only through this interface.
  }];
  let cppNamespace = "::zero::dist";
  let methods = [
    InterfaceMethod<"Placement axis whose group runs the collective.",
      "int64_t", "getPlacementAxis", (ins), [{}],
      [{ return static_cast<int64_t>($_op.getAxis()); }]>,
    InterfaceMethod<"The tensor this rank contributes.",
      "::mlir::Value", "getInput">,
    InterfaceMethod<"Whether the collective returns a token instead of a value.",
      "bool", "isAsync", (ins), [{}], [{ return false; }]>,
  ];
  let extraSharedClassDeclaration = [{
    /// Number of ranks in the group, from the enclosing placement; 0 when no
    /// placement encloses the op or it has no such axis.
    int64_t getGroupSize() {
      return ::zero::dist::getGroupSize($_op.getOperation(),
                                        $_op.getPlacementAxis());
    }
  }];
}

#endif // ZERO_DIST_INTERFACES
