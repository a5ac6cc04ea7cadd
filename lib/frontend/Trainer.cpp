//===- Trainer.cpp - Runs a compiled program in this process --------------===//
//
// The in-process twin of zero-run's loop: executor, initial state from a
// seed, batches, steps; the loss is the program's output0.
//
//===----------------------------------------------------------------------===//

#include "zero/frontend/CompiledGraph.h"

#include "zero/dialects/zrt/ZrtOps.h"
#include "zero/runtime/Checkpoint.h"

#include "mlir/IR/BuiltinOps.h"

#include "absl/strings/str_cat.h"

using namespace zero::frontend;

absl::StatusOr<std::unique_ptr<Trainer>>
Trainer::create(const CompiledGraph &compiled, rt::Communicator &comm,
                uint64_t seed, const std::string &initFile,
                std::unique_ptr<rt::ExecutionBackend> backend) {
  if (comm.size() != compiled.ranks())
    return absl::InvalidArgumentError(absl::StrCat(
        "the graph is compiled for ", compiled.ranks(),
        compiled.ranks() == 1 ? " rank" : " ranks", " but the job has ",
        comm.size(), " (compile with graph.compile(", comm.size(),
        ") or launch with mpirun -np ", compiled.ranks(), ")"));
  auto programs = compiled.module(Form::program).getOps<zrt::ProgramOp>();
  if (programs.empty())
    return absl::InternalError("the compiled graph holds no zrt program");
  std::unique_ptr<Trainer> trainer(new Trainer());
  absl::StatusOr<std::unique_ptr<rt::Executor>> executor =
      rt::Executor::create(*programs.begin(), comm, std::move(backend));
  if (!executor.ok())
    return executor.status();
  trainer->executorPtr = std::move(*executor);
  if (absl::Status status =
          rt::initializeState(*trainer->executorPtr, seed, initFile);
      !status.ok())
    return status;
  absl::StatusOr<std::unique_ptr<rt::BatchSource>> batches =
      rt::createSyntheticBatches(*trainer->executorPtr, seed);
  if (!batches.ok())
    return batches.status();
  trainer->batches = std::move(*batches);
  trainer->lossBuffer = trainer->executorPtr->findBuffer("output0");
  trainer->seed = seed;
  return trainer;
}

Trainer::~Trainer() = default;

void Trainer::useBatches(std::unique_ptr<rt::BatchSource> source) {
  batches = std::move(source);
}

absl::StatusOr<float> Trainer::step() {
  int64_t index = stepsRun + 1;
  if (lossBuffer < 0)
    return absl::InternalError("the program has no loss output (output0)");
  absl::StatusOr<float> loss =
      rt::runTrainingStep(*executorPtr, *batches, index);
  if (!loss.ok())
    return loss.status();
  stepsRun = index;
  return loss;
}

absl::StatusOr<std::vector<float>> Trainer::run(int64_t steps) {
  std::vector<float> losses;
  for (int64_t i = 0; i < steps; ++i) {
    absl::StatusOr<float> loss = step();
    if (!loss.ok())
      return loss.status();
    losses.push_back(*loss);
  }
  return losses;
}

absl::StatusOr<zero::rt::TensorMap> Trainer::gatherState() {
  return rt::gatherState(*executorPtr);
}

absl::StatusOr<std::string> Trainer::save(const std::string &root, int keep) {
  rt::CheckpointContext context{seed, batches->globalBatch()};
  return rt::saveCheckpoint(*executorPtr, root, stepsRun, context, keep);
}

absl::StatusOr<std::unique_ptr<zero::rt::AsyncCheckpointSave>>
Trainer::startSave(const std::string &root, int keep) {
  rt::CheckpointContext context{seed, batches->globalBatch()};
  return rt::AsyncCheckpointSave::start(*executorPtr, root, stepsRun, context,
                                        keep);
}

absl::Status Trainer::load(const std::string &path) {
  absl::StatusOr<rt::CheckpointManifest> manifest =
      rt::loadCheckpoint(*executorPtr, path);
  if (!manifest.ok())
    return manifest.status();
  stepsRun = manifest->step;
  return absl::OkStatus();
}
