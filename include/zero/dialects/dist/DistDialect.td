//===- DistDialect.td - Placement, SBP and collectives -----*- tablegen -*-===//

#ifndef ZERO_DIST_DIALECT
#define ZERO_DIST_DIALECT

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/DialectBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"
include "zero/dialects/dist/DistEnums.td"

def Dist_Dialect : Dialect {
  let name = "dist";
  let summary = "Placements, split/broadcast/partial sharding and explicit collectives";
  let description = [{
    The `dist` dialect describes where a data-parallel program runs and how its
    tensors relate across ranks.

    * A *placement* (`#dist.placement<cpu, [4]>`) names the device kind and a
      1-D or N-D grid of ranks. A module or function carries one in its
      `dist.placement` attribute; every collective names the placement axis it
      runs over, and its group size is that axis' extent.
    * An *SBP* list (`#dist.sbp<[S(0), B]>`) gives, per placement axis, whether
      a tensor is split along a dimension (`S(d)`), broadcast (`B`) or partial
      (`P(sum|mean|max)`). SBP lives in attributes and ops, never in tensor
      types.
    * Collectives have value semantics. Their verifiers check result shapes
      against the group size with padding: shards are ceil-divided, so a
      reduce-scatter of 10 elements over 4 ranks gives every rank 3 elements
      and the gathered value has 12 elements of which 2 are padding.
    * `*_start` forms return a `!dist.token` that `dist.wait` turns into the
      value, so a scheduler can overlap communication with compute; `pack` and
      `unpack` move several tensors into and out of one flat bucket.

    Collectives over a group of one rank fold away.

    Tensor parallelism is a placement too: a module whose `dist.tp_axis`
    names its last axis runs each tensor-parallel group along that axis,
    and `dist.sbp` on a `train.param` (one entry, `[S(d)]` or `[B]`) is the
    parameter's tensor-parallel plan, which `dist-tensor-parallel` turns
    into the parameter's split and propagates through the step.
  }];
  let cppNamespace = "::zero::dist";
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Name of the discardable attribute that places a module or a function.
    static constexpr ::llvm::StringLiteral getPlacementAttrName() {
      return ::llvm::StringLiteral("dist.placement");
    }
    /// Name of the module attribute recording the ZeRO stage (0 = plain data
    /// parallel) the module's training step has been rewritten to.
    static constexpr ::llvm::StringLiteral getZeroStageAttrName() {
      return ::llvm::StringLiteral("dist.zero_stage");
    }
    /// Name of the module attribute recording how zero-shard used a
    /// two-level mesh: "hybrid", "full" or "hpz" (full with secondary
    /// shards).
    static constexpr ::llvm::StringLiteral getMeshSchemeAttrName() {
      return ::llvm::StringLiteral("dist.mesh_scheme");
    }
    /// Name of the module attribute recording ZeRO++'s quantized
    /// communication (zero-shard's qwz and qgz): a dictionary with the
    /// block, the minimum elements, which of weights and gradients are
    /// quantized, and the tensors left in full precision.
    static constexpr ::llvm::StringLiteral getQuantizationAttrName() {
      return ::llvm::StringLiteral("dist.quantization");
    }
    /// Name of the module attribute recording the type 16-bit gradients
    /// are averaged in when it is not their own (dist-data-parallel's
    /// reduce-dtype=f32): `dist.reduce_type = f32`.
    static constexpr ::llvm::StringLiteral getReduceTypeAttrName() {
      return ::llvm::StringLiteral("dist.reduce_type");
    }
    /// Name of the argument attribute giving the SBP of a step input, e.g.
    /// `[S(0)]` for a batch split over the data-parallel ranks. On a
    /// `train.param` before `dist-tensor-parallel` it is the parameter's
    /// tensor-parallel plan: one entry, `S(d)` or `B`.
    static constexpr ::llvm::StringLiteral getSbpAttrName() {
      return ::llvm::StringLiteral("dist.sbp");
    }
    /// Name of the module attribute naming the placement axis that is
    /// tensor parallel (`dist-tensor-parallel` sets it; the other axes are
    /// data parallel).
    static constexpr ::llvm::StringLiteral getTensorParallelAxisAttrName() {
      return ::llvm::StringLiteral("dist.tp_axis");
    }
  private:
    void registerAttributes();
    void registerTypes();
  public:
  }];
}

//===----------------------------------------------------------------------===//
// Enumeration attributes
//===----------------------------------------------------------------------===//


//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class Dist_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Dist_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Dist_PlacementAttr : Dist_Attr<"Placement", "placement"> {
  let summary = "Device kind and grid of ranks a program runs on";
  let description = [{
    `#dist.placement<cuda, [4]>` is four CUDA ranks on one axis;
    `#dist.placement<cuda, [2, 4]>` is a 2 x 4 grid (for example nodes x GPUs),
    with axis 0 of extent 2 and axis 1 of extent 4. Collectives name an axis;
    their group is the ranks that differ only along it. Every extent is at
    least 1.
  }];
  let parameters = (ins
    EnumParameter<Dist_DeviceKind>:$device,
    ArrayRefParameter<"int64_t", "grid extents, one per placement axis">:$grid
  );
  let assemblyFormat = "`<` $device `,` `[` $grid `]` `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Number of placement axes.
    int64_t getNumAxes() const { return getGrid().size(); }
    /// Whether `axis` names an axis of this placement.
    bool hasAxis(int64_t axis) const { return axis >= 0 && axis < getNumAxes(); }
    /// Ranks in the group of a collective over `axis`.
    int64_t getGroupSize(int64_t axis) const { return getGrid()[axis]; }
    /// Total number of ranks.
    int64_t getNumRanks() const;
  }];
}

def Dist_SbpAttr : Dist_Attr<"Sbp", "sbp"> {
  let summary = "Split / broadcast / partial, one entry per placement axis";
  let description = [{
    `#dist.sbp<[S(0), B]>`: along placement axis 0 the tensor is split along
    its dimension 0; along axis 1 every rank holds the whole of it. `P(sum)`,
    `P(mean)` and `P(max)` say the logical value is that reduction of the
    ranks' values. An empty list is the SBP of an unplaced tensor.
  }];
  let parameters = (ins ArrayRefParameter<"::zero::dist::SbpDim">:$dims);
  let hasCustomAssemblyFormat = 1;
  let extraClassDeclaration = [{
    /// Whether every entry is B.
    bool isFullyBroadcast() const;
    /// Product of the extents of the axes that split tensor dimension `dim`.
    int64_t getSplitFactor(int64_t dim, PlacementAttr placement) const;
  }];
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def Dist_TokenType : TypeDef<Dist_Dialect, "Token"> {
  let mnemonic = "token";
  let summary = "Handle of a collective in flight";
  let description = [{
    `!dist.token<tensor<10xf32>>` is returned by a `*_start` collective and
    consumed by `dist.wait`, which yields the collective's result of the
    wrapped type. Keeping the value type in the token lets `wait` infer its
    result and lets schedulers reason about buffer sizes while the collective
    is in flight.
  }];
  let parameters = (ins "::mlir::RankedTensorType":$valueType);
  let assemblyFormat = "`<` $valueType `>`";
}

#endif // ZERO_DIST_DIALECT
