//===- DistOps.td - Collectives of the dist dialect --------*- tablegen -*-===//

#ifndef ZERO_DIST_OPS
#define ZERO_DIST_OPS

include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "zero/dialects/dist/DistDialect.td"
include "zero/dialects/dist/DistInterfaces.td"

class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dist_Dialect, mnemonic,
         traits # [DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]>;

// Collectives exchange data with the other ranks of a placement axis, so they
// are not Pure: erasing or hoisting one on some path would desynchronize ranks.
class Dist_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Dist_Op<mnemonic, traits # [Dist_CollectiveOpInterface]> {
  let hasVerifier = 1;
}

def Dist_Axis : ConfinedAttr<I64Attr, [IntNonNegative]>;
def Dist_Dim : ConfinedAttr<I64Attr, [IntNonNegative]>;

//===----------------------------------------------------------------------===//
// Synchronous collectives
//===----------------------------------------------------------------------===//

def Dist_AllReduceOp : Dist_CollectiveOp<"all_reduce", [SameOperandsAndResultType]> {
  let summary = "Reduces a partial tensor across a group, every rank gets the result (P -> B)";
  let description = [{
    Every rank of the group along placement axis `axis` contributes `input`;
    every rank receives the elementwise `sum`, `mean` or `max` of all
    contributions. Data parallelism averages gradients this way.

    ```mlir
    %g = dist.all_reduce mean %grad axis 0 : tensor<128x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_ReduceKind:$reduce,
                       Dist_Axis:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$reduce $input `axis` $axis attr-dict `:` type($input)";
  let hasFolder = 1;
}

def Dist_ReduceScatterOp : Dist_CollectiveOp<"reduce_scatter"> {
  let summary = "Reduces a partial tensor and leaves each rank one shard of the result (P -> S)";
  let description = [{
    The reduced value is cut along dimension `dim` into as many shards as the
    group has ranks; rank `r` keeps shard `r`. When the extent does not divide
    evenly it is padded: every shard has `ceil(extent / group)` rows and the
    last one carries the padding. ZeRO stages 1-3 reduce gradients this way.

    ```mlir
    // 10 elements over 4 ranks: shards of 3, padded to 12.
    %s = dist.reduce_scatter sum %grad axis 0 dim 0 : tensor<10xf32> -> tensor<3xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_ReduceKind:$reduce,
                       Dist_Axis:$axis, Dist_Dim:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $reduce $input `axis` $axis `dim` $dim attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
}

def Dist_AllGatherOp : Dist_CollectiveOp<"all_gather"> {
  let summary = "Concatenates every rank's shard; every rank gets the whole tensor (S -> B)";
  let description = [{
    The inverse of the shard cut made by `reduce_scatter` and `slice`: shards
    are concatenated along `dim` and the padding is dropped, so the result's
    extent along `dim` is any size whose shard size is the input's extent.
    ZeRO-3 gathers parameters before use this way.

    ```mlir
    %w = dist.all_gather %shard axis 0 dim 0 : tensor<3xf32> -> tensor<10xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_Axis:$axis, Dist_Dim:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `axis` $axis `dim` $dim attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
}

def Dist_BroadcastOp : Dist_CollectiveOp<"broadcast", [SameOperandsAndResultType]> {
  let summary = "Copies the root rank's tensor to every rank of the group";
  let description = [{
    `root` is the index of the sending rank within the group along `axis`.

    ```mlir
    %w = dist.broadcast %init root 0 axis 0 : tensor<64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_Axis:$axis,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$root);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `root` $root `axis` $axis attr-dict `:` type($input)";
  let hasFolder = 1;
}

def Dist_SliceOp : Dist_CollectiveOp<"slice", [Pure]> {
  let summary = "Keeps this rank's shard of a broadcast tensor (B -> S), no traffic";
  let description = [{
    Local: each rank keeps the shard `reduce_scatter` would have left it,
    with the same padding rule. It moves no data, so unlike the other
    collectives it may be erased or moved freely.

    ```mlir
    %s = dist.slice %w axis 0 dim 0 : tensor<10xf32> -> tensor<3xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_Axis:$axis, Dist_Dim:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `axis` $axis `dim` $dim attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
}

def Dist_AllToAllOp : Dist_CollectiveOp<"all_to_all"> {
  let summary = "Re-splits a sharded tensor from one dimension to another (S(i) -> S(j))";
  let description = [{
    Each rank cuts its input into group-size pieces along `split_dim`, sends
    piece `r` to rank `r`, and concatenates what it receives along
    `concat_dim`. The extent along `split_dim` must divide evenly.

    ```mlir
    %t = dist.all_to_all %x axis 0 split 1 concat 0 : tensor<2x8xf32> -> tensor<8x2xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_Axis:$axis,
                       Dist_Dim:$split_dim, Dist_Dim:$concat_dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `axis` $axis `split` $split_dim `concat` $concat_dim attr-dict `:`
    type($input) `->` type($result)
  }];
  let hasFolder = 1;
}

def Dist_ReshardOp : Dist_Op<"reshard"> {
  let summary = "Changes a tensor's SBP; lowered to the concrete collective";
  let description = [{
    The generic form of all collectives, one SBP list per side (one entry
    per placement axis). A lowering turns it into the concrete collective by
    OneFlow's boxing table: P -> B all-reduce, P -> S reduce-scatter,
    S -> B all-gather, B -> S slice, S(i) -> S(j) all-to-all. Shapes are
    local: along each tensor dimension, some logical extent must explain both
    the input's and the result's local extents.

    ```mlir
    %s = dist.reshard %g from [P(sum)] to [S(0)] : tensor<10xf32> -> tensor<3xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_SbpAttr:$from,
                       Dist_SbpAttr:$to);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `from` custom<SbpEntries>($from) `to` custom<SbpEntries>($to) attr-dict `:`
    type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Asynchronous collectives
//===----------------------------------------------------------------------===//

class Dist_StartOp<string mnemonic, string syncOp>
    : Dist_CollectiveOp<mnemonic # "_start"> {
  let summary = "Starts a `dist." # syncOp # "` and returns a token for `dist.wait`";
  let description = [{
    Same operands, attributes and shape rules as `dist.}] # syncOp # [{`; the
    result's type is carried by the token. The collective may proceed in the
    background until the matching `dist.wait`.
  }];
  let results = (outs Dist_TokenType:$token);
  let extraClassDeclaration = [{
    bool isAsync() { return true; }
  }];
  let hasCanonicalizer = 1;
}

def Dist_AllReduceStartOp : Dist_StartOp<"all_reduce", "all_reduce"> {
  let arguments = (ins AnyRankedTensor:$input, Dist_ReduceKind:$reduce,
                       Dist_Axis:$axis);
  let assemblyFormat = [{
    $reduce $input `axis` $axis attr-dict `:` type($input) `->` qualified(type($token))
  }];
}

def Dist_ReduceScatterStartOp : Dist_StartOp<"reduce_scatter", "reduce_scatter"> {
  let arguments = (ins AnyRankedTensor:$input, Dist_ReduceKind:$reduce,
                       Dist_Axis:$axis, Dist_Dim:$dim);
  let assemblyFormat = [{
    $reduce $input `axis` $axis `dim` $dim attr-dict `:` type($input) `->` qualified(type($token))
  }];
}

def Dist_AllGatherStartOp : Dist_StartOp<"all_gather", "all_gather"> {
  let arguments = (ins AnyRankedTensor:$input, Dist_Axis:$axis, Dist_Dim:$dim);
  let assemblyFormat = [{
    $input `axis` $axis `dim` $dim attr-dict `:` type($input) `->` qualified(type($token))
  }];
}

def Dist_BroadcastStartOp : Dist_StartOp<"broadcast", "broadcast"> {
  let arguments = (ins AnyRankedTensor:$input, Dist_Axis:$axis,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$root);
  let assemblyFormat = [{
    $input `root` $root `axis` $axis attr-dict `:` type($input) `->` qualified(type($token))
  }];
}

def Dist_AllToAllStartOp : Dist_StartOp<"all_to_all", "all_to_all"> {
  let arguments = (ins AnyRankedTensor:$input, Dist_Axis:$axis,
                       Dist_Dim:$split_dim, Dist_Dim:$concat_dim);
  let assemblyFormat = [{
    $input `axis` $axis `split` $split_dim `concat` $concat_dim attr-dict `:`
    type($input) `->` qualified(type($token))
  }];
}

def Dist_WaitOp : Dist_Op<"wait", [
    TypesMatchWith<"result is the value type the token carries", "token",
                   "result", "::llvm::cast<TokenType>($_self).getValueType()">]> {
  let summary = "Waits for a collective started by a `*_start` op and yields its result";
  let description = [{
    ```mlir
    %t = dist.all_gather_start %s axis 0 dim 0 : tensor<3xf32> -> !dist.token<tensor<10xf32>>
    // ... compute that does not need %w ...
    %w = dist.wait %t : !dist.token<tensor<10xf32>>
    ```
  }];
  let arguments = (ins Dist_TokenType:$token);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$token attr-dict `:` qualified(type($token))";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Buckets
//===----------------------------------------------------------------------===//

def Dist_PackOp : Dist_Op<"pack", [Pure]> {
  let summary = "Concatenates several tensors, flattened, into one 1-D bucket";
  let description = [{
    The inputs are flattened and laid end to end in operand order; the
    bucket is zero-padded at the end to a multiple of `pad_to` (1 when
    absent), typically the group size so the bucket reduce-scatters evenly.
    All inputs share the bucket's element type.

    ```mlir
    %b = dist.pack %g0, %g1 pad_to 4 : tensor<2x3xf32>, tensor<5xf32> -> tensor<12xf32>
    ```

    With `shards K` the bucket is laid out rank-major instead, so that a
    `reduce_scatter` of the bucket over K ranks leaves every rank exactly its
    own shard of every input: each input is cut along dimension 0 into K
    chunks of `ceil(d0 / K)` rows (the last padded with zeros), and the
    bucket is chunk 0 of every input in operand order, then chunk 1 of every
    input, and so on. ZeRO buckets gradients this way.

    ```mlir
    // 3 and 2x2 over 2 ranks: [a0 a1 | r0 ] [a2 0 | r1 ], 2 + 2 elements per rank.
    %b = dist.pack %a, %r shards 2 : tensor<3xf32>, tensor<2x2xf32> -> tensor<8xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyStaticShapeTensor>:$inputs,
                       DefaultValuedAttr<ConfinedAttr<I64Attr, [IntPositive]>, "1">:$pad_to,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$shards);
  let results = (outs 1DTensorOf<[AnyType]>:$result);
  let assemblyFormat = [{
    $inputs (`pad_to` $pad_to^)? (`shards` $shards^)? attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Dist_UnpackOp : Dist_Op<"unpack", [Pure]> {
  let summary = "Splits a 1-D bucket back into the tensors `dist.pack` put in it";
  let description = [{
    Results are read end to end from the start of the bucket and reshaped;
    trailing padding is ignored.

    ```mlir
    %g0, %g1 = dist.unpack %b : tensor<12xf32> -> tensor<2x3xf32>, tensor<5xf32>
    ```

    With `shards K` it reads the rank-major layout `dist.pack ... shards K`
    writes, which is also what an `all_gather` of K per-rank buckets
    produces: result `i` is chunk `i` of every rank's group, concatenated
    along dimension 0, with the padding rows dropped.

    ```mlir
    %a, %r = dist.unpack %gathered shards 2 : tensor<8xf32> -> tensor<3xf32>, tensor<2x2xf32>
    ```
  }];
  let arguments = (ins 1DTensorOf<[AnyType]>:$input,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$shards);
  let results = (outs Variadic<AnyStaticShapeTensor>:$results);
  let assemblyFormat = [{
    $input (`shards` $shards^)? attr-dict `:` type($input) `->` type($results)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Quantization
//===----------------------------------------------------------------------===//

def Dist_QuantizeOp : Dist_Op<"quantize", [Pure]> {
  let summary = "Block-quantizes a tensor to int8 or int4 codes with one scale per block (ZeRO++ qwZ, qgZ)";
  let description = [{
    `input` is cut into `segments` equal segments and each segment into
    blocks of `block` elements, the last block of a segment possibly
    shorter. Each block gets a symmetric scale, its largest magnitude
    divided by the largest code (127 for `bits 8`, the default; 7 for
    `bits 4`), and each element becomes `round(x / scale)`, in [-127, 127]
    or [-7, 7] (a block of zeros has scale 0 and quantizes to zeros).
    `scales` holds the blocks' scales, segment by segment. The error of a
    dequantized element is at most half its block's scale.

    The codes are bytes. With `bits 8` each code is one byte, so the result
    has the input's length. With `bits 4` two codes share a byte, the
    segment's even element in the low nibble (two's complement), and each
    segment starts on a byte of its own, the high nibble after an odd
    segment's last code being zero: a segment of L elements is
    ceil(L / 2) bytes, and any piece that is a whole number of segments can
    be moved on its own.

    Quantized data is moved, never reduced: it may be gathered, exchanged
    all-to-all, packed and unpacked, and `dist.dequantize` turns it back
    into floats; the reductions refuse it. Segments keep pieces that are
    exchanged separately decodable: a shard gathered from R ranks is R
    segments, each with its own blocks.

    ```mlir
    // Two segments of 5: blocks of 4 and 1 in each.
    %q, %s = dist.quantize %x block 4 segments 2 : tensor<10xf32> -> tensor<10xi8>, tensor<4xf32>
    // The same as int4: 3 bytes per segment.
    %q4, %s4 = dist.quantize %x block 4 segments 2 bits 4 : tensor<10xf32> -> tensor<6xi8>, tensor<4xf32>
    ```
  }];
  let arguments = (ins 1DTensorOf<[AnyFloat]>:$input,
                       ConfinedAttr<I64Attr, [IntPositive]>:$block,
                       DefaultValuedAttr<ConfinedAttr<I64Attr, [IntPositive]>, "1">:$segments,
                       DefaultValuedAttr<I64Attr, "8">:$bits);
  let results = (outs 1DTensorOf<[I8]>:$result, 1DTensorOf<[F32]>:$scales);
  let assemblyFormat = [{
    $input `block` $block (`segments` $segments^)? (`bits` $bits^)? attr-dict `:` type($input) `->` type($result) `,` type($scales)
  }];
  let hasVerifier = 1;
}

def Dist_DequantizeOp : Dist_Op<"dequantize", [Pure]> {
  let summary = "Turns block-quantized int8 or int4 codes and their scales back into floats";
  let description = [{
    The inverse of `dist.quantize` with the same `block`, `segments` and
    `bits`: element `i` of block `b` is `code[i] * scales[b]`. After a
    gather of R ranks' quantized shards, `segments` is R times the
    quantizer's. The result's length gives the segments' length, from
    which the codes' bytes follow (ceil(L / 2) per segment for `bits 4`).

    ```mlir
    %x = dist.dequantize %q, %s block 4 segments 2 : tensor<10xi8>, tensor<4xf32> -> tensor<10xf32>
    %y = dist.dequantize %q4, %s4 block 4 segments 2 bits 4 : tensor<6xi8>, tensor<4xf32> -> tensor<10xf32>
    ```
  }];
  let arguments = (ins 1DTensorOf<[I8]>:$input, 1DTensorOf<[F32]>:$scales,
                       ConfinedAttr<I64Attr, [IntPositive]>:$block,
                       DefaultValuedAttr<ConfinedAttr<I64Attr, [IntPositive]>, "1">:$segments,
                       DefaultValuedAttr<I64Attr, "8">:$bits);
  let results = (outs 1DTensorOf<[AnyFloat]>:$result);
  let assemblyFormat = [{
    $input `,` $scales `block` $block (`segments` $segments^)? (`bits` $bits^)? attr-dict `:` type($input) `,` type($scales) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // ZERO_DIST_OPS
