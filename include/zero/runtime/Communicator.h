//===- Communicator.h - Collectives between the ranks of a job --*- C++ -*-===//
//
// The runtime moves tensors between ranks only through this interface, so
// that the executor does not depend on MPI or NCCL. Every collective starts
// non-blocking and returns a ticket; the executor overlaps the transfer with
// compute and waits where the program consumes the result.
//
// All ranks must start the same collectives in the same order (ZeRO programs
// are SPMD), and may wait for them in any order.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_COMMUNICATOR_H
#define ZERO_RUNTIME_COMMUNICATOR_H

#include "zero/runtime/DType.h"
#include "zero/support/TrafficCount.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace zero::rt {

enum class ReduceKind { sum, mean, max };

/// Traffic of one collective kind, accounted as the compile-time plan
/// report accounts it (one type, zero/support/TrafficCount.h), so that the
/// two are compared field by field.
using ::zero::TrafficCount;

struct CommOptions {
  /// Every floating-point reduction adds the ranks' contributions in rank
  /// order, so results are bitwise reproducible and an all-reduce equals a
  /// reduce-scatter followed by an all-gather.
  bool deterministic = false;
  /// How long `wait` lets one collective run before it reports a dead or
  /// stuck rank; zero or less waits forever.
  double timeoutSeconds = 120;
};

class Communicator {
public:
  using Ticket = int64_t;

  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Non-blocking starts; the buffers must stay untouched until wait(ticket).
  // Float types reduce in f32 and round once into the element type; integer
  // types support sum and max.

  /// `in == out` is allowed.
  virtual absl::StatusOr<Ticket> startAllReduce(const void *in, void *out,
                                                int64_t count, DType dtype,
                                                ReduceKind kind) = 0;
  /// `in` holds size() * countPerRank elements; block r ends on rank r.
  virtual absl::StatusOr<Ticket> startReduceScatter(const void *in, void *out,
                                                    int64_t countPerRank,
                                                    DType dtype,
                                                    ReduceKind kind) = 0;
  /// `out` holds size() * countPerRank elements, rank-major. `in` may be
  /// this rank's block of `out`.
  virtual absl::StatusOr<Ticket> startAllGather(const void *in, void *out,
                                                int64_t countPerRank,
                                                DType dtype) = 0;
  /// `in` is read on `root` only.
  virtual absl::StatusOr<Ticket> startBroadcast(const void *in, void *out,
                                                int64_t count, DType dtype,
                                                int root) = 0;
  /// Block r of every rank's `in` goes to rank r, where it lands in block
  /// (sender) of `out`.
  virtual absl::StatusOr<Ticket> startAllToAll(const void *in, void *out,
                                               int64_t countPerRank,
                                               DType dtype) = 0;
  virtual absl::Status wait(Ticket ticket) = 0;

  // Blocking forms.
  absl::Status allReduce(const void *in, void *out, int64_t count, DType dtype,
                         ReduceKind kind) {
    return finish(startAllReduce(in, out, count, dtype, kind));
  }
  absl::Status reduceScatter(const void *in, void *out, int64_t countPerRank,
                             DType dtype, ReduceKind kind) {
    return finish(startReduceScatter(in, out, countPerRank, dtype, kind));
  }
  absl::Status allGather(const void *in, void *out, int64_t countPerRank,
                         DType dtype) {
    return finish(startAllGather(in, out, countPerRank, dtype));
  }
  absl::Status broadcast(const void *in, void *out, int64_t count, DType dtype,
                         int root) {
    return finish(startBroadcast(in, out, count, dtype, root));
  }
  absl::Status allToAll(const void *in, void *out, int64_t countPerRank,
                        DType dtype) {
    return finish(startAllToAll(in, out, countPerRank, dtype));
  }

  virtual absl::Status barrier() = 0;

  /// The communicator of the ranks of this one that pass the same `color`,
  /// ranked by `key` (MPI_Comm_split): the group of one placement axis.
  /// Collective over this communicator. The new communicator's collectives
  /// take tickets from the same sequence as this one's, and wait() on either
  /// advances both, so that ranks waiting on different axes cannot hold each
  /// other up. Its traffic is counted on it and on this communicator. The
  /// default refuses: not every communicator can be split.
  virtual absl::StatusOr<std::unique_ptr<Communicator>> split(int color,
                                                              int key);
  /// This communicator's ranks as ranks of the job (MPI_COMM_WORLD), for
  /// messages: rank r here is jobRank(r) there.
  virtual int jobRank(int rank) const { return rank; }

  /// Ends every rank of the job with `message` on stderr (prefixed
  /// "zero-run: rank R: "); never returns.
  [[noreturn]] virtual void abortJob(absl::string_view message,
                                     int exitCode) = 0;

  /// Bytes moved per collective kind ("all_reduce", "reduce_scatter",
  /// "all_gather", "broadcast", "all_to_all") since the last reset.
  const std::map<std::string, TrafficCount> &traffic() const {
    return traffic_;
  }
  void resetTraffic() { traffic_.clear(); }
  /// Where else this communicator's traffic is counted: the communicator it
  /// was split from.
  void setTrafficParent(Communicator *parent) { trafficParent_ = parent; }
  /// Adds traffic counted elsewhere: a replayed CUDA graph issues the
  /// collectives it captured without calling this communicator again.
  void addTraffic(const std::map<std::string, TrafficCount> &more) {
    for (const auto &[kind, stats] : more) {
      TrafficCount &total = traffic_[kind];
      total.count += stats.count;
      total.elements += stats.elements;
      total.bytes += stats.bytes;
      total.sentBytesPerRank += stats.sentBytesPerRank;
    }
  }

protected:
  /// Accounts one collective exactly as PlanReport's addTraffic does for one
  /// op: `elements` is the full tensor (for reduce_scatter and all_gather
  /// size() times the per-rank block).
  void countTraffic(const std::string &kind, int64_t elements, DType dtype) {
    int64_t ranks = size();
    int64_t bytes = elements * dtypeBytes(dtype);
    int64_t factor = kind == "all_reduce" ? 2 : 1;
    int64_t repeat = 1;
    TrafficCount &stats = traffic_[kind];
    stats.count += repeat;
    stats.elements += elements * repeat;
    stats.bytes += bytes * repeat;
    // Same expression and evaluation order as PlanReport, so that the
    // doubles agree bit for bit.
    double sent =
        repeat * factor * static_cast<double>(bytes) * (ranks - 1) / ranks;
    stats.sentBytesPerRank += sent;
    for (Communicator *parent = trafficParent_; parent;
         parent = parent->trafficParent_)
      parent->addTraffic(
          {{kind, {repeat, elements * repeat, bytes * repeat, sent}}});
  }

private:
  absl::Status finish(absl::StatusOr<Ticket> ticket) {
    if (!ticket.ok())
      return ticket.status();
    return wait(*ticket);
  }

  std::map<std::string, TrafficCount> traffic_;
  Communicator *trafficParent_ = nullptr;
};

inline absl::StatusOr<std::unique_ptr<Communicator>> Communicator::split(int,
                                                                         int) {
  return absl::UnimplementedError(
      "this communicator cannot be split into the groups of placement axes");
}

/// One communicator per axis of the placement grid `grid` over the ranks of
/// `job` (whose size must be the grid's product): ranks are numbered
/// row-major, the last axis varying fastest, so on a [nodes, per-node] grid
/// axis 1's groups are runs of consecutive ranks (a node) and axis 0's are
/// the ranks with the same place in every node. Each is split from `job`
/// (Communicator::split); collective over `job`.
absl::StatusOr<std::vector<std::unique_ptr<Communicator>>>
splitPlacementAxes(Communicator &job, absl::Span<const int64_t> grid);

/// Initializes MPI when needed (MPI_Init_thread; also works as a singleton
/// without mpirun) and duplicates MPI_COMM_WORLD with MPI_ERRORS_RETURN. May
/// be called more than once (each communicator has its own duplicate); all
/// ranks must create communicators in the same order.
absl::StatusOr<std::unique_ptr<Communicator>>
createMpiCommunicator(const CommOptions &options);

/// Tells every other rank that this one leaves the job and why (`reason`,
/// "its script ended"), then waits until every other rank has left too, as
/// MPI_Finalize would. A rank still waiting for this one in a collective
/// fails at once, naming it, rather than at its collective timeout. For
/// jobs whose every rank announces its exit (the Python package does, at
/// interpreter exit); call before finalizeMpi.
void leaveMpiJob(absl::string_view reason);

/// MPI_Finalize if this process initialized MPI. Call once at exit, on every
/// rank, after the communicators are destroyed. A process that initialized
/// MPI and exits non-zero without it ends the whole job with a message.
void finalizeMpi();

/// Ends the whole job now (MPI_Abort on every rank when MPI is running in
/// this process, else a plain exit) with `exitCode`: for an error one rank
/// cannot recover from while the others may be waiting in a collective for
/// it, where MPI_Finalize would wait for them.
[[noreturn]] void abortMpiJob(int exitCode);

/// Whether this process is a rank of an mpirun job.
bool isUnderMpirun();

/// Replaces this process by `ranks` ranks of the same executable with the
/// same arguments under `mpirun --oversubscribe` (shared memory, unbound,
/// `--allow-run-as-root` for root). Returns only when that fails.
absl::Status relaunchUnderMpirun(int ranks, int argc, char **argv);

} // namespace zero::rt

#endif // ZERO_RUNTIME_COMMUNICATOR_H
