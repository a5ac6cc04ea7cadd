//===- ProfileTable.h - A measured step beside its prediction ---*- C++ -*-===//
//
// `zero-run --profile-table` and `gpt2_train --profile-table`: the
// instructions one rank timed, summed by instruction, by kernel family and
// by stream, each row beside the machine model's predicted time for it
// (StepSimulation.h), so that a profile shows at once where the run is far
// from what the compiler planned. The measured side is plain numbers
// (MeasuredSlice), so that any backend's timing (the CPU backend's clock,
// CUDA events) feeds the same table.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_ANALYSIS_PROFILETABLE_H
#define ZERO_ANALYSIS_PROFILETABLE_H

#include "zero/analysis/StepSimulation.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zero {

/// One timed instruction of one rank: body and instruction index as the
/// runtime numbers them (StepInstruction, SimulatedInstruction::index), the
/// optimizer step it ran in, and its begin and end in seconds of one clock.
struct MeasuredSlice {
  int64_t body = 0;
  int64_t instruction = 0;
  int64_t step = 0;
  double begin = 0;
  double end = 0;
};

/// One instruction of the program: per launch, what it did and how long it
/// took, measured (the mean over the steps counted) and predicted.
struct ProfileRow {
  int64_t body = 0;
  std::string bodyKind;
  int64_t index = 0;
  /// The kernel (`train.matmul`), `zrt.copy`, or the collective.
  std::string name;
  /// matmul, kernel, copy, transfer, host kernel or collective.
  std::string category;
  std::string stream;
  /// The first persistent buffer it reads or writes (a parameter names its
  /// layer), empty where it touches only the arena.
  std::string buffer;
  /// Operand types, inputs -> outputs: `32x64xf32, 64xf32 -> 32x64xf32`.
  std::string operands;
  double bytes = 0;
  double flops = 0;
  /// How many times one optimizer step runs it (micro-batches count).
  double launchesPerStep = 0;
  /// Seconds of one launch.
  double measuredSeconds = 0;
  double predictedSeconds = 0;
  /// Whether this rank timed it at all.
  bool measured = false;
};

/// The rows of one kernel (or copy, or collective kind), per step.
struct ProfileFamily {
  std::string name;
  double launchesPerStep = 0;
  double measuredSeconds = 0;
  double predictedSeconds = 0;
  double bytes = 0;
  double flops = 0;
};

/// One stream, per step: the time its instructions ran, and the rest of
/// the step (waiting, or nothing to do).
struct ProfileStream {
  std::string name;
  double measuredBusy = 0;
  double predictedBusy = 0;
  double measuredIdle = 0;
  double predictedIdle = 0;
};

struct ProfileTable {
  std::string machine;
  std::string program;
  /// The optimizer steps the figures are means over.
  int64_t firstStep = 0;
  int64_t lastStep = 0;
  int64_t steps = 0;
  /// Wall time of one step on this rank, first timed instruction to the
  /// end of the last; and the prediction's.
  double measuredStep = 0;
  double predictedStep = 0;
  /// The predicted step, as the compute stream spends it: its kernels and
  /// copies, its blocked time (waits, and collectives it progresses), and
  /// the time after its last instruction until the other streams drain.
  /// They add up to predictedStep.
  double predictedComputeWork = 0;
  double predictedComputeBlocked = 0;
  double predictedAfterCompute = 0;
  std::vector<ProfileRow> rows;
  /// Largest measured time first.
  std::vector<ProfileFamily> families;
  std::vector<ProfileStream> streams;
};

/// The table of `slices` (one rank's) against `prediction` of `program`.
/// Slices of steps before `firstStep` are left out (the first step binds
/// and touches memory for the first time); where none is left, every step
/// counts. Fails, naming it, on a slice of an instruction the program does
/// not have. Timed waits count only towards the step's wall time.
llvm::Expected<ProfileTable>
buildProfileTable(zrt::ProgramOp program, const StepPrediction &prediction,
                  llvm::ArrayRef<MeasuredSlice> slices, int64_t firstStep);

/// The table as Markdown: a summary, then the families, the streams and
/// the instructions (the `maxRows` longest measured, all with 0).
void printProfileTable(const ProfileTable &table, llvm::raw_ostream &os,
                       size_t maxRows = 0);
llvm::json::Object profileTableToJson(const ProfileTable &table);

} // namespace zero

#endif // ZERO_ANALYSIS_PROFILETABLE_H
