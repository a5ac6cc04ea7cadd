//===- PlanReport.h - What every rank holds and sends ------------*- C++
//-*-===//
//
// The compile-time figures `zero-report` prints and the runtime is checked
// against: per-rank bytes by category, the transient peak from liveness,
// per-step traffic per collective kind, and the ZeRO formula for the same
// model. Every rank of an SPMD step holds and sends the same amounts (shards
// are padded to equal size), so one set of figures describes them all.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_ANALYSIS_PLANREPORT_H
#define ZERO_ANALYSIS_PLANREPORT_H

#include "zero/analysis/StepSimulation.h"
#include "zero/support/TrafficCount.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace zero {

/// Bytes one rank holds of one category, and how many of them are padding.
struct ByteCount {
  int64_t bytes = 0;
  /// bytes - (unpadded logical bytes / ranks) for sharded tensors; 0 for
  /// replicated ones. Fractional when a tensor does not divide evenly.
  double padding = 0.0;
  ByteCount &operator+=(const ByteCount &other) {
    bytes += other.bytes;
    padding += other.padding;
    return *this;
  }
};

/// The ZeRO memory and traffic formula for the module's model.
struct ZeroFormula {
  int64_t stage = 0;
  int64_t ranks = 1;
  /// Ψ: trainable parameter elements; frozen ones separately.
  int64_t trainableElements = 0;
  int64_t frozenElements = 0;
  /// Bytes per trainable element of parameter, gradient, optimizer state.
  double paramBytesPerElement = 0;
  double gradBytesPerElement = 0;
  double optimizerBytesPerElement = 0; // K
  double frozenBytes = 0;
  double modelStateBytes = 0;
  /// Elements moved per step: 2Ψ for stages 0-2, 3Ψ for stage 3, plus on
  /// a mesh `acrossNodesShards` Ψ/S across nodes.
  double trafficElements = 0;
  /// How zero-shard used a mesh: hybrid, full or hpz; empty on one axis.
  std::string meshScheme;
  /// Stages 1-3 on a mesh: how many times Ψ/S crosses nodes per step
  /// (hybrid: the shard's average, 2; full: reduce-scatter and two gathers,
  /// 3 at stage 3; hpz: 2).
  int64_t acrossNodesShards = 0;
};

/// Where a lowered program keeps its memory (zero-offload's plan): what one
/// rank holds in device and in host memory, and what crosses the host link
/// per optimizer step.
struct MemoryPlan {
  /// none, optimizer or optimizer+params: what was moved to the host.
  std::string offload = "none";
  /// Device bytes per rank the plan had to fit; 0 when none was given.
  int64_t budget = 0;
  int64_t devicePersistent = 0;
  int64_t deviceArena = 0;
  int64_t hostPersistent = 0;
  int64_t hostArena = 0;
  /// Device-to-host plus host-to-device bytes of one optimizer step (the
  /// micro-step's transfers counted once per micro-batch).
  int64_t hostLinkBytes = 0;
  /// What went to the host and why, one line per tensor.
  std::vector<std::string> decisions;
  int64_t deviceBytes() const { return devicePersistent + deviceArena; }
  int64_t hostBytes() const { return hostPersistent + hostArena; }
  mlir::DictionaryAttr toAttr(mlir::MLIRContext *context) const;
  static MemoryPlan fromAttr(mlir::DictionaryAttr attr);
};

/// A parameter group: one `train.optimizer` and the trainable parameters
/// it updates (those naming it with `with`, or, for the default optimizer,
/// those naming none).
struct OptimizerGroup {
  std::string optimizer;
  std::string kind;
  double lr = 0;
  double weightDecay = 0;
  int64_t parameters = 0;
  int64_t elements = 0;
};

/// The module's optimizers and what each updates, in declaration order.
std::vector<OptimizerGroup> computeOptimizerGroups(mlir::ModuleOp module);

/// ZeRO++'s quantized communication as zero-shard planned it
/// (dist.quantization).
struct QuantizationPlan {
  bool weights = false;
  bool gradients = false;
  /// Bits per code of the weights' and the gradients' codes (8 or 4).
  int64_t weightBits = 8;
  int64_t gradientBits = 8;
  int64_t block = 0;
  int64_t minElements = 0;
  /// Sharded tensors too small to quantize: they cross nodes in full
  /// precision.
  std::vector<std::string> fullPrecision;
  /// With hpZ (stage 3), the closed formula of the bytes the sharded
  /// state's gathers and reductions move across nodes per step (axis 0's
  /// all-gathers, all-to-alls and reduce-scatters: the report's figures
  /// without its all-reduces), from the parameters' shards alone: each
  /// sharded parameter of shard c elements of P bytes on R nodes is
  /// gathered across nodes once and its gradient reduced once, each
  /// R (codes(c) + 4 ceil(c / block)) bytes when quantized and R c P
  /// otherwise. The same in full precision beside it. -1 without hpZ, where
  /// zero-schedule decides which parameters the backward gathers again.
  int64_t acrossNodesBytes = -1;
  int64_t acrossNodesBytesUnquantized = -1;
};

/// dist.quantization of `module`, if zero-shard quantized anything.
std::optional<QuantizationPlan> getQuantizationPlan(mlir::ModuleOp module);

/// A setting that moves a step's memory (`stage=3`, `offload=optimizer`,
/// ...) and what the step predicts with it.
struct FitAlternative {
  std::string change;
  int64_t peakDeviceBytes = 0;
  double stepSeconds = 0;
};

/// The step's train.dropout ops (each forward one; its backward shares its
/// stream) and their distinct rates, ascending: dropout is on in training
/// steps where there are any, and never in evaluation.
struct DropoutSummary {
  int64_t ops = 0;
  std::vector<double> rates;
};
DropoutSummary summarizeDropout(mlir::Operation *root);

struct PlanReport {
  /// Every rank of the placement (the product of its grid).
  int64_t ranks = 1;
  /// The placement's grid: [ranks] for one axis; [R, S] for a two-level
  /// mesh (nodes, ranks per node).
  std::vector<int64_t> grid = {1};
  /// -1 when the module is not data parallel.
  int64_t stage = -1;
  std::string placement;
  std::optional<QuantizationPlan> quantization;
  DropoutSummary dropout;
  ByteCount parameters;
  ByteCount gradients;
  ByteCount slots;
  ByteCount masters;
  ByteCount modelState() const {
    ByteCount total = parameters;
    total += gradients;
    total += slots;
    total += masters;
    return total;
  }
  /// Persistent bytes (state + accumulators), counted once.
  int64_t persistentBytes = 0;
  /// Largest sum of live transient tensors at any point of any step function
  /// (gradients included), and the function where it is reached.
  int64_t peakTransientBytes = 0;
  std::string peakFunction;
  /// Stage 3: the most gathered parameter bytes alive at once in any step
  /// function (zero-schedule's measure; part of the peak transient).
  int64_t peakGatheredBytes = 0;
  std::map<std::string, TrafficCount> traffic;
  /// The same per placement axis (each collective counted on the axis it
  /// runs over, with that axis's group size in the ring factor).
  std::map<int64_t, std::map<std::string, TrafficCount>> axisTraffic;
  /// Printed when there is more than one (parameter groups).
  std::vector<OptimizerGroup> groups;
  ZeroFormula formula;
  /// The lowered program's device and host memory, when the report is of
  /// a program zero-offload placed.
  std::optional<MemoryPlan> memory;
  /// The lowered program's predicted step on a machine model, when the
  /// report was asked for one.
  std::optional<StepPrediction> prediction;
  /// Where that step's peak does not fit the machine's device memory: the
  /// settings zero-pipeline planned instead, each on a copy of the step.
  std::vector<FitAlternative> fitAlternatives;
};

/// Computes the report. Fails (with a diagnostic) when the module has no
/// training step.
mlir::FailureOr<PlanReport> computePlanReport(mlir::ModuleOp module);

void printPlanReport(const PlanReport &report, llvm::raw_ostream &os);
llvm::json::Value planReportToJson(const PlanReport &report);
/// The memory plan alone, as the report's "memory_plan" object.
llvm::json::Object memoryPlanToJson(const MemoryPlan &plan);
/// The report's JSON forms of its parameter groups and of its quantization
/// plan, which the Python report dict takes as they are.
llvm::json::Array optimizerGroupsToJson(llvm::ArrayRef<OptimizerGroup> groups);
llvm::json::Object quantizationPlanToJson(const QuantizationPlan &plan);
/// {"ops": N, "rates": [...]}: the report's "dropout" object.
llvm::json::Object dropoutToJson(const DropoutSummary &dropout);
/// Runs `write` on `output` opened as a text file, or on stderr for `-`;
/// fails with a diagnostic at `loc` when the file cannot be written.
mlir::LogicalResult
writeReportOutput(llvm::StringRef output, mlir::Location loc,
                  llvm::function_ref<void(llvm::raw_ostream &)> write);

/// Writes the report as `format` (text, json, or timeline: the
/// prediction's SVG; not none) to `output` (a file, or - for stderr); fails
/// with a diagnostic at `loc` when it cannot.
mlir::LogicalResult writePlanReport(const PlanReport &report,
                                    ReportFormat format, llvm::StringRef output,
                                    mlir::Location loc);

} // namespace zero

#endif // ZERO_ANALYSIS_PLANREPORT_H
