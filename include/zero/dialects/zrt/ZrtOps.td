//===- ZrtOps.td - The lowered runtime program -------------*- tablegen -*-===//

#ifndef ZERO_ZRT_OPS
#define ZERO_ZRT_OPS

include "mlir/IR/DialectBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "zero/dialects/dist/DistDialect.td"
include "zero/dialects/zrt/ZrtEnums.td"

def Zrt_Dialect : Dialect {
  let name = "zrt";
  let summary = "The lowered program the ZeRO runtime executes";
  let description = [{
    A `zrt.program` is everything the runtime needs and nothing it has to
    plan: persistent buffers at their per-rank sizes, one arena for all
    transient values with static offsets (so peak memory is known at compile
    time and nothing fragments), streams and events, and a step body that is
    a straight list of kernel launches, collectives, copies and stream
    synchronization on memrefs. The runtime turns the step into an
    instruction list once and replays it every step.

    Collectives here work on whole buffers split along dimension 0: padding
    is explicit in the buffer sizes, so a reduce-scatter's input has exactly
    `group` times the rows of its output.

    Memory has a space, `device` (the default, unprinted) or `host`: a
    buffer, an arena view and a stream each name theirs. Host memory is the
    CPU's (pinned on GPUs), where `zero-offload` keeps optimizer state and,
    at stage 3, parameters. Work on a stream touches only memory of the
    stream's space, with one exception that is the only way data crosses: a
    `zrt.copy` on a device stream may copy between the spaces. Collectives
    run on device streams over device memory.
  }];
  let cppNamespace = "::zero::zrt";
  let dependentDialects = ["::zero::dist::DistDialect"];
  let extraClassDeclaration = [{
    // The discardable attributes the lowering writes and the runtime reads.
    /// On a program: the ZeRO stage (0: plain data parallelism) its step was
    /// rewritten to.
    static constexpr ::llvm::StringLiteral getZeroStageAttrName() {
      return ::llvm::StringLiteral("zrt.zero_stage");
    }
    /// On a program: zero-report's plan (PlanReport::toAttr), per rank.
    static constexpr ::llvm::StringLiteral getReportAttrName() {
      return ::llvm::StringLiteral("zrt.report");
    }
    /// On a program zero-offload placed: the memory plan (MemoryPlan::toAttr).
    static constexpr ::llvm::StringLiteral getMemoryPlanAttrName() {
      return ::llvm::StringLiteral("zrt.memory_plan");
    }
    /// On a program: the device arena bytes the compiler planned, apart from
    /// the header the runtime allocates by (what --check-memory holds the
    /// writes against).
    static constexpr ::llvm::StringLiteral getPlannedArenaAttrName() {
      return ::llvm::StringLiteral("zrt.planned_arena");
    }
    /// On a program: the host arena bytes the compiler planned.
    static constexpr ::llvm::StringLiteral getPlannedHostArenaAttrName() {
      return ::llvm::StringLiteral("zrt.planned_host_arena");
    }
    /// On a program: the device arena bytes live at once by the liveness
    /// analysis, which no placement can go below.
    static constexpr ::llvm::StringLiteral getLiveBytesAttrName() {
      return ::llvm::StringLiteral("zrt.live_bytes");
    }
    /// On a program: the host arena's bytes live at once.
    static constexpr ::llvm::StringLiteral getLiveHostBytesAttrName() {
      return ::llvm::StringLiteral("zrt.live_host_bytes");
    }
    /// On an offloaded program: the device arena offset where zero-offload's
    /// device staging starts, above the views zero-lower-to-runtime placed
    /// (whose offsets it keeps); --check-memory adds the two tiers' peaks.
    static constexpr ::llvm::StringLiteral getStagingBaseAttrName() {
      return ::llvm::StringLiteral("zrt.staging_base");
    }
    /// On a state buffer: the logical (unsharded, unpadded) tensor type.
    static constexpr ::llvm::StringLiteral getLogicalTypeAttrName() {
      return ::llvm::StringLiteral("zrt.logical_type");
    }
    /// On a state buffer of a tensor-parallel program: `[dim, axis]`, the
    /// logical dimension split exactly over the ranks of placement axis
    /// `axis` (train.param's `split dim D over A`).
    static constexpr ::llvm::StringLiteral getSplitAttrName() {
      return ::llvm::StringLiteral("zrt.split");
    }
    /// On a state buffer: how the logical tensor is laid out in the shards
    /// (train::StorageLayoutKind's name).
    static constexpr ::llvm::StringLiteral getLayoutAttrName() {
      return ::llvm::StringLiteral("zrt.layout");
    }
    /// On a state buffer of a mesh: the placement axes whose ranks hold the
    /// shards, the major one first.
    static constexpr ::llvm::StringLiteral getShardAxesAttrName() {
      return ::llvm::StringLiteral("zrt.shard_axes");
    }
    /// On a state buffer: how its logical value is first drawn
    /// (#train.init).
    static constexpr ::llvm::StringLiteral getInitAttrName() {
      return ::llvm::StringLiteral("zrt.init");
    }
    /// On a state buffer: the parameter whose drawn value it starts from
    /// (its own name, or a master copy's parameter).
    static constexpr ::llvm::StringLiteral getInitNameAttrName() {
      return ::llvm::StringLiteral("zrt.init_name");
    }
    /// On an input buffer: its SBP over the placement (dist.sbp of the step
    /// argument).
    static constexpr ::llvm::StringLiteral getSbpAttrName() {
      return ::llvm::StringLiteral("zrt.sbp");
    }
    /// On an integer input: what it indexes, "embedding" rows or "labels".
    static constexpr ::llvm::StringLiteral getIndexOfAttrName() {
      return ::llvm::StringLiteral("zrt.index_of");
    }
    /// On an integer input: how many rows or classes it indexes.
    static constexpr ::llvm::StringLiteral getIndexBoundAttrName() {
      return ::llvm::StringLiteral("zrt.index_bound");
    }
    /// On a labels input: the label its loss ignores.
    static constexpr ::llvm::StringLiteral getIndexIgnoredAttrName() {
      return ::llvm::StringLiteral("zrt.index_ignored");
    }
    /// On an input the runtime fills: the labels input ("inputN") whose kept
    /// labels it counts.
    static constexpr ::llvm::StringLiteral getLabelCountOfAttrName() {
      return ::llvm::StringLiteral("zrt.label_count_of");
    }
    /// On a label count: the ignored label.
    static constexpr ::llvm::StringLiteral getLabelCountIgnoredAttrName() {
      return ::llvm::StringLiteral("zrt.label_count_ignored");
    }
    /// On a label count: the first corner of the labels' box it counts.
    static constexpr ::llvm::StringLiteral getLabelCountBeginAttrName() {
      return ::llvm::StringLiteral("zrt.label_count_begin");
    }
    /// On a label count: one past the last corner of that box.
    static constexpr ::llvm::StringLiteral getLabelCountEndAttrName() {
      return ::llvm::StringLiteral("zrt.label_count_end");
    }
  }];
}

class Zrt_Op<string mnemonic, list<Trait> traits = []>
    : Op<Zrt_Dialect, mnemonic, traits>;

// Buffers hold numbers whose byte size is known.
defvar Zrt_StaticMemRef = StaticShapeMemRefOf<[AnyFloat, AnySignlessInteger]>;

defvar Zrt_DefaultDevice =
    DefaultValuedAttr<Zrt_MemorySpace, "::zero::zrt::MemorySpace::device">;

//===----------------------------------------------------------------------===//
// Program structure
//===----------------------------------------------------------------------===//

def Zrt_ProgramOp : Zrt_Op<"program", [Symbol, SymbolTable, IsolatedFromAbove,
    NoTerminator, SingleBlock, NoRegionArguments]> {
  let summary = "A lowered training step with its buffers, arena, streams and events";
  let description = [{
    Holds the declarations (`zrt.buffer`, `zrt.stream`, `zrt.event`) and
    the step: one `zrt.step`, or with gradient accumulation
    (`accumulate_steps` K > 1) a `zrt.step micro`, which the runtime runs
    on K consecutive micro-batches, and a `zrt.step apply`, which it runs
    once after them. `arena` is the size in bytes of the one transient
    allocation (the bodies run one after the other and share it) and
    `align` the alignment of every view into it. A program with offloaded
    work has a second arena in host memory, of `host_arena` bytes.

    ```mlir
    zrt.program @mlp placement #dist.placement<cpu, [4]> arena 65536 align 64 {
      zrt.stream @compute
      zrt.buffer @fc1.w param : memref<784x128xf32>
      zrt.step {
        ...
      }
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Dist_PlacementAttr:$placement,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$arena_bytes,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$host_arena_bytes,
                       DefaultValuedAttr<ConfinedAttr<I64Attr, [IntPositive]>, "64">:$alignment,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<2>]>>:$accumulate_steps);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `placement` qualified($placement) `arena` $arena_bytes
    (`host_arena` $host_arena_bytes^)? `align` $alignment (`accumulate` $accumulate_steps^)?
    attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Micro-batches per optimizer step (1 without accumulation).
    int64_t getMicroSteps() { return getAccumulateSteps().value_or(1); }
    /// Bytes of the arena in `space`.
    int64_t getArenaBytes(::zero::zrt::MemorySpace space) {
      return space == ::zero::zrt::MemorySpace::host
                 ? static_cast<int64_t>(getHostArenaBytes().value_or(0))
                 : static_cast<int64_t>(getArenaBytes());
    }
  }];
}

def Zrt_StreamOp : Zrt_Op<"stream", [Symbol, HasParent<"ProgramOp">]> {
  let summary = "Declares an execution stream";
  let description = [{
    Work on one stream runs in program order; work on different streams may
    overlap unless ordered by events. On GPUs a stream is a CUDA stream; on
    CPUs, the communication stream is progressed by non-blocking collectives,
    and streams with neither kernels of the compute stream nor collectives
    (the transfer and host streams of offloaded work) run on a worker
    thread. A `host` stream runs kernels on the CPU over host memory.

    ```mlir
    zrt.stream @comm
    zrt.stream @host in host
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Zrt_DefaultDevice:$space);
  let assemblyFormat = "$sym_name (`in` $space^)? attr-dict";
}

def Zrt_EventOp : Zrt_Op<"event", [Symbol, HasParent<"ProgramOp">]> {
  let summary = "Declares an event that orders work across streams";
  let description = [{
    ```mlir
    zrt.event @grads_ready
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name);
  let assemblyFormat = "$sym_name attr-dict";
}

def Zrt_BufferOp : Zrt_Op<"buffer", [Symbol, HasParent<"ProgramOp">]> {
  let summary = "Declares a persistent buffer at its per-rank size";
  let description = [{
    Parameters, master copies, optimizer slots and gradient accumulators
    persist across steps; `input` buffers are filled with the rank's batch
    before each step and `output` buffers (the loss) are read after it.
    A buffer lives in device memory unless it says `in host`.

    ```mlir
    zrt.buffer @fc1.w.m slot : memref<25088xf32>
    zrt.buffer @fc1.w.v slot in host : memref<25088xf32>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Zrt_BufferRole:$role,
                       TypeAttrOf<Zrt_StaticMemRef>:$type,
                       Zrt_DefaultDevice:$space);
  let assemblyFormat = "$sym_name $role (`in` $space^)? `:` $type attr-dict";
  let extraClassDeclaration = [{
    ::mlir::MemRefType getMemRefType() {
      return ::llvm::cast<::mlir::MemRefType>(getType());
    }
  }];
}

def Zrt_StepOp : Zrt_Op<"step", [HasParent<"ProgramOp">,
    SingleBlockImplicitTerminator<"YieldOp">, NoRegionArguments]> {
  let summary = "The instructions of one training step, in issue order";
  let description = [{
    A plain `zrt.step` is the whole step: forward, backward, reductions and
    update. With gradient accumulation the program has two: `micro` runs
    the forward and backward of one micro-batch and adds its gradients
    into the accumulators, and `apply` (no inputs, no outputs) updates the
    state from them and clears them.

    ```mlir
    zrt.step {
      %w = zrt.buffer_ref @fc1.w : memref<784x128xf32>
      ...
    }
    zrt.step apply {
      ...
    }
    ```
  }];
  let arguments = (ins DefaultValuedAttr<Zrt_StepKind,
                                         "::zero::zrt::StepKind::step">:$kind);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "($kind^)? attr-dict-with-keyword $body";
}

def Zrt_YieldOp : Zrt_Op<"yield", [Terminator, HasParent<"StepOp">, Pure]> {
  let summary = "Ends the step body";
  let description = "Implicit in the printed form.";
  let assemblyFormat = "attr-dict";
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

def Zrt_BufferRefOp : Zrt_Op<"buffer_ref", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "The memref of a persistent buffer";
  let description = [{
    ```mlir
    %w = zrt.buffer_ref @fc1.w : memref<784x128xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$buffer);
  let results = (outs Zrt_StaticMemRef:$result);
  let assemblyFormat = "$buffer attr-dict `:` type($result)";
}

def Zrt_ArenaViewOp : Zrt_Op<"arena_view", [Pure,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "A transient buffer at a fixed offset in the arena";
  let description = [{
    The memory planner gives every transient value an offset; values whose
    lifetimes do not overlap share bytes. The view must lie inside the arena
    and start at a multiple of the program's alignment. A view `in host`
    lies in the program's host arena.

    ```mlir
    %h = zrt.arena_view [4096] : memref<32x128xf32>
    %g = zrt.arena_view [0] in host : memref<50176xf32>
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$offset,
                       Zrt_DefaultDevice:$space);
  let results = (outs Zrt_StaticMemRef:$result);
  let assemblyFormat = [{
    ` ` `[` $offset `]` (`in` $space^)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Bytes the view covers.
    int64_t getSizeInBytes();
  }];
}

def Zrt_ViewOp : Zrt_Op<"view", [Pure,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "A range of another buffer's elements, seen with its own shape";
  let description = [{
    Reinterprets `count(result)` elements of `source`, starting at element
    `offset`, with the result's shape. Views cost nothing at run time: they
    give a reshape its new shape, a padded collective buffer its logical
    prefix, and a bucket its members. The range must lie inside the source,
    and the element type cannot change.

    ```mlir
    %w = zrt.view %gathered [0] : memref<100353xf32> to memref<784x128xf32>
    ```
  }];
  let arguments = (ins Zrt_StaticMemRef:$source,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$offset);
  let results = (outs Zrt_StaticMemRef:$result);
  let assemblyFormat = [{
    $source `[` $offset `]` attr-dict `:` type($source) `to` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Work
//===----------------------------------------------------------------------===//

class Zrt_StreamWorkOp<string mnemonic, list<Trait> traits = []>
    : Zrt_Op<mnemonic, traits # [HasParent<"StepOp">,
        DeclareOpInterfaceMethods<SymbolUserOpInterface>]>;

def Zrt_LaunchOp : Zrt_StreamWorkOp<"launch", [AttrSizedOperandSegments]> {
  let summary = "Runs a kernel on a stream";
  let description = [{
    `kernel` names the compute op the kernel implements (`train.matmul`);
    `params` carries that op's attributes. Inputs are read, outputs written.

    ```mlir
    zrt.launch "train.matmul" on @compute ins(%x, %w : memref<32x784xf32>, memref<784x128xf32>)
        outs(%h : memref<32x128xf32>)
    ```
  }];
  let arguments = (ins StrAttr:$kernel, FlatSymbolRefAttr:$stream,
                       Variadic<Zrt_StaticMemRef>:$ins,
                       Variadic<Zrt_StaticMemRef>:$outs,
                       OptionalAttr<DictionaryAttr>:$params);
  let assemblyFormat = [{
    $kernel `on` $stream (`ins` `(` $ins^ `:` type($ins) `)`)?
    `outs` `(` $outs `:` type($outs) `)` (`params` $params^)? attr-dict
  }];
  let hasVerifier = 1;
}

def Zrt_CopyOp : Zrt_StreamWorkOp<"copy"> {
  let summary = "Copies one buffer into another of the same size on a stream";
  let description = [{
    Packs gradients into a bucket, unpacks gathered parameters, and moves
    values between persistent buffers and the arena. On a device stream
    the two buffers may be in different memory spaces: that is a transfer
    over the host link (device to host or host to device).

    ```mlir
    zrt.copy on @compute %g to %bucket : memref<2x3xf32> to memref<6xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$stream, Zrt_StaticMemRef:$source,
                       Zrt_StaticMemRef:$target);
  let assemblyFormat = [{
    `on` $stream $source `to` $target attr-dict `:` type($source) `to` type($target)
  }];
  let hasVerifier = 1;
}

class Zrt_CollectiveOp<string mnemonic, string rule>
    : Zrt_StreamWorkOp<mnemonic> {
  let description = [{
    Runs over the group of placement axis `axis` on a communication stream.
    }] # rule # [{
  }];
  let hasVerifier = 1;
}

def Zrt_AllReduceOp : Zrt_CollectiveOp<"all_reduce",
    "Input and output have one shape; they may be the same buffer."> {
  let summary = "All-reduce a buffer across the group";
  let arguments = (ins FlatSymbolRefAttr:$stream, Dist_ReduceKind:$reduce,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis,
                       Zrt_StaticMemRef:$input, Zrt_StaticMemRef:$output);
  let assemblyFormat = [{
    $reduce `axis` $axis `on` $stream $input `to` $output attr-dict `:`
    type($input) `to` type($output)
  }];
}

def Zrt_ReduceScatterOp : Zrt_CollectiveOp<"reduce_scatter",
    "The input has exactly `group` times the output's rows (padding included).">  {
  let summary = "Reduce-scatter a padded buffer; each rank keeps its rows";
  let arguments = (ins FlatSymbolRefAttr:$stream, Dist_ReduceKind:$reduce,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis,
                       Zrt_StaticMemRef:$input, Zrt_StaticMemRef:$output);
  let assemblyFormat = [{
    $reduce `axis` $axis `on` $stream $input `to` $output attr-dict `:`
    type($input) `to` type($output)
  }];
}

def Zrt_AllGatherOp : Zrt_CollectiveOp<"all_gather",
    "The output has exactly `group` times the input's rows (padding included).">  {
  let summary = "All-gather every rank's rows into one padded buffer";
  let arguments = (ins FlatSymbolRefAttr:$stream,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis,
                       Zrt_StaticMemRef:$input, Zrt_StaticMemRef:$output);
  let assemblyFormat = [{
    `axis` $axis `on` $stream $input `to` $output attr-dict `:`
    type($input) `to` type($output)
  }];
}

def Zrt_BroadcastOp : Zrt_CollectiveOp<"broadcast",
    "Input and output have one shape; `root` is a rank of the group.">  {
  let summary = "Broadcast the root rank's buffer to the group";
  let arguments = (ins FlatSymbolRefAttr:$stream,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$root,
                       Zrt_StaticMemRef:$input, Zrt_StaticMemRef:$output);
  let assemblyFormat = [{
    `root` $root `axis` $axis `on` $stream $input `to` $output attr-dict `:`
    type($input) `to` type($output)
  }];
}

def Zrt_AllToAllOp : Zrt_CollectiveOp<"all_to_all",
    "Input and output have one shape whose rows divide evenly by `group`.">  {
  let summary = "Exchange equal row blocks: block r of every rank goes to rank r";
  let arguments = (ins FlatSymbolRefAttr:$stream,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis,
                       Zrt_StaticMemRef:$input, Zrt_StaticMemRef:$output);
  let assemblyFormat = [{
    `axis` $axis `on` $stream $input `to` $output attr-dict `:`
    type($input) `to` type($output)
  }];
}

def Zrt_RecordOp : Zrt_StreamWorkOp<"record"> {
  let summary = "Records an event once the work issued so far on a stream is done";
  let description = [{
    ```mlir
    zrt.record @grads_ready on @compute
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$event, FlatSymbolRefAttr:$stream);
  let assemblyFormat = "$event `on` $stream attr-dict";
}

def Zrt_WaitOp : Zrt_StreamWorkOp<"wait"> {
  let summary = "Makes a stream wait for the last record of an event";
  let description = [{
    ```mlir
    zrt.wait @grads_ready on @comm
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$event, FlatSymbolRefAttr:$stream);
  let assemblyFormat = "$event `on` $stream attr-dict";
}

#endif // ZERO_ZRT_OPS
