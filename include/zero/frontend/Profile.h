//===- Profile.h - A run's measured step, as a trace and a table -*- C++
//-*-===//
//
// What `zero-run --profile` and `gpt2_train --profile` write from the
// events a backend timed (ExecutionBackend::setProfile): every rank's
// timeline, gathered on rank 0, in the Chrome trace event format
// (chrome://tracing, ui.perfetto.dev: a process per rank, a thread per zrt
// stream, a slice per instruction); and rank 0's instructions beside the
// machine model's prediction of each (zero/analysis/ProfileTable.h).
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_FRONTEND_PROFILE_H
#define ZERO_FRONTEND_PROFILE_H

#include "zero/dialects/zrt/ZrtOps.h"
#include "zero/runtime/Executor.h"
#include "zero/runtime/StepProfile.h"

#include <string>
#include <vector>

namespace zero::frontend {

struct ProfileOutputs {
  /// The Chrome trace; empty: none.
  std::string trace;
  /// The table: JSON where the name ends in .json, else Markdown; empty:
  /// none.
  std::string table;
  /// The machine the table predicts on: a preset or a machine file.
  std::string machine = "cpu";
  /// The table's first step counted (the first one binds and touches
  /// memory for the first time).
  int64_t firstStep = 2;
};

/// Whether the table of `outputs` can be made for `program`: its machine
/// loads and describes every axis the program's collectives use. Checked
/// before the steps run, on every rank alike.
absl::Status checkProfileOutputs(zrt::ProgramOp program,
                                 const ProfileOutputs &outputs);

/// Gathers `events` from every rank (all ranks call it) and, on rank 0,
/// writes `outputs` for `program`, the program `executor` runs.
absl::Status writeProfile(rt::Communicator &comm, const rt::Executor &executor,
                          zrt::ProgramOp program,
                          std::vector<rt::ProfileEvent> events,
                          const ProfileOutputs &outputs);

} // namespace zero::frontend

#endif // ZERO_FRONTEND_PROFILE_H
