//===- ArenaWriteCheck.h - The arenas' writes against the plan --*- C++ -*-===//
//
// What `--check-memory` (zero-run, gpt2_train) holds a rank's measured
// arena writes (Executor::measureArenaWrites) against: the arenas the
// compiler planned, and a prediction the placement did not make, the
// liveness analysis's bytes live at once times a stated fragmentation bound
// (docs/runtime.md, "What is measured").
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_ARENAWRITECHECK_H
#define ZERO_RUNTIME_ARENAWRITECHECK_H

#include "zero/runtime/Executor.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace zero::zrt {
class ProgramOp;
} // namespace zero::zrt

namespace zero::rt {

/// The bytes of each arena live at once, derived from a program's
/// instructions alone (runtime/core/ArenaLiveness.cpp), apart from the
/// intervals the compiler placed by: a view is live from the first
/// instruction naming it to the last, a use on a stream other than the
/// compute stream until the compute stream has waited for it.
struct ArenaLiveness {
  /// The most bytes live at one instruction, over the program's bodies,
  /// each view's rounded up to the program's alignment.
  int64_t deviceBytes = 0;
  int64_t hostBytes = 0;
  /// Views live at one instruction whose bytes overlap, one line each: a
  /// placement that lets one value overwrite another.
  std::vector<std::string> conflicts;
};

ArenaLiveness deriveArenaLiveness(zrt::ProgramOp program);

/// The figures for one rank's arenas, read from the program.
struct ArenaPrediction {
  /// The arenas the compiler planned (`zrt.planned_arena`,
  /// `zrt.planned_host_arena`; the program's header where a program
  /// predates them).
  int64_t plannedArena = 0;
  int64_t plannedHostArena = 0;
  /// The bytes live at once, derived from the instructions
  /// (deriveArenaLiveness), not from the compiler's figure.
  int64_t liveBytes = 0;
  int64_t liveHostBytes = 0;
  /// The compiler's own lower bound (`zrt.live_bytes`), reported beside
  /// the derived one; 0 where the program does not say.
  int64_t compilerLiveBytes = 0;
  /// deriveArenaLiveness's conflicts.
  std::vector<std::string> conflicts;

  static ArenaPrediction fromProgram(zrt::ProgramOp program);
};

/// How far above the bytes live at once a placement may reach. The worst
/// of the suite's programs is 1.100 (gpt2-tiny on a 2x2 mesh with hpZ and
/// qgZ; docs/runtime.md, "What is measured"), where the lower bound is not
/// reachable by the planner's orders; a placement that wastes 15 % more
/// than it needs fails (test/e2e/check-memory.test).
inline constexpr double kArenaFragmentationBound = 1.12;

/// Refuses to measure a placement that lets values live at one
/// instruction share bytes (ArenaPrediction::conflicts): what it would
/// train on is not what the program says.
absl::Status checkArenaPlacement(const ArenaPrediction &prediction);

/// One line per way rank `rank`'s writes (device arena, host arena) pass
/// the plan: past the planned arena, past kArenaFragmentationBound times
/// the bytes live at once, or into a guard band. Empty when none does.
std::vector<std::string> checkArenaWrites(const ArenaPrediction &prediction,
                                          int64_t rank,
                                          const ArenaWrites &device,
                                          const ArenaWrites &host);

/// checkArenaWrites for every rank's `local` writes (device, host),
/// gathered from the ranks (every rank calls it, and every rank fails
/// alike): FailedPrecondition naming each rank and arena that passes the
/// prediction.
absl::Status
checkArenaWritesOfEveryRank(Communicator &comm,
                            const ArenaPrediction &prediction,
                            const std::pair<ArenaWrites, ArenaWrites> &local);

} // namespace zero::rt

#endif // ZERO_RUNTIME_ARENAWRITECHECK_H
