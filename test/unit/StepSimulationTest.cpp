//===- StepSimulationTest.cpp - Machine models and the predicted step -----===//
//
// The ring formulas of MachineModel, the presets and the machine file's
// checks, and simulateProgram on programs small enough to follow by hand:
// collectives on one stream serialize, a micro-step counts K times per
// optimizer step, a view is live from its first to its last use, and
// blocking (CPU) collectives run only when waited for.
// test/passes/zero-report-predict.mlir checks the same through zero-report.
//
//===----------------------------------------------------------------------===//

#include "zero/analysis/StepSimulation.h"
#include "zero/analysis/MachineModel.h"
#include "zero/dialects/dist/DistDialect.h"
#include "zero/dialects/zrt/ZrtDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/FormatVariadic.h"

#include "gtest/gtest.h"

#include <string>

using namespace mlir;
using namespace zero;

namespace {

/// A machine file's required fields, its closing brace left off so that a
/// test can append optional ones.
constexpr const char *kRequiredFields =
    R"({"name": "m", "links": [{"bandwidth": 1, "latency": 0}],
    "matmul_flops": {"f32": 1, "bf16": 1, "f16": 1}, "memory_bandwidth": 1,
    "launch_overhead": 0, "host_link_bandwidth": 1,
    "host_memory_bandwidth": 1, "async_collectives": true)";

class StepSimulationTest : public ::testing::Test {
protected:
  StepSimulationTest() {
    context.loadDialect<dist::DistDialect, zrt::ZrtDialect>();
    context.getDiagEngine().registerHandler(
        [this](Diagnostic &diagnostic) { message = diagnostic.str(); });
  }

  /// A machine of round numbers: 1 GB/s and 1 us per ring step, 1 TFLOP/s,
  /// 10 GB/s of memory, no launch overhead.
  static MachineModel round(bool async = true) {
    MachineModel machine;
    machine.name = "round";
    machine.links = {{1e9, 1e-6}};
    machine.matmulFlopsF32 = 1e12;
    machine.matmulFlopsBF16 = machine.matmulFlopsF16 = 2e12;
    machine.memoryBandwidth = 1e10;
    machine.hostLinkBandwidth = machine.hostMemoryBandwidth = 1e9;
    machine.asyncCollectives = async;
    return machine;
  }

  StepPrediction simulate(StringRef source, const MachineModel &machine) {
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module) << message;
    if (!module)
      return StepPrediction();
    auto program = *module->getOps<zrt::ProgramOp>().begin();
    FailureOr<StepPrediction> prediction = simulateProgram(program, machine);
    EXPECT_TRUE(succeeded(prediction)) << message;
    return succeeded(prediction) ? *prediction : StepPrediction();
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  std::string message;
};

TEST_F(StepSimulationTest, RingFormulas) {
  MachineModel machine = round();
  // (N-1)/N of the buffer and N-1 latencies.
  EXPECT_DOUBLE_EQ(machine.collectiveSeconds("all_gather", 0, 4, 4e6),
                   3e-3 + 3e-6);
  EXPECT_DOUBLE_EQ(machine.collectiveSeconds("reduce_scatter", 0, 4, 4e6),
                   3e-3 + 3e-6);
  EXPECT_DOUBLE_EQ(machine.collectiveSeconds("all_to_all", 0, 4, 4e6),
                   3e-3 + 3e-6);
  // A reduce-scatter and an all-gather.
  EXPECT_DOUBLE_EQ(machine.collectiveSeconds("all_reduce", 0, 4, 4e6),
                   2 * (3e-3 + 3e-6));
  // Pipelined along the ring: the buffer once.
  EXPECT_DOUBLE_EQ(machine.collectiveSeconds("broadcast", 0, 4, 4e6),
                   4e-3 + 3e-6);
  // Nothing moves within one rank.
  EXPECT_EQ(machine.collectiveSeconds("all_reduce", 0, 1, 4e6), 0.0);
}

TEST_F(StepSimulationTest, PresetsParse) {
  for (StringRef name : getMachinePresetNames()) {
    FailureOr<MachineModel> machine =
        loadMachineModel(name, UnknownLoc::get(&context));
    ASSERT_TRUE(succeeded(machine)) << name.str() << ": " << message;
    EXPECT_EQ(machine->name, name.str());
    // One node's presets describe one axis; the -nodes- presets a mesh of
    // nodes, whose link across nodes is the slower.
    bool nodes = name.contains("-nodes-");
    ASSERT_EQ(machine->links.size(), nodes ? 2u : 1u);
    for (const LinkModel &link : machine->links)
      EXPECT_GT(link.bandwidth, 0);
    if (nodes) {
      EXPECT_LT(machine->links[0].bandwidth, machine->links[1].bandwidth);
    }
    EXPECT_GT(machine->matmulFlopsBF16, 0);
    EXPECT_GT(machine->memoryBandwidth, 0);
    // Only the CPU ranks progress collectives inside MPI calls alone.
    EXPECT_EQ(machine->asyncCollectives, name != "cpu");
    // Every GPU preset states its card's memory, as nvidia-smi gives it
    // (a whole number of MiB, 40 to 141 GiB).
    if (name != "cpu") {
      EXPECT_EQ(machine->deviceMemory % (1 << 20), 0) << name.str();
      EXPECT_GE(machine->deviceMemory, int64_t{40} << 30) << name.str();
      EXPECT_LE(machine->deviceMemory, int64_t{141} << 30) << name.str();
      // And its datasheet peak, which MFU divides by: the A100's 312 or
      // the H100's and H200's 989 TFLOP/s.
      EXPECT_EQ(machine->peakFlops, name.starts_with("a100") ? 312e12 : 989e12)
          << name.str();
      // And the tile its GEMMs compute whole.
      EXPECT_EQ(machine->matmulTile[0], 128) << name.str();
      EXPECT_EQ(machine->matmulTile[2], name.starts_with("a100") ? 32 : 64)
          << name.str();
    }
  }
}

// peak_flops is optional; a matmul rate above it is refused, naming both.
TEST_F(StepSimulationTest, PeakFlopsBoundsTheMatmulRate) {
  std::string base = kRequiredFields;
  Location loc = UnknownLoc::get(&context);
  FailureOr<MachineModel> without = parseMachineModel(base + "}", "m", loc);
  ASSERT_TRUE(succeeded(without)) << message;
  EXPECT_EQ(without->peakFlops, 0);
  EXPECT_EQ(machineToJson(*without).get("peak_flops"), nullptr);
  FailureOr<MachineModel> with =
      parseMachineModel(base + R"(, "peak_flops": 2})", "m", loc);
  ASSERT_TRUE(succeeded(with)) << message;
  EXPECT_EQ(with->peakFlops, 2);
  EXPECT_EQ(machineToJson(*with).getNumber("peak_flops"), 2);
  message.clear();
  EXPECT_TRUE(
      failed(parseMachineModel(base + R"(, "peak_flops": 0.5})", "m", loc)));
  EXPECT_NE(message.find("field 'peak_flops' (0.5) is below the machine's "
                         "fastest matmul rate (1)"),
            std::string::npos)
      << message;
}

// device_memory is optional; where given it must be a positive size.
TEST_F(StepSimulationTest, DeviceMemoryIsOptional) {
  std::string base = kRequiredFields;
  Location loc = UnknownLoc::get(&context);
  FailureOr<MachineModel> without = parseMachineModel(base + "}", "m", loc);
  ASSERT_TRUE(succeeded(without)) << message;
  EXPECT_EQ(without->deviceMemory, 0);
  FailureOr<MachineModel> with =
      parseMachineModel(base + R"(, "device_memory": 42949672960})", "m", loc);
  ASSERT_TRUE(succeeded(with)) << message;
  EXPECT_EQ(with->deviceMemory, int64_t{40} << 30);
  message.clear();
  EXPECT_TRUE(
      failed(parseMachineModel(base + R"(, "device_memory": -1})", "m", loc)));
  EXPECT_NE(message.find("field 'device_memory' must be positive, got -1"),
            std::string::npos)
      << message;
}

TEST_F(StepSimulationTest, MachineFileChecks) {
  std::string good = R"({"name": "m", "links": [{"bandwidth": 1, "latency": 0}],
    "matmul_flops": {"f32": 1, "bf16": 1, "f16": 1}, "memory_bandwidth": 1,
    "launch_overhead": 0, "host_link_bandwidth": 1,
    "host_memory_bandwidth": 1, "async_collectives": true})";
  Location loc = UnknownLoc::get(&context);
  EXPECT_TRUE(succeeded(parseMachineModel(good, "m", loc))) << message;

  auto fails = [&](std::string text, StringRef expected) {
    message.clear();
    EXPECT_TRUE(failed(parseMachineModel(text, "m", loc))) << text;
    EXPECT_NE(message.find(expected.str()), std::string::npos)
        << "got: " << message;
  };
  auto replaced = [&](StringRef from, StringRef to) {
    std::string text = good;
    size_t at = text.find(from.str());
    EXPECT_NE(at, std::string::npos);
    return text.replace(at, from.size(), to.str());
  };
  fails(replaced("\"memory_bandwidth\": 1,", ""),
        "missing field 'memory_bandwidth'");
  fails(replaced("\"bandwidth\": 1", "\"bandwidth\": -2"),
        "field 'links[0].bandwidth' must be positive, got -2");
  fails(replaced("\"launch_overhead\": 0", "\"launch_overhead\": -1"),
        "field 'launch_overhead' must be non-negative");
  fails(replaced("\"f16\": 1}", "\"f16\": 1, \"int8\": 1}"),
        "unknown field 'matmul_flops.int8'");
  fails(replaced("\"name\": \"m\",", "\"name\": \"m\", \"cores\": 2,"),
        "unknown field 'cores'");
  fails(replaced("\"async_collectives\": true", "\"async_collectives\": 1"),
        "field 'async_collectives' must be true or false");
  fails("[1, 2]", "expected a JSON object");
  fails("{", "not valid JSON");
  message.clear();
  EXPECT_TRUE(failed(loadMachineModel("v100", loc)));
  EXPECT_NE(message.find("neither a preset"), std::string::npos) << message;
}

// Two reduce-scatters on one communication stream run one after the other;
// the compute stream waits for the second only.
TEST_F(StepSimulationTest, CollectivesOnOneStreamSerialize) {
  StepPrediction prediction = simulate(R"mlir(
    zrt.program @p placement #dist.placement<cpu, [4]> arena 1000000 align 64 {
      zrt.stream @compute
      zrt.stream @comm
      zrt.event @done
      zrt.buffer @g grad_accum : memref<1000000xf32>
      zrt.step {
        %g = zrt.buffer_ref @g : memref<1000000xf32>
        %a = zrt.arena_view [0] : memref<250000xf32>
        zrt.reduce_scatter sum axis 0 on @comm %g to %a : memref<1000000xf32> to memref<250000xf32>
        zrt.reduce_scatter sum axis 0 on @comm %g to %a : memref<1000000xf32> to memref<250000xf32>
        zrt.record @done on @comm
        zrt.wait @done on @compute
      }
    })mlir",
                                       round());
  ASSERT_EQ(prediction.bodies.size(), 1u);
  const SimulatedBody &body = prediction.bodies[0];
  double one = 3e-3 + 3e-6;
  EXPECT_DOUBLE_EQ(prediction.stepSeconds, 2 * one);
  EXPECT_DOUBLE_EQ(prediction.communication, 2 * one);
  EXPECT_DOUBLE_EQ(prediction.exposedCommunication, 2 * one);
  EXPECT_DOUBLE_EQ(prediction.computeBusy, 0.0);
  // Collectives, then the compute stream's blocked time.
  ASSERT_EQ(body.instructions.size(), 3u);
  EXPECT_EQ(body.instructions[1].index, 1);
  EXPECT_DOUBLE_EQ(body.instructions[1].start, one);
  EXPECT_EQ(body.instructions[2].kind, SimulatedKind::wait);
  EXPECT_EQ(body.instructions[2].stream, 0u);
  // The view is live while the collectives write it: 1 MB.
  EXPECT_EQ(body.peakLiveArena, 1000000);
  EXPECT_EQ(prediction.devicePersistentBytes, 4000000);
}

// Fused attention is charged FlashAttention's FLOPs (2 matmuls forward, 5
// backward, the unmasked half with causal) at the matmul rate times
// attention_efficiency, and only its operands' bytes: no [seq, seq] tensor.
TEST_F(StepSimulationTest, AttentionRunsAtItsEfficiency) {
  MachineModel machine = round();
  machine.attentionEfficiency = 0.5;
  StepPrediction prediction = simulate(R"mlir(
    zrt.program @p placement #dist.placement<cpu, [1]> arena 4000000 align 64 {
      zrt.stream @compute
      zrt.step {
        %q = zrt.arena_view [0] : memref<4x1024x64xf32>
        %o = zrt.arena_view [1048576] : memref<4x1024x64xf32>
        %l = zrt.arena_view [2097152] : memref<4x1024xf32>
        %d = zrt.arena_view [2113536] : memref<4x1024x64xf32>
        zrt.launch "train.attention" on @compute ins(%q, %q, %q : memref<4x1024x64xf32>, memref<4x1024x64xf32>, memref<4x1024x64xf32>) outs(%o, %l : memref<4x1024x64xf32>, memref<4x1024xf32>) params {causal, scale = 1.250000e-01 : f64}
        zrt.launch "train.attention_grad" on @compute ins(%d, %q, %q, %q, %o, %l : memref<4x1024x64xf32>, memref<4x1024x64xf32>, memref<4x1024x64xf32>, memref<4x1024x64xf32>, memref<4x1024x64xf32>, memref<4x1024xf32>) outs(%d, %d, %d : memref<4x1024x64xf32>, memref<4x1024x64xf32>, memref<4x1024x64xf32>) params {scale = 1.250000e-01 : f64}
      }
    })mlir",
                                       machine);
  ASSERT_EQ(prediction.bodies.size(), 1u);
  const std::vector<SimulatedInstruction> &run =
      prediction.bodies[0].instructions;
  ASSERT_EQ(run.size(), 2u);
  // 4 slices: forward 2 x 2 x 4 x (1024 x 1025 / 2) x 64 FLOPs (causal);
  // backward 5 x 2 x 4 x 1024^2 x 64 (not causal).
  double forward = 2.0 * 2 * 4 * (1024.0 * 1025 / 2) * 64;
  double backward = 5.0 * 2 * 4 * 1024.0 * 1024 * 64;
  EXPECT_DOUBLE_EQ(run[0].flops, forward);
  EXPECT_DOUBLE_EQ(run[1].flops, backward);
  // Of the backward's five score-sized matmuls one recomputes the scores:
  // the model's FLOPs are the other four.
  EXPECT_DOUBLE_EQ(run[0].modelFlops, forward);
  EXPECT_DOUBLE_EQ(run[1].modelFlops, backward * 4 / 5);
  EXPECT_DOUBLE_EQ(prediction.modelFlops, forward + backward * 4 / 5);
  EXPECT_DOUBLE_EQ(prediction.recomputeFlops, backward / 5);
  EXPECT_DOUBLE_EQ(run[0].seconds(), forward / (1e12 * 0.5));
  EXPECT_DOUBLE_EQ(run[1].seconds(), backward / (1e12 * 0.5));
  EXPECT_EQ(run[0].kind, SimulatedKind::matmul);
  // q, k, v, out (1 MiB each) and the log-sum-exp (16 KiB): at 10 GB/s
  // 0.42 ms, below the FLOPs' 1.07 ms.
  EXPECT_DOUBLE_EQ(run[0].bytes, 4 * 1048576.0 + 16384);
}

// attention_efficiency is an optional fraction.
TEST_F(StepSimulationTest, AttentionEfficiencyIsAFraction) {
  std::string base = kRequiredFields;
  Location loc = UnknownLoc::get(&context);
  FailureOr<MachineModel> without = parseMachineModel(base + "}", "m", loc);
  ASSERT_TRUE(succeeded(without)) << message;
  EXPECT_EQ(without->attentionEfficiency, 1.0);
  FailureOr<MachineModel> with =
      parseMachineModel(base + R"(, "attention_efficiency": 0.6})", "m", loc);
  ASSERT_TRUE(succeeded(with)) << message;
  EXPECT_EQ(with->attentionEfficiency, 0.6);
  message.clear();
  EXPECT_TRUE(failed(
      parseMachineModel(base + R"(, "attention_efficiency": 1.5})", "m", loc)));
  EXPECT_NE(message.find("field 'attention_efficiency' must be at most 1"),
            std::string::npos)
      << message;
}

// With accumulation the optimizer step is K micro bodies and the apply
// body; each body is simulated from time 0.
TEST_F(StepSimulationTest, MicroStepsCountKTimes) {
  StepPrediction prediction = simulate(R"mlir(
    zrt.program @p placement #dist.placement<cpu, [2]> arena 4000000 align 64 accumulate 4 {
      zrt.stream @compute
      zrt.buffer @a param : memref<1000x1000xf32>
      zrt.step micro {
        %a = zrt.buffer_ref @a : memref<1000x1000xf32>
        %c = zrt.arena_view [0] : memref<1000x1000xf32>
        zrt.launch "train.matmul" on @compute ins(%a, %a : memref<1000x1000xf32>, memref<1000x1000xf32>) outs(%c : memref<1000x1000xf32>)
      }
      zrt.step apply {
        %a = zrt.buffer_ref @a : memref<1000x1000xf32>
        zrt.all_reduce sum axis 0 on @compute %a to %a : memref<1000x1000xf32> to memref<1000x1000xf32>
      }
    })mlir",
                                       round());
  ASSERT_EQ(prediction.bodies.size(), 2u);
  EXPECT_EQ(prediction.bodies[0].kind, "micro");
  EXPECT_EQ(prediction.bodies[0].repeat, 4);
  EXPECT_DOUBLE_EQ(prediction.bodies[0].seconds, 2e-3);
  // All-reduce of 4 MB over 2 ranks: 2 x (2 MB / 1 GB/s + 1 us).
  double allReduce = 2 * (2e-3 + 1e-6);
  EXPECT_DOUBLE_EQ(prediction.bodies[1].seconds, allReduce);
  EXPECT_DOUBLE_EQ(prediction.stepSeconds, 4 * 2e-3 + allReduce);
  // The model's FLOPs count each micro-batch's matmul.
  EXPECT_DOUBLE_EQ(prediction.modelFlops, 4 * 2e9);
  EXPECT_DOUBLE_EQ(prediction.computeBusy, 4 * 2e-3);
  EXPECT_DOUBLE_EQ(prediction.exposedCommunication, allReduce);
}

// Without asynchronous collectives, issuing a second collective first runs
// the one in flight on the calling thread (the runtime keeps one in
// flight), and the compute stream is blocked meanwhile.
TEST_F(StepSimulationTest, BlockingCollectivesRunWhenTheNextIsIssued) {
  StringRef source = R"mlir(
    zrt.program @p placement #dist.placement<cpu, [4]> arena 5000000 align 64 {
      zrt.stream @compute
      zrt.stream @comm
      zrt.event @done
      zrt.buffer @a param : memref<1000x1000xf32>
      zrt.buffer @g grad_accum : memref<1000000xf32>
      zrt.step {
        %a = zrt.buffer_ref @a : memref<1000x1000xf32>
        %g = zrt.buffer_ref @g : memref<1000000xf32>
        %s = zrt.arena_view [0] : memref<250000xf32>
        %c = zrt.arena_view [1000000] : memref<1000x1000xf32>
        zrt.reduce_scatter sum axis 0 on @comm %g to %s : memref<1000000xf32> to memref<250000xf32>
        zrt.launch "train.matmul" on @compute ins(%a, %a : memref<1000x1000xf32>, memref<1000x1000xf32>) outs(%c : memref<1000x1000xf32>)
        zrt.reduce_scatter sum axis 0 on @comm %g to %s : memref<1000000xf32> to memref<250000xf32>
        zrt.record @done on @comm
        zrt.wait @done on @compute
      }
    })mlir";
  double one = 3e-3 + 3e-6;
  StepPrediction async = simulate(source, round(/*async=*/true));
  // Both collectives overlap the matmul's 2 ms.
  EXPECT_DOUBLE_EQ(async.stepSeconds, 2 * one);
  EXPECT_DOUBLE_EQ(async.exposedCommunication, 2 * one - 2e-3);
  StepPrediction blocking = simulate(source, round(/*async=*/false));
  // The first runs when the second is issued, after the matmul; the second
  // when the compute stream waits.
  EXPECT_DOUBLE_EQ(blocking.stepSeconds, 2e-3 + 2 * one);
  EXPECT_DOUBLE_EQ(blocking.exposedCommunication, 2 * one);
  const SimulatedBody &body = blocking.bodies[0];
  EXPECT_DOUBLE_EQ(body.instructions[0].start, 2e-3);
  EXPECT_DOUBLE_EQ(body.streamBusy[1], 2 * one);
}

// An axis the machine has no link for is an error, not a free collective.
TEST_F(StepSimulationTest, MissingAxisIsAnError) {
  module = parseSourceString<ModuleOp>(R"mlir(
    zrt.program @p placement #dist.placement<cpu, [2, 2]> arena 0 align 64 {
      zrt.stream @compute
      zrt.buffer @a param : memref<4xf32>
      zrt.step {
        %a = zrt.buffer_ref @a : memref<4xf32>
        zrt.all_reduce sum axis 1 on @compute %a to %a : memref<4xf32> to memref<4xf32>
      }
    })mlir",
                                       &context);
  ASSERT_TRUE(module) << message;
  auto program = *module->getOps<zrt::ProgramOp>().begin();
  EXPECT_TRUE(failed(simulateProgram(program, round())));
  EXPECT_NE(message.find("has links for 1 placement axis(es)"),
            std::string::npos)
      << message;
}

// With `matmul_tile`, a matmul runs as its shape rounded up to whole tiles:
// 100 x 100 x 100 as 128 x 128 x 128 on [128, 128, 64] (2.1x the time),
// 256 x 256 x 256 as itself. Its FLOPs, the model's, stay its own.
TEST_F(StepSimulationTest, MatmulsRunOnWholeTiles) {
  std::string base = kRequiredFields;
  Location loc = UnknownLoc::get(&context);
  FailureOr<MachineModel> parsed =
      parseMachineModel(base + R"(, "matmul_tile": [128, 128, 64]})", "m", loc);
  ASSERT_TRUE(succeeded(parsed)) << message;
  EXPECT_EQ(parsed->matmulTile, (std::array<int64_t, 3>{128, 128, 64}));
  // The machine written back keeps the tile, size for size (the object
  // outlives the array read from it).
  llvm::json::Object json = machineToJson(*parsed);
  const llvm::json::Array *written = json.getArray("matmul_tile");
  ASSERT_NE(written, nullptr);
  ASSERT_EQ(written->size(), 3u);
  EXPECT_EQ((*written)[0].getAsInteger(), 128);
  EXPECT_EQ((*written)[1].getAsInteger(), 128);
  EXPECT_EQ((*written)[2].getAsInteger(), 64);
  FailureOr<MachineModel> reread = parseMachineModel(
      llvm::formatv("{0}", llvm::json::Value(std::move(json))).str(), "m", loc);
  ASSERT_TRUE(succeeded(reread)) << message;
  EXPECT_EQ(reread->matmulTile, parsed->matmulTile);
  for (StringRef bad :
       {R"([128, 128])", R"([128, 0, 64])", R"("128")", R"([128, 128, 1e9])"}) {
    message.clear();
    EXPECT_TRUE(failed(parseMachineModel(
        base + ", \"matmul_tile\": " + bad.str() + "}", "m", loc)))
        << bad.str();
    EXPECT_NE(message.find("field 'matmul_tile' must be three integers from 1 "
                           "to 65536"),
              std::string::npos)
        << message;
  }

  // Tiles of 128 output rows, 64 output columns and 32 of depth, so that a
  // size that goes to the wrong one shows. Each matmul's time is its tiled
  // FLOPs at 1 TFLOP/s:
  //   96 x 160 x 200 (rows x cols x depth) as 128 x 192 x 224;
  //   with transpose_a the depth is the lhs's rows: [200, 96]^T x [200,
  //   160] is the same 96 x 160 x 200;
  //   a batch of 2 slices [2, 96, 200] x [2, 200, 160], one GEMM a slice;
  //   a linear layer [2, 64, 200] x [200, 160] (one weight) is one GEMM
  //   of 128 rows, as the CUDA backend runs it: 128 x 192 x 224, not two
  //   slices of 64 rows, each a whole tile of 128.
  MachineModel machine = round();
  machine.memoryBandwidth = 1e15; // compute-bound at any size
  machine.matmulTile = {128, 64, 32};
  StepPrediction prediction = simulate(R"mlir(
    zrt.program @p placement #dist.placement<cpu, [1]> arena 4000000 align 64 {
      zrt.stream @compute
      zrt.buffer @a param : memref<96x200xf32>
      zrt.buffer @at param : memref<200x96xf32>
      zrt.buffer @b param : memref<200x160xf32>
      zrt.buffer @a3 param : memref<2x96x200xf32>
      zrt.buffer @b3 param : memref<2x200x160xf32>
      zrt.buffer @l param : memref<2x64x200xf32>
      zrt.step {
        %a = zrt.buffer_ref @a : memref<96x200xf32>
        %at = zrt.buffer_ref @at : memref<200x96xf32>
        %b = zrt.buffer_ref @b : memref<200x160xf32>
        %a3 = zrt.buffer_ref @a3 : memref<2x96x200xf32>
        %b3 = zrt.buffer_ref @b3 : memref<2x200x160xf32>
        %c = zrt.arena_view [0] : memref<96x160xf32>
        %l = zrt.buffer_ref @l : memref<2x64x200xf32>
        %c3 = zrt.arena_view [65536] : memref<2x96x160xf32>
        %cl = zrt.arena_view [196608] : memref<2x64x160xf32>
        zrt.launch "train.matmul" on @compute ins(%a, %b : memref<96x200xf32>, memref<200x160xf32>) outs(%c : memref<96x160xf32>)
        zrt.launch "train.matmul" on @compute ins(%at, %b : memref<200x96xf32>, memref<200x160xf32>) outs(%c : memref<96x160xf32>) params {transpose_a}
        zrt.launch "train.matmul" on @compute ins(%a3, %b3 : memref<2x96x200xf32>, memref<2x200x160xf32>) outs(%c3 : memref<2x96x160xf32>)
        zrt.launch "train.matmul" on @compute ins(%l, %b : memref<2x64x200xf32>, memref<200x160xf32>) outs(%cl : memref<2x64x160xf32>)
      }
    })mlir",
                                       machine);
  const std::vector<SimulatedInstruction> &run =
      prediction.bodies[0].instructions;
  ASSERT_EQ(run.size(), 4u);
  double one = 2.0 * 128 * 192 * 224;
  EXPECT_DOUBLE_EQ(run[0].seconds(), one / 1e12);
  EXPECT_DOUBLE_EQ(run[1].seconds(), one / 1e12);
  EXPECT_DOUBLE_EQ(run[2].seconds(), 2 * one / 1e12);
  EXPECT_DOUBLE_EQ(run[3].seconds(), one / 1e12);
  // The FLOPs, the model's, are the shapes' own.
  double real = 2.0 * 96 * 160 * 200;
  EXPECT_DOUBLE_EQ(run[0].flops, real);
  EXPECT_DOUBLE_EQ(run[1].flops, real);
  EXPECT_DOUBLE_EQ(prediction.modelFlops, 4 * real + 2.0 * 128 * 160 * 200);
}

// The step's tokens are the elements of its largest integer input that
// indexes an embedding or is a loss's labels (not the larger integer mask),
// times the micro-batches; a launch train-autodiff recomputed adds executed
// FLOPs, not the model's.
TEST_F(StepSimulationTest, TokensAndRecomputedFlops) {
  StepPrediction prediction = simulate(R"mlir(
    zrt.program @p placement #dist.placement<cpu, [2]> arena 4000000 align 64 accumulate 2 {
      zrt.stream @compute
      zrt.buffer @a param : memref<100x100xf32>
      zrt.buffer @mask input : memref<4x8x8xi32>
      zrt.buffer @input0 input : memref<4x8xi32> {zrt.index_bound = 64 : i64, zrt.index_of = "embedding"}
      zrt.buffer @input1 input : memref<4x8x16xf32>
      zrt.buffer @input2 input : memref<4xi32>
      zrt.step micro {
        %a = zrt.buffer_ref @a : memref<100x100xf32>
        %c = zrt.arena_view [0] : memref<100x100xf32>
        zrt.launch "train.matmul" on @compute ins(%a, %a : memref<100x100xf32>, memref<100x100xf32>) outs(%c : memref<100x100xf32>)
        zrt.launch "train.matmul" on @compute ins(%a, %a : memref<100x100xf32>, memref<100x100xf32>) outs(%c : memref<100x100xf32>) params {train.recomputed}
      }
      zrt.step apply {
      }
    })mlir",
                                       round());
  EXPECT_EQ(prediction.tokens, 2 * 32);
  EXPECT_EQ(prediction.tokensInput, "input0");
  EXPECT_DOUBLE_EQ(prediction.modelFlops, 2 * 2e6);
  EXPECT_DOUBLE_EQ(prediction.recomputeFlops, 2 * 2e6);
  EXPECT_DOUBLE_EQ(getTokensPerSecond(prediction), 64 / prediction.stepSeconds);
  // round() states no datasheet peak: no MFU.
  EXPECT_EQ(getModelFlopsUtilization(prediction), 0);
  MachineModel peaked = round();
  peaked.peakFlops = 1e12;
  prediction.machine = peaked;
  EXPECT_DOUBLE_EQ(getModelFlopsUtilization(prediction),
                   4e6 / prediction.stepSeconds / 1e12);
}

} // namespace
