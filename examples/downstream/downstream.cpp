//===- downstream.cpp - The graph builder from an installed tree ----------===//
//
// The MLP of examples/mlp/mlp_train.cpp, built with the installed
// Zero::Frontend, sharded at ZeRO stage 3 over the ranks it is launched on
// and trained for three steps. Its losses equal mlp_train's.
//
//===----------------------------------------------------------------------===//

#include "zero/frontend/CompiledGraph.h"
#include "zero/frontend/Graph.h"
#include "zero/frontend/Layers.h"
#include "zero/runtime/Communicator.h"

#include <cstdio>
#include <string>

using namespace zero::frontend;

namespace {

int report(const absl::Status &status) {
  std::fprintf(stderr, "zero-downstream: %s\n",
               std::string(status.message()).c_str());
  return 1;
}

int train(zero::rt::Communicator &comm) {
  Graph graph("mlp");
  Tensor x = graph.input("x", {32, 784}, DType::f32);
  Tensor labels = graph.input("labels", {32}, DType::i32);
  Linear fc1(graph, "fc1", 784, 128, true, Init::normal(0.0, 0.036));
  Linear fc2(graph, "fc2", 128, 10, true, Init::normal(0.0, 0.088));
  graph.minimize(softmaxCrossEntropy(fc2(relu(fc1(x))), labels));
  graph.config().optimizer(Adam{1e-3});
  graph.config().enable_zero(true, 3);

  absl::StatusOr<CompiledGraph> compiled = graph.compile(comm.size());
  if (!compiled.ok())
    return report(compiled.status());
  auto trainer = Trainer::create(*compiled, comm, /*seed=*/1);
  if (!trainer.ok())
    return report(trainer.status());
  for (int step = 1; step <= 3; ++step) {
    absl::StatusOr<float> loss = (*trainer)->step();
    if (!loss.ok())
      return report(loss.status());
    if (comm.rank() == 0)
      std::printf("step %d loss %.6f\n", step, *loss);
  }
  return 0;
}

} // namespace

int main() {
  auto comm = zero::rt::createMpiCommunicator(zero::rt::CommOptions{});
  if (!comm.ok())
    return report(comm.status());
  int code = train(**comm);
  comm->reset();
  zero::rt::finalizeMpi();
  return code;
}
