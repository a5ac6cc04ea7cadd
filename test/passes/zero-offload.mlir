// RUN: zero-opt %s --pass-pipeline="builtin.module(zero-pipeline{stage=2 lower-to-runtime=1 offload=optimizer})" | FileCheck %s --check-prefix=OPT
// RUN: zero-opt %s --pass-pipeline="builtin.module(zero-pipeline{stage=3 lower-to-runtime=1 offload=optimizer})" | FileCheck %s --check-prefix=INPLACE
// RUN: zero-opt %s --pass-pipeline="builtin.module(zero-pipeline{stage=3 lower-to-runtime=1 offload=optimizer reduce-bucket-bytes=64})" | FileCheck %s --check-prefix=HOIST
// RUN: zero-opt %s --pass-pipeline="builtin.module(zero-pipeline{stage=3 lower-to-runtime=1 offload=optimizer+params})" | FileCheck %s --check-prefix=PARAMS
// RUN: zero-opt %s --pass-pipeline="builtin.module(zero-pipeline{stage=2 lower-to-runtime=1 offload=none device-memory-budget=2724 report=text})" 2>&1 >/dev/null | FileCheck %s --check-prefix=FITS
// RUN: zero-opt %s --pass-pipeline="builtin.module(zero-pipeline{stage=2 lower-to-runtime=1 offload=auto device-memory-budget=2724 report=text})" 2>&1 >/dev/null | FileCheck %s --check-prefix=AUTO-NONE
// RUN: zero-opt %s --pass-pipeline="builtin.module(zero-pipeline{stage=2 lower-to-runtime=1 offload=auto device-memory-budget=2723 report=text})" 2>&1 >/dev/null | FileCheck %s --check-prefix=AUTO-BIG
// RUN: zero-opt %s --pass-pipeline="builtin.module(zero-pipeline{stage=2 lower-to-runtime=1 offload=auto device-memory-budget=2148 report=text})" 2>&1 >/dev/null | FileCheck %s --check-prefix=AUTO-ALL
// RUN: zero-opt %s --pass-pipeline="builtin.module(zero-pipeline{stage=3 lower-to-runtime=1 offload=auto device-memory-budget=1860 report=json})" 2>&1 >/dev/null | FileCheck %s --check-prefix=AUTO-JSON
// RUN: zero-opt %s --pass-pipeline="builtin.module(zero-pipeline{stage=3 lower-to-runtime=1 offload=auto device-memory-budget=1859 report=text})" 2>&1 >/dev/null | FileCheck %s --check-prefix=AUTO-PARAMS

// Two parameters of 128 and 16 elements trained with Adam on 2 ranks. Their
// optimizer state (m and v, sharded at stages 1-3) is what offload=optimizer
// moves to host memory; at stage 3 offload=optimizer+params moves the
// parameter shards too. offload=auto moves the least that fits the device
// budget, the largest tensor first: the plan needs 2724 device bytes per
// rank at stage 2 as it is, 2212 with @big's state on the host and 2148
// with both, so the budgets 2724, 2723 and 2148 sit on each threshold.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @big param : tensor<16x8xf32> init normal(0.0, 0.02)
  train.param @small param : tensor<8x2xf32> init normal(0.0, 0.02)
  train.optimizer @adam adam lr 1.0e-03

  func.func @step(%x: tensor<4x16xf32>, %dy: tensor<4x2xf32>) -> tensor<f32>
      attributes {train.step} {
    %big = train.load @big : tensor<16x8xf32>
    %small = train.load @small : tensor<8x2xf32>
    %h = train.matmul %x, %big : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
    %y = train.matmul %h, %small : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
    %loss = train.reduce_mean %y dims [0, 1] : tensor<4x2xf32> -> tensor<f32>
    %dsmall = train.matmul %h, %dy transpose_a : tensor<4x8xf32>, tensor<4x2xf32> -> tensor<8x2xf32>
    %dh = train.matmul %dy, %small transpose_b : tensor<4x2xf32>, tensor<8x2xf32> -> tensor<4x8xf32>
    %dbig = train.matmul %x, %dh transpose_a : tensor<4x16xf32>, tensor<4x8xf32> -> tensor<16x8xf32>
    train.apply_gradient %dbig to @big with @adam : tensor<16x8xf32>
    train.apply_gradient %dsmall to @small with @adam : tensor<8x2xf32>
    return %loss : tensor<f32>
  }
}

// offload=optimizer at stage 2: the slots live in host memory and a host
// stream runs the update. The transfer stream starts once the compute
// stream has the reduced gradient shard, copies the update's device inputs
// (the parameter shard, the gradient shard, the step) to a host arena, and
// copies the new parameter shard back; the compute stream waits for that
// copy only where it reads the result (packing it for the all-gather).
// OPT-LABEL: zrt.program @step placement #dist.placement<cpu, [2]> arena 1280 host_arena 832 align 64
// OPT-SAME:      zrt.memory_plan = {budget = 0 : i64, decisions = ["big: optimizer state (@big.m, @big.v, 512 B) in host memory: offload=optimizer", "small: optimizer state (@small.m, @small.v, 64 B) in host memory: offload=optimizer"], device_arena = 1280 : i64, device_persistent = 868 : i64, host_arena = 832 : i64, host_link_bytes = 880 : i64, host_persistent = 576 : i64, offload = "optimizer"}
// OPT:         zrt.stream @transfer
// OPT-NEXT:    zrt.stream @host in host
// OPT-NEXT:    zrt.buffer @big param : memref<16x8xf32>
// OPT-NEXT:    zrt.buffer @big.m slot in host : memref<64xf32>
// OPT-NEXT:    zrt.buffer @big.v slot in host : memref<64xf32>
// OPT:         zrt.reduce_scatter mean axis 0 on @comm %{{.*}} to %[[GRADS:.*]] : memref<144xf32> to memref<72xf32>
// OPT:         %[[GRAD:.*]] = zrt.view %[[GRADS]][8] : memref<72xf32> to memref<64xf32>
// OPT:         zrt.launch "dist.slice" on @compute {{.*}} outs(%[[SHARD:.*]] : memref<64xf32>)
// OPT:         zrt.wait @[[RS:done.*]] on @compute
// OPT-NEXT:    zrt.record @[[READY:.*]] on @compute
// OPT-NEXT:    zrt.wait @[[READY]] on @transfer
// OPT-NEXT:    %[[HSHARD:.*]] = zrt.arena_view [{{[0-9]+}}] in host : memref<64xf32>
// OPT-NEXT:    zrt.copy on @transfer %[[SHARD]] to %[[HSHARD]]
// OPT-NEXT:    %[[HGRAD:.*]] = zrt.arena_view [{{[0-9]+}}] in host : memref<64xf32>
// OPT-NEXT:    zrt.copy on @transfer %[[GRAD]] to %[[HGRAD]]
// OPT:         zrt.record @[[STAGED:d2h_done.*]] on @transfer
// OPT-NEXT:    zrt.wait @[[STAGED]] on @host
// OPT-NEXT:    %[[HNEW:.*]] = zrt.arena_view [{{[0-9]+}}] in host : memref<64xf32>
// OPT-NEXT:    zrt.launch "train.adam" on @host ins(%[[HSHARD]], %[[HGRAD]], %big.m, %big.v, %{{.*}} : {{.*}}) outs(%[[HNEW]], %big.m, %big.v :
// OPT-NEXT:    zrt.record @[[UPDATED:.*]] on @host
// OPT-NEXT:    zrt.wait @[[UPDATED]] on @transfer
// OPT-NEXT:    zrt.copy on @transfer %[[HNEW]] to %[[NEW:.*]] : memref<64xf32> to memref<64xf32>
// OPT-NEXT:    zrt.record @[[BACK:h2d_done.*]] on @transfer
// OPT:         zrt.wait @[[BACK]] on @compute
// OPT:         zrt.copy on @compute %[[NEW]] to %{{.*}} : memref<64xf32> to memref<64xf32>
// OPT:         zrt.all_gather

// offload=optimizer at stage 3: the update writes the parameter shard in
// place, so the shard goes to the host, is updated there in its staging
// buffer, and comes back into the device buffer it came from.
// INPLACE-LABEL: zrt.program @step
// INPLACE:         zrt.buffer @big param : memref<64xf32>
// INPLACE:         %[[HBIG:.*]] = zrt.arena_view [{{[0-9]+}}] in host : memref<64xf32>
// INPLACE-NEXT:    zrt.copy on @transfer %big to %[[HBIG]] : memref<64xf32> to memref<64xf32>
// INPLACE:         zrt.launch "train.adam" on @host ins(%[[HBIG]], %{{.*}}, %big.m, %big.v, %{{.*}} : {{.*}}) outs(%[[HBIG]], %big.m, %big.v :
// INPLACE-NEXT:    zrt.record @[[UPDATED:.*]] on @host
// INPLACE-NEXT:    zrt.wait @[[UPDATED]] on @transfer
// INPLACE-NEXT:    zrt.copy on @transfer %[[HBIG]] to %big : memref<64xf32> to memref<64xf32>

// With one reduce-scatter per gradient (64-byte buckets), @small's update
// does not wait for the end of the backward: its transfers and the host
// kernel go right after its gradient's reduce-scatter (the transfer stream
// waits for that collective's event), so the host updates @small while the
// compute stream still runs @big's backward matmuls.
// HOIST-LABEL: zrt.program @step
// HOIST:         zrt.reduce_scatter mean axis 0 on @comm %{{.*}} to %{{.*}} : memref<16xf32> to memref<8xf32>
// HOIST-NEXT:    zrt.record @[[SMALL_RS:done[0-9]+]] on @comm
// HOIST:         zrt.wait @[[SMALL_RS]] on @transfer
// HOIST:         zrt.launch "train.adam" on @host ins(%{{.*}}, %{{.*}}, %small.m, %small.v,
// HOIST:         zrt.launch "train.matmul" on @compute {{.*}} params {transpose_b}
// HOIST:         zrt.launch "train.matmul" on @compute {{.*}} params {transpose_a}
// HOIST:         zrt.launch "train.adam" on @host ins(%{{.*}}, %{{.*}}, %big.m, %big.v,

// offload=optimizer+params at stage 3: the parameter shards live in host
// memory too. The forward gathers both in one bucket: packing each shard
// into the device bucket is the copy up, on @transfer, and the gather waits
// for both copies. The backward re-gather of @small, alone, comes up to a
// device staging buffer right before its collective. The update writes the
// shards in place on the host: nothing goes back to the device.
// PARAMS-LABEL: zrt.program @step
// PARAMS:         zrt.buffer @big param in host : memref<64xf32>
// PARAMS:         %[[BUCKET:.*]] = zrt.arena_view [{{[0-9]+}}] : memref<72xf32>
// PARAMS-NEXT:    %[[BIG_SLOT:.*]] = zrt.view %[[BUCKET]][0] : memref<72xf32> to memref<64xf32>
// PARAMS-NEXT:    zrt.record @[[READY:to_transfer.*]] on @compute
// PARAMS-NEXT:    zrt.wait @[[READY]] on @transfer
// PARAMS-NEXT:    zrt.copy on @transfer %big to %[[BIG_SLOT]] : memref<64xf32> to memref<64xf32>
// PARAMS-NEXT:    zrt.record @[[BIG_UP:.*]] on @transfer
// PARAMS:         zrt.copy on @transfer %small to %{{.*}} : memref<8xf32> to memref<8xf32>
// PARAMS-NEXT:    zrt.record @[[SMALL_UP:.*]] on @transfer
// PARAMS:         zrt.wait @[[BIG_UP]] on @comm
// PARAMS-NEXT:    zrt.wait @[[SMALL_UP]] on @comm
// PARAMS-NEXT:    zrt.all_gather axis 0 on @comm %[[BUCKET]] to %{{.*}} : memref<72xf32> to memref<144xf32>
// PARAMS:         %[[STAGED:.*]] = zrt.arena_view [{{[0-9]+}}] : memref<8xf32>
// PARAMS-NEXT:    zrt.copy on @transfer %small to %[[STAGED]] : memref<8xf32> to memref<8xf32>
// PARAMS-NEXT:    zrt.record @[[UP:.*]] on @transfer
// PARAMS-NEXT:    zrt.wait @[[UP]] on @comm
// PARAMS-NEXT:    zrt.all_gather axis 0 on @comm %[[STAGED]] to
// PARAMS:         zrt.launch "train.adam" on @host ins(%big, %{{.*}}, %big.m, %big.v, %{{.*}} : {{.*}}) outs(%big, %big.m, %big.v :

// A budget the plan meets as it is, with offload=none: it is only checked.
// FITS-LABEL: Memory plan of the lowered program (offload=none, device budget 2724 B):
// FITS:         device total                 2724 B
// FITS-NEXT:    host persistent                 0 B

// offload=auto at the exact device bytes of the plan: nothing moves.
// AUTO-NONE-LABEL: Memory plan of the lowered program (offload=none, device budget 2724 B):
// AUTO-NONE:         all 2 of 2 offloadable tensors stay in device memory: the budget holds them

// One byte less: the largest optimizer state moves, the other stays.
// AUTO-BIG-LABEL: Memory plan of the lowered program (offload=optimizer, device budget 2723 B):
// AUTO-BIG:         device total                 2212 B
// AUTO-BIG:         big: optimizer state (@big.m, @big.v, 512 B) in host memory: offload=auto, the device needs 2724 B without offload
// AUTO-BIG-NEXT:    the other 1 of 2 offloadable tensors stay in device memory: the budget holds them

// All of the optimizer state fits 2148 bytes exactly.
// AUTO-ALL-LABEL: Memory plan of the lowered program (offload=optimizer, device budget 2148 B):
// AUTO-ALL:         device total                 2148 B
// AUTO-ALL:         big: optimizer state
// AUTO-ALL-NEXT:    small: optimizer state
// AUTO-ALL-NOT:     stay in device memory

// The JSON report carries the same plan. At stage 3 all of the optimizer
// state on the host needs 1860 device bytes: at that budget auto stops
// there.
// AUTO-JSON-LABEL: "memory_plan": {
// AUTO-JSON:         "decisions": [
// AUTO-JSON-NEXT:      "big: optimizer state (@big.m, @big.v, 512 B) in host memory: offload=auto, the device needs 2436 B without offload",
// AUTO-JSON-NEXT:      "small: optimizer state (@small.m, @small.v, 64 B) in host memory: offload=auto, the device needs 2436 B without offload",
// AUTO-JSON-NEXT:      "the other 2 of 4 offloadable tensors stay in device memory: the budget holds them"
// AUTO-JSON:         "device_budget_bytes": 1860,
// AUTO-JSON-NEXT:    "device_bytes": 1860,

// One byte less and @big's parameter shard goes too (1604 device bytes):
// packed into the forward's gather bucket, it needs no staging there, and
// its backward re-gather is staged only while that gather is in flight.
// Moving @small as well would cost more staging than it saves (1636).
// AUTO-PARAMS-LABEL: Memory plan of the lowered program (offload=optimizer+params, device budget 1859 B):
// AUTO-PARAMS:         device total                 1604 B
// AUTO-PARAMS:         big: parameter shard (@big, 256 B) in host memory: offload=auto, the device needs 2436 B without offload
// AUTO-PARAMS-NEXT:    the other 1 of 4 offloadable tensors stay in device memory: the budget holds them
