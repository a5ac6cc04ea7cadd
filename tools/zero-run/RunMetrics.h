//===- RunMetrics.h - What a run measured, beside the plan ------*- C++ -*-===//
//
// Losses and step times, and per rank: the bytes the runtime allocated by
// category, the arena's high-water mark, and the bytes each collective kind
// moved in one step, next to the compile-time report the lowering attached
// to the program (`zrt.report`).
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_TOOLS_ZERO_RUN_RUNMETRICS_H
#define ZERO_TOOLS_ZERO_RUN_RUNMETRICS_H

#include "zero/dialects/zrt/ZrtOps.h"
#include "zero/runtime/ArenaWriteCheck.h"
#include "zero/runtime/Executor.h"

#include "llvm/Support/JSON.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace zero::rt {

class RunMetrics {
public:
  RunMetrics(Executor &executor, zrt::ProgramOp program);

  void recordStep(float loss, double seconds);
  /// Collects every rank's measurements on every rank (all ranks call it).
  absl::Status gatherRanks(Communicator &comm);
  absl::Status writeJson(const std::string &path) const;

  std::string describeStart() const;
  std::string describeStep(int64_t step) const;
  std::string describeEnd() const;

  int64_t steps = 0;
  /// The first step this run trained: 1, or the one after a resumed
  /// checkpoint's.
  int64_t firstStep = 1;
  int64_t globalBatch = 0;
  bool deterministic = false;
  uint64_t seed = 0;
  std::string data;
  std::map<std::string, TrafficCount> trafficPerStep;
  std::map<std::string, TrafficCount> trafficTotal;
  /// On a mesh, this rank's traffic of the first step per placement axis
  /// (each axis's communicator's, the group size in its ring factor).
  std::vector<std::map<std::string, TrafficCount>> axisTrafficPerStep;
  /// With --check-memory, this rank's measured arena writes (device, host).
  std::optional<std::pair<ArenaWrites, ArenaWrites>> writes;

  /// What --check-memory holds the writes against (ArenaWriteCheck.h).
  const ArenaPrediction &arenaPrediction() const { return prediction; }
  /// With --check-memory, after gatherRanks: checkArenaWrites's lines for
  /// every rank; empty when no rank's writes pass the prediction.
  std::vector<std::string> writesBeyondPlan() const;
  /// Trailing fields of localFields() that carry the measured writes.
  static constexpr size_t kWriteFields = 7;
  /// The last fields: the device memory measured (deviceMemory()).
  static constexpr size_t kDeviceFields = 4;

private:
  /// Samples per second over the steps after the first (the first pays for
  /// first-touch page faults), or over the only step.
  double samplesPerSecond() const;
  llvm::json::Object reportJson() const;
  llvm::json::Object rankJson(const std::vector<int64_t> &fields) const;
  std::vector<int64_t> localFields() const;

  Executor &executor;
  std::string programName;
  int64_t stage = -1;
  int64_t ranks = 1;
  /// The placement grid: [ranks], or [nodes, ranks per node] on a mesh.
  std::vector<int64_t> grid;
  llvm::json::Object report;
  ArenaPrediction prediction;
  std::vector<float> losses;
  std::vector<double> stepSeconds;
  std::vector<std::vector<int64_t>> perRank;
};

} // namespace zero::rt

#endif // ZERO_TOOLS_ZERO_RUN_RUNMETRICS_H
