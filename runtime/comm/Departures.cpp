//===- Departures.cpp - Ranks that announced that they left the job -------===//
//
// MPI_Finalize waits for every rank: a rank whose script ends while another
// waits for it in a collective would leave that one waiting until its
// collective timeout, and then only "a rank is dead or stuck". Instead the
// leaving rank sends each other rank a short message saying why it leaves,
// then waits until every other rank has left too (as MPI_Finalize would).
// A rank still in a collective sees the message while it polls and fails
// at once; its error ends the job.
//
//===----------------------------------------------------------------------===//

#include "Departures.h"

#include "zero/runtime/Communicator.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace zero::rt {
namespace {

/// Below the 32767 every MPI allows, and on MPI_COMM_WORLD, which no
/// communicator of ours sends on (each works on its own duplicate).
constexpr int kDepartureTag = 31000;
constexpr int kReasonBytes = 128;

struct Departures {
  MPI_Request pending = MPI_REQUEST_NULL;
  char reason[kReasonBytes] = {};
  /// World rank -> why it left, in the order of arrival's first.
  std::map<int, std::string> departed;
  int first = -1;
};

Departures &departures() {
  static Departures state;
  return state;
}

bool mpiUp() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

int worldSize() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

/// Receives every announcement that has arrived.
void drain() {
  Departures &state = departures();
  for (;;) {
    if (state.pending == MPI_REQUEST_NULL)
      MPI_Irecv(state.reason, kReasonBytes, MPI_CHAR, MPI_ANY_SOURCE,
                kDepartureTag, MPI_COMM_WORLD, &state.pending);
    int arrived = 0;
    MPI_Status status;
    MPI_Test(&state.pending, &arrived, &status);
    if (!arrived)
      return;
    state.reason[kReasonBytes - 1] = '\0';
    state.departed[status.MPI_SOURCE] = state.reason;
    if (state.first < 0)
      state.first = status.MPI_SOURCE;
    state.pending = MPI_REQUEST_NULL;
  }
}

} // namespace

absl::Status comm::checkDepartures() {
  if (!mpiUp() || worldSize() < 2)
    return absl::OkStatus();
  drain();
  Departures &state = departures();
  if (state.first < 0)
    return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat("rank ", state.first,
                                             " left the job (",
                                             state.departed[state.first], ")"));
}

void leaveMpiJob(absl::string_view reason) {
  if (!mpiUp() || worldSize() < 2)
    return;
  int rank = 0, size = worldSize();
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char message[kReasonBytes] = {};
  std::memcpy(message, reason.data(),
              std::min<size_t>(reason.size(), kReasonBytes - 1));
  std::vector<MPI_Request> sends;
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank)
      continue;
    sends.emplace_back();
    MPI_Isend(message, kReasonBytes, MPI_CHAR, peer, kDepartureTag,
              MPI_COMM_WORLD, &sends.back());
  }
  // Until every other rank has left: a rank still working may take as long
  // as it needs (MPI_Finalize would wait for it too); one still in a
  // collective with this one fails on the message and ends the job.
  Departures &state = departures();
  absl::Duration pause = absl::Microseconds(50);
  while (static_cast<int>(state.departed.size()) < size - 1) {
    drain();
    absl::SleepFor(pause);
    pause = std::min(pause * 2, absl::Milliseconds(5));
  }
  MPI_Waitall(static_cast<int>(sends.size()), sends.data(),
              MPI_STATUSES_IGNORE);
  if (state.pending != MPI_REQUEST_NULL) {
    MPI_Cancel(&state.pending);
    MPI_Wait(&state.pending, MPI_STATUS_IGNORE);
  }
}

} // namespace zero::rt
