//===- CompiledGraph.h - A compiled step and its in-process trainer -*- C++
//-*-===//
//
// What Graph::compile returns: the MLIR forms of the step (the built forward
// step, the differentiated training step that zero-opt and
// `zero-run --stage` take, and the lowered zrt program `zero-run` runs), the
// zero-report figures, and a Trainer that runs the program in this process
// on the runtime (one rank, or each rank of an mpirun job).
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_FRONTEND_COMPILEDGRAPH_H
#define ZERO_FRONTEND_COMPILEDGRAPH_H

#include "zero/analysis/PlanReport.h"
#include "zero/analysis/ProgramReport.h"
#include "zero/analysis/StepSimulation.h"
#include "zero/frontend/Graph.h"
#include "zero/passes/Passes.h"
#include "zero/runtime/Checkpoint.h"
#include "zero/runtime/Communicator.h"
#include "zero/runtime/Executor.h"
#include "zero/runtime/TensorFile.h"
#include "zero/runtime/TrainingState.h"

#include "absl/status/statusor.h"

#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace zero::frontend {

/// The forms of the step a CompiledGraph keeps.
enum class Form {
  /// As built: forward pass and `train.minimize` (zero-opt --train-autodiff).
  forward,
  /// After train-autodiff: forward, backward and apply_gradients; what
  /// `zero-opt --zero-pipeline` and `zero-run --stage N` take.
  step,
  /// The lowered zrt program (`zero-run program.mlir`).
  program,
};

/// zero-report's figures for one rank (every rank holds and sends the
/// same): the lowered program's own report (zrt.report, read back as the
/// zero::ProgramReport the lowering wrote: bytes by category, the peaks,
/// traffic per collective kind and per mesh axis), and what the frontend
/// adds to it from the rest of the program.
struct MemoryReport : zero::ProgramReport {
  int stage = 0;
  int ranks = 1;
  /// The lowered program's device arena: every transient at its planned
  /// offset. At least the live bytes at any instruction, and above
  /// peakTransient by padding, buckets and collectives in flight.
  int64_t arenaBytes = 0;
  /// The step's optimizers and what each updates (parameter groups), in
  /// declaration order; the first is the graph's.
  std::vector<zero::OptimizerGroup> groups;
  /// The step's dropout (on in training steps where it has any).
  zero::DropoutSummary dropout;
  /// zero-offload's memory plan (zrt.memory_plan), when offload or a
  /// budget was asked for: what was moved ("none", "optimizer",
  /// "optimizer+params"), the two pools per rank, the host-link bytes per
  /// step, and why.
  std::optional<zero::MemoryPlan> memoryPlan;
  /// ZeRO++'s int8 communication (qwz, qgz): the block and the tensors
  /// that cross nodes in full precision.
  std::optional<zero::QuantizationPlan> quantization;
  /// The lowered step predicted on `ZeroOptions::machine`, when the graph
  /// was compiled for one: what the report text's "Predicted step" states.
  std::optional<zero::StepPrediction> prediction;
};

class CompiledGraph {
public:
  struct Impl;
  explicit CompiledGraph(std::unique_ptr<Impl> impl);
  ~CompiledGraph();
  CompiledGraph(CompiledGraph &&) noexcept;
  CompiledGraph &operator=(CompiledGraph &&) noexcept;

  int ranks() const;
  int stage() const;
  void print(std::ostream &os, Form form = Form::program) const;
  std::string str(Form form = Form::program) const;
  absl::Status save(const std::string &path, Form form = Form::program) const;
  mlir::ModuleOp module(Form form) const;
  const MemoryReport &report() const;
  /// The plan as `zero-opt --zero-pipeline=report=text` prints it: per-rank
  /// memory and traffic against the ZeRO formula, parameter groups, and the
  /// memory plan.
  const std::string &reportText() const;
  /// The forward-only program Trainer::evaluate runs: the step without its
  /// backward and update, through the same ZeRO pipeline (its parameters
  /// sharded as the training program's). Compiled on first use.
  absl::StatusOr<mlir::ModuleOp> evalProgram() const;
  /// Graph::output's names: what evalProgram returns after the loss
  /// (its output1, output2, ...).
  const std::vector<std::string> &outputNames() const;
  /// Graph::input's names, in declaration order: the order a batch's
  /// arrays come in.
  const std::vector<std::string> &inputNames() const;
  /// Graph::input's shapes (one rank's) and element types, in declaration
  /// order.
  const std::vector<std::pair<Shape, rt::DType>> &inputTypes() const;
  /// The optimizer and parameter groups the graph was configured with.
  const OptimizerSpec &optimizer() const;
  const std::vector<GraphConfig::ParameterGroup> &parameterGroups() const;

private:
  std::unique_ptr<Impl> impl;
};

/// Runs a compiled program in this process: every rank of the job creates
/// one with its communicator (the ranks must match the compiled ones).
class Trainer {
public:
  /// Builds the executor and draws the initial state from `seed` (or reads
  /// it from `initFile`, a .safetensors file, when not empty). Batches are
  /// synthetic from `seed` unless `useBatches` replaces them. The step runs
  /// on `backend` (e.g. from rt::createBackend, BackendSelection.h), or on
  /// the CPU backend over `comm` when it is null.
  static absl::StatusOr<std::unique_ptr<Trainer>>
  create(const CompiledGraph &compiled, rt::Communicator &comm, uint64_t seed,
         const std::string &initFile = "",
         std::unique_ptr<rt::ExecutionBackend> backend = nullptr);
  ~Trainer();

  void useBatches(std::unique_ptr<rt::BatchSource> batches);
  /// Fills the next batch, runs one step, returns its loss.
  absl::StatusOr<float> step();

  /// What a user logs of a step (PyTorch's loss, clip_grad_norm_'s result,
  /// GradScaler's scale and skipped steps, the rates of the scheduler).
  struct StepMetrics {
    /// The step's 1-based index; 0 before the first step.
    int64_t step = 0;
    float loss = 0;
    /// The global gradient norm before clipping, where the step clips by
    /// it (the norm is computed only there).
    std::optional<double> gradNorm;
    /// Under dynamic loss scaling, the scale after the step (the next
    /// step's), as GradScaler.get_scale() after update().
    std::optional<double> lossScale;
    /// Whether this step's update was skipped for an overflow, and how many
    /// steps this trainer skipped so far.
    bool skipped = false;
    int64_t skippedSteps = 0;
    /// The rate each parameter group's update used ("default": the
    /// parameters in no group).
    std::map<std::string, double> learningRates;
    /// Wall-clock seconds of the step on this rank.
    double seconds = 0;
  };
  /// The last step's metrics.
  const StepMetrics &lastStep() const { return metrics; }
  /// `steps` steps; the losses in order.
  absl::StatusOr<std::vector<float>> run(int64_t steps);
  /// The logical parameters (every rank must call it: it gathers shards).
  absl::StatusOr<rt::TensorMap> gatherState();
  /// Replaces the parameters with `state` (rt::loadState: PyTorch's
  /// `load_state_dict`, strict; slots untouched); `what` names it in errors.
  /// Every rank passes the same state; no collective.
  absl::Status loadStateDict(const rt::TensorMap &state,
                             const std::string &what = "the state");
  /// The loss of the current parameters on `batch` (arrays named input0,
  /// input1, ..., as rt::createArrayBatches takes them; `what` names them
  /// in errors), without a backward or an update: validation loss. Arrays
  /// of several global batches (N ranks x the per-rank batch rows each)
  /// give the mean of their losses; a training step's batch with K
  /// micro-batches gives the loss step() would report. Collective (stage 3
  /// gathers, the loss is averaged). Runs CompiledGraph::evalProgram on its own
  /// executor, whose parameters are copied from the training state at each
  /// call; the CompiledGraph the trainer was created from must still exist.
  absl::StatusOr<float> evaluate(rt::TensorMap batch,
                                 const std::string &what = "the batch");
  /// What evaluateWithOutputs gives: the loss, and each Graph::output by
  /// name over the whole batch given (rows in the batch's order, gathered
  /// from the ranks; a scalar output is the mean, as the loss). bf16 and
  /// f16 outputs are widened to f32, exactly.
  struct Evaluation {
    float loss = 0;
    rt::TensorMap outputs;
  };
  /// evaluate, also returning the graph's outputs (e.g. the logits).
  absl::StatusOr<Evaluation>
  evaluateWithOutputs(rt::TensorMap batch,
                      const std::string &what = "the batch");
  /// Saves the state after the steps run so far as `root`/step-<8 digits>
  /// (every rank must call it; rt::saveCheckpoint, docs/checkpoints.md),
  /// keeping the newest `keep` checkpoints (0: all). Returns its directory.
  absl::StatusOr<std::string> save(const std::string &root, int keep = 0);
  /// The same save, asynchronous (rt::AsyncCheckpointSave): copies the
  /// state now and writes it while the next steps run; the checkpoint is
  /// published by the returned save's finish(). `writeBytesPerSecond`
  /// paces the background write (0: the disk's speed).
  absl::StatusOr<std::unique_ptr<rt::AsyncCheckpointSave>>
  startSave(const std::string &root, int keep = 0,
            uint64_t writeBytesPerSecond = 0);
  /// Loads a checkpoint (its directory, or one with `latest`) taken under
  /// any ranks and stage; the next step() continues after its step. A
  /// checkpoint whose schedule has another length is refused unless
  /// `scheduleTotal` is this program's (rt::LoadOptions).
  absl::Status load(const std::string &path,
                    std::optional<int64_t> scheduleTotal = std::nullopt);
  rt::Executor &executor() { return *executorPtr; }
  int64_t stepsDone() const { return stepsRun; }
  /// The tensors of `initFile` whose values differed from rank 0's on some
  /// rank: every rank took rank 0's (rt::initializeState), as DDP does.
  const std::vector<std::string> &initialStateFromRankZero() const {
    return takenFromRankZero;
  }

  /// The optimizer's learning rate in effect: the configured `lr` (the
  /// schedule's peak), or what setLearningRate made it.
  double learningRate() const;
  /// Changes the learning rate between steps, as PyTorch's
  /// `param_group["lr"] = ...`: from the next step on, every update runs at
  /// the rate it was compiled with times `lr` / the configured `lr`, so the
  /// schedule keeps its shape (warmup, decay, floor scaled alike) and each
  /// parameter group its `lrScale`. Without a schedule the rate is `lr`
  /// itself (to rounding). Local to this rank: every rank must set the
  /// same. Checkpoints record it; load() restores it.
  absl::Status setLearningRate(double lr);
  /// The rate the next step will use for each group ("default": the
  /// parameters in no group), the schedule applied.
  std::map<std::string, double> learningRates() const;

private:
  Trainer() = default;
  std::unique_ptr<rt::Executor> executorPtr;
  std::unique_ptr<rt::BatchSource> batches;
  const CompiledGraph *compiled = nullptr;
  std::unique_ptr<rt::Executor> evalExecutor;
  int lossBuffer = -1;
  int gradNormBuffer = -1, scaleBuffer = -1, goodStepsBuffer = -1;
  int64_t stepsRun = 0;
  StepMetrics metrics;
  uint64_t seed = 0;
  std::vector<std::string> takenFromRankZero;
};

/// The zero-pipeline options `config` compiles with on `ranks` ranks (0:
/// the module's placement): the one translation of the builder's
/// configuration into pass options, used by compile, by
/// GraphConfig::validate to check them, and by zero-run for its flags.
/// The options point into `config`'s mesh extents.
zero::ZeroPipelineOptions pipelineOptionsOf(const GraphConfig &config,
                                            int ranks);

/// The machine model a preset name or a .json machine file gives (what
/// `ZeroOptions::machine` names), as JSON text in the machine file's
/// format; an error names the problem as zero-opt's diagnostic does.
absl::StatusOr<std::string> machineModelJson(const std::string &spec);

} // namespace zero::frontend

#endif // ZERO_FRONTEND_COMPILEDGRAPH_H
