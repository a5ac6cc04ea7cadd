//===- ArenaWriteCheck.cpp - zero-run --check-memory's measurement --------===//
//
// The arenas and the guard bands past them are filled with a canary before
// the first step; afterwards every byte that lost it was written by an
// instruction (docs/runtime.md, "What is measured"). The writes are held
// against the compiler's plan and its liveness analysis.
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/ArenaWriteCheck.h"

#include "zero/dialects/zrt/ZrtOps.h"
#include "zero/support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>
#include <vector>

using namespace zero::rt;

// A backend whose arena is in host memory is filled and scanned in place;
// a device arena (CUDA) through the backend's blocking copies, once before
// the first step and once after the last: a checking mode, not a fast path.
absl::Status Executor::startWriteCheck() {
  // Every instruction writes before it reads (a read of an unwritten byte
  // would train on garbage), so the canary changes no result.
  int64_t arenaExtent = figures.arenaBytes + kArenaGuardBytes;
  if (arena && executionBackend->hostAddressable()) {
    std::memset(arena, kArenaCanary, arenaExtent);
  } else if (arena) {
    std::vector<uint8_t> canary(arenaExtent, kArenaCanary);
    ZERO_RETURN_IF_ERROR(
        executionBackend->copyFromHost(arena, canary.data(), arenaExtent));
  }
  // The host arena (offloaded programs) is host memory on every backend.
  if (hostArena)
    std::memset(hostArena, kArenaCanary,
                figures.hostArenaBytes + kArenaGuardBytes);
  writeCheck = true;
  return absl::OkStatus();
}

static ArenaWrites scanForWrites(const void *arena, int64_t size) {
  ArenaWrites writes;
  const auto *bytes = static_cast<const uint8_t *>(arena);
  for (int64_t offset = 0; arena && offset < size; ++offset) {
    if (bytes[offset] == Executor::kArenaCanary)
      continue;
    writes.highWater = offset + 1;
    ++writes.bytes;
  }
  for (int64_t offset = size;
       arena && offset < size + Executor::kArenaGuardBytes; ++offset)
    if (bytes[offset] != Executor::kArenaCanary)
      ++writes.guardBytes;
  return writes;
}

absl::StatusOr<std::pair<ArenaWrites, ArenaWrites>>
Executor::measureArenaWrites() const {
  if (!writeCheck)
    return absl::FailedPreconditionError(
        "measureArenaWrites needs startWriteCheck before the first step");
  ArenaWrites device = scanForWrites(arena, figures.arenaBytes);
  if (arena && !executionBackend->hostAddressable()) {
    std::vector<uint8_t> copy(figures.arenaBytes + kArenaGuardBytes);
    ZERO_RETURN_IF_ERROR(
        executionBackend->copyToHost(copy.data(), arena, copy.size()));
    device = scanForWrites(copy.data(), figures.arenaBytes);
  }
  return std::make_pair(device,
                        scanForWrites(hostArena, figures.hostArenaBytes));
}

ArenaPrediction ArenaPrediction::fromProgram(zrt::ProgramOp program) {
  ArenaPrediction prediction;
  auto integer = [&](llvm::StringRef name, int64_t fallback) {
    if (auto value = program->getAttrOfType<mlir::IntegerAttr>(name))
      return value.getInt();
    return fallback;
  };
  prediction.plannedArena =
      integer(zrt::ZrtDialect::getPlannedArenaAttrName(),
              program.getArenaBytes(zrt::MemorySpace::device));
  prediction.plannedHostArena =
      integer(zrt::ZrtDialect::getPlannedHostArenaAttrName(),
              program.getArenaBytes(zrt::MemorySpace::host));
  prediction.compilerLiveBytes =
      integer(zrt::ZrtDialect::getLiveBytesAttrName(), 0);
  ArenaLiveness liveness = deriveArenaLiveness(program);
  prediction.liveBytes = liveness.deviceBytes;
  prediction.liveHostBytes = liveness.hostBytes;
  prediction.conflicts = std::move(liveness.conflicts);
  return prediction;
}

absl::Status zero::rt::checkArenaPlacement(const ArenaPrediction &prediction) {
  if (prediction.conflicts.empty())
    return absl::OkStatus();
  // The first few: one wrong lifetime usually makes many.
  constexpr size_t kShown = 3;
  std::vector<std::string> shown(
      prediction.conflicts.begin(),
      prediction.conflicts.begin() +
          std::min(kShown, prediction.conflicts.size()));
  return absl::FailedPreconditionError(absl::StrCat(
      "--check-memory: the program places values that are live at "
      "once in the same arena bytes, so one overwrites the other (",
      prediction.conflicts.size(), " pair(s)): ", absl::StrJoin(shown, "; "),
      " (docs/runtime.md, \"What is measured\")"));
}

std::vector<std::string>
zero::rt::checkArenaWrites(const ArenaPrediction &prediction, int64_t rank,
                           const ArenaWrites &device, const ArenaWrites &host) {
  std::vector<std::string> problems;
  for (auto [writes, planned, arena] :
       {std::make_tuple(device, prediction.plannedArena, "arena"),
        std::make_tuple(host, prediction.plannedHostArena, "host arena")}) {
    if (writes.guardBytes > 0)
      problems.push_back(absl::StrCat(
          "rank ", rank, " wrote ", writes.guardBytes,
          " bytes past the end of its ", arena,
          " (its guard band): an instruction wrote beyond its view"));
    if (writes.highWater > planned)
      problems.push_back(absl::StrCat(
          "rank ", rank, " wrote its ", arena, " up to byte ", writes.highWater,
          ", beyond the ", planned, " bytes the compiler planned"));
  }
  // Against a prediction neither the placement nor its planner's intervals
  // made: the peak of bytes live at once by the instructions, which no
  // placement can go below, times the fragmentation a sound placement
  // stays within.
  for (auto [highWater, live, arena] :
       {std::make_tuple(device.highWater, prediction.liveBytes, "arena"),
        std::make_tuple(host.highWater, prediction.liveHostBytes,
                        "host arena")}) {
    int64_t predicted = static_cast<int64_t>(
        std::ceil(static_cast<double>(live) * kArenaFragmentationBound));
    if (live > 0 && highWater > predicted)
      problems.push_back(absl::StrCat(
          "rank ", rank, " wrote its ", arena, " up to byte ", highWater,
          ", beyond ", predicted, " = ", kArenaFragmentationBound, " x the ",
          live, " bytes its instructions keep live at once"));
  }
  return problems;
}

absl::Status zero::rt::checkArenaWritesOfEveryRank(
    Communicator &comm, const ArenaPrediction &prediction,
    const std::pair<ArenaWrites, ArenaWrites> &local) {
  const auto &[device, host] = local;
  std::vector<int64_t> fields{device.highWater, device.bytes, device.guardBytes,
                              host.highWater,   host.bytes,   host.guardBytes};
  std::vector<int64_t> all(fields.size() * comm.size());
  ZERO_RETURN_IF_ERROR(
      comm.allGather(fields.data(), all.data(), fields.size(), DType::i64));
  std::vector<std::string> problems;
  for (int rank = 0; rank < comm.size(); ++rank) {
    const int64_t *of = all.data() + rank * fields.size();
    for (std::string &problem : checkArenaWrites(
             prediction, rank, {of[0], of[1], of[2]}, {of[3], of[4], of[5]}))
      problems.push_back(std::move(problem));
  }
  if (problems.empty())
    return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("--check-memory: ", absl::StrJoin(problems, "; "),
                   " (docs/runtime.md, \"What is measured\")"));
}
