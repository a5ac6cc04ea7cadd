// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-lower-to-runtime)" | FileCheck %s
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-lower-to-runtime{async-collectives=false})" | FileCheck %s --check-prefix=SYNC

// zero-lower-to-runtime on collectives and buckets, and the streams and
// events that order them (zero-lower-to-runtime.mlir has the overview).
//
// The runtime's collectives work on whole buffers split along dimension 0,
// padding included: a reduce-scatter's input has exactly N times its
// output's rows, an all-gather's output exactly N times its input's. Where
// the dist op's logical shapes are not such multiples, the pass pads
// explicitly, with copies, fills and views.
//
// By default (CHECK) collectives run on the `@comm` stream: the compute
// stream records a `ready` event that the comm stream waits for before it
// starts, the collective records a `done` event, and the compute stream
// waits for it right before the first instruction that touches the
// collective's buffers. With `async-collectives=false` (SYNC) everything
// runs on `@compute` in program order, with no events.

// An all-gather whose logical result is not N times the shard gathers into
// a padded arena buffer, and its users read a `zrt.view` of the logical
// prefix: 10 elements over 4 ranks are shards of 3, gathered into 12; 6x2
// by rows over 4 are shards of 2x2, gathered into 8x2. An exact multiple
// (2 over 4 ranks gathered into 8) needs no view.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @all_gather_padded(%a: tensor<3xf32>, %b: tensor<2x2xf32>, %c: tensor<2xf32>)
      -> (tensor<10xf32>, tensor<6x2xf32>, tensor<8xf32>) attributes {train.step} {
    %0 = dist.all_gather %a axis 0 dim 0 : tensor<3xf32> -> tensor<10xf32>
    %1 = dist.all_gather %b axis 0 dim 0 : tensor<2x2xf32> -> tensor<6x2xf32>
    %2 = dist.all_gather %c axis 0 dim 0 : tensor<2xf32> -> tensor<8xf32>
    %r0 = train.relu %0 : tensor<10xf32>
    %r1 = train.relu %1 : tensor<6x2xf32>
    %r2 = train.relu %2 : tensor<8xf32>
    return %r0, %r1, %r2 : tensor<10xf32>, tensor<6x2xf32>, tensor<8xf32>
  }
}

// CHECK-LABEL: zrt.program @all_gather_padded
// CHECK:         zrt.step {
// CHECK-NEXT:      %[[A:.+]] = zrt.buffer_ref @input0 : memref<3xf32>
// CHECK-NEXT:      %[[B:.+]] = zrt.buffer_ref @input1 : memref<2x2xf32>
// CHECK-NEXT:      %[[C:.+]] = zrt.buffer_ref @input2 : memref<2xf32>
// CHECK-NEXT:      %[[A_PAD:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<12xf32>
// CHECK-NEXT:      zrt.record @ready0 on @compute
// CHECK-NEXT:      zrt.wait @ready0 on @comm
// CHECK-NEXT:      zrt.all_gather axis 0 on @comm %[[A]] to %[[A_PAD]] : memref<3xf32> to memref<12xf32>
// CHECK-NEXT:      zrt.record @done1 on @comm
// CHECK-NEXT:      %[[A_FULL:.+]] = zrt.view %[[A_PAD]][0] : memref<12xf32> to memref<10xf32>
// CHECK-NEXT:      %[[B_PAD:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<8x2xf32>
// CHECK-NEXT:      zrt.all_gather axis 0 on @comm %[[B]] to %[[B_PAD]] : memref<2x2xf32> to memref<8x2xf32>
// CHECK-NEXT:      zrt.record @done2 on @comm
// CHECK-NEXT:      %[[B_FULL:.+]] = zrt.view %[[B_PAD]][0] : memref<8x2xf32> to memref<6x2xf32>
// CHECK-NEXT:      %[[C_FULL:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<8xf32>
// CHECK-NEXT:      zrt.all_gather axis 0 on @comm %[[C]] to %[[C_FULL]] : memref<2xf32> to memref<8xf32>
// CHECK-NEXT:      zrt.record @done3 on @comm
// CHECK-NEXT:      %[[R0:.+]] = zrt.arena_view
// CHECK-NEXT:      zrt.wait @done1 on @compute
// CHECK-NEXT:      zrt.launch "train.relu" on @compute ins(%[[A_FULL]] : memref<10xf32>) outs(%[[R0]] : memref<10xf32>)
// CHECK-NEXT:      %[[R1:.+]] = zrt.arena_view
// CHECK-NEXT:      zrt.wait @done2 on @compute
// CHECK-NEXT:      zrt.launch "train.relu" on @compute ins(%[[B_FULL]] : memref<6x2xf32>) outs(%[[R1]] : memref<6x2xf32>)
// CHECK-NEXT:      %[[R2:.+]] = zrt.arena_view
// CHECK-NEXT:      zrt.wait @done3 on @compute
// CHECK-NEXT:      zrt.launch "train.relu" on @compute ins(%[[C_FULL]] : memref<8xf32>) outs(%[[R2]] : memref<8xf32>)

// SYNC-LABEL: zrt.program @all_gather_padded
// SYNC:         %[[A_PAD:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<12xf32>
// SYNC-NEXT:    zrt.all_gather axis 0 on @compute %{{.+}} to %[[A_PAD]] : memref<3xf32> to memref<12xf32>
// SYNC-NEXT:    %[[A_FULL:.+]] = zrt.view %[[A_PAD]][0] : memref<12xf32> to memref<10xf32>
// SYNC-NEXT:    %[[B_PAD:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<8x2xf32>
// SYNC-NEXT:    zrt.all_gather axis 0 on @compute %{{.+}} to %[[B_PAD]] : memref<2x2xf32> to memref<8x2xf32>
// SYNC-NEXT:    %[[B_FULL:.+]] = zrt.view %[[B_PAD]][0] : memref<8x2xf32> to memref<6x2xf32>
// SYNC-NEXT:    %[[C_FULL:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<8xf32>
// SYNC-NEXT:    zrt.all_gather axis 0 on @compute %{{.+}} to %[[C_FULL]] : memref<2xf32> to memref<8xf32>
// SYNC-NEXT:    %[[R0:.+]] = zrt.arena_view
// SYNC-NEXT:    zrt.launch "train.relu" on @compute ins(%[[A_FULL]] : memref<10xf32>) outs(%[[R0]] : memref<10xf32>)

// -----

// A reduce-scatter whose input is not N times the shard reduces a padded
// copy: the input is copied into the logical prefix of an arena buffer of
// N shards and the padding is filled with zeros (10 elements over 4 ranks:
// a 12-element buffer, 2 zeros at element 10; 5x2 by rows: an 8x2 buffer,
// 6 zeros at element 10). An input that divides evenly (8 into shards of 2)
// is reduced in place, with no copy. The second hand-off first waits for
// the first reduction, so the arena may reuse its padded input.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @reduce_scatter_padded(%a: tensor<10xf32>, %b: tensor<5x2xf32>, %c: tensor<8xf32>)
      -> (tensor<3xf32>, tensor<2x2xf32>, tensor<2xf32>) attributes {train.step} {
    %0 = dist.reduce_scatter sum %a axis 0 dim 0 : tensor<10xf32> -> tensor<3xf32>
    %1 = dist.reduce_scatter mean %b axis 0 dim 0 : tensor<5x2xf32> -> tensor<2x2xf32>
    %2 = dist.reduce_scatter max %c axis 0 dim 0 : tensor<8xf32> -> tensor<2xf32>
    return %0, %1, %2 : tensor<3xf32>, tensor<2x2xf32>, tensor<2xf32>
  }
}

// CHECK-LABEL: zrt.program @reduce_scatter_padded
// CHECK:         zrt.step {
// CHECK-NEXT:      %[[A:.+]] = zrt.buffer_ref @input0 : memref<10xf32>
// CHECK-NEXT:      %[[B:.+]] = zrt.buffer_ref @input1 : memref<5x2xf32>
// CHECK-NEXT:      %[[C:.+]] = zrt.buffer_ref @input2 : memref<8xf32>
// CHECK-NEXT:      %[[A_PAD:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<12xf32>
// CHECK-NEXT:      %[[A_PREFIX:.+]] = zrt.view %[[A_PAD]][0] : memref<12xf32> to memref<10xf32>
// CHECK-NEXT:      zrt.copy on @compute %[[A]] to %[[A_PREFIX]] : memref<10xf32> to memref<10xf32>
// CHECK-NEXT:      %[[A_TAIL:.+]] = zrt.view %[[A_PAD]][10] : memref<12xf32> to memref<2xf32>
// CHECK-NEXT:      zrt.launch "zrt.fill" on @compute outs(%[[A_TAIL]] : memref<2xf32>) params {value = 0.000000e+00 : f64}
// CHECK-NEXT:      %[[A_SHARD:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<3xf32>
// CHECK-NEXT:      zrt.record @ready0 on @compute
// CHECK-NEXT:      zrt.wait @ready0 on @comm
// CHECK-NEXT:      zrt.reduce_scatter sum axis 0 on @comm %[[A_PAD]] to %[[A_SHARD]] : memref<12xf32> to memref<3xf32>
// CHECK-NEXT:      zrt.record @done1 on @comm
// CHECK-NEXT:      %[[B_PAD:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<8x2xf32>
// CHECK-NEXT:      %[[B_PREFIX:.+]] = zrt.view %[[B_PAD]][0] : memref<8x2xf32> to memref<5x2xf32>
// CHECK-NEXT:      zrt.copy on @compute %[[B]] to %[[B_PREFIX]] : memref<5x2xf32> to memref<5x2xf32>
// CHECK-NEXT:      %[[B_TAIL:.+]] = zrt.view %[[B_PAD]][10] : memref<8x2xf32> to memref<6xf32>
// CHECK-NEXT:      zrt.launch "zrt.fill" on @compute outs(%[[B_TAIL]] : memref<6xf32>) params {value = 0.000000e+00 : f64}
// CHECK-NEXT:      %[[B_SHARD:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<2x2xf32>
// CHECK-NEXT:      zrt.wait @done1 on @compute
// CHECK-NEXT:      zrt.record @ready2 on @compute
// CHECK-NEXT:      zrt.wait @ready2 on @comm
// CHECK-NEXT:      zrt.reduce_scatter mean axis 0 on @comm %[[B_PAD]] to %[[B_SHARD]] : memref<8x2xf32> to memref<2x2xf32>
// CHECK-NEXT:      zrt.record @done3 on @comm
// CHECK-NEXT:      %[[C_SHARD:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<2xf32>
// CHECK-NEXT:      zrt.reduce_scatter max axis 0 on @comm %[[C]] to %[[C_SHARD]] : memref<8xf32> to memref<2xf32>
// CHECK-NEXT:      zrt.record @done4 on @comm

// -----

// Each dist collective has its zrt counterpart with the same reduction,
// axis and root, written to a fresh arena buffer. `dist.slice` moves no
// data; which rows a rank keeps depends on the rank, so it is a kernel on
// the compute stream, with its axis and dimension as params.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @collective_kinds(%x: tensor<8x2xf32>, %y: tensor<3xbf16>)
      -> (tensor<8x2xf32>, tensor<3xbf16>, tensor<8x2xf32>, tensor<8x2xf32>, tensor<2x2xf32>) attributes {train.step} {
    %0 = dist.all_reduce max %x axis 0 : tensor<8x2xf32>
    %1 = dist.all_reduce mean %y axis 0 : tensor<3xbf16>
    %2 = dist.broadcast %x root 3 axis 0 : tensor<8x2xf32>
    %3 = dist.all_to_all %x axis 0 split 0 concat 0 : tensor<8x2xf32> -> tensor<8x2xf32>
    %4 = dist.slice %x axis 0 dim 0 : tensor<8x2xf32> -> tensor<2x2xf32>
    return %0, %1, %2, %3, %4 : tensor<8x2xf32>, tensor<3xbf16>, tensor<8x2xf32>, tensor<8x2xf32>, tensor<2x2xf32>
  }
}

// CHECK-LABEL: zrt.program @collective_kinds
// CHECK:         %[[X:.+]] = zrt.buffer_ref @input0 : memref<8x2xf32>
// CHECK-NEXT:    %[[Y:.+]] = zrt.buffer_ref @input1 : memref<3xbf16>
// CHECK:         zrt.all_reduce max axis 0 on @comm %[[X]] to %{{.+}} : memref<8x2xf32> to memref<8x2xf32>
// CHECK:         zrt.all_reduce mean axis 0 on @comm %[[Y]] to %{{.+}} : memref<3xbf16> to memref<3xbf16>
// CHECK:         zrt.broadcast root 3 axis 0 on @comm %[[X]] to %{{.+}} : memref<8x2xf32> to memref<8x2xf32>
// CHECK:         zrt.all_to_all axis 0 on @comm %[[X]] to %{{.+}} : memref<8x2xf32> to memref<8x2xf32>
// CHECK:         %[[SHARD:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<2x2xf32>
// CHECK-NEXT:    zrt.launch "dist.slice" on @compute ins(%[[X]] : memref<8x2xf32>) outs(%[[SHARD]] : memref<2x2xf32>) params {axis = 0 : i64, dim = 0 : i64}

// -----

// A flat bucket (`dist.pack` without `shards`) is one arena buffer; each
// member is copied into it end to end through a view, and the `pad_to`
// tail (25 elements padded to 28) is filled with zeros. Unpacking a flat
// bucket copies nothing: each result is a view of the reduced bucket at
// its offset (0, 10 and 22).

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @flat_bucket(%a: tensor<10xf32>, %b: tensor<6x2xf32>, %c: tensor<3xf32>)
      -> (tensor<10xf32>, tensor<6x2xf32>, tensor<3xf32>) attributes {train.step} {
    %bucket = dist.pack %a, %b, %c pad_to 4 : tensor<10xf32>, tensor<6x2xf32>, tensor<3xf32> -> tensor<28xf32>
    %sum = dist.all_reduce sum %bucket axis 0 : tensor<28xf32>
    %r:3 = dist.unpack %sum : tensor<28xf32> -> tensor<10xf32>, tensor<6x2xf32>, tensor<3xf32>
    return %r#0, %r#1, %r#2 : tensor<10xf32>, tensor<6x2xf32>, tensor<3xf32>
  }
}

// CHECK-LABEL: zrt.program @flat_bucket
// CHECK:         %[[A:.+]] = zrt.buffer_ref @input0 : memref<10xf32>
// CHECK-NEXT:    %[[B:.+]] = zrt.buffer_ref @input1 : memref<6x2xf32>
// CHECK-NEXT:    %[[C:.+]] = zrt.buffer_ref @input2 : memref<3xf32>
// CHECK-NEXT:    %[[BUCKET:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<28xf32>
// CHECK-NEXT:    %[[TO_A:.+]] = zrt.view %[[BUCKET]][0] : memref<28xf32> to memref<10xf32>
// CHECK-NEXT:    zrt.copy on @compute %[[A]] to %[[TO_A]] : memref<10xf32> to memref<10xf32>
// CHECK-NEXT:    %[[TO_B:.+]] = zrt.view %[[BUCKET]][10] : memref<28xf32> to memref<12xf32>
// CHECK-NEXT:    %[[B_FLAT:.+]] = zrt.view %[[B]][0] : memref<6x2xf32> to memref<12xf32>
// CHECK-NEXT:    zrt.copy on @compute %[[B_FLAT]] to %[[TO_B]] : memref<12xf32> to memref<12xf32>
// CHECK-NEXT:    %[[TO_C:.+]] = zrt.view %[[BUCKET]][22] : memref<28xf32> to memref<3xf32>
// CHECK-NEXT:    zrt.copy on @compute %[[C]] to %[[TO_C]] : memref<3xf32> to memref<3xf32>
// CHECK-NEXT:    %[[TAIL:.+]] = zrt.view %[[BUCKET]][25] : memref<28xf32> to memref<3xf32>
// CHECK-NEXT:    zrt.launch "zrt.fill" on @compute outs(%[[TAIL]] : memref<3xf32>) params {value = 0.000000e+00 : f64}
// CHECK-NEXT:    %[[SUM:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<28xf32>
// CHECK-NEXT:    zrt.record @ready0 on @compute
// CHECK-NEXT:    zrt.wait @ready0 on @comm
// CHECK-NEXT:    zrt.all_reduce sum axis 0 on @comm %[[BUCKET]] to %[[SUM]] : memref<28xf32> to memref<28xf32>
// CHECK-NEXT:    zrt.record @done1 on @comm
// CHECK-NEXT:    %[[R0:.+]] = zrt.view %[[SUM]][0] : memref<28xf32> to memref<10xf32>
// CHECK-NEXT:    %[[R1:.+]] = zrt.view %[[SUM]][10] : memref<28xf32> to memref<6x2xf32>
// CHECK-NEXT:    %[[R2:.+]] = zrt.view %[[SUM]][22] : memref<28xf32> to memref<3xf32>
// CHECK-NEXT:    %[[OUT0:.+]] = zrt.buffer_ref @output0
// CHECK-NEXT:    zrt.wait @done1 on @compute
// CHECK-NEXT:    zrt.copy on @compute %[[R0]] to %[[OUT0]] : memref<10xf32> to memref<10xf32>
// CHECK-NEXT:    %[[OUT1:.+]] = zrt.buffer_ref @output1
// CHECK-NEXT:    zrt.copy on @compute %[[R1]] to %[[OUT1]] : memref<6x2xf32> to memref<6x2xf32>
// CHECK-NEXT:    %[[OUT2:.+]] = zrt.buffer_ref @output2
// CHECK-NEXT:    zrt.copy on @compute %[[R2]] to %[[OUT2]] : memref<3xf32> to memref<3xf32>
// CHECK-NEXT:  }

// -----

// A rank-major bucket (`dist.pack ... shards 4`) holds, for each rank r in
// turn, chunk r of every member: 10 elements in chunks of 3 and 6x2 in
// chunks of 2 rows (4 elements), 7 elements per rank. Each chunk is one
// copy; the last rank's chunks are short (1 element of the first member,
// none of the second), and the rest of its 7 elements are filled with
// zeros (2 at element 22, 4 at element 24). The reduce-scatter then leaves
// every rank exactly its shard of each member, which a flat unpack reads as
// views.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @rank_major_pack(%a: tensor<10xf32>, %b: tensor<6x2xf32>) -> (tensor<3xf32>, tensor<2x2xf32>) attributes {train.step} {
    %bucket = dist.pack %a, %b shards 4 : tensor<10xf32>, tensor<6x2xf32> -> tensor<28xf32>
    %shard = dist.reduce_scatter mean %bucket axis 0 dim 0 : tensor<28xf32> -> tensor<7xf32>
    %r:2 = dist.unpack %shard : tensor<7xf32> -> tensor<3xf32>, tensor<2x2xf32>
    return %r#0, %r#1 : tensor<3xf32>, tensor<2x2xf32>
  }
}

// CHECK-LABEL: zrt.program @rank_major_pack
// CHECK:         %[[A:.+]] = zrt.buffer_ref @input0 : memref<10xf32>
// CHECK-NEXT:    %[[B:.+]] = zrt.buffer_ref @input1 : memref<6x2xf32>
// CHECK-NEXT:    %[[BUCKET:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<28xf32>
// CHECK-NEXT:    %[[DST:.+]] = zrt.view %[[BUCKET]][0] : memref<28xf32> to memref<3xf32>
// CHECK-NEXT:    %[[SRC:.+]] = zrt.view %[[A]][0] : memref<10xf32> to memref<3xf32>
// CHECK-NEXT:    zrt.copy on @compute %[[SRC]] to %[[DST]] : memref<3xf32> to memref<3xf32>
// CHECK-NEXT:    %[[DST:.+]] = zrt.view %[[BUCKET]][3] : memref<28xf32> to memref<4xf32>
// CHECK-NEXT:    %[[SRC:.+]] = zrt.view %[[B]][0] : memref<6x2xf32> to memref<4xf32>
// CHECK-NEXT:    zrt.copy on @compute %[[SRC]] to %[[DST]] : memref<4xf32> to memref<4xf32>
// CHECK-NEXT:    %[[DST:.+]] = zrt.view %[[BUCKET]][7] : memref<28xf32> to memref<3xf32>
// CHECK-NEXT:    %[[SRC:.+]] = zrt.view %[[A]][3] : memref<10xf32> to memref<3xf32>
// CHECK-NEXT:    zrt.copy on @compute %[[SRC]] to %[[DST]] : memref<3xf32> to memref<3xf32>
// CHECK-NEXT:    %[[DST:.+]] = zrt.view %[[BUCKET]][10] : memref<28xf32> to memref<4xf32>
// CHECK-NEXT:    %[[SRC:.+]] = zrt.view %[[B]][4] : memref<6x2xf32> to memref<4xf32>
// CHECK-NEXT:    zrt.copy on @compute %[[SRC]] to %[[DST]] : memref<4xf32> to memref<4xf32>
// CHECK-NEXT:    %[[DST:.+]] = zrt.view %[[BUCKET]][14] : memref<28xf32> to memref<3xf32>
// CHECK-NEXT:    %[[SRC:.+]] = zrt.view %[[A]][6] : memref<10xf32> to memref<3xf32>
// CHECK-NEXT:    zrt.copy on @compute %[[SRC]] to %[[DST]] : memref<3xf32> to memref<3xf32>
// CHECK-NEXT:    %[[DST:.+]] = zrt.view %[[BUCKET]][17] : memref<28xf32> to memref<4xf32>
// CHECK-NEXT:    %[[SRC:.+]] = zrt.view %[[B]][8] : memref<6x2xf32> to memref<4xf32>
// CHECK-NEXT:    zrt.copy on @compute %[[SRC]] to %[[DST]] : memref<4xf32> to memref<4xf32>
// CHECK-NEXT:    %[[DST:.+]] = zrt.view %[[BUCKET]][21] : memref<28xf32> to memref<1xf32>
// CHECK-NEXT:    %[[SRC:.+]] = zrt.view %[[A]][9] : memref<10xf32> to memref<1xf32>
// CHECK-NEXT:    zrt.copy on @compute %[[SRC]] to %[[DST]] : memref<1xf32> to memref<1xf32>
// CHECK-NEXT:    %[[PAD:.+]] = zrt.view %[[BUCKET]][22] : memref<28xf32> to memref<2xf32>
// CHECK-NEXT:    zrt.launch "zrt.fill" on @compute outs(%[[PAD]] : memref<2xf32>) params {value = 0.000000e+00 : f64}
// CHECK-NEXT:    %[[PAD:.+]] = zrt.view %[[BUCKET]][24] : memref<28xf32> to memref<4xf32>
// CHECK-NEXT:    zrt.launch "zrt.fill" on @compute outs(%[[PAD]] : memref<4xf32>) params {value = 0.000000e+00 : f64}
// CHECK-NEXT:    %[[SHARD:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<7xf32>
// CHECK-NEXT:    zrt.record @ready0 on @compute
// CHECK-NEXT:    zrt.wait @ready0 on @comm
// CHECK-NEXT:    zrt.reduce_scatter mean axis 0 on @comm %[[BUCKET]] to %[[SHARD]] : memref<28xf32> to memref<7xf32>
// CHECK-NEXT:    zrt.record @done1 on @comm
// CHECK-NEXT:    %{{.+}} = zrt.view %[[SHARD]][0] : memref<7xf32> to memref<3xf32>
// CHECK-NEXT:    %{{.+}} = zrt.view %[[SHARD]][3] : memref<7xf32> to memref<2x2xf32>
// CHECK-NOT:     zrt.copy on @compute %[[SHARD]]

// -----

// The other direction: every rank's flat bucket of shards is gathered into
// the rank-major layout, and `dist.unpack ... shards 4` copies each
// member's chunks out of it into a fresh arena buffer, dropping the
// padding: 10 elements from chunks of 3 at 0, 7, 14 and 21 (the last one
// element long), 6x2 from chunks of 4 elements at 3, 10 and 17 (the fourth
// rank holds only padding for it).

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @rank_major_unpack(%a: tensor<3xf32>, %b: tensor<2x2xf32>) -> (tensor<10xf32>, tensor<6x2xf32>) attributes {train.step} {
    %bucket = dist.pack %a, %b : tensor<3xf32>, tensor<2x2xf32> -> tensor<7xf32>
    %full = dist.all_gather %bucket axis 0 dim 0 : tensor<7xf32> -> tensor<28xf32>
    %r:2 = dist.unpack %full shards 4 : tensor<28xf32> -> tensor<10xf32>, tensor<6x2xf32>
    return %r#0, %r#1 : tensor<10xf32>, tensor<6x2xf32>
  }
}

// CHECK-LABEL: zrt.program @rank_major_unpack
// CHECK:         zrt.all_gather axis 0 on @comm %{{.+}} to %[[FULL:.+]] : memref<7xf32> to memref<28xf32>
// CHECK-NEXT:    zrt.record @done1 on @comm
// CHECK-NEXT:    %[[A:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<10xf32>
// CHECK-NEXT:    %[[DST:.+]] = zrt.view %[[A]][0] : memref<10xf32> to memref<3xf32>
// CHECK-NEXT:    %[[SRC:.+]] = zrt.view %[[FULL]][0] : memref<28xf32> to memref<3xf32>
// CHECK-NEXT:    zrt.wait @done1 on @compute
// CHECK-NEXT:    zrt.copy on @compute %[[SRC]] to %[[DST]] : memref<3xf32> to memref<3xf32>
// CHECK-NEXT:    %[[DST:.+]] = zrt.view %[[A]][3] : memref<10xf32> to memref<3xf32>
// CHECK-NEXT:    %[[SRC:.+]] = zrt.view %[[FULL]][7] : memref<28xf32> to memref<3xf32>
// CHECK-NEXT:    zrt.copy on @compute %[[SRC]] to %[[DST]] : memref<3xf32> to memref<3xf32>
// CHECK-NEXT:    %[[DST:.+]] = zrt.view %[[A]][6] : memref<10xf32> to memref<3xf32>
// CHECK-NEXT:    %[[SRC:.+]] = zrt.view %[[FULL]][14] : memref<28xf32> to memref<3xf32>
// CHECK-NEXT:    zrt.copy on @compute %[[SRC]] to %[[DST]] : memref<3xf32> to memref<3xf32>
// CHECK-NEXT:    %[[DST:.+]] = zrt.view %[[A]][9] : memref<10xf32> to memref<1xf32>
// CHECK-NEXT:    %[[SRC:.+]] = zrt.view %[[FULL]][21] : memref<28xf32> to memref<1xf32>
// CHECK-NEXT:    zrt.copy on @compute %[[SRC]] to %[[DST]] : memref<1xf32> to memref<1xf32>
// CHECK-NEXT:    %[[B:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<6x2xf32>
// CHECK-NEXT:    %[[DST:.+]] = zrt.view %[[B]][0] : memref<6x2xf32> to memref<4xf32>
// CHECK-NEXT:    %[[SRC:.+]] = zrt.view %[[FULL]][3] : memref<28xf32> to memref<4xf32>
// CHECK-NEXT:    zrt.copy on @compute %[[SRC]] to %[[DST]] : memref<4xf32> to memref<4xf32>
// CHECK-NEXT:    %[[DST:.+]] = zrt.view %[[B]][4] : memref<6x2xf32> to memref<4xf32>
// CHECK-NEXT:    %[[SRC:.+]] = zrt.view %[[FULL]][10] : memref<28xf32> to memref<4xf32>
// CHECK-NEXT:    zrt.copy on @compute %[[SRC]] to %[[DST]] : memref<4xf32> to memref<4xf32>
// CHECK-NEXT:    %[[DST:.+]] = zrt.view %[[B]][8] : memref<6x2xf32> to memref<4xf32>
// CHECK-NEXT:    %[[SRC:.+]] = zrt.view %[[FULL]][17] : memref<28xf32> to memref<4xf32>
// CHECK-NEXT:    zrt.copy on @compute %[[SRC]] to %[[DST]] : memref<4xf32> to memref<4xf32>
// CHECK-NEXT:    %[[OUT0:.+]] = zrt.buffer_ref @output0
// CHECK-NEXT:    zrt.copy on @compute %[[A]] to %[[OUT0]] : memref<10xf32> to memref<10xf32>
// CHECK-NEXT:    %[[OUT1:.+]] = zrt.buffer_ref @output1
// CHECK-NEXT:    zrt.copy on @compute %[[B]] to %[[OUT1]] : memref<6x2xf32> to memref<6x2xf32>

//===----------------------------------------------------------------------===//
// Streams and events
//===----------------------------------------------------------------------===//

// -----

// Compute that does not touch a collective's buffers overlaps it: the
// negation runs on @compute while the all-reduce is in flight on @comm, and
// the compute stream waits for the all-reduce's `done` event only right
// before the add that reads its result. Each event is declared in the
// program. Without async collectives the all-reduce is an ordinary
// instruction on @compute, and there is neither a @comm stream nor any
// event, record or wait.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @overlap(%x: tensor<16xf32>) -> tensor<16xf32> attributes {train.step} {
    %g = train.relu %x : tensor<16xf32>
    %s = dist.all_reduce sum %g axis 0 : tensor<16xf32>
    %h = train.neg %x : tensor<16xf32>
    %y = train.add %s, %h : tensor<16xf32>
    return %y : tensor<16xf32>
  }
}

// CHECK-LABEL: zrt.program @overlap
// CHECK-NEXT:    zrt.stream @compute
// CHECK-NEXT:    zrt.stream @comm
// CHECK:         zrt.event @ready0
// CHECK-NEXT:    zrt.event @done1
// CHECK-NEXT:    zrt.step {
// CHECK-NEXT:      %[[X:.+]] = zrt.buffer_ref @input0 : memref<16xf32>
// CHECK-NEXT:      %[[G:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<16xf32>
// CHECK-NEXT:      zrt.launch "train.relu" on @compute ins(%[[X]] : memref<16xf32>) outs(%[[G]] : memref<16xf32>)
// CHECK-NEXT:      %[[S:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<16xf32>
// CHECK-NEXT:      zrt.record @ready0 on @compute
// CHECK-NEXT:      zrt.wait @ready0 on @comm
// CHECK-NEXT:      zrt.all_reduce sum axis 0 on @comm %[[G]] to %[[S]] : memref<16xf32> to memref<16xf32>
// CHECK-NEXT:      zrt.record @done1 on @comm
// CHECK-NEXT:      %[[H:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<16xf32>
// CHECK-NEXT:      zrt.launch "train.neg" on @compute ins(%[[X]] : memref<16xf32>) outs(%[[H]] : memref<16xf32>)
// CHECK-NEXT:      %[[Y:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<16xf32>
// CHECK-NEXT:      zrt.wait @done1 on @compute
// CHECK-NEXT:      zrt.launch "train.add" on @compute ins(%[[S]], %[[H]] : memref<16xf32>, memref<16xf32>) outs(%[[Y]] : memref<16xf32>)
// CHECK-NEXT:      %[[OUT:.+]] = zrt.buffer_ref @output0
// CHECK-NEXT:      zrt.copy on @compute %[[Y]] to %[[OUT]]
// CHECK-NEXT:    }

// SYNC-LABEL: zrt.program @overlap
// SYNC-NEXT:    zrt.stream @compute
// SYNC-NEXT:    zrt.buffer @input0
// SYNC-NEXT:    zrt.buffer @output0
// SYNC-NEXT:    zrt.step {
// SYNC-NEXT:      %[[X:.+]] = zrt.buffer_ref @input0 : memref<16xf32>
// SYNC-NEXT:      %[[G:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<16xf32>
// SYNC-NEXT:      zrt.launch "train.relu" on @compute ins(%[[X]] : memref<16xf32>) outs(%[[G]] : memref<16xf32>)
// SYNC-NEXT:      %[[S:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<16xf32>
// SYNC-NEXT:      zrt.all_reduce sum axis 0 on @compute %[[G]] to %[[S]] : memref<16xf32> to memref<16xf32>
// SYNC-NEXT:      %[[H:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<16xf32>
// SYNC-NEXT:      zrt.launch "train.neg" on @compute ins(%[[X]] : memref<16xf32>) outs(%[[H]] : memref<16xf32>)
// SYNC-NEXT:      %[[Y:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<16xf32>
// SYNC-NEXT:      zrt.launch "train.add" on @compute ins(%[[S]], %[[H]] : memref<16xf32>, memref<16xf32>) outs(%[[Y]] : memref<16xf32>)
// SYNC-NEXT:      %[[OUT:.+]] = zrt.buffer_ref @output0
// SYNC-NEXT:      zrt.copy on @compute %[[Y]] to %[[OUT]]
// SYNC-NEXT:    }

// -----

// Back-to-back collectives share one hand-off: the comm stream waits for
// `ready0` once, before the first of the two all-reduces, since no compute
// was issued between them. The exp launched after them is new work on
// @compute, so the third all-reduce needs a new `ready` event. Before that
// hand-off the compute stream waits for the first two: their inputs are
// arena buffers, free for reuse only once compute knows the reductions are
// done, and waiting one hand-off later keeps them overlapped with the exp.
// One wait, for `done2`, does: the comm stream runs them in issue order, so
// the first is done once the second is. The add then waits only for the
// third result.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @back_to_back(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) attributes {train.step} {
    %a = train.relu %x : tensor<16xf32>
    %b = train.neg %x : tensor<16xf32>
    %sa = dist.all_reduce sum %a axis 0 : tensor<16xf32>
    %sb = dist.all_reduce sum %b axis 0 : tensor<16xf32>
    %c = train.exp %x : tensor<16xf32>
    %sc = dist.all_reduce sum %c axis 0 : tensor<16xf32>
    %y = train.add %sb, %sc : tensor<16xf32>
    return %y, %sa : tensor<16xf32>, tensor<16xf32>
  }
}

// CHECK-LABEL: zrt.program @back_to_back
// CHECK:         zrt.event @ready0
// CHECK-NEXT:    zrt.event @done1
// CHECK-NEXT:    zrt.event @done2
// CHECK-NEXT:    zrt.event @ready3
// CHECK-NEXT:    zrt.event @done4
// CHECK-NEXT:    zrt.step {
// CHECK:           zrt.launch "train.neg"
// CHECK-NEXT:      %[[SA:.+]] = zrt.arena_view
// CHECK-NEXT:      zrt.record @ready0 on @compute
// CHECK-NEXT:      zrt.wait @ready0 on @comm
// CHECK-NEXT:      zrt.all_reduce sum axis 0 on @comm %{{.+}} to %[[SA]]
// CHECK-NEXT:      zrt.record @done1 on @comm
// CHECK-NEXT:      %[[SB:.+]] = zrt.arena_view
// CHECK-NEXT:      zrt.all_reduce sum axis 0 on @comm %{{.+}} to %[[SB]]
// CHECK-NEXT:      zrt.record @done2 on @comm
// CHECK-NEXT:      %[[C:.+]] = zrt.arena_view
// CHECK-NEXT:      zrt.launch "train.exp" on @compute ins(%{{.+}} : memref<16xf32>) outs(%[[C]] : memref<16xf32>)
// CHECK-NEXT:      %[[SC:.+]] = zrt.arena_view
// CHECK-NEXT:      zrt.wait @done2 on @compute
// CHECK-NEXT:      zrt.record @ready3 on @compute
// CHECK-NEXT:      zrt.wait @ready3 on @comm
// CHECK-NEXT:      zrt.all_reduce sum axis 0 on @comm %[[C]] to %[[SC]]
// CHECK-NEXT:      zrt.record @done4 on @comm
// CHECK-NEXT:      %[[Y:.+]] = zrt.arena_view
// CHECK-NEXT:      zrt.wait @done4 on @compute
// CHECK-NEXT:      zrt.launch "train.add" on @compute ins(%[[SB]], %[[SC]] : memref<16xf32>, memref<16xf32>) outs(%[[Y]] : memref<16xf32>)
// CHECK-NEXT:      %[[OUT0:.+]] = zrt.buffer_ref @output0
// CHECK-NEXT:      zrt.copy on @compute %[[Y]] to %[[OUT0]]
// CHECK-NEXT:      %[[OUT1:.+]] = zrt.buffer_ref @output1
// CHECK-NEXT:      zrt.copy on @compute %[[SA]] to %[[OUT1]]
// CHECK-NEXT:    }

// SYNC-LABEL: zrt.program @back_to_back
// SYNC-NOT:     zrt.event
// SYNC:         zrt.step {
// SYNC-NOT:       zrt.record
// SYNC-NOT:       zrt.wait
// SYNC-NOT:       @comm
// SYNC-COUNT-3:   zrt.all_reduce sum axis 0 on @compute
// SYNC-NOT:       zrt.all_reduce
// SYNC-NOT:       zrt.record
// SYNC-NOT:       zrt.wait
// SYNC:         }

// -----

// Overwriting memory a pending collective reads also waits for it: the
// all-gather reads the shard @w on @comm, so the store of the new shard
// (a copy into @w) waits for `done1` first. The negation before it only
// reads @w, like the all-gather, and does not wait; neither does the relu
// after the store, which reads the gathered value the compute stream has
// already waited for. In program order (SYNC) the gather has finished
// before the store anyway.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @w param : tensor<10xf32> sharded flat over 0 -> tensor<3xf32> init zeros

  func.func @store_waits_for_reader(%x: tensor<10xf32>) -> tensor<10xf32> attributes {train.step} {
    %w = train.load @w : tensor<3xf32>
    %full = dist.all_gather %w axis 0 dim 0 : tensor<3xf32> -> tensor<10xf32>
    %n = train.neg %w : tensor<3xf32>
    train.store %n to @w : tensor<3xf32>
    %y = train.relu %full : tensor<10xf32>
    return %y : tensor<10xf32>
  }
}

// CHECK-LABEL: zrt.program @store_waits_for_reader
// CHECK:         %[[W:.+]] = zrt.buffer_ref @w : memref<3xf32>
// CHECK-NEXT:    %[[PAD:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<12xf32>
// CHECK-NEXT:    zrt.record @ready0 on @compute
// CHECK-NEXT:    zrt.wait @ready0 on @comm
// CHECK-NEXT:    zrt.all_gather axis 0 on @comm %[[W]] to %[[PAD]] : memref<3xf32> to memref<12xf32>
// CHECK-NEXT:    zrt.record @done1 on @comm
// CHECK-NEXT:    %[[FULL:.+]] = zrt.view %[[PAD]][0] : memref<12xf32> to memref<10xf32>
// CHECK-NEXT:    %[[N:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<3xf32>
// CHECK-NEXT:    zrt.launch "train.neg" on @compute ins(%[[W]] : memref<3xf32>) outs(%[[N]] : memref<3xf32>)
// CHECK-NEXT:    zrt.wait @done1 on @compute
// CHECK-NEXT:    zrt.copy on @compute %[[N]] to %[[W]] : memref<3xf32> to memref<3xf32>
// CHECK-NEXT:    %[[Y:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<10xf32>
// CHECK-NEXT:    zrt.launch "train.relu" on @compute ins(%[[FULL]] : memref<10xf32>) outs(%[[Y]] : memref<10xf32>)
// CHECK-NOT:     zrt.wait

// SYNC-LABEL: zrt.program @store_waits_for_reader
// SYNC:         %[[W:.+]] = zrt.buffer_ref @w : memref<3xf32>
// SYNC-NEXT:    %[[PAD:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<12xf32>
// SYNC-NEXT:    zrt.all_gather axis 0 on @compute %[[W]] to %[[PAD]] : memref<3xf32> to memref<12xf32>
// SYNC-NEXT:    %[[FULL:.+]] = zrt.view %[[PAD]][0] : memref<12xf32> to memref<10xf32>
// SYNC-NEXT:    %[[N:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<3xf32>
// SYNC-NEXT:    zrt.launch "train.neg" on @compute ins(%[[W]] : memref<3xf32>) outs(%[[N]] : memref<3xf32>)
// SYNC-NEXT:    zrt.copy on @compute %[[N]] to %[[W]] : memref<3xf32> to memref<3xf32>

// -----

// A collective whose result nobody reads is still waited for, at the end of
// the step, so that the next step never starts with communication in
// flight.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @unused_result(%x: tensor<16xf32>) -> tensor<16xf32> attributes {train.step} {
    %s = dist.all_reduce sum %x axis 0 : tensor<16xf32>
    %y = train.relu %x : tensor<16xf32>
    return %y : tensor<16xf32>
  }
}

// CHECK-LABEL: zrt.program @unused_result
// CHECK:         zrt.all_reduce sum axis 0 on @comm
// CHECK-NEXT:    zrt.record @done1 on @comm
// CHECK-NEXT:    %[[Y:.+]] = zrt.arena_view
// CHECK-NEXT:    zrt.launch "train.relu" on @compute ins(%{{.+}} : memref<16xf32>) outs(%[[Y]] : memref<16xf32>)
// CHECK-NEXT:    %[[OUT:.+]] = zrt.buffer_ref @output0
// CHECK-NEXT:    zrt.copy on @compute %[[Y]] to %[[OUT]]
// CHECK-NEXT:    zrt.wait @done1 on @compute
// CHECK-NEXT:  }

// SYNC-LABEL: zrt.program @unused_result
// SYNC:         zrt.all_reduce sum axis 0 on @compute
// SYNC-NEXT:    %[[Y:.+]] = zrt.arena_view
// SYNC-NEXT:    zrt.launch "train.relu"
// SYNC-NEXT:    %[[OUT:.+]] = zrt.buffer_ref @output0
// SYNC-NEXT:    zrt.copy on @compute %[[Y]] to %[[OUT]]
// SYNC-NEXT:  }
