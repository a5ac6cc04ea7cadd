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

#include <cstdint>
#include <vector>

using namespace zero::frontend;

/// Every rank must run the same program: ranks that compiled another stage,
/// model or batch would issue other collectives and hang or corrupt each
/// other. Each rank contributes (stage, ranks, hash of the program text);
/// a mismatch is refused on every rank, naming the ranks and what differs.
static absl::Status checkRanksAgree(const CompiledGraph &compiled,
                                    zero::rt::Communicator &comm) {
  constexpr int kFields = 3;
  uint64_t hash = 1469598103934665603ull; // FNV-1a over the program text.
  for (char c : compiled.str(Form::program))
    hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  int64_t mine[kFields] = {compiled.stage(), compiled.ranks(),
                           static_cast<int64_t>(hash)};
  std::vector<int64_t> all(static_cast<size_t>(kFields) * comm.size());
  if (absl::Status status =
          comm.allGather(mine, all.data(), kFields, zero::rt::DType::i64);
      !status.ok())
    return status;
  for (int rank = 1; rank < comm.size(); ++rank) {
    const int64_t *theirs = &all[static_cast<size_t>(kFields) * rank];
    const int64_t *first = all.data();
    if (theirs[0] != first[0])
      return absl::InvalidArgumentError(absl::StrCat(
          "the ranks compiled different ZeRO stages: rank 0 stage ", first[0],
          ", rank ", rank, " stage ", theirs[0],
          "; every rank must build and compile the same graph"));
    if (theirs[1] != first[1] || theirs[2] != first[2])
      return absl::InvalidArgumentError(absl::StrCat(
          "rank ", rank,
          " compiled another program than rank 0 (another "
          "model, configuration or batch shape); every rank must build and "
          "compile the same graph"));
  }
  return absl::OkStatus();
}

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
  if (absl::Status status = checkRanksAgree(compiled, comm); !status.ok())
    return status;
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
