//===- Trainer.cpp - Runs a compiled program in this process --------------===//
//
// The in-process twin of zero-run's loop: executor, initial state from a
// seed, batches, steps; the loss is the program's output0.
//
//===----------------------------------------------------------------------===//

#include "zero/frontend/CompiledGraph.h"

#include "zero/dialects/zrt/ZrtOps.h"
#include "zero/runtime/Checkpoint.h"
#include "zero/runtime/CpuKernels.h"
#include "zero/runtime/RankAgreement.h"
#include "zero/support/Status.h"

#include "mlir/IR/BuiltinOps.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

using namespace zero::frontend;

/// Every rank must run the same program: ranks that compiled another stage,
/// model or batch would issue other collectives and hang or corrupt each
/// other.
static absl::Status checkRanksAgree(const CompiledGraph &compiled,
                                    zero::rt::Communicator &comm,
                                    uint64_t seed) {
  const zero::rt::RankFact facts[] = {
      {"the ZeRO stage", std::to_string(compiled.stage())},
      // Replicated parameters drawn from different seeds would drift apart.
      {"the seed of the initial state", std::to_string(seed)},
      {"the compiled program (another model, configuration or batch shape)",
       compiled.str(Form::program)}};
  return zero::rt::checkRanksAgree(
      comm, facts, "every rank must build and compile the same graph");
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
  ZERO_RETURN_IF_ERROR(checkRanksAgree(compiled, comm, seed));
  auto programs = compiled.module(Form::program).getOps<zrt::ProgramOp>();
  if (programs.empty())
    return absl::InternalError("the compiled graph holds no zrt program");
  std::unique_ptr<Trainer> trainer(new Trainer());
  ZERO_ASSIGN_OR_RETURN(
      std::unique_ptr<rt::Executor> executor,
      rt::Executor::create(*programs.begin(), comm, std::move(backend)));
  trainer->executorPtr = std::move(executor);
  ZERO_RETURN_IF_ERROR(rt::initializeState(
      *trainer->executorPtr, seed, initFile, &trainer->takenFromRankZero));
  ZERO_ASSIGN_OR_RETURN(
      std::unique_ptr<rt::BatchSource> batches,
      rt::createSyntheticBatches(*trainer->executorPtr, seed));
  trainer->batches = std::move(batches);
  trainer->lossBuffer = trainer->executorPtr->findBuffer("output0");
  // What the step's metrics read (TrainAutodiff's scaler state, the
  // lowering's norm); -1 where the program has none.
  trainer->gradNormBuffer =
      trainer->executorPtr->findBuffer(zero::zrt::kGradSquaredNormBuffer.str());
  trainer->scaleBuffer = trainer->executorPtr->findBuffer("loss_scale");
  trainer->goodStepsBuffer =
      trainer->executorPtr->findBuffer("loss_scale.good_steps");
  trainer->seed = seed;
  trainer->compiled = &compiled;
  return trainer;
}

Trainer::~Trainer() = default;

void Trainer::useBatches(std::unique_ptr<rt::BatchSource> source) {
  batches = std::move(source);
}

namespace {

/// The dynamic loss scaler's scale and good-step count, where the program
/// scales the loss (TrainAutodiff declares them as loss_scale and
/// loss_scale.good_steps).
struct ScalerState {
  float scale = 0, goodSteps = 0;
};

std::optional<ScalerState> readScaler(const zero::rt::Executor &executor,
                                      int scale, int good) {
  if (scale < 0 || good < 0)
    return std::nullopt;
  return ScalerState{executor.readScalar(scale), executor.readScalar(good)};
}

} // namespace

absl::StatusOr<float> Trainer::step() {
  int64_t index = stepsRun + 1;
  if (lossBuffer < 0)
    return absl::InternalError("the program has no loss output (output0)");
  std::map<std::string, double> rates = learningRates();
  std::optional<ScalerState> before =
      readScaler(*executorPtr, scaleBuffer, goodStepsBuffer);
  auto start = std::chrono::steady_clock::now();
  ZERO_ASSIGN_OR_RETURN(float loss,
                        rt::runTrainingStep(*executorPtr, *batches, index));
  stepsRun = index;
  metrics.step = index;
  metrics.loss = loss;
  metrics.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  metrics.learningRates = std::move(rates);
  metrics.gradNorm.reset();
  if (gradNormBuffer >= 0)
    metrics.gradNorm =
        std::sqrt(static_cast<double>(executorPtr->readScalar(gradNormBuffer)));
  metrics.lossScale.reset();
  metrics.skipped = false;
  if (std::optional<ScalerState> after =
          readScaler(*executorPtr, scaleBuffer, goodStepsBuffer)) {
    metrics.lossScale = after->scale;
    // An overflow halves the scale (not below 1) and restarts the count; a
    // good step raises the count or, at the growth interval, doubles the
    // scale and restarts it. So a step without growth that restarted the
    // count was skipped.
    metrics.skipped =
        before && (after->scale < before->scale ||
                   (after->scale == before->scale && after->goodSteps == 0.0f));
    metrics.skippedSteps += metrics.skipped ? 1 : 0;
  }
  return loss;
}

absl::StatusOr<std::vector<float>> Trainer::run(int64_t steps) {
  std::vector<float> losses;
  for (int64_t i = 0; i < steps; ++i) {
    ZERO_ASSIGN_OR_RETURN(float loss, step());
    losses.push_back(loss);
  }
  return losses;
}

absl::StatusOr<zero::rt::TensorMap> Trainer::gatherState() {
  return rt::gatherState(*executorPtr);
}

absl::Status Trainer::loadStateDict(const rt::TensorMap &state,
                                    const std::string &what) {
  return rt::loadState(*executorPtr, state, what);
}

absl::StatusOr<float> Trainer::evaluate(rt::TensorMap batch,
                                        const std::string &what) {
  ZERO_ASSIGN_OR_RETURN(Evaluation evaluation,
                        evaluateWithOutputs(std::move(batch), what));
  return evaluation.loss;
}

/// Output `index` (1-based: output0 is the loss) of the step that just ran,
/// appended to `into`: a scalar is summed (the caller divides), rows are
/// gathered from every rank in rank order, which is the batch's order.
static absl::Status appendOutput(zero::rt::Executor &executor, int index,
                                 zero::rt::HostTensor &into) {
  namespace rt = zero::rt;
  int buffer = executor.findBuffer("output" + std::to_string(index));
  if (buffer < 0)
    return absl::InternalError(
        absl::StrCat("the evaluation program has no output", index, " buffer"));
  const rt::BufferDecl &decl = executor.buffers()[buffer];
  std::vector<uint8_t> mine(decl.bytes);
  ZERO_RETURN_IF_ERROR(executor.readBuffer(buffer, mine.data()));
  rt::DType dtype = decl.spec.dtype;
  bool widen = dtype == rt::DType::bf16 || dtype == rt::DType::f16;
  int64_t elements = decl.spec.numElements();
  if (decl.spec.shape.empty()) {
    float value = rt::loadAsFloat(mine.data(), dtype, 0);
    float sum = 0;
    if (!into.data.empty())
      std::memcpy(&sum, into.data.data(), sizeof(sum));
    sum += value;
    into.dtype = rt::DType::f32;
    into.data.resize(sizeof(sum));
    std::memcpy(into.data.data(), &sum, sizeof(sum));
    return absl::OkStatus();
  }
  rt::Communicator &comm = executor.communicator();
  std::vector<uint8_t> all(mine.size() * comm.size());
  ZERO_RETURN_IF_ERROR(
      comm.allGather(mine.data(), all.data(), elements, dtype));
  into.dtype = widen ? rt::DType::f32 : dtype;
  if (into.shape.empty()) {
    into.shape = decl.spec.shape;
    into.shape[0] = 0;
  }
  into.shape[0] += decl.spec.shape[0] * comm.size();
  if (!widen) {
    into.data.insert(into.data.end(), all.begin(), all.end());
    return absl::OkStatus();
  }
  size_t start = into.data.size();
  into.data.resize(start + all.size() / 2 * sizeof(float));
  float *out = reinterpret_cast<float *>(into.data.data() + start);
  for (int64_t i = 0; i < elements * comm.size(); ++i)
    out[i] = rt::loadAsFloat(all.data(), dtype, i);
  return absl::OkStatus();
}

absl::StatusOr<Trainer::Evaluation>
Trainer::evaluateWithOutputs(rt::TensorMap batch, const std::string &what) {
  if (!evalExecutor) {
    ZERO_ASSIGN_OR_RETURN(mlir::ModuleOp eval, compiled->evalProgram());
    auto programs = eval.getOps<zrt::ProgramOp>();
    if (programs.empty())
      return absl::InternalError("the evaluation module holds no program");
    ZERO_ASSIGN_OR_RETURN(
        std::unique_ptr<rt::Executor> executor,
        rt::Executor::create(*programs.begin(), executorPtr->communicator()));
    evalExecutor = std::move(executor);
  }
  // The parameters as the training state holds them now: the same shards
  // (the two programs shard alike), copied buffer to buffer.
  const std::vector<rt::BufferDecl> &evalBuffers = evalExecutor->buffers();
  for (size_t index = 0; index < evalBuffers.size(); ++index) {
    const rt::BufferDecl &decl = evalBuffers[index];
    if (decl.role != rt::BufferRole::param &&
        decl.role != rt::BufferRole::frozen)
      continue;
    int source = executorPtr->findBuffer(decl.name);
    if (source < 0 || executorPtr->buffers()[source].bytes != decl.bytes ||
        executorPtr->buffers()[source].layout != decl.layout)
      return absl::InternalError(
          absl::StrCat("the evaluation program holds parameter '", decl.name,
                       "' otherwise than the training program"));
    std::vector<uint8_t> host(decl.bytes);
    ZERO_RETURN_IF_ERROR(executorPtr->readBuffer(source, host.data()));
    ZERO_RETURN_IF_ERROR(evalExecutor->writeBuffer(index, host.data()));
  }
  int64_t rows = batch.count("input0") && !batch["input0"].shape.empty()
                     ? batch["input0"].shape[0]
                     : 0;
  ZERO_ASSIGN_OR_RETURN(
      std::unique_ptr<rt::BatchSource> source,
      rt::createArrayBatches(*evalExecutor, std::move(batch), what));
  // Every global batch the arrays hold, averaged: a validation set in one
  // call, and a training step's K micro-batches give the step's loss.
  int64_t count = std::max<int64_t>(rows / (source)->globalBatch(), 1);
  const std::vector<std::string> &names = compiled->outputNames();
  Evaluation evaluation;
  std::vector<rt::HostTensor> outputs(names.size());
  float sum = 0;
  for (int64_t index = 1; index <= count; ++index) {
    ZERO_ASSIGN_OR_RETURN(float loss,
                          rt::runTrainingStep(*evalExecutor, *source, index));
    sum += loss;
    for (size_t output = 0; output < names.size(); ++output)
      ZERO_RETURN_IF_ERROR(appendOutput(
          *evalExecutor, static_cast<int>(output) + 1, outputs[output]));
  }
  evaluation.loss = sum / static_cast<float>(count);
  for (size_t output = 0; output < names.size(); ++output) {
    rt::HostTensor &tensor = outputs[output];
    if (tensor.shape.empty()) {
      // A scalar: the mean over the global batches, as the loss.
      float total;
      std::memcpy(&total, tensor.data.data(), sizeof(total));
      total /= static_cast<float>(count);
      std::memcpy(tensor.data.data(), &total, sizeof(total));
    }
    evaluation.outputs[names[output]] = std::move(tensor);
  }
  return evaluation;
}

double Trainer::learningRate() const {
  return compiled->optimizer().lr * executorPtr->learningRateFactor();
}

absl::Status Trainer::setLearningRate(double lr) {
  double configured = compiled->optimizer().lr;
  if (!(lr >= 0 && std::isfinite(lr)))
    return absl::InvalidArgumentError(absl::StrCat(
        "the learning rate must be a finite number >= 0, got ", lr));
  if (!(configured > 0))
    return absl::FailedPreconditionError(absl::StrCat(
        "the graph was compiled with learning rate ", configured,
        ", which cannot be scaled; configure the optimizer with the rate "
        "to start from"));
  executorPtr->setLearningRateFactor(lr / configured);
  return absl::OkStatus();
}

std::map<std::string, double> Trainer::learningRates() const {
  const OptimizerSpec &optimizer = compiled->optimizer();
  double factor = executorPtr->learningRateFactor();
  auto rateOf = [&](double scale) {
    // As the update kernels compute it (runtime/cpu/Updates.cpp).
    double peak = optimizer.lr * scale;
    if (optimizer.schedule.isConstant())
      return peak * factor;
    rt::LrSchedule schedule;
    schedule.kind = optimizer.schedule.kind == Schedule::Kind::linear
                        ? rt::LrSchedule::Kind::linear
                        : (optimizer.schedule.kind == Schedule::Kind::cosine
                               ? rt::LrSchedule::Kind::cosine
                               : rt::LrSchedule::Kind::constant);
    schedule.warmup = optimizer.schedule.warmup;
    schedule.total = optimizer.schedule.total;
    schedule.minLr = optimizer.schedule.minLr * scale;
    return rt::scheduledLearningRate(schedule, peak, stepsRun + 1) * factor;
  };
  std::map<std::string, double> rates{{"default", rateOf(1.0)}};
  for (const GraphConfig::ParameterGroup &group : compiled->parameterGroups())
    rates[group.name] = rateOf(group.lrScale);
  return rates;
}

absl::StatusOr<std::string> Trainer::save(const std::string &root, int keep) {
  rt::CheckpointContext context{seed, batches->globalBatch()};
  return rt::saveCheckpoint(*executorPtr, root, stepsRun, context, keep);
}

absl::StatusOr<std::unique_ptr<zero::rt::AsyncCheckpointSave>>
Trainer::startSave(const std::string &root, int keep,
                   uint64_t writeBytesPerSecond) {
  rt::CheckpointContext context{seed, batches->globalBatch()};
  return rt::AsyncCheckpointSave::start(*executorPtr, root, stepsRun, context,
                                        keep, writeBytesPerSecond);
}

absl::Status Trainer::load(const std::string &path,
                           std::optional<int64_t> scheduleTotal) {
  absl::StatusOr<rt::CheckpointManifest> manifest =
      rt::loadCheckpoint(*executorPtr, path, {scheduleTotal});
  if (!manifest.ok())
    return manifest.status();
  stepsRun = manifest->step;
  return absl::OkStatus();
}
