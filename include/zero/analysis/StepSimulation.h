//===- StepSimulation.h - A lowered step's predicted timeline ---*- C++ -*-===//
//
// Replays a `zrt.program` on a machine model: every instruction gets a
// duration from its shapes (matmul FLOPs, bytes touched, collective bytes
// under the ring alpha-beta model), streams run their instructions in
// program order, and events order them across streams. The result is the
// predicted step time, each stream's busy time, the communication the
// compute stream does not hide, and the device memory live over time.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_ANALYSIS_STEPSIMULATION_H
#define ZERO_ANALYSIS_STEPSIMULATION_H

#include "zero/analysis/MachineModel.h"
#include "zero/dialects/zrt/ZrtOps.h"
#include "zero/support/OptionEnums.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace zero {

enum class SimulatedKind {
  matmul,
  kernel,
  copy,
  /// A copy between host and device memory.
  transfer,
  /// A kernel of a host stream.
  hostKernel,
  collective,
  /// Time a stream spends blocked: a wait for an event of another stream,
  /// or (without asynchronous collectives) the compute stream progressing a
  /// collective.
  wait,
};

/// The kind's name in reports: matmul, kernel, copy, transfer, host
/// kernel, collective or wait.
llvm::StringRef stringifySimulatedKind(SimulatedKind kind);

struct SimulatedInstruction {
  /// The runtime's instruction index in its body (launches, copies,
  /// collectives, records and waits, in program order), as zero-run's
  /// profile names it; -1 for blocked time that is no instruction.
  int64_t index = -1;
  /// The kernel (`train.matmul`), `zrt.copy`, the collective
  /// (`all_gather`), or `wait`.
  std::string name;
  SimulatedKind kind = SimulatedKind::kernel;
  unsigned stream = 0;
  double start = 0;
  double end = 0;
  /// Bytes the instruction reads and writes; a collective's full buffer.
  double bytes = 0;
  /// Matmul FLOPs.
  double flops = 0;
  /// Those of them that are the model's, counted once: none of a kernel
  /// train-autodiff recomputes in the backward (`train.recomputed`), four
  /// fifths of a fused attention's backward (which recomputes the scores).
  double modelFlops = 0;
  double seconds() const { return end - start; }
};

/// One `zrt.step` body.
struct SimulatedBody {
  /// step, micro or apply.
  std::string kind;
  /// How often it runs per optimizer step (the accumulation's K for micro).
  int64_t repeat = 1;
  std::vector<SimulatedInstruction> instructions;
  double seconds = 0;
  /// Per stream: the sum of its instructions' durations (blocked time not
  /// included).
  std::vector<double> streamBusy;
  /// Kernels and copies of the compute stream.
  double computeBusy = 0;
  /// Time some collective runs.
  double communication = 0;
  /// Time some collective runs while the compute stream runs no kernel or
  /// copy.
  double exposedCommunication = 0;
  /// Device arena bytes in use, as (time, bytes) steps: from the start of
  /// the first instruction touching a view to the end of the last one.
  std::vector<std::pair<double, int64_t>> liveArena;
  int64_t peakLiveArena = 0;
};

struct StepPrediction {
  MachineModel machine;
  std::string program;
  int64_t ranks = 1;
  std::vector<std::string> streams;
  std::vector<SimulatedBody> bodies;
  int64_t devicePersistentBytes = 0;
  int64_t deviceArenaBytes = 0;
  /// One optimizer step (micro bodies counted `repeat` times).
  double stepSeconds = 0;
  double computeBusy = 0;
  double communication = 0;
  double exposedCommunication = 0;
  std::vector<double> streamBusy;
  /// Matmul and attention FLOPs of one optimizer step on one rank, each op
  /// of the model once: the numerator of MFU.
  double modelFlops = 0;
  /// The FLOPs the recomputed forward ops add to those.
  double recomputeFlops = 0;
  /// The tokens one rank trains on in a step: the elements of the
  /// program's largest integer input that indexes an embedding or is a
  /// loss's labels (of any integer input where none does) times the
  /// micro-batches; 0 for a step without one.
  int64_t tokens = 0;
  /// That input's buffer.
  std::string tokensInput;
};

/// Tokens a second on one rank; 0 where the step has no tokens.
double getTokensPerSecond(const StepPrediction &prediction);
/// Model FLOPs a second over the machine's datasheet peak; 0 where the
/// machine states no peak.
double getModelFlopsUtilization(const StepPrediction &prediction);

/// Predicts `program`'s step on `machine`. Fails with a diagnostic when the
/// machine has no link for an axis the program's collectives use.
mlir::FailureOr<StepPrediction> simulateProgram(zero::zrt::ProgramOp program,
                                                const MachineModel &machine);

/// The persistent device bytes plus the largest live arena of any body.
int64_t getPeakDeviceBytes(const StepPrediction &prediction);

/// The prediction as the report's text section, and as its "prediction"
/// JSON object.
void printPrediction(const StepPrediction &prediction, llvm::raw_ostream &os);
llvm::json::Object predictionToJson(const StepPrediction &prediction);

/// A self-contained SVG of the step: a lane per stream with a rectangle per
/// instruction, and the live device memory below, on one time axis in ms.
void writeTimelineSvg(const StepPrediction &prediction, llvm::raw_ostream &os);

/// Writes the prediction alone as `format` (text, json or timeline) to
/// `output` (a file, or - for stderr): zero-report's output for a module
/// that is already lowered.
mlir::LogicalResult writePrediction(const StepPrediction &prediction,
                                    ReportFormat format, llvm::StringRef output,
                                    mlir::Location loc);

} // namespace zero

#endif // ZERO_ANALYSIS_STEPSIMULATION_H
