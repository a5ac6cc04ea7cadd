//===- RunProfile.h - zero-run --profile as a Chrome trace ------*- C++ -*-===//
//
// Every rank's measured instruction timeline, gathered on rank 0 and written
// in the Chrome trace event format (chrome://tracing, ui.perfetto.dev): a
// process per rank, a thread per zrt stream, a slice per instruction.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_TOOLS_ZERO_RUN_RUNPROFILE_H
#define ZERO_TOOLS_ZERO_RUN_RUNPROFILE_H

#include "zero/runtime/Executor.h"
#include "zero/runtime/StepProfile.h"

#include <string>
#include <vector>

namespace zero::rt {

/// Gathers `events` from every rank (all ranks call it) and, on rank 0,
/// writes the trace to `path`.
absl::Status writeProfile(Communicator &comm, const Executor &executor,
                          std::vector<ProfileEvent> events,
                          const std::string &path);

} // namespace zero::rt

#endif // ZERO_TOOLS_ZERO_RUN_RUNPROFILE_H
