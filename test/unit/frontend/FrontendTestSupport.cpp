//===- FrontendTestSupport.cpp - What the frontend tests share ------------===//
//
// The shared models and references (FrontendTestSupport.h) and the test
// binary's main, which makes the single-rank MPI communicator.
//
//===----------------------------------------------------------------------===//

#include "FrontendTestSupport.h"

#include "zero/dialects/zrt/ZrtOps.h"
#include "zero/frontend/Layers.h"
#include "zero/passes/Pipeline.h"
#include "zero/runtime/CpuKernels.h"
#include "zero/runtime/Executor.h"
#include "zero/runtime/TrainingState.h"

#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace zero;
using namespace zero::frontend;

rt::Communicator *zero::frontend::testsupport::theComm = nullptr;

namespace zero::frontend::testsupport {

std::string sourcePath(const std::string &relative) {
  return std::string(ZERO_SOURCE_DIR) + "/" + relative;
}

Graph buildMlp(int64_t batch) {
  Graph graph("mlp");
  Tensor x = graph.input("x", {batch, 784}, DType::f32);
  Tensor labels = graph.input("labels", {batch}, DType::i32);
  Linear fc1(graph, "fc1", 784, 128, true, Init::normal(0.0, 0.036));
  Linear fc2(graph, "fc2", 128, 10, true, Init::normal(0.0, 0.088));
  graph.minimize(softmaxCrossEntropy(fc2(relu(fc1(x))), labels));
  graph.config().optimizer(Adam{1e-3, {0.9, 0.999}, 1e-8});
  return graph;
}

Graph buildGpt2(DType precision, bool checkpoint, bool selective) {
  Graph graph("gpt2");
  graph.config().precision(precision);
  GPT2Config config{/*layers=*/1, /*vocab=*/64,
                    /*seq=*/8,    /*dim=*/32,
                    /*heads=*/2,  /*checkpoint=*/checkpoint};
  config.checkpointPolicy =
      selective ? RecomputePolicy::exceptMatmuls : RecomputePolicy::everything;
  Tensor tokens = graph.input("tokens", {2, 8}, DType::i32);
  Tensor positions = graph.input("positions", {2, 8}, DType::i32);
  Tensor targets = graph.input("targets", {2, 8}, DType::i32);
  GPT2 model(graph, config);
  graph.minimize(model.loss(tokens, positions, targets));
  graph.config().optimizer(AdamW{3e-4, {0.9, 0.95}, 1e-8, 0.1});
  return graph;
}

std::string printed(mlir::ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return os.str();
}

ParsedFile parseFile(const std::string &path) {
  mlir::DialectRegistry registry;
  registerZeroDialects(registry);
  ParsedFile parsed;
  parsed.context = std::make_unique<mlir::MLIRContext>(registry);
  parsed.context->disableMultithreading();
  parsed.module =
      mlir::parseSourceFile<mlir::ModuleOp>(path, parsed.context.get());
  return parsed;
}

std::vector<float> trainFile(const std::string &path, int64_t steps,
                             uint64_t seed) {
  ParsedFile parsed = parseFile(path);
  EXPECT_TRUE(parsed.module) << "cannot parse " << path;
  if (!parsed.module)
    return {};
  mlir::PassManager pm(parsed.context.get());
  pm.addPass(createTrainAutodiff());
  ZeroPipelineOptions options;
  options.ranks = 1;
  options.lowerToRuntime = true;
  pm.addPass(createZeroPipeline(options));
  EXPECT_TRUE(mlir::succeeded(pm.run(*parsed.module)));
  auto programs = parsed.module->getOps<zrt::ProgramOp>();
  EXPECT_FALSE(programs.empty());
  if (programs.empty())
    return {};
  auto executor = rt::Executor::create(*programs.begin(), *theComm);
  EXPECT_TRUE(executor.ok()) << executor.status().message();
  EXPECT_TRUE(rt::initializeState(**executor, seed, "").ok());
  auto batches = rt::createSyntheticBatches(**executor, seed);
  EXPECT_TRUE(batches.ok());
  int output = (*executor)->findBuffer("output0");
  std::vector<float> losses;
  for (int64_t step = 1; step <= steps; ++step) {
    EXPECT_TRUE((*batches)->fill(step, 0).ok());
    EXPECT_TRUE((*executor)->runStep(step).ok());
    losses.push_back(*static_cast<float *>((*executor)->bufferData(output)));
  }
  return losses;
}

std::vector<float> trainGraph(const Graph &graph, int64_t steps,
                              uint64_t seed) {
  absl::StatusOr<CompiledGraph> compiled = graph.compile(1);
  EXPECT_TRUE(compiled.ok()) << compiled.status().message();
  if (!compiled.ok())
    return {};
  auto trainer = Trainer::create(*compiled, *theComm, seed);
  EXPECT_TRUE(trainer.ok()) << trainer.status().message();
  if (!trainer.ok())
    return {};
  absl::StatusOr<std::vector<float>> losses = (*trainer)->run(steps);
  EXPECT_TRUE(losses.ok()) << losses.status().message();
  return losses.ok() ? *losses : std::vector<float>{};
}

void expectSameBits(const std::vector<float> &actual,
                    const std::vector<float> &expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_EQ(std::memcmp(&actual[i], &expected[i], sizeof(float)), 0)
        << "step " << i + 1 << ": " << actual[i] << " vs " << expected[i];
}

std::string compileError(const Graph &graph) {
  absl::StatusOr<CompiledGraph> compiled = graph.compile(1);
  EXPECT_FALSE(compiled.ok());
  return compiled.ok() ? "" : std::string(compiled.status().message());
}

} // namespace zero::frontend::testsupport

namespace {

class MpiEnvironment : public ::testing::Environment {
public:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<rt::Communicator>> created =
        rt::createMpiCommunicator(rt::CommOptions{});
    ASSERT_TRUE(created.ok()) << created.status().message();
    comm = std::move(*created);
    ASSERT_EQ(comm->size(), 1);
    testsupport::theComm = comm.get();
    rt::setCpuKernelThreads(1);
  }
  void TearDown() override {
    testsupport::theComm = nullptr;
    comm.reset();
    rt::finalizeMpi();
  }

private:
  std::unique_ptr<rt::Communicator> comm;
};

} // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new MpiEnvironment());
  return RUN_ALL_TESTS();
}
