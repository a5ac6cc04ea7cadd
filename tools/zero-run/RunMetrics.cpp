//===- RunMetrics.cpp - What a run measured, beside the plan
//---------------===//

#include "RunMetrics.h"

#include "zero/analysis/PlanReport.h"
#include "zero/analysis/ProgramReport.h"
#include "zero/support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <numeric>

using namespace zero;
using namespace zero::rt;

static const char *const kCollectiveKinds[] = {
    "all_reduce", "reduce_scatter", "all_gather", "broadcast", "all_to_all"};

RunMetrics::RunMetrics(Executor &executor, zrt::ProgramOp program)
    : executor(executor), programName(program.getSymName().str()) {
  ranks = 1;
  for (int64_t extent : program.getPlacement().getGrid())
    ranks *= extent;
  grid.assign(program.getPlacement().getGrid().begin(),
              program.getPlacement().getGrid().end());
  if (auto value = program->getAttrOfType<mlir::IntegerAttr>(
          zrt::ZrtDialect::getZeroStageAttrName()))
    stage = value.getInt();
  if (auto attr = program->getAttrOfType<mlir::DictionaryAttr>(
          zrt::ZrtDialect::getReportAttrName()))
    report = ProgramReport::fromAttr(attr).toJson();
  prediction = ArenaPrediction::fromProgram(program);
  if (auto plan = program->getAttrOfType<mlir::DictionaryAttr>(
          zrt::ZrtDialect::getMemoryPlanAttrName()))
    report["memory_plan"] = memoryPlanToJson(zero::MemoryPlan::fromAttr(plan));
}

void RunMetrics::recordStep(float loss, double seconds) {
  losses.push_back(loss);
  stepSeconds.push_back(seconds);
}

double RunMetrics::samplesPerSecond() const {
  if (stepSeconds.empty())
    return 0;
  size_t first = stepSeconds.size() > 1 ? 1 : 0;
  double seconds =
      std::accumulate(stepSeconds.begin() + first, stepSeconds.end(), 0.0);
  double count = static_cast<double>(stepSeconds.size() - first);
  return seconds > 0 ? globalBatch * count / seconds : 0;
}

std::vector<int64_t> RunMetrics::localFields() const {
  const MemoryFigures &memory = executor.memory();
  std::vector<int64_t> fields = {memory.parameters,    memory.masters,
                                 memory.slots,         memory.gradAccumulators,
                                 memory.inputsOutputs, memory.arenaBytes,
                                 memory.arenaHighWater};
  for (const char *kind : kCollectiveKinds) {
    TrafficCount stats;
    if (auto it = trafficPerStep.find(kind); it != trafficPerStep.end())
      stats = it->second;
    int64_t sentBits;
    std::memcpy(&sentBits, &stats.sentBytesPerRank, sizeof(sentBits));
    fields.insert(fields.end(), {stats.count, stats.bytes, sentBits});
  }
  fields.insert(fields.end(),
                {memory.hostPersistent, memory.hostArenaBytes,
                 memory.hostArenaHighWater, memory.hostLinkBytesPerStep,
                 memory.gatheredPeak});
  fields.push_back(executor.backend().overheadBytes());
  // The measured writes last (kWriteFields): checked (0 or 1), then the
  // device arena's high water and bytes, the host arena's, and the bytes
  // written in each one's guard band.
  fields.push_back(writes ? 1 : 0);
  ArenaWrites device = writes ? writes->first : ArenaWrites();
  ArenaWrites host = writes ? writes->second : ArenaWrites();
  fields.insert(fields.end(), {device.highWater, device.bytes, host.highWater,
                               host.bytes, device.guardBytes, host.guardBytes});
  // The device's memory as measured (kDeviceFields): present (0 or 1), the
  // runtime's allocations now and at most, the driver's used bytes.
  std::optional<ExecutionBackend::DeviceMemory> measured =
      executor.backend().deviceMemory();
  ExecutionBackend::DeviceMemory memoryNow =
      measured.value_or(ExecutionBackend::DeviceMemory());
  fields.insert(fields.end(),
                {measured ? 1 : 0, memoryNow.allocatedBytes,
                 memoryNow.peakAllocatedBytes, memoryNow.usedBytes});
  return fields;
}

absl::Status RunMetrics::gatherRanks(Communicator &comm) {
  std::vector<int64_t> local = localFields();
  std::vector<int64_t> all(local.size() * comm.size());
  ZERO_RETURN_IF_ERROR(
      comm.allGather(local.data(), all.data(), local.size(), DType::i64));
  perRank.clear();
  for (int rank = 0; rank < comm.size(); ++rank)
    perRank.emplace_back(all.begin() + rank * local.size(),
                         all.begin() + (rank + 1) * local.size());
  return absl::OkStatus();
}

llvm::json::Object
RunMetrics::rankJson(const std::vector<int64_t> &fields) const {
  int64_t state = fields[0] + fields[1] + fields[2] + fields[3];
  llvm::json::Object traffic;
  for (size_t kind = 0; kind < std::size(kCollectiveKinds); ++kind) {
    size_t at = 7 + 3 * kind;
    if (fields[at] == 0)
      continue;
    double sent;
    std::memcpy(&sent, &fields[at + 2], sizeof(sent));
    traffic[kCollectiveKinds[kind]] =
        llvm::json::Object{{"count", fields[at]},
                           {"bytes", fields[at + 1]},
                           {"sent_bytes_per_rank", sent}};
  }
  // The two pools: what zero-offload placed in host memory, and the rest.
  // From the end: 5 fields of measured writes, the backend's overhead, and
  // the 5 host and gathered figures before it.
  size_t written = fields.size() - kDeviceFields - kWriteFields;
  size_t host = written - 6;
  int64_t hostPersistent = fields[host], hostArena = fields[host + 1];
  int64_t devicePersistent = state + fields[4] - hostPersistent;
  llvm::json::Object pools{{"device_bytes", devicePersistent + fields[5]},
                           {"device_high_water", devicePersistent + fields[6]},
                           {"host_persistent", hostPersistent},
                           {"host_arena_bytes", hostArena},
                           {"host_arena_high_water", fields[host + 2]},
                           {"host_bytes", hostPersistent + hostArena},
                           {"host_link_bytes_per_step", fields[host + 3]}};
  llvm::json::Object object{{"parameters", fields[0]},
                            {"pools", std::move(pools)},
                            {"masters", fields[1]},
                            {"slots", fields[2]},
                            {"grad_accumulators", fields[3]},
                            {"persistent", state},
                            {"inputs_outputs", fields[4]},
                            {"arena_bytes", fields[5]},
                            {"arena_high_water", fields[6]},
                            {"peak", state + fields[6]},
                            {"peak_gathered", fields[host + 4]},
                            {"traffic_per_step", std::move(traffic)},
                            {"backend_overhead", fields[written - 1]}};
  // Measured while the program ran (--check-memory), where the figures
  // above are derived from the program's operands when it was loaded.
  if (fields[written] != 0) {
    object["written"] =
        llvm::json::Object{{"arena_high_water", fields[written + 1]},
                           {"arena_bytes", fields[written + 2]},
                           {"host_arena_high_water", fields[written + 3]},
                           {"host_arena_bytes", fields[written + 4]},
                           {"guard_bytes", fields[written + 5]},
                           {"host_guard_bytes", fields[written + 6]}};
    object["peak_written"] = state + fields[written + 1];
  }
  // Measured on a device (GPU ranks): what the runtime allocated there and
  // the driver's figure for the whole device.
  size_t device = fields.size() - kDeviceFields;
  if (fields[device] != 0)
    object["device_memory"] =
        llvm::json::Object{{"allocated_bytes", fields[device + 1]},
                           {"peak_allocated_bytes", fields[device + 2]},
                           {"driver_used_bytes", fields[device + 3]}};
  return object;
}

std::vector<std::string> RunMetrics::writesBeyondPlan() const {
  std::vector<std::string> problems;
  for (size_t rank = 0; rank < perRank.size(); ++rank) {
    const std::vector<int64_t> &fields = perRank[rank];
    size_t written = fields.size() - kDeviceFields - kWriteFields;
    if (fields[written] == 0)
      continue;
    ArenaWrites device{fields[written + 1], fields[written + 2],
                       fields[written + 5]};
    ArenaWrites host{fields[written + 3], fields[written + 4],
                     fields[written + 6]};
    for (std::string &problem :
         checkArenaWrites(prediction, static_cast<int64_t>(rank), device, host))
      problems.push_back(std::move(problem));
  }
  return problems;
}

llvm::json::Object RunMetrics::reportJson() const {
  // The compiler's figures only: the arenas it planned, not what the
  // runtime allocated, so that a measurement compared with them can fail.
  llvm::json::Object object = report;
  object["arena_bytes"] = prediction.plannedArena;
  object["host_arena_bytes"] = prediction.plannedHostArena;
  // Derived from the instructions by zero-run, apart from the compiler's
  // own figure (zrt.live_bytes), which is reported beside it.
  object["live_bytes_lower_bound"] = prediction.liveBytes;
  object["compiler_live_bytes"] = prediction.compilerLiveBytes;
  // What --check-memory holds the written high water to, times the above.
  object["arena_fragmentation_bound"] = kArenaFragmentationBound;
  if (const llvm::json::Value *persistent = object.get("persistent"))
    if (std::optional<int64_t> bytes = persistent->getAsInteger())
      object["peak"] = *bytes + prediction.plannedArena;
  return object;
}

absl::Status RunMetrics::writeJson(const std::string &path) const {
  llvm::json::Array rankArray;
  for (size_t rank = 0; rank < perRank.size(); ++rank) {
    llvm::json::Object object = rankJson(perRank[rank]);
    object["rank"] = static_cast<int64_t>(rank);
    rankArray.push_back(std::move(object));
  }
  llvm::json::Array lossArray, secondArray;
  for (float loss : losses)
    lossArray.push_back(static_cast<double>(loss));
  for (double seconds : stepSeconds)
    secondArray.push_back(seconds);
  llvm::json::Object root{
      {"program", programName},
      {"ranks", ranks},
      {"grid", llvm::json::Array(grid)},
      {"stage", stage},
      {"steps", steps},
      {"first_step", firstStep},
      {"seed", static_cast<int64_t>(seed)},
      {"deterministic", deterministic},
      {"backend", executor.backend().name()},
      {"device", executor.backend().deviceDescription()},
      {"data", data},
      {"global_batch", globalBatch},
      {"accumulate_steps", executor.accumulateSteps()},
      {"instructions", static_cast<int64_t>(executor.numInstructions())},
      {"losses", std::move(lossArray)},
      {"step_seconds", std::move(secondArray)},
      {"samples_per_second", samplesPerSecond()},
      {"report", reportJson()},
      {"measured", std::move(rankArray)}};
  if (!axisTrafficPerStep.empty()) {
    llvm::json::Array axes;
    for (size_t axis = 0; axis < axisTrafficPerStep.size(); ++axis) {
      llvm::json::Object traffic;
      for (const auto &[kind, stats] : axisTrafficPerStep[axis])
        traffic[kind] =
            llvm::json::Object{{"count", stats.count},
                               {"bytes", stats.bytes},
                               {"sent_bytes_per_rank", stats.sentBytesPerRank}};
      axes.push_back(
          llvm::json::Object{{"axis", static_cast<int64_t>(axis)},
                             {"ranks", grid[axis]},
                             {"traffic_per_step", std::move(traffic)}});
    }
    root["measured_axes"] = std::move(axes);
  }

  std::error_code error;
  llvm::raw_fd_ostream os(path, error, llvm::sys::fs::OF_Text);
  if (error)
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write ", path, ": ", error.message()));
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return absl::OkStatus();
}

static std::string megabytes(double bytes) {
  return absl::StrFormat("%.3f MB", bytes / 1e6);
}

std::string RunMetrics::describeStart() const {
  const MemoryFigures &memory = executor.memory();
  return absl::StrCat(
      "zero-run: @", programName, " on ", ranks, " rank", ranks == 1 ? "" : "s",
      grid.size() > 1 ? absl::StrCat(" (a ", absl::StrJoin(grid, "x"), " mesh)")
                      : std::string(),
      stage >= 0 ? absl::StrCat(", ZeRO stage ", stage) : std::string(), ", ",
      executor.numInstructions(), " instructions; per rank: state ",
      megabytes(memory.parameters + memory.masters + memory.slots +
                memory.gradAccumulators),
      ", arena ", megabytes(memory.arenaBytes),
      absl::StrFormat(" (%.0f%% live)",
                      memory.arenaBytes
                          ? 100.0 * prediction.liveBytes / memory.arenaBytes
                          : 100.0),
      "; global batch ", globalBatch,
      executor.accumulateSteps() > 1
          ? absl::StrCat(" in ", executor.accumulateSteps(), " micro-batches")
          : std::string(),
      "; data ", data, deterministic ? "; deterministic" : "",
      executor.backend().name() == "cpu"
          ? std::string()
          : absl::StrCat("; backend ", executor.backend().name(), " on ",
                         executor.backend().deviceDescription()));
}

std::string RunMetrics::describeStep(int64_t step) const {
  double seconds = stepSeconds.back();
  return absl::StrFormat("step %3d/%d  loss %.6f  %8.2f ms  %10.1f samples/s",
                         step, steps, losses.back(), seconds * 1e3,
                         seconds > 0 ? globalBatch / seconds : 0.0);
}

/// Bytes one rank sent per step over all collective kinds.
static double sentPerStep(const llvm::json::Object &traffic) {
  double sent = 0;
  for (const auto &entry : traffic)
    if (const llvm::json::Object *kind = entry.second.getAsObject())
      if (std::optional<double> bytes = kind->getNumber("sent_bytes_per_rank"))
        sent += *bytes;
  return sent;
}

std::string RunMetrics::describeEnd() const {
  // A run resumed at its last step trains nothing.
  std::string text =
      losses.empty()
          ? absl::StrFormat("done: no steps to run (the state is at step %d)",
                            steps)
          : absl::StrFormat(
                "done: steps %d-%d, loss %.6f -> %.6f, %.1f samples/s",
                firstStep, steps, losses.front(), losses.back(),
                samplesPerSecond());
  if (perRank.empty() || report.empty())
    return text;
  // Rank 0 speaks for all: every rank holds and sends the same amounts.
  llvm::json::Object measured = rankJson(perRank.front());
  llvm::json::Object planned = reportJson();
  auto number = [](const llvm::json::Object &object, llvm::StringRef key) {
    return object.getNumber(key).value_or(0.0);
  };
  auto traffic = [](const llvm::json::Object &object, llvm::StringRef key) {
    const llvm::json::Object *kinds = object.getObject(key);
    return kinds ? sentPerStep(*kinds) : 0.0;
  };
  absl::StrAppend(
      &text, "\nper rank, measured (compile-time report):", "\n  model state  ",
      megabytes(number(measured, "persistent")), " (",
      megabytes(number(planned, "persistent")), ")", "\n  sent/step    ",
      megabytes(traffic(measured, "traffic_per_step")), " (",
      megabytes(traffic(planned, "traffic")), ")");
  // On a mesh, each axis's share: the bytes across nodes (axis 0) are what
  // a mesh user watches.
  const llvm::json::Array *plannedAxes = planned.getArray("axes");
  for (size_t axis = 0; axis < axisTrafficPerStep.size(); ++axis) {
    double sent = 0;
    for (const auto &[kind, stats] : axisTrafficPerStep[axis])
      sent += stats.sentBytesPerRank;
    const llvm::json::Object *plan = plannedAxes && axis < plannedAxes->size()
                                         ? (*plannedAxes)[axis].getAsObject()
                                         : nullptr;
    absl::StrAppend(&text, "\n    axis ", axis, " (", grid[axis], " ranks) ",
                    megabytes(sent), " (",
                    plan ? megabytes(traffic(*plan, "traffic")) : "no plan",
                    ")");
  }
  absl::StrAppend(&text, "\n  peak         ",
                  megabytes(number(measured, "peak")), " (",
                  megabytes(number(planned, "peak")), ")");
  return text;
}
