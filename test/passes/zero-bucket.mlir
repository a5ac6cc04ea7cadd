// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-bucket)" | FileCheck %s

// zero-bucket fuses runs of small collectives of one kind into a flat bucket:
// `dist.pack` -> one collective -> `dist.unpack`. Reductions are issued
// where the bucket's last member was, gathers where its first member was,
// and no collective moves across a use of its result. Every case runs on
// four ranks with the default 25 MiB budgets; zero-bucket-options.mlir
// covers the byte budgets.

// Three all-reduces with no use of their results in between become one
// bucket. The bucket is reduced where the last member was: after the op
// that computes the last member's input, before the op that followed it.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @fuse_all_reduces(%a: tensor<4x8xf32>, %b: tensor<16xf32>, %c: tensor<3xf32>)
      -> (tensor<4x8xf32>, tensor<16xf32>, tensor<3xf32>, tensor<3xf32>) attributes {train.step} {
    %0 = dist.all_reduce mean %a axis 0 : tensor<4x8xf32>
    %1 = dist.all_reduce mean %b axis 0 : tensor<16xf32>
    %x = arith.addf %c, %c : tensor<3xf32>
    %2 = dist.all_reduce mean %x axis 0 : tensor<3xf32>
    %y = arith.mulf %c, %c : tensor<3xf32>
    return %0, %1, %2, %y : tensor<4x8xf32>, tensor<16xf32>, tensor<3xf32>, tensor<3xf32>
  }
}

// CHECK-LABEL: func.func @fuse_all_reduces
// CHECK-SAME:    (%[[A:[a-z0-9]+]]: tensor<4x8xf32>, %[[B:[a-z0-9]+]]: tensor<16xf32>, %[[C:[a-z0-9]+]]: tensor<3xf32>)
// CHECK-NEXT:    %[[X:.+]] = arith.addf %[[C]], %[[C]] : tensor<3xf32>
// CHECK-NEXT:    %[[BUCKET:.+]] = dist.pack %[[A]], %[[B]], %[[X]] : tensor<4x8xf32>, tensor<16xf32>, tensor<3xf32> -> tensor<51xf32>
// CHECK-NEXT:    %[[SUM:.+]] = dist.all_reduce mean %[[BUCKET]] axis 0 : tensor<51xf32>
// CHECK-NEXT:    %[[R:.+]]:3 = dist.unpack %[[SUM]] : tensor<51xf32> -> tensor<4x8xf32>, tensor<16xf32>, tensor<3xf32>
// CHECK-NEXT:    %[[Y:.+]] = arith.mulf %[[C]], %[[C]] : tensor<3xf32>
// CHECK-NEXT:    return %[[R]]#0, %[[R]]#1, %[[R]]#2, %[[Y]]
// CHECK-NOT:     dist.all_reduce

// -----

// A use of a member's result closes the bucket: the collective must be
// issued before it. Four all-reduces with a use of the first one's result
// after the second make two buckets, in the original order.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @use_closes_bucket(%a: tensor<8xf32>, %b: tensor<8xf32>, %c: tensor<8xf32>, %d: tensor<8xf32>)
      -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) attributes {train.step} {
    %0 = dist.all_reduce sum %a axis 0 : tensor<8xf32>
    %1 = dist.all_reduce sum %b axis 0 : tensor<8xf32>
    %use = arith.addf %0, %0 : tensor<8xf32>
    %2 = dist.all_reduce sum %c axis 0 : tensor<8xf32>
    %3 = dist.all_reduce sum %d axis 0 : tensor<8xf32>
    return %use, %1, %2, %3, %0 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  }
}

// CHECK-LABEL: func.func @use_closes_bucket
// CHECK-SAME:    (%[[A:[a-z0-9]+]]: tensor<8xf32>, %[[B:[a-z0-9]+]]: tensor<8xf32>, %[[C:[a-z0-9]+]]: tensor<8xf32>, %[[D:[a-z0-9]+]]: tensor<8xf32>)
// CHECK-NEXT:    %[[AB:.+]] = dist.pack %[[A]], %[[B]] : tensor<8xf32>, tensor<8xf32> -> tensor<16xf32>
// CHECK-NEXT:    %[[AB_SUM:.+]] = dist.all_reduce sum %[[AB]] axis 0 : tensor<16xf32>
// CHECK-NEXT:    %[[AB_R:.+]]:2 = dist.unpack %[[AB_SUM]] : tensor<16xf32> -> tensor<8xf32>, tensor<8xf32>
// CHECK-NEXT:    %[[USE:.+]] = arith.addf %[[AB_R]]#0, %[[AB_R]]#0 : tensor<8xf32>
// CHECK-NEXT:    %[[CD:.+]] = dist.pack %[[C]], %[[D]] : tensor<8xf32>, tensor<8xf32> -> tensor<16xf32>
// CHECK-NEXT:    %[[CD_SUM:.+]] = dist.all_reduce sum %[[CD]] axis 0 : tensor<16xf32>
// CHECK-NEXT:    %[[CD_R:.+]]:2 = dist.unpack %[[CD_SUM]] : tensor<16xf32> -> tensor<8xf32>, tensor<8xf32>
// CHECK-NEXT:    return %[[USE]], %[[AB_R]]#1, %[[CD_R]]#0, %[[CD_R]]#1, %[[AB_R]]#0

// -----

// Reduce-scatters along dimension 0 share a bucket in the rank-major layout
// (`shards 4`), so the one reduce-scatter leaves every rank exactly its
// shard of each tensor, which a plain unpack reads back. Over 4 ranks,
// tensor<10xf32> has shards of 3 elements and tensor<6x2xf32> shards of
// 2x2: the bucket holds 4 * (3 + 4) = 28 elements and each rank's shard 7.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @fuse_reduce_scatters(%a: tensor<10xf32>, %b: tensor<6x2xf32>)
      -> (tensor<3xf32>, tensor<2x2xf32>) attributes {train.step} {
    %0 = dist.reduce_scatter mean %a axis 0 dim 0 : tensor<10xf32> -> tensor<3xf32>
    %1 = dist.reduce_scatter mean %b axis 0 dim 0 : tensor<6x2xf32> -> tensor<2x2xf32>
    return %0, %1 : tensor<3xf32>, tensor<2x2xf32>
  }
}

// CHECK-LABEL: func.func @fuse_reduce_scatters
// CHECK-SAME:    (%[[A:[a-z0-9]+]]: tensor<10xf32>, %[[B:[a-z0-9]+]]: tensor<6x2xf32>)
// CHECK-NEXT:    %[[BUCKET:.+]] = dist.pack %[[A]], %[[B]] shards 4 : tensor<10xf32>, tensor<6x2xf32> -> tensor<28xf32>
// CHECK-NEXT:    %[[SHARD:.+]] = dist.reduce_scatter mean %[[BUCKET]] axis 0 dim 0 : tensor<28xf32> -> tensor<7xf32>
// CHECK-NEXT:    %[[R:.+]]:2 = dist.unpack %[[SHARD]] : tensor<7xf32> -> tensor<3xf32>, tensor<2x2xf32>
// CHECK-NEXT:    return %[[R]]#0, %[[R]]#1

// -----

// All-gathers are issued where the bucket's first member was, as a
// prefetch: the bucket is every rank's shards end to end (3 + 4 + 1 = 8
// elements), gathered into the rank-major layout that `dist.unpack ...
// shards 4` reads back into the full tensors.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @hoist_all_gathers(%a: tensor<3xf32>, %b: tensor<2x2xf32>, %c: tensor<1xf32>, %x: tensor<4xf32>)
      -> (tensor<10xf32>, tensor<4xf32>, tensor<6x2xf32>, tensor<4xf32>) attributes {train.step} {
    %0 = dist.all_gather %a axis 0 dim 0 : tensor<3xf32> -> tensor<10xf32>
    %y = arith.addf %x, %x : tensor<4xf32>
    %1 = dist.all_gather %b axis 0 dim 0 : tensor<2x2xf32> -> tensor<6x2xf32>
    %2 = dist.all_gather %c axis 0 dim 0 : tensor<1xf32> -> tensor<4xf32>
    return %0, %y, %1, %2 : tensor<10xf32>, tensor<4xf32>, tensor<6x2xf32>, tensor<4xf32>
  }
}

// CHECK-LABEL: func.func @hoist_all_gathers
// CHECK-SAME:    (%[[A:[a-z0-9]+]]: tensor<3xf32>, %[[B:[a-z0-9]+]]: tensor<2x2xf32>, %[[C:[a-z0-9]+]]: tensor<1xf32>, %[[X:[a-z0-9]+]]: tensor<4xf32>)
// CHECK-NEXT:    %[[BUCKET:.+]] = dist.pack %[[A]], %[[B]], %[[C]] : tensor<3xf32>, tensor<2x2xf32>, tensor<1xf32> -> tensor<8xf32>
// CHECK-NEXT:    %[[FULL:.+]] = dist.all_gather %[[BUCKET]] axis 0 dim 0 : tensor<8xf32> -> tensor<32xf32>
// CHECK-NEXT:    %[[R:.+]]:3 = dist.unpack %[[FULL]] shards 4 : tensor<32xf32> -> tensor<10xf32>, tensor<6x2xf32>, tensor<4xf32>
// CHECK-NEXT:    %[[Y:.+]] = arith.addf %[[X]], %[[X]] : tensor<4xf32>
// CHECK-NEXT:    return %[[R]]#0, %[[Y]], %[[R]]#1, %[[R]]#2

// -----

// A gather moves up to its bucket's first member, so a gather whose input
// is computed after the first gather cannot join it: both stay where they
// were, in their order.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @gather_input_not_ready(%a: tensor<3xf32>, %b: tensor<3xf32>)
      -> (tensor<10xf32>, tensor<10xf32>) attributes {train.step} {
    %0 = dist.all_gather %a axis 0 dim 0 : tensor<3xf32> -> tensor<10xf32>
    %late = arith.addf %b, %b : tensor<3xf32>
    %1 = dist.all_gather %late axis 0 dim 0 : tensor<3xf32> -> tensor<10xf32>
    return %0, %1 : tensor<10xf32>, tensor<10xf32>
  }
}

// CHECK-LABEL: func.func @gather_input_not_ready
// CHECK-SAME:    (%[[A:[a-z0-9]+]]: tensor<3xf32>, %[[B:[a-z0-9]+]]: tensor<3xf32>)
// CHECK-NEXT:    %[[G0:.+]] = dist.all_gather %[[A]] axis 0 dim 0 : tensor<3xf32> -> tensor<10xf32>
// CHECK-NEXT:    %[[LATE:.+]] = arith.addf %[[B]], %[[B]] : tensor<3xf32>
// CHECK-NEXT:    %[[G1:.+]] = dist.all_gather %[[LATE]] axis 0 dim 0 : tensor<3xf32> -> tensor<10xf32>
// CHECK-NEXT:    return %[[G0]], %[[G1]]

// -----

// Stage 3's gathers, each right before its use: a use of a gathered result
// does not close a gather bucket (the bucket is issued at its first member,
// ahead of every member's use), so gathers separated by compute fuse. A
// second gather of an input the bucket already holds is a re-gather, there
// to free the tensor in between: it starts a bucket of its own, with the
// gathers after it.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @gathers_fuse_across_uses(%a: tensor<2xf32>, %b: tensor<2xf32>, %x: tensor<8xf32>)
      -> tensor<8xf32> attributes {train.step} {
    %fa = dist.all_gather %a axis 0 dim 0 : tensor<2xf32> -> tensor<8xf32>
    %y = arith.mulf %x, %fa : tensor<8xf32>
    %fb = dist.all_gather %b axis 0 dim 0 : tensor<2xf32> -> tensor<8xf32>
    %z = arith.mulf %y, %fb : tensor<8xf32>
    %fa2 = dist.all_gather %a axis 0 dim 0 : tensor<2xf32> -> tensor<8xf32>
    %w = arith.mulf %z, %fa2 : tensor<8xf32>
    %fb2 = dist.all_gather %b axis 0 dim 0 : tensor<2xf32> -> tensor<8xf32>
    %v = arith.mulf %w, %fb2 : tensor<8xf32>
    return %v : tensor<8xf32>
  }
}

// CHECK-LABEL: func.func @gathers_fuse_across_uses
// CHECK-SAME:    (%[[A:[a-z0-9]+]]: tensor<2xf32>, %[[B:[a-z0-9]+]]: tensor<2xf32>, %[[X:[a-z0-9]+]]: tensor<8xf32>)
// CHECK-NEXT:    %[[FIRST:.+]] = dist.pack %[[A]], %[[B]] : tensor<2xf32>, tensor<2xf32> -> tensor<4xf32>
// CHECK-NEXT:    %[[FULL:.+]] = dist.all_gather %[[FIRST]] axis 0 dim 0 : tensor<4xf32> -> tensor<16xf32>
// CHECK-NEXT:    %[[R:.+]]:2 = dist.unpack %[[FULL]] shards 4 : tensor<16xf32> -> tensor<8xf32>, tensor<8xf32>
// CHECK-NEXT:    %[[Y:.+]] = arith.mulf %[[X]], %[[R]]#0
// CHECK-NEXT:    %[[Z:.+]] = arith.mulf %[[Y]], %[[R]]#1
// CHECK-NEXT:    %[[AGAIN:.+]] = dist.pack %[[A]], %[[B]] : tensor<2xf32>, tensor<2xf32> -> tensor<4xf32>
// CHECK-NEXT:    %[[FULL2:.+]] = dist.all_gather %[[AGAIN]] axis 0 dim 0 : tensor<4xf32> -> tensor<16xf32>
// CHECK-NEXT:    %[[R2:.+]]:2 = dist.unpack %[[FULL2]] shards 4 : tensor<16xf32> -> tensor<8xf32>, tensor<8xf32>
// CHECK-NEXT:    %[[W:.+]] = arith.mulf %[[Z]], %[[R2]]#0
// CHECK-NEXT:    %[[V:.+]] = arith.mulf %[[W]], %[[R2]]#1
// CHECK-NEXT:    return %[[V]]

// -----

// Only collectives with the same reduction and element type share a
// bucket. A mean and a bf16 all-reduce between two f32 sums stay alone; the
// two sums still fuse (nothing uses their results in between), and their
// bucket is reduced after the last sum.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @kinds_not_mixed(%a: tensor<8xf32>, %b: tensor<8xbf16>, %c: tensor<4xf32>, %d: tensor<4xf32>)
      -> (tensor<8xf32>, tensor<8xbf16>, tensor<4xf32>, tensor<4xf32>) attributes {train.step} {
    %0 = dist.all_reduce sum %a axis 0 : tensor<8xf32>
    %1 = dist.all_reduce sum %b axis 0 : tensor<8xbf16>
    %2 = dist.all_reduce mean %c axis 0 : tensor<4xf32>
    %3 = dist.all_reduce sum %d axis 0 : tensor<4xf32>
    return %0, %1, %2, %3 : tensor<8xf32>, tensor<8xbf16>, tensor<4xf32>, tensor<4xf32>
  }
}

// CHECK-LABEL: func.func @kinds_not_mixed
// CHECK-SAME:    (%[[A:[a-z0-9]+]]: tensor<8xf32>, %[[B:[a-z0-9]+]]: tensor<8xbf16>, %[[C:[a-z0-9]+]]: tensor<4xf32>, %[[D:[a-z0-9]+]]: tensor<4xf32>)
// CHECK-NEXT:    %[[BF16:.+]] = dist.all_reduce sum %[[B]] axis 0 : tensor<8xbf16>
// CHECK-NEXT:    %[[MEAN:.+]] = dist.all_reduce mean %[[C]] axis 0 : tensor<4xf32>
// CHECK-NEXT:    %[[BUCKET:.+]] = dist.pack %[[A]], %[[D]] : tensor<8xf32>, tensor<4xf32> -> tensor<12xf32>
// CHECK-NEXT:    %[[SUM:.+]] = dist.all_reduce sum %[[BUCKET]] axis 0 : tensor<12xf32>
// CHECK-NEXT:    %[[R:.+]]:2 = dist.unpack %[[SUM]] : tensor<12xf32> -> tensor<8xf32>, tensor<4xf32>
// CHECK-NEXT:    return %[[R]]#0, %[[BF16]], %[[MEAN]], %[[R]]#1

// -----

// Reductions of different kinds never share a bucket: an all-reduce and a
// reduce-scatter with the same reduction and element type stay separate.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @all_reduce_and_reduce_scatter(%a: tensor<8xf32>, %b: tensor<8xf32>)
      -> (tensor<8xf32>, tensor<2xf32>) attributes {train.step} {
    %0 = dist.all_reduce mean %a axis 0 : tensor<8xf32>
    %1 = dist.reduce_scatter mean %b axis 0 dim 0 : tensor<8xf32> -> tensor<2xf32>
    return %0, %1 : tensor<8xf32>, tensor<2xf32>
  }
}

// CHECK-LABEL: func.func @all_reduce_and_reduce_scatter
// CHECK-SAME:    (%[[A:[a-z0-9]+]]: tensor<8xf32>, %[[B:[a-z0-9]+]]: tensor<8xf32>)
// CHECK-NEXT:    %[[R0:.+]] = dist.all_reduce mean %[[A]] axis 0 : tensor<8xf32>
// CHECK-NEXT:    %[[R1:.+]] = dist.reduce_scatter mean %[[B]] axis 0 dim 0 : tensor<8xf32> -> tensor<2xf32>
// CHECK-NEXT:    return %[[R0]], %[[R1]]

// -----

// Buckets never span blocks: the two all-reduces in the loop body fuse
// inside it, and the two in the function body fuse after the loop (the
// loop uses neither result).

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @per_block(%a: tensor<8xf32>, %b: tensor<8xf32>, %c: tensor<4xf32>, %d: tensor<4xf32>, %n: index)
      -> (tensor<8xf32>, tensor<8xf32>, tensor<4xf32>) attributes {train.step} {
    %0 = dist.all_reduce sum %a axis 0 : tensor<8xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c) -> tensor<4xf32> {
      %1 = dist.all_reduce sum %acc axis 0 : tensor<4xf32>
      %2 = dist.all_reduce sum %d axis 0 : tensor<4xf32>
      %3 = arith.addf %1, %2 : tensor<4xf32>
      scf.yield %3 : tensor<4xf32>
    }
    %4 = dist.all_reduce sum %b axis 0 : tensor<8xf32>
    return %0, %4, %r : tensor<8xf32>, tensor<8xf32>, tensor<4xf32>
  }
}

// CHECK-LABEL: func.func @per_block
// CHECK-SAME:    (%[[A:[a-z0-9]+]]: tensor<8xf32>, %[[B:[a-z0-9]+]]: tensor<8xf32>, %{{.+}}: tensor<4xf32>, %[[D:[a-z0-9]+]]: tensor<4xf32>, %{{.+}}: index)
// CHECK:         %[[LOOP:.+]] = scf.for {{.*}} iter_args(%[[ACC:.+]] = %{{.+}}) -> (tensor<4xf32>) {
// CHECK-NEXT:      %[[INNER:.+]] = dist.pack %[[ACC]], %[[D]] : tensor<4xf32>, tensor<4xf32> -> tensor<8xf32>
// CHECK-NEXT:      %[[INNER_SUM:.+]] = dist.all_reduce sum %[[INNER]] axis 0 : tensor<8xf32>
// CHECK-NEXT:      %[[IR:.+]]:2 = dist.unpack %[[INNER_SUM]] : tensor<8xf32> -> tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT:      arith.addf %[[IR]]#0, %[[IR]]#1
// CHECK:         }
// CHECK-NEXT:    %[[OUTER:.+]] = dist.pack %[[A]], %[[B]] : tensor<8xf32>, tensor<8xf32> -> tensor<16xf32>
// CHECK-NEXT:    %[[OUTER_SUM:.+]] = dist.all_reduce sum %[[OUTER]] axis 0 : tensor<16xf32>
// CHECK-NEXT:    %[[OR:.+]]:2 = dist.unpack %[[OUTER_SUM]] : tensor<16xf32> -> tensor<8xf32>, tensor<8xf32>
// CHECK-NEXT:    return %[[OR]]#0, %[[OR]]#1, %[[LOOP]]

// -----

// Only step functions (`train.step`, `train.apply_step`) are bucketed; a
// helper's collectives are left alone.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @helper(%a: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
    %0 = dist.all_reduce sum %a axis 0 : tensor<8xf32>
    %1 = dist.all_reduce sum %b axis 0 : tensor<8xf32>
    return %0, %1 : tensor<8xf32>, tensor<8xf32>
  }
}

// CHECK-LABEL: func.func @helper
// CHECK-NOT:     dist.pack
// CHECK:         dist.all_reduce sum
// CHECK-NEXT:    dist.all_reduce sum
// CHECK-NEXT:    return

// -----

// On a full 2-D cut each gradient is reduce-scattered within the node
// (axis 1), then its shard across nodes (axis 0). The reductions within the
// node fuse as one axis's do, and those across nodes ride with them: one
// reduce-scatter of the unpacked shards packed again, so that each node
// position's part holds its part of every shard.

module attributes {dist.placement = #dist.placement<cpu, [2, 2]>} {
  func.func @two_level_reduce_scatter(%a: tensor<8xf32>, %b: tensor<4xf32>)
      -> (tensor<2xf32>, tensor<1xf32>) attributes {train.step} {
    %0 = dist.reduce_scatter mean %a axis 1 dim 0 : tensor<8xf32> -> tensor<4xf32>
    %1 = dist.reduce_scatter mean %0 axis 0 dim 0 : tensor<4xf32> -> tensor<2xf32>
    %2 = dist.reduce_scatter mean %b axis 1 dim 0 : tensor<4xf32> -> tensor<2xf32>
    %3 = dist.reduce_scatter mean %2 axis 0 dim 0 : tensor<2xf32> -> tensor<1xf32>
    return %1, %3 : tensor<2xf32>, tensor<1xf32>
  }
}

// CHECK-LABEL: func.func @two_level_reduce_scatter
// CHECK-SAME:    (%[[A:[a-z0-9]+]]: tensor<8xf32>, %[[B:[a-z0-9]+]]: tensor<4xf32>)
// CHECK-NEXT:    %[[FULL:.+]] = dist.pack %[[A]], %[[B]] shards 2 : tensor<8xf32>, tensor<4xf32> -> tensor<12xf32>
// CHECK-NEXT:    %[[NODE:.+]] = dist.reduce_scatter mean %[[FULL]] axis 1 dim 0 : tensor<12xf32> -> tensor<6xf32>
// CHECK-NEXT:    %[[SHARDS:.+]]:2 = dist.unpack %[[NODE]] : tensor<6xf32> -> tensor<4xf32>, tensor<2xf32>
// CHECK-NEXT:    %[[AGAIN:.+]] = dist.pack %[[SHARDS]]#0, %[[SHARDS]]#1 shards 2 : tensor<4xf32>, tensor<2xf32> -> tensor<6xf32>
// CHECK-NEXT:    %[[ACROSS:.+]] = dist.reduce_scatter mean %[[AGAIN]] axis 0 dim 0 : tensor<6xf32> -> tensor<3xf32>
// CHECK-NEXT:    %[[R:.+]]:2 = dist.unpack %[[ACROSS]] : tensor<3xf32> -> tensor<2xf32>, tensor<1xf32>
// CHECK-NEXT:    return %[[R]]#0, %[[R]]#1
