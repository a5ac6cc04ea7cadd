//===- FrontendTest.cpp - The graph builder against the .mlir steps -------===//
//
// A model built with the frontend must be the same step as its hand-written
// (examples/mlp-forward.mlir) or generated (gen_gpt2.py --forward-only)
// counterpart: the same printed IR, and bitwise the same losses when both
// are compiled with train-autodiff + zero-pipeline and trained in-process
// from the same seed. Errors come back as Status values in the user's terms.
// Clipping, loss scaling and activation checkpointing are in
// FrontendOptionsTest.cpp.
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
// Same IR
//===----------------------------------------------------------------------===//

TEST(FrontendModule, MlpIsTheHandWrittenForwardStep) {
  absl::StatusOr<CompiledGraph> compiled = buildMlp().compile(1);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  ParsedFile reference = parseFile(sourcePath("examples/mlp-forward.mlir"));
  ASSERT_TRUE(reference.module);
  EXPECT_EQ(compiled->str(Form::forward), printed(*reference.module));
}

TEST(FrontendModule, Gpt2IsTheGeneratedForwardStep) {
  absl::StatusOr<CompiledGraph> compiled = buildGpt2().compile(1);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  ParsedFile reference =
      parseFile(sourcePath("test/unit/frontend/inputs/gpt2-l1-forward.mlir"));
  ASSERT_TRUE(reference.module);
  EXPECT_EQ(compiled->str(Form::forward), printed(*reference.module));
}

TEST(FrontendModule, Bf16Gpt2IsTheGeneratedBf16ForwardStep) {
  // bf16 parameters, embeddings and compute, f32 layer-norm statistics, and
  // the logits cast to f32 right before the loss.
  absl::StatusOr<CompiledGraph> compiled = buildGpt2(DType::bf16).compile(1);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  ParsedFile reference = parseFile(
      sourcePath("test/unit/frontend/inputs/gpt2-l1-bf16-forward.mlir"));
  ASSERT_TRUE(reference.module);
  EXPECT_EQ(compiled->str(Form::forward), printed(*reference.module));
}

TEST(FrontendModule, PrecisionAppliesToFloatInputsNotExplicitTypes) {
  Graph graph("mlp");
  graph.config().precision(DType::f16);
  Tensor x = graph.input("x", {4, 8}, DType::f32);
  Tensor labels = graph.input("labels", {4}, DType::i32);
  Linear fc(graph, "fc", 8, 3);
  Parameter scaleParam = graph.parameter("s", {3}, Init::ones(), DType::bf16);
  EXPECT_EQ(x.dtype(), DType::f16);
  EXPECT_EQ(labels.dtype(), DType::i32);
  EXPECT_EQ(fc.weight.value().dtype(), DType::f16);
  EXPECT_EQ(scaleParam.value().dtype(), DType::bf16);
  Tensor logits = fc(x);
  EXPECT_EQ(logits.dtype(), DType::f16);
  Tensor loss = softmaxCrossEntropy(logits, labels);
  EXPECT_EQ(loss.dtype(), DType::f32);
  graph.minimize(loss);
  absl::StatusOr<CompiledGraph> compiled = graph.compile(1);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  EXPECT_NE(
      compiled->str(Form::forward)
          .find("train.cast %biased : tensor<4x3xf16> -> tensor<4x3xf32>"),
      std::string::npos)
      << compiled->str(Form::forward);
}

TEST(FrontendModule, SavedFormsParseBack) {
  absl::StatusOr<CompiledGraph> compiled = buildMlp().compile(1);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  for (Form form : {Form::forward, Form::step, Form::program}) {
    std::string path = ::testing::TempDir() + "/frontend-mlp.mlir";
    ASSERT_TRUE(compiled->save(path, form).ok());
    ParsedFile parsed = parseFile(path);
    EXPECT_TRUE(parsed.module) << "form " << static_cast<int>(form);
  }
  EXPECT_NE(compiled->str(Form::step).find("train.apply_gradient"),
            std::string::npos);
  EXPECT_NE(compiled->str(Form::program).find("zrt.program"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Same losses
//===----------------------------------------------------------------------===//

TEST(FrontendTraining, MlpTrainsLikeTheHandWrittenStep) {
  std::vector<float> expected =
      trainFile(sourcePath("examples/mlp-forward.mlir"), 5, 7);
  expectSameBits(trainGraph(buildMlp(), 5, 7), expected);
}

TEST(FrontendTraining, Gpt2TrainsLikeTheGeneratedStep) {
  std::vector<float> expected = trainFile(
      sourcePath("test/unit/frontend/inputs/gpt2-l1-forward.mlir"), 5, 3);
  expectSameBits(trainGraph(buildGpt2(), 5, 3), expected);
}

TEST(FrontendTraining, ZeroStage3OnOneRankMatchesStage0) {
  std::vector<float> plain = trainGraph(buildMlp(), 5, 11);
  Graph sharded = buildMlp();
  sharded.config().enable_zero(true, 3);
  std::vector<float> stage3 = trainGraph(sharded, 5, 11);
  expectSameBits(stage3, plain);
  EXPECT_LT(plain.back(), plain.front()) << "the loss should go down";
}

TEST(FrontendTraining, ReportShowsShardedSlotsOnFourRanks) {
  Graph plain = buildMlp();
  absl::StatusOr<CompiledGraph> replicated = plain.compile(4);
  ASSERT_TRUE(replicated.ok()) << replicated.status().message();
  Graph graph = buildMlp();
  graph.config().enable_zero(true, 3);
  absl::StatusOr<CompiledGraph> sharded = graph.compile(4);
  ASSERT_TRUE(sharded.ok()) << sharded.status().message();
  const MemoryReport &full = replicated->report();
  const MemoryReport &part = sharded->report();
  EXPECT_EQ(part.stage, 3);
  EXPECT_EQ(part.ranks, 4);
  // Adam: two f32 slots per element; each rank keeps a quarter (padded).
  EXPECT_GT(full.slots, 0);
  EXPECT_GE(part.slots * 4, full.slots);
  EXPECT_LT(part.slots * 4, full.slots + 4 * 4 * 64);
  EXPECT_LT(part.parameters, full.parameters);
  EXPECT_TRUE(part.traffic.count("all_gather"));
  EXPECT_TRUE(part.traffic.count("reduce_scatter"));
}

TEST(FrontendTraining, Bf16Gpt2TrainsLikeTheGeneratedBf16Step) {
  std::vector<float> expected = trainFile(
      sourcePath("test/unit/frontend/inputs/gpt2-l1-bf16-forward.mlir"), 5, 3);
  expectSameBits(trainGraph(buildGpt2(DType::bf16), 5, 3), expected);
}

TEST(FrontendTraining, Bf16Gpt2TracksTheF32Losses) {
  // Same seed, so the same logical initial values (rounded to bf16) and the
  // same batches; with bf16 storage, f32 accumulation and fp32 masters the
  // losses (about ln(64) = 4.16) differ by at most 2.3e-4 over these 5
  // steps (measured: -2.3e-4, -2.3e-4, -1.5e-4, +1.2e-4, +1.4e-4); the
  // tolerance leaves a margin of about 10x.
  std::vector<float> f32 = trainGraph(buildGpt2(), 5, 3);
  std::vector<float> bf16 = trainGraph(buildGpt2(DType::bf16), 5, 3);
  ASSERT_EQ(bf16.size(), 5u);
  ASSERT_EQ(f32.size(), 5u);
  for (size_t i = 0; i < bf16.size(); ++i) {
    EXPECT_TRUE(std::isfinite(bf16[i])) << "step " << i + 1;
    EXPECT_NEAR(bf16[i], f32[i], kBf16LossTolerance) << "step " << i + 1;
  }
}

TEST(FrontendTraining, Bf16Gpt2HasFp32MastersAtStage2) {
  Graph f32 = buildGpt2();
  f32.config().enable_zero(true, 2);
  absl::StatusOr<CompiledGraph> full = f32.compile(4);
  ASSERT_TRUE(full.ok()) << full.status().message();
  Graph bf16 = buildGpt2(DType::bf16);
  bf16.config().enable_zero(true, 2);
  absl::StatusOr<CompiledGraph> half = bf16.compile(4);
  ASSERT_TRUE(half.ok()) << half.status().message();
  const MemoryReport &f32Report = full->report();
  const MemoryReport &bf16Report = half->report();
  EXPECT_EQ(bf16Report.stage, 2);
  EXPECT_EQ(bf16Report.ranks, 4);
  EXPECT_EQ(f32Report.masters, 0);
  EXPECT_GT(bf16Report.masters, 0);
  // Replicated bf16 parameters are half the f32 ones (30144 vs 60288
  // bytes); the masters are a rank's quarter of their f32 copy (15072).
  EXPECT_EQ(bf16Report.parameters * 2, f32Report.parameters);
  EXPECT_GE(bf16Report.masters * 4, f32Report.parameters);
  EXPECT_LT(bf16Report.masters, f32Report.parameters);
  EXPECT_TRUE(half->str(Form::program).find("bf16") != std::string::npos);
}

TEST(FrontendTraining, AccumulationTrainsLikeOneBigBatch) {
  // Two micro-batches of 16 rows are the 32 rows of one batch: the same
  // losses to float tolerance (the gradient sums are associated
  // differently).
  Graph accumulating = buildMlp(16);
  accumulating.config().gradient_accumulation_steps(2);
  absl::StatusOr<CompiledGraph> compiled = accumulating.compile(1);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  EXPECT_GT(compiled->report().gradients, 0);
  auto trainer = Trainer::create(*compiled, *theComm, 5);
  ASSERT_TRUE(trainer.ok()) << trainer.status().message();
  EXPECT_EQ((*trainer)->executor().accumulateSteps(), 2);
  absl::StatusOr<std::vector<float>> losses = (*trainer)->run(4);
  ASSERT_TRUE(losses.ok()) << losses.status().message();
  std::vector<float> big = trainGraph(buildMlp(32), 4, 5);
  ASSERT_EQ(losses->size(), big.size());
  for (size_t i = 0; i < big.size(); ++i)
    EXPECT_NEAR((*losses)[i], big[i], 1e-5 * std::abs(big[i]))
        << "step " << i + 1;
}

TEST(FrontendTraining, SaveAndLoadContinueBitwise) {
  // Two steps, a checkpoint, two more; a second trainer loads the
  // checkpoint and its two steps are the same bits.
  absl::StatusOr<CompiledGraph> compiled = buildMlp().compile(1);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  std::string root = ::testing::TempDir() + "/trainer-checkpoints";
  std::filesystem::remove_all(root);
  auto first = Trainer::create(*compiled, *theComm, 3);
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_TRUE((*first)->run(2).ok());
  absl::StatusOr<std::string> saved = (*first)->save(root);
  ASSERT_TRUE(saved.ok()) << saved.status().message();
  EXPECT_EQ(*saved, root + "/step-00000002");
  absl::StatusOr<std::vector<float>> continued = (*first)->run(2);
  ASSERT_TRUE(continued.ok());

  auto second = Trainer::create(*compiled, *theComm, 3);
  ASSERT_TRUE(second.ok()) << second.status().message();
  absl::Status loaded = (*second)->load(root);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  EXPECT_EQ((*second)->stepsDone(), 2);
  absl::StatusOr<std::vector<float>> resumed = (*second)->run(2);
  ASSERT_TRUE(resumed.ok());
  expectSameBits(*resumed, *continued);

  // The same step again is refused, not overwritten.
  absl::StatusOr<std::string> again = (*first)->save(root);
  EXPECT_TRUE(again.ok());
  absl::StatusOr<std::string> twice = (*second)->save(root);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("already exists"), std::string::npos)
      << twice.status().message();
}

TEST(FrontendTraining, TrainerRejectsAWrongRankCount) {
  absl::StatusOr<CompiledGraph> compiled = buildMlp().compile(2);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  auto trainer = Trainer::create(*compiled, *theComm, 1);
  ASSERT_FALSE(trainer.ok());
  EXPECT_NE(trainer.status().message().find("compiled for 2 ranks"),
            std::string::npos)
      << trainer.status().message();
}

//===----------------------------------------------------------------------===//
// User errors
//===----------------------------------------------------------------------===//

TEST(FrontendErrors, LinearWithTheWrongInputWidth) {
  Graph graph("mlp");
  Tensor x = graph.input("x", {32, 100}, DType::f32);
  Tensor labels = graph.input("labels", {32}, DType::i32);
  Linear fc1(graph, "fc1", 784, 10);
  graph.minimize(softmaxCrossEntropy(fc1(x), labels));
  std::string message = compileError(graph);
  EXPECT_NE(message.find("Linear 'fc1': expects inputs [..., 784], got "
                         "[32, 100] f32"),
            std::string::npos)
      << message;
}

TEST(FrontendErrors, MinimizeOfANonScalar) {
  Graph graph("g");
  Tensor x = graph.input("x", {4, 8}, DType::f32);
  Linear fc(graph, "fc", 8, 2);
  graph.minimize(fc(x));
  std::string message = compileError(graph);
  EXPECT_NE(message.find("minimize: the loss must be a scalar f32, got "
                         "[4, 2] f32"),
            std::string::npos)
      << message;
}

TEST(FrontendErrors, CompileWithoutMinimize) {
  Graph graph("g");
  Tensor x = graph.input("x", {4, 8}, DType::f32);
  Linear fc(graph, "fc", 8, 2);
  (void)fc(x);
  std::string message = compileError(graph);
  EXPECT_NE(message.find("no loss; call graph.minimize(loss) before compile"),
            std::string::npos)
      << message;
}

TEST(FrontendErrors, ZeroStageFive) {
  Graph graph = buildMlp();
  graph.config().enable_zero(true, 5);
  std::string message = compileError(graph);
  EXPECT_NE(message.find("enable_zero: stage must be 1, 2 or 3, got 5"),
            std::string::npos)
      << message;
}

TEST(FrontendErrors, FirstErrorWinsAndLaterOpsAreSkipped) {
  Graph graph("g");
  Tensor x = graph.input("x", {4, 8}, DType::f32);
  Tensor bad = matmul(x, x); // [4, 8] x [4, 8]
  EXPECT_FALSE(bad.valid());
  EXPECT_FALSE(relu(bad).valid());
  EXPECT_NE(std::string(graph.status().message())
                .find("matmul: inner "
                      "dimensions differ"),
            std::string::npos)
      << graph.status().message();
}

TEST(FrontendErrors, PaddingRowOutsideTheTable) {
  Graph graph("g");
  Tensor ids = graph.input("ids", {2, 4}, DType::i64);
  Parameter table = graph.parameter("wte", {16, 8}, Init::zeros());
  EXPECT_FALSE(embedding(table.value(), ids, 16).valid());
  EXPECT_NE(std::string(graph.status().message())
                .find("embedding: padding_idx 16 is not a row of the table "
                      "[16, 8] f32"),
            std::string::npos)
      << graph.status().message();
}

TEST(FrontendErrors, DuplicateParameterName) {
  Graph graph("g");
  graph.parameter("w", {2, 2}, Init::zeros());
  graph.parameter("w", {2, 2}, Init::zeros());
  EXPECT_NE(std::string(graph.status().message()).find("'w'"),
            std::string::npos);
}

// The shape of a parameter may be another tensor's shape(), a reference into
// the graph's node list that declaring the parameter grows; the sanitizer
// build reports a use-after-free here if the declaration reads it too late.
TEST(FrontendModule, ParameterShapedLikeAnotherTensor) {
  Graph graph("g");
  Tensor x = graph.input("x", {3, 5}, DType::f32);
  std::vector<Parameter> parameters;
  for (int index = 0; index < 64; ++index)
    parameters.push_back(graph.parameter(
        absl::StrCat("p", index),
        (index == 0 ? x : Tensor(parameters.back())).shape(), Init::zeros()));
  ASSERT_TRUE(graph.status().ok()) << graph.status().message();
  EXPECT_EQ(parameters.back().value().shape(), (Shape{3, 5}));
}

//===----------------------------------------------------------------------===//
// Frozen parameters
//===----------------------------------------------------------------------===//

TEST(FrontendModule, FrozenParameterGetsNoUpdate) {
  Graph frozen("mlp");
  Tensor x = frozen.input("x", {32, 784}, DType::f32);
  Tensor labels = frozen.input("labels", {32}, DType::i32);
  Linear fc1(frozen, "fc1", 784, 128);
  fc1.weight.requiresGrad(false);
  Linear fc2(frozen, "fc2", 128, 10);
  frozen.minimize(softmaxCrossEntropy(fc2(relu(fc1(x))), labels));
  absl::StatusOr<CompiledGraph> compiled = frozen.compile(1);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  std::string step = compiled->str(Form::step);
  EXPECT_NE(step.find("train.param @fc1.w frozen"), std::string::npos);
  EXPECT_EQ(step.find("to @fc1.w with"), std::string::npos);
  EXPECT_NE(step.find("to @fc1.b with"), std::string::npos);
}

TEST(FrontendModule, ScheduleIsEmittedIntoTheOptimizer) {
  // A schedule prints after the hyper-parameters; without one the optimizer
  // prints as it always has.
  Graph graph = buildMlp();
  graph.config()
      .optimizer(AdamW{3e-4, {0.9, 0.95}, 1e-8, 0.1})
      .learning_rate_schedule(Schedule::cosine(100, 10000, 3e-5));
  absl::StatusOr<CompiledGraph> compiled = graph.compile(1);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  std::string step = compiled->str(Form::step);
  EXPECT_NE(step.find("weight_decay 1.000000e-01 schedule cosine warmup 100 "
                      "total 10000 min_lr 3.000000e-05"),
            std::string::npos)
      << step;

  Graph warmup = buildMlp();
  warmup.config().optimizer(SGD{0.1}).learning_rate_schedule(
      Schedule::constant(/*warmup=*/10));
  compiled = warmup.compile(1);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  EXPECT_NE(compiled->str(Form::step)
                .find("train.optimizer @sgd sgd lr 1.000000e-01 schedule "
                      "constant warmup 10\n"),
            std::string::npos);

  compiled = buildMlp().compile(1);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  EXPECT_EQ(compiled->str(Form::step).find("schedule"), std::string::npos);
}

TEST(FrontendErrors, IntegerPrecision) {
  Graph graph("mlp");
  graph.config().precision(DType::i32);
  Tensor x = graph.input("x", {32, 784}, DType::f32);
  Tensor labels = graph.input("labels", {32}, DType::i32);
  Linear fc(graph, "fc", 784, 10);
  graph.minimize(softmaxCrossEntropy(fc(x), labels));
  std::string message = compileError(graph);
  EXPECT_NE(message.find("precision: must be a float type (f32, bf16 or "
                         "f16), got i32"),
            std::string::npos)
      << message;
}

TEST(FrontendErrors, PrecisionSetAfterTheParameters) {
  Graph graph = buildMlp();
  graph.config().precision(DType::bf16);
  std::string message = compileError(graph);
  EXPECT_NE(message.find("precision: set to bf16 after the first parameter "
                         "or input was declared (as f32)"),
            std::string::npos)
      << message;
}

TEST(FrontendErrors, ScheduleEndingInTheWarmup) {
  Graph graph = buildMlp();
  graph.config()
      .optimizer(Adam{1e-3})
      .learning_rate_schedule(Schedule::linear(100, 50));
  std::string message = compileError(graph);
  EXPECT_NE(message.find("optimizer schedule: the decay must end after the "
                         "warmup (total > warmup), got total 50 and warmup "
                         "100"),
            std::string::npos)
      << message;
}

TEST(FrontendModule, ShapesStayValidWhileOpsAreAdded) {
  // `expand(f(x), x.shape(), dims)` may take x's shape (a reference into
  // the graph) before f adds its op: the reference must survive the graph
  // growing. Hundreds of ops grow a vector's storage several times over
  // (the sanitizer tier reports a use after free if it moves).
  Graph graph("shapes");
  Tensor x = graph.input("x", {4, 8}, DType::f32);
  Tensor y = x;
  for (int i = 0; i < 300; ++i)
    y = y + expand(rsqrt(reduceMean(y * y, {1})), x.shape(), {1});
  ASSERT_TRUE(graph.status().ok()) << graph.status().message();
  EXPECT_EQ(y.shape(), (Shape{4, 8}));
}

} // namespace
