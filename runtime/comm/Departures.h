//===- Departures.h - Ranks that announced that they left the job ---------===//
//
// Internal to the MPI communicator. A rank whose script ends announces it
// (leaveMpiJob) on MPI_COMM_WORLD under a tag of its own; a rank waiting in
// a collective checks for such announcements while it polls, and fails at
// once naming the rank that left instead of waiting for its timeout.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_COMM_DEPARTURES_H
#define ZERO_RUNTIME_COMM_DEPARTURES_H

#include "absl/status/status.h"

namespace zero::rt::comm {

/// OK while no other rank has announced its exit; else UnavailableError
/// naming the first that did and why ("rank 1 left the job (its script
/// ended)"). One MPI_Test when nothing arrived.
absl::Status checkDepartures();

} // namespace zero::rt::comm

#endif // ZERO_RUNTIME_COMM_DEPARTURES_H
