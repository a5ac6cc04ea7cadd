//===- mlp_train.cpp - The MLP of examples/mlp-forward.mlir, from C++ -----===//
//
// Builds the 784 -> 128 (ReLU) -> 10 classifier with the graph builder,
// compiles it for the ranks of the job at the requested ZeRO stage, and
// trains it on synthetic batches:
//
//   build/bin/mlp_train --stage 3 --steps 20
//   mpirun -np 4 build/bin/mlp_train --stage 3 --steps 20
//
//===----------------------------------------------------------------------===//

#include "zero/frontend/CompiledGraph.h"
#include "zero/frontend/Graph.h"
#include "zero/frontend/Layers.h"
#include "zero/runtime/Communicator.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace zero::frontend;

namespace {

struct Flags {
  int stage = 0;
  long steps = 10;
  unsigned long seed = 1;
  std::string saveStep; // the differentiated step, for zero-opt / zero-run
};

[[noreturn]] void usage(const char *message) {
  std::fprintf(stderr,
               "mlp_train: %s\nusage: mlp_train [--stage 0..3] [--steps N] "
               "[--seed S] [--save-step FILE.mlir]\n",
               message);
  std::exit(2);
}

Flags parseFlags(int argc, char **argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc)
      usage(("missing value after " + flag).c_str());
    const char *value = argv[++i];
    char *end = nullptr;
    if (flag == "--stage")
      flags.stage = static_cast<int>(std::strtol(value, &end, 10));
    else if (flag == "--steps")
      flags.steps = std::strtol(value, &end, 10);
    else if (flag == "--seed")
      flags.seed = std::strtoul(value, &end, 10);
    else if (flag == "--save-step")
      flags.saveStep = value;
    else
      usage(("unknown flag " + flag).c_str());
    if (end && *end != '\0')
      usage(("not a number: " + flag + " " + value).c_str());
  }
  if (flags.steps < 1)
    usage("--steps must be at least 1");
  return flags;
}

/// The per-rank step: batch 32, as in examples/mlp-forward.mlir.
Graph buildMlp(int stage) {
  Graph graph("mlp");
  Tensor x = graph.input("x", {32, 784}, DType::f32);
  Tensor labels = graph.input("labels", {32}, DType::i32);
  Linear fc1(graph, "fc1", 784, 128, true, Init::normal(0.0, 0.036));
  Linear fc2(graph, "fc2", 128, 10, true, Init::normal(0.0, 0.088));
  Tensor logits = fc2(relu(fc1(x)));
  graph.minimize(softmaxCrossEntropy(logits, labels));
  graph.config().optimizer(Adam{1e-3});
  graph.config().enable_zero(stage > 0, stage);
  return graph;
}

/// Prints `status` (rank 0 only) and ends every rank.
[[noreturn]] void fail(zero::rt::Communicator &comm,
                       const absl::Status &status) {
  if (comm.size() == 1) {
    std::fprintf(stderr, "mlp_train: %s\n",
                 std::string(status.message()).c_str());
    std::exit(1);
  }
  comm.abortJob(status.message(), 1);
  std::exit(1); // abortJob does not return; this tells the compiler so.
}

int train(zero::rt::Communicator &comm, const Flags &flags) {
  bool leader = comm.rank() == 0;
  Graph graph = buildMlp(flags.stage);
  absl::StatusOr<CompiledGraph> compiled = graph.compile(comm.size());
  if (!compiled.ok())
    fail(comm, compiled.status());
  if (leader && !flags.saveStep.empty())
    if (absl::Status status = compiled->save(flags.saveStep, Form::step);
        !status.ok())
      fail(comm, status);
  const MemoryReport &report = compiled->report();
  if (leader)
    std::printf("mlp: stage %d on %d rank(s); per rank: parameters %lld B, "
                "gradients %lld B, optimizer slots %lld B, peak transient "
                "%lld B\n",
                report.stage, report.ranks, (long long)report.parameters,
                (long long)report.gradients, (long long)report.slots,
                (long long)report.peakTransient);
  auto trainer = Trainer::create(*compiled, comm, flags.seed);
  if (!trainer.ok())
    fail(comm, trainer.status());
  for (long step = 1; step <= flags.steps; ++step) {
    absl::StatusOr<float> loss = (*trainer)->step();
    if (!loss.ok())
      fail(comm, loss.status());
    if (leader)
      std::printf("step %ld loss %.6f\n", step, *loss);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Flags flags = parseFlags(argc, argv);
  auto comm = zero::rt::createMpiCommunicator(zero::rt::CommOptions{});
  if (!comm.ok()) {
    std::fprintf(stderr, "mlp_train: %s\n",
                 std::string(comm.status().message()).c_str());
    return 1;
  }
  int code = train(**comm, flags);
  comm->reset();
  zero::rt::finalizeMpi();
  return code;
}
