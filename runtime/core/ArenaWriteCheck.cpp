//===- ArenaWriteCheck.cpp - zero-run --check-memory's measurement --------===//
//
// The arenas and the guard bands past them are filled with a canary before
// the first step; afterwards every byte that lost it was written by an
// instruction (docs/runtime.md, "What is measured").
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/Executor.h"

#include "absl/strings/str_cat.h"

#include <cstring>

using namespace zero::rt;

absl::Status Executor::startWriteCheck() {
  if (!dynamic_cast<HostExecutionBackend *>(executionBackend.get()))
    return absl::UnimplementedError(
        absl::StrCat("--check-memory scans the arenas in host memory; the ",
                     executionBackend->name(),
                     " backend keeps them on the "
                     "device (run the check on the CPU backend)"));
  // Every instruction writes before it reads (a read of an unwritten byte
  // would train on garbage), so the canary changes no result.
  if (arena)
    std::memset(arena, kArenaCanary, figures.arenaBytes + kArenaGuardBytes);
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
  return std::make_pair(scanForWrites(arena, figures.arenaBytes),
                        scanForWrites(hostArena, figures.hostArenaBytes));
}
