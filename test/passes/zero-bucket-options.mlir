// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-bucket{reduce-bucket-bytes=192})" | FileCheck %s --check-prefix=FIT
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-bucket{reduce-bucket-bytes=191})" | FileCheck %s --check-prefix=SPLIT
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-bucket{reduce-bucket-bytes=0})" | FileCheck %s --check-prefix=NO-REDUCE
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-bucket{allgather-bucket-bytes=88})" | FileCheck %s --check-prefix=GATHER-FIT
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-bucket{allgather-bucket-bytes=87})" | FileCheck %s --check-prefix=GATHER-SPLIT
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-bucket{allgather-bucket-bytes=0})" | FileCheck %s --check-prefix=NO-GATHER
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-bucket{allgather-across-uses-bytes=64})" | FileCheck %s --check-prefix=ACROSS-FIT
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-bucket{allgather-across-uses-bytes=63})" | FileCheck %s --check-prefix=ACROSS-SPLIT

// The byte budgets of zero-bucket. A reduction bucket counts the bytes of
// the full tensors it reduces, a gather bucket those of the gathered
// tensors; a member that would overflow the budget closes the bucket and
// opens the next one. 0 disables that kind of bucket (a negative budget is
// an error: zero-bucket-invalid.mlir).

// Three all-reduces of 4*8*4 = 128, 16*4 = 64 and 3*4 = 12 bytes.
// With a 192-byte budget the first two fill a bucket exactly and the third
// is alone; with 191 the first is alone and the other two (76 bytes) fuse.
// With reductions disabled nothing changes.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @reduce_budget(%a: tensor<4x8xf32>, %b: tensor<16xf32>, %c: tensor<3xf32>)
      -> (tensor<4x8xf32>, tensor<16xf32>, tensor<3xf32>) attributes {train.step} {
    %0 = dist.all_reduce sum %a axis 0 : tensor<4x8xf32>
    %1 = dist.all_reduce sum %b axis 0 : tensor<16xf32>
    %2 = dist.all_reduce sum %c axis 0 : tensor<3xf32>
    return %0, %1, %2 : tensor<4x8xf32>, tensor<16xf32>, tensor<3xf32>
  }
}

// FIT-LABEL: func.func @reduce_budget
// FIT-SAME:    (%[[A:[a-z0-9]+]]: tensor<4x8xf32>, %[[B:[a-z0-9]+]]: tensor<16xf32>, %[[C:[a-z0-9]+]]: tensor<3xf32>)
// FIT-NEXT:    %[[AB:.+]] = dist.pack %[[A]], %[[B]] : tensor<4x8xf32>, tensor<16xf32> -> tensor<48xf32>
// FIT-NEXT:    %[[AB_SUM:.+]] = dist.all_reduce sum %[[AB]] axis 0 : tensor<48xf32>
// FIT-NEXT:    %[[AB_R:.+]]:2 = dist.unpack %[[AB_SUM]] : tensor<48xf32> -> tensor<4x8xf32>, tensor<16xf32>
// FIT-NEXT:    %[[C_SUM:.+]] = dist.all_reduce sum %[[C]] axis 0 : tensor<3xf32>
// FIT-NEXT:    return %[[AB_R]]#0, %[[AB_R]]#1, %[[C_SUM]]

// SPLIT-LABEL: func.func @reduce_budget
// SPLIT-SAME:    (%[[A:[a-z0-9]+]]: tensor<4x8xf32>, %[[B:[a-z0-9]+]]: tensor<16xf32>, %[[C:[a-z0-9]+]]: tensor<3xf32>)
// SPLIT-NEXT:    %[[A_SUM:.+]] = dist.all_reduce sum %[[A]] axis 0 : tensor<4x8xf32>
// SPLIT-NEXT:    %[[BC:.+]] = dist.pack %[[B]], %[[C]] : tensor<16xf32>, tensor<3xf32> -> tensor<19xf32>
// SPLIT-NEXT:    %[[BC_SUM:.+]] = dist.all_reduce sum %[[BC]] axis 0 : tensor<19xf32>
// SPLIT-NEXT:    %[[BC_R:.+]]:2 = dist.unpack %[[BC_SUM]] : tensor<19xf32> -> tensor<16xf32>, tensor<3xf32>
// SPLIT-NEXT:    return %[[A_SUM]], %[[BC_R]]#0, %[[BC_R]]#1

// NO-REDUCE-LABEL: func.func @reduce_budget
// NO-REDUCE-SAME:    (%[[A:[a-z0-9]+]]: tensor<4x8xf32>, %[[B:[a-z0-9]+]]: tensor<16xf32>, %[[C:[a-z0-9]+]]: tensor<3xf32>)
// NO-REDUCE-NEXT:    dist.all_reduce sum %[[A]] axis 0 : tensor<4x8xf32>
// NO-REDUCE-NEXT:    dist.all_reduce sum %[[B]] axis 0 : tensor<16xf32>
// NO-REDUCE-NEXT:    dist.all_reduce sum %[[C]] axis 0 : tensor<3xf32>
// NO-REDUCE-NEXT:    return

// With gathers disabled the all-reduces are still bucketed (default
// budget): one bucket of all three.

// NO-GATHER-LABEL: func.func @reduce_budget
// NO-GATHER:         dist.pack {{.*}} -> tensor<51xf32>
// NO-GATHER-NEXT:    dist.all_reduce sum {{.*}} : tensor<51xf32>

// -----

// Reduce-scatters are budgeted by their full inputs too, not by the
// shards: tensor<10xf32> (40 bytes) and tensor<6x2xf32> (48 bytes) fit in
// a 192-byte bucket. A disabled reduction budget leaves them alone.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @scatter_budget(%a: tensor<10xf32>, %b: tensor<6x2xf32>)
      -> (tensor<3xf32>, tensor<2x2xf32>) attributes {train.step} {
    %0 = dist.reduce_scatter sum %a axis 0 dim 0 : tensor<10xf32> -> tensor<3xf32>
    %1 = dist.reduce_scatter sum %b axis 0 dim 0 : tensor<6x2xf32> -> tensor<2x2xf32>
    return %0, %1 : tensor<3xf32>, tensor<2x2xf32>
  }
}

// FIT-LABEL: func.func @scatter_budget
// FIT-NEXT:    dist.pack {{.*}} shards 4 : tensor<10xf32>, tensor<6x2xf32> -> tensor<28xf32>
// FIT-NEXT:    dist.reduce_scatter sum {{.*}} : tensor<28xf32> -> tensor<7xf32>

// NO-REDUCE-LABEL: func.func @scatter_budget
// NO-REDUCE-NEXT:    dist.reduce_scatter sum {{.*}} : tensor<10xf32> -> tensor<3xf32>
// NO-REDUCE-NEXT:    dist.reduce_scatter sum {{.*}} : tensor<6x2xf32> -> tensor<2x2xf32>
// NO-REDUCE-NEXT:    return

// -----

// All-gathers are budgeted by the gathered tensors, not by the shards:
// 10*4 + 6*2*4 = 88 bytes here. They fuse within an 88-byte budget (and
// when reductions are disabled) but not within 87, and disabling gathers
// leaves them alone.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @gather_budget(%a: tensor<3xf32>, %b: tensor<2x2xf32>)
      -> (tensor<10xf32>, tensor<6x2xf32>) attributes {train.step} {
    %0 = dist.all_gather %a axis 0 dim 0 : tensor<3xf32> -> tensor<10xf32>
    %1 = dist.all_gather %b axis 0 dim 0 : tensor<2x2xf32> -> tensor<6x2xf32>
    return %0, %1 : tensor<10xf32>, tensor<6x2xf32>
  }
}

// NO-REDUCE-LABEL: func.func @gather_budget
// NO-REDUCE-NEXT:    dist.pack {{.*}} : tensor<3xf32>, tensor<2x2xf32> -> tensor<7xf32>
// NO-REDUCE-NEXT:    dist.all_gather {{.*}} : tensor<7xf32> -> tensor<28xf32>
// NO-REDUCE-NEXT:    dist.unpack {{.*}} shards 4 : tensor<28xf32> -> tensor<10xf32>, tensor<6x2xf32>

// GATHER-FIT-LABEL: func.func @gather_budget
// GATHER-FIT-NEXT:    dist.pack {{.*}} -> tensor<7xf32>
// GATHER-FIT-NEXT:    dist.all_gather {{.*}} : tensor<7xf32> -> tensor<28xf32>

// GATHER-SPLIT-LABEL: func.func @gather_budget
// GATHER-SPLIT-NEXT:    dist.all_gather {{.*}} : tensor<3xf32> -> tensor<10xf32>
// GATHER-SPLIT-NEXT:    dist.all_gather {{.*}} : tensor<2x2xf32> -> tensor<6x2xf32>
// GATHER-SPLIT-NEXT:    return

// NO-GATHER-LABEL: func.func @gather_budget
// NO-GATHER-SAME:    (%[[A:[a-z0-9]+]]: tensor<3xf32>, %[[B:[a-z0-9]+]]: tensor<2x2xf32>)
// NO-GATHER-NEXT:    dist.all_gather %[[A]] axis 0 dim 0 : tensor<3xf32> -> tensor<10xf32>
// NO-GATHER-NEXT:    dist.all_gather %[[B]] axis 0 dim 0 : tensor<2x2xf32> -> tensor<6x2xf32>
// NO-GATHER-NEXT:    return

// -----

// allgather-across-uses-bytes: after a use of a member's result (here
// %y), a gather joins only while the bucket (32 bytes gathered so far, 32
// more for %b) stays within it; otherwise it starts a bucket of its own.
// Gathers before any use join up to allgather-bucket-bytes.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @fuse_across_use(%a: tensor<2xf32>, %b: tensor<2xf32>, %x: tensor<8xf32>)
      -> tensor<8xf32> attributes {train.step} {
    %fa = dist.all_gather %a axis 0 dim 0 : tensor<2xf32> -> tensor<8xf32>
    %y = arith.mulf %x, %fa : tensor<8xf32>
    %fb = dist.all_gather %b axis 0 dim 0 : tensor<2xf32> -> tensor<8xf32>
    %z = arith.mulf %y, %fb : tensor<8xf32>
    return %z : tensor<8xf32>
  }
}

// ACROSS-FIT-LABEL: func.func @fuse_across_use
// ACROSS-FIT-NEXT:    dist.pack %{{.*}}, %{{.*}} : tensor<2xf32>, tensor<2xf32> -> tensor<4xf32>
// ACROSS-FIT-NEXT:    dist.all_gather %{{.*}} axis 0 dim 0 : tensor<4xf32> -> tensor<16xf32>
// ACROSS-FIT-NOT:     dist.all_gather

// ACROSS-SPLIT-LABEL: func.func @fuse_across_use
// ACROSS-SPLIT-NEXT:    dist.all_gather %{{.*}} axis 0 dim 0 : tensor<2xf32> -> tensor<8xf32>
// ACROSS-SPLIT-NEXT:    arith.mulf
// ACROSS-SPLIT-NEXT:    dist.all_gather %{{.*}} axis 0 dim 0 : tensor<2xf32> -> tensor<8xf32>
// ACROSS-SPLIT-NOT:     dist.pack
