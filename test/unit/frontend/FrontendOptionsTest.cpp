//===- FrontendOptionsTest.cpp - Clipping, loss scaling, recompute --------===//
//
// The builder's gradient clipping, dynamic loss scaling and activation
// checkpointing: what each emits into the step, and how it trains.
//
//===----------------------------------------------------------------------===//

#include "FrontendTestSupport.h"

#include "zero/dialects/zrt/ZrtOps.h"
#include "zero/frontend/Layers.h"
#include "zero/runtime/Executor.h"
#include "zero/runtime/TrainingState.h"

#include "absl/strings/str_cat.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

using namespace zero;
using namespace zero::frontend;
using namespace zero::frontend::testsupport;

namespace {

//===----------------------------------------------------------------------===//
// Gradient clipping and activation checkpointing
//===----------------------------------------------------------------------===//

TEST(FrontendModule, ClipGradNormIsEmittedIntoTheOptimizer) {
  Graph graph = buildMlp();
  graph.config().clip_grad_norm(1.0);
  ASSERT_EQ(graph.config().clipGradNorm(), 1.0);
  absl::StatusOr<CompiledGraph> compiled = graph.compile(1);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  EXPECT_NE(compiled->str(Form::forward)
                .find("eps 1.000000e-08 clip_norm 1.000000e+00\n"),
            std::string::npos)
      << compiled->str(Form::forward);
  // train-materialize-optimizer writes the clipping op for it.
  EXPECT_NE(compiled->str(Form::program).find("sum_squares"),
            std::string::npos);

  // After a schedule, as the op's syntax orders them.
  Graph scheduled = buildMlp();
  scheduled.config()
      .optimizer(AdamW{3e-4, {0.9, 0.95}, 1e-8, 0.1})
      .learning_rate_schedule(Schedule::cosine(10, 100))
      .clip_grad_norm(0.5);
  compiled = scheduled.compile(1);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  EXPECT_NE(
      compiled->str(Form::step)
          .find("schedule cosine warmup 10 total 100 clip_norm 5.000000e-01"),
      std::string::npos)
      << compiled->str(Form::step);

  compiled = buildMlp().compile(1);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  EXPECT_EQ(compiled->str(Form::forward).find("clip_norm"), std::string::npos);
}

TEST(FrontendModule, ParameterGroupsAreOptimizersTheirMembersName) {
  // The biases without weight decay and at twice the rate: a copy of the
  // optimizer named @<kind>.<group>, which the members name with `with`.
  Graph graph = buildMlp();
  graph.config()
      .optimizer(AdamW{3e-4, {0.9, 0.95}, 1e-8, 0.1})
      .learning_rate_schedule(Schedule::cosine(10, 100, 3e-5))
      .parameter_group("no_decay", {"fc1.b", "fc2.b"}, 0.0, 2.0);
  absl::StatusOr<CompiledGraph> compiled = graph.compile(2);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  std::string forward = compiled->str(Form::forward);
  EXPECT_NE(forward.find("train.param @fc1.b param : tensor<128xf32> init "
                         "zeros with @adamw.no_decay\n"),
            std::string::npos)
      << forward;
  EXPECT_NE(forward.find("train.optimizer @adamw.no_decay adamw lr "
                         "6.000000e-04 betas(9.000000e-01, "
                         "0.94999999999999996) eps 1.000000e-08 weight_decay "
                         "0.000000e+00 schedule cosine warmup 10 total 100 "
                         "min_lr 6.000000e-05\n"),
            std::string::npos)
      << forward;
  EXPECT_EQ(forward.find("train.param @fc1.w param : tensor<784x128xf32> "
                         "init normal(0.0, 0.02) with"),
            std::string::npos);
  const std::vector<zero::OptimizerGroup> &groups = compiled->report().groups;
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].optimizer, "adamw");
  EXPECT_EQ(groups[0].parameters, 2);
  EXPECT_EQ(groups[1].optimizer, "adamw.no_decay");
  EXPECT_EQ(groups[1].elements, 128 + 10);
  EXPECT_EQ(groups[1].weightDecay, 0.0);

  Graph unknown = buildMlp();
  unknown.config().parameter_group("g", {"fc9.w"}, std::nullopt);
  EXPECT_EQ(unknown.compile(1).status().message(),
            "compile graph 'mlp': parameter_group 'g': the graph has no "
            "parameter 'fc9.w'");
}

TEST(FrontendTraining, ClipGradNormChangesTheTrajectory) {
  // A bound far below the gradient norm clips every step: the losses after
  // the first differ from the unclipped run's, and still go down.
  std::vector<float> plain = trainGraph(buildGpt2(), 4, 3);
  Graph clipped = buildGpt2();
  clipped.config().clip_grad_norm(0.05);
  std::vector<float> withClip = trainGraph(clipped, 4, 3);
  ASSERT_EQ(plain.size(), 4u);
  ASSERT_EQ(withClip.size(), 4u);
  EXPECT_EQ(std::memcmp(&plain[0], &withClip[0], sizeof(float)), 0)
      << "the first loss is computed before any update";
  EXPECT_NE(plain.back(), withClip.back());
  // A bound far above the norm never clips: the same losses, bitwise.
  Graph loose = buildGpt2();
  loose.config().clip_grad_norm(1e6);
  expectSameBits(trainGraph(loose, 4, 3), plain);
  // Infinity, PyTorch's way to measure the norm, never clips a finite one.
  Graph measured = buildGpt2();
  measured.config().clip_grad_norm(INFINITY);
  expectSameBits(trainGraph(measured, 4, 3), plain);
}

TEST(FrontendErrors, ClipGradNormMustBePositive) {
  for (double bad : {0.0, -1.0, std::nan(""), -double(INFINITY)}) {
    Graph graph = buildMlp();
    graph.config().clip_grad_norm(bad);
    std::string message = compileError(graph);
    EXPECT_NE(message.find("clip_grad_norm: the maximum gradient norm must be "
                           "positive (or infinity, to measure the norm"),
              std::string::npos)
        << message;
  }
}

TEST(FrontendModule, F16TurnsOnDynamicLossScaling) {
  // f16 scales the loss by default; the program carries the scaler's state,
  // the unscale and the skipped-update flag.
  absl::StatusOr<CompiledGraph> compiled = buildGpt2(DType::f16).compile(2);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  std::string forward = compiled->str(Form::forward);
  EXPECT_NE(forward.find("loss_scale 6.553600e+04 growth_interval 2000"),
            std::string::npos)
      << forward;
  std::string step = compiled->str(Form::step);
  EXPECT_NE(step.find("train.param @loss_scale scaler"), std::string::npos);
  EXPECT_NE(step.find("train.unscale"), std::string::npos);
  EXPECT_NE(step.find("skip_if %found_inf"), std::string::npos);

  // Chosen explicitly, or turned off; bf16 and f32 do not scale.
  Graph custom = buildMlp();
  custom.config().loss_scaling(LossScaling::dynamic(1024.0, 50));
  compiled = custom.compile(1);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  EXPECT_NE(compiled->str(Form::forward)
                .find("loss_scale 1.024000e+03 growth_interval 50"),
            std::string::npos);
  Graph off = buildGpt2(DType::f16);
  off.config().loss_scaling(LossScaling::none());
  compiled = off.compile(1);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  EXPECT_EQ(compiled->str(Form::forward).find("loss_scale"), std::string::npos);
  compiled = buildGpt2(DType::bf16).compile(1);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  EXPECT_EQ(compiled->str(Form::forward).find("loss_scale"), std::string::npos);
}

TEST(FrontendErrors, LossScalingSettings) {
  struct Case {
    LossScaling scaling;
    int accumulate;
    const char *message;
  };
  const Case cases[] = {
      {LossScaling::dynamic(0.5), 1,
       "loss_scaling: the initial scale must be a finite number >= 1, got 0.5"},
      {LossScaling::dynamic(1024.0, 0), 1,
       "loss_scaling: the growth interval must be in [1, 2^24] steps, got 0"},
  };
  for (const Case &c : cases) {
    Graph graph = buildMlp();
    graph.config().loss_scaling(c.scaling).set_gradient_accumulation_steps(
        c.accumulate);
    std::string message = compileError(graph);
    EXPECT_NE(message.find(c.message), std::string::npos) << message;
  }
}

TEST(FrontendModule, RecomputeScopeMarksTheOpsInside) {
  Graph graph("g");
  Tensor x = graph.input("x", {4, 8}, DType::f32);
  Tensor labels = graph.input("labels", {4}, DType::i32);
  Linear fc1(graph, "fc1", 8, 8);
  Linear fc2(graph, "fc2", 8, 3);
  Tensor hidden;
  {
    RecomputeScope outer(graph);
    {
      RecomputeScope inner(graph); // nests
      hidden = fc1(x);
    }
    hidden = gelu(hidden);
  }
  graph.minimize(softmaxCrossEntropy(fc2(hidden), labels));
  absl::StatusOr<CompiledGraph> compiled = graph.compile(1);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  std::string forward = compiled->str(Form::forward);
  // fc1's matmul and bias_add and the gelu are marked; fc2 and the loss
  // are not.
  size_t marks = 0;
  for (size_t at = forward.find("{train.recompute}"); at != std::string::npos;
       at = forward.find("{train.recompute}", at + 1))
    ++marks;
  EXPECT_EQ(marks, 3u) << forward;
  EXPECT_NE(forward.find("train.gelu %biased {train.recompute}"),
            std::string::npos)
      << forward;
  // train-autodiff removes the marks, with or without recomputation.
  EXPECT_EQ(compiled->str(Form::step).find("train.recompute"),
            std::string::npos);
}

TEST(FrontendModule, CheckpointedGpt2IsTheGeneratedRecomputeStep) {
  // GPT2Config::checkpoint marks every op of each block but its output,
  // exactly as gen_gpt2.py --forward-only --recompute.
  absl::StatusOr<CompiledGraph> compiled =
      buildGpt2(DType::f32, /*checkpoint=*/true).compile(1);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  ParsedFile reference = parseFile(
      sourcePath("test/unit/frontend/inputs/gpt2-l1-recompute-forward.mlir"));
  ASSERT_TRUE(reference.module);
  EXPECT_EQ(compiled->str(Form::forward), printed(*reference.module));
}

TEST(FrontendModule, ActivationCheckpointingRecomputesInTheBackward) {
  // Marks alone change nothing: without the switch train-autodiff ignores
  // them and the step is the unmarked one.
  absl::StatusOr<CompiledGraph> plain = buildGpt2().compile(1);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  absl::StatusOr<CompiledGraph> marked =
      buildGpt2(DType::f32, /*checkpoint=*/true).compile(1);
  ASSERT_TRUE(marked.ok()) << marked.status().message();
  EXPECT_EQ(marked->str(Form::step), plain->str(Form::step));

  Graph graph = buildGpt2(DType::f32, /*checkpoint=*/true);
  graph.config().activation_checkpointing(true);
  EXPECT_TRUE(graph.config().activationCheckpointing());
  absl::StatusOr<CompiledGraph> recomputed = graph.compile(1);
  ASSERT_TRUE(recomputed.ok()) << recomputed.status().message();
  // The backward holds clones of the block's forward ops: more matmuls
  // than the kept step, and a lower peak of transient bytes.
  auto count = [](const std::string &text, const std::string &what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos;
         at = text.find(what, at + 1))
      ++n;
    return n;
  };
  std::string keptStep = plain->str(Form::step);
  std::string recomputedStep = recomputed->str(Form::step);
  EXPECT_GT(count(recomputedStep, "train.matmul "),
            count(keptStep, "train.matmul "));
}

/// Two GPT-2 blocks whose activations (scores [4, 4, 32, 32]) outweigh the
/// logits, checkpointed (fully, or with `selective` selectively) or not.
Graph buildTwoBlockGpt2(bool checkpoint, bool selective = false) {
  Graph graph("gpt2");
  GPT2Config config{/*layers=*/2, /*vocab=*/64,
                    /*seq=*/32,   /*dim=*/32,
                    /*heads=*/4,  checkpoint};
  config.checkpointPolicy =
      selective ? RecomputePolicy::exceptMatmuls : RecomputePolicy::everything;
  Tensor tokens = graph.input("tokens", {4, 32}, DType::i32);
  Tensor positions = graph.input("positions", {4, 32}, DType::i32);
  Tensor targets = graph.input("targets", {4, 32}, DType::i32);
  GPT2 model(graph, config);
  graph.minimize(model.loss(tokens, positions, targets));
  graph.config().activation_checkpointing(checkpoint);
  return graph;
}

TEST(FrontendModule, ActivationCheckpointingLowersThePeak) {
  // With recomputation only the block boundaries stay alive from the
  // forward to the backward.
  absl::StatusOr<CompiledGraph> kept = buildTwoBlockGpt2(false).compile(1);
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  absl::StatusOr<CompiledGraph> recomputed = buildTwoBlockGpt2(true).compile(1);
  ASSERT_TRUE(recomputed.ok()) << recomputed.status().message();
  EXPECT_LT(recomputed->report().peakTransient, kept->report().peakTransient);
}

TEST(FrontendTraining, CheckpointedGpt2TrainsBitwiseLikeTheKeptOne) {
  // Recomputation runs the same ops on the same operands.
  std::vector<float> kept = trainGraph(buildGpt2(), 4, 5);
  Graph graph = buildGpt2(DType::f32, /*checkpoint=*/true);
  graph.config().activation_checkpointing(true);
  expectSameBits(trainGraph(graph, 4, 5), kept);
}

} // namespace

TEST(FrontendTraining, OffloadedOptimizerTrainsBitwiseLikeTheDevice) {
  // config().offload puts Adam's slots in host memory: the plan says so and
  // the losses are the same bits.
  Graph onDevice = buildMlp();
  onDevice.config().enable_zero(true, 2);
  Graph offloaded = buildMlp();
  offloaded.config().enable_zero(true, 2).offload(
      GraphConfig::Offload::optimizer);
  absl::StatusOr<CompiledGraph> compiled = offloaded.compile(1);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const MemoryReport &report = compiled->report();
  ASSERT_TRUE(report.memoryPlan);
  EXPECT_EQ(report.memoryPlan->offload, "optimizer");
  EXPECT_GE(report.memoryPlan->hostBytes(), report.slots);
  EXPECT_EQ(report.memoryPlan->decisions.size(), 4u);
  EXPECT_FALSE(onDevice.compile(1)->report().memoryPlan);
  expectSameBits(trainGraph(offloaded, 3, 7), trainGraph(onDevice, 3, 7));
}

TEST(FrontendErrors, OffloadSettings) {
  auto errorOf = [](GraphConfig::Offload what, int64_t budget, int stage) {
    Graph graph = buildMlp();
    graph.config().enable_zero(stage > 0, stage).offload(what);
    graph.config().device_memory_budget(budget);
    return compileError(graph);
  };
  using Offload = GraphConfig::Offload;
  EXPECT_NE(errorOf(Offload::automatic, 0, 2)
                .find("offload(Offload::automatic): needs a "
                      "device_memory_budget to fit"),
            std::string::npos);
  EXPECT_NE(errorOf(Offload::none, -5, 2)
                .find("device_memory_budget: must be a number of bytes (0 for "
                      "none), got -5"),
            std::string::npos);
  EXPECT_NE(errorOf(Offload::optimizer, 0, 0)
                .find("offload=optimizer needs ZeRO stage 1, 2 or 3"),
            std::string::npos);
  EXPECT_NE(errorOf(Offload::automatic, 1, 2)
                .find("no placement fits a device-memory-budget of 1 B per "
                      "rank"),
            std::string::npos);
}

TEST(FrontendModule, SelectiveCheckpointingKeepsMatmuls) {
  // Selective, no matmul of a block is marked, and its layer norms, GELU,
  // softmax and residual ops are; the backward then recomputes fewer ops
  // than with full checkpointing and keeps more alive.
  absl::StatusOr<CompiledGraph> marked =
      buildGpt2(DType::f32, /*checkpoint=*/true, /*selective=*/true).compile(1);
  ASSERT_TRUE(marked.ok()) << marked.status().message();
  std::string forward = marked->str(Form::forward);
  size_t matmuls = 0;
  for (size_t at = forward.find("train.matmul "); at != std::string::npos;
       at = forward.find("train.matmul ", at + 1), ++matmuls) {
    size_t end = forward.find('\n', at);
    EXPECT_EQ(forward.substr(at, end - at).find("train.recompute"),
              std::string::npos)
        << forward.substr(at, end - at);
  }
  EXPECT_GT(matmuls, 0u);
  size_t gelu = forward.find("train.gelu ");
  ASSERT_NE(gelu, std::string::npos);
  EXPECT_NE(forward.substr(gelu, forward.find('\n', gelu) - gelu)
                .find("{train.recompute}"),
            std::string::npos)
      << forward;

  auto peak = [](bool checkpoint, bool selective) -> int64_t {
    absl::StatusOr<CompiledGraph> compiled =
        buildTwoBlockGpt2(checkpoint, selective).compile(1);
    EXPECT_TRUE(compiled.ok()) << compiled.status().message();
    return compiled.ok() ? compiled->report().peakTransient : 0;
  };
  int64_t kept = peak(false, false), selective = peak(true, true),
          full = peak(true, false);
  EXPECT_LT(full, selective);
  EXPECT_LT(selective, kept);
}

TEST(FrontendTraining, SelectivelyCheckpointedGpt2TrainsBitwiseLikeTheKeptOne) {
  std::vector<float> kept = trainGraph(buildGpt2(), 4, 5);
  Graph graph = buildGpt2(DType::f32, /*checkpoint=*/true, /*selective=*/true);
  graph.config().activation_checkpointing(true);
  expectSameBits(trainGraph(graph, 4, 5), kept);
}
