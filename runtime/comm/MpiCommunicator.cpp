//===- MpiCommunicator.cpp - Collectives over Open MPI --------------------===//
//
// Two paths:
//  * MPI's own non-blocking collectives, for pure data movement (all-gather,
//    broadcast, all-to-all), integer reductions (exact in any order) and, in
//    the non-deterministic mode, f32 reductions.
//  * A fixed-order path for every other float reduction (always for bf16 and
//    f16, which MPI cannot add; for f32 in the deterministic mode): each rank
//    receives every rank's contribution to its block by point-to-point
//    messages, reduces them in rank order in f32 (LocalReduce.cpp) and, for an
//    all-reduce, sends the reduced block to every rank.
//
// The second step of a fixed-order all-reduce can only be posted once the
// first has completed. Its messages carry a tag derived from the ticket, so
// they match whatever order ranks post them in, and every wait() advances
// every outstanding operation; ranks may therefore wait for their tickets in
// different orders without deadlock. MPI's collectives, posted at start in
// ticket order on every rank, need nothing of the kind.
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/Communicator.h"
#include "zero/runtime/Launch.h"
#include "zero/support/Status.h"

#include "Departures.h"
#include "LocalReduce.h"
#include "MpiTypes.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <errno.h> // program_invocation_short_name (GNU)
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <vector>

namespace zero::rt {
namespace {

/// Set when this process called MPI_Init_thread, so that finalizeMpi leaves
/// an embedding application's MPI alone.
bool weInitializedMpi = false;
/// Set once something is ending the process, so that the exit hook neither
/// prints a second message nor re-enters MPI_Abort.
std::atomic<bool> ending{false};

bool mpiActive() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

std::string mpiErrorString(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return absl::StrCat("MPI error ", code);
  return std::string(text, length);
}

#ifdef __GLIBC__
/// A rank that leaves with a failure status while MPI is still up ends the
/// job at once and says so. Open MPI's mpirun would end it too, but only
/// names the process as "[[jobid,1],R]", and other launchers may leave the
/// others waiting until their timeout. Successful exits are left to MPI.
void endJobOnFailedExit(int status, void *) {
  if (status == 0 || !mpiActive() || ending.exchange(true))
    return;
  int worldSize = 1, worldRank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  if (worldSize == 1)
    return;
  std::fflush(stdout);
  std::fprintf(stderr,
               "%s: rank %d: exited with status %d before the job "
               "finished; ending all ranks\n",
               program_invocation_short_name, worldRank, status);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, status);
}
#endif

class MpiCommunicator;

/// One started collective: the requests in flight and what to do once they
/// have all completed.
struct Operation {
  int64_t ticket = 0;
  /// The communicator it runs on.
  const MpiCommunicator *owner = nullptr;
  /// "all_reduce of 4096 bytes", for messages.
  std::string what;
  std::vector<MPI_Request> requests;
  /// Peer of each request, or -1 for a collective (any rank may hold it up).
  std::vector<int> peers;
  /// Run one at a time, each after the requests posted before it completed;
  /// a step may post more requests.
  std::deque<std::function<absl::Status()>> steps;
  /// Fixed-order path: the other ranks' contributions to this rank's block.
  std::vector<char> scratch;
  absl::Status error;
  bool done = false;
};

/// What a communicator shares with those split from it: one ticket
/// sequence (every rank starts the same collectives in the same order, so a
/// ticket names the same collective on every rank of its group) and the
/// operations in flight, which every wait advances.
struct OperationTable {
  int64_t nextTicket = 1;
  std::map<int64_t, std::unique_ptr<Operation>> operations;
};

class MpiCommunicator final : public Communicator {
public:
  MpiCommunicator(MPI_Comm comm, int rank, int size, int64_t tagSpace,
                  const CommOptions &options,
                  std::shared_ptr<OperationTable> table =
                      std::make_shared<OperationTable>(),
                  std::vector<int> jobRanks = {})
      : comm_(comm), rank_(rank), size_(size), tagSpace_(tagSpace),
        options_(options), table_(std::move(table)),
        jobRanks_(std::move(jobRanks)) {}

  ~MpiCommunicator() override {
    // Buffers of operations never waited for may still be written by MPI;
    // leaking them is the only safe choice.
    std::map<int64_t, std::unique_ptr<Operation>> &operations =
        table_->operations;
    for (auto entry = operations.begin(); entry != operations.end();) {
      if (entry->second->owner != this) {
        ++entry;
        continue;
      }
      (void)entry->second.release();
      entry = operations.erase(entry);
    }
    if (mpiActive())
      MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int jobRank(int rank) const override {
    return jobRanks_.empty() ? rank : jobRanks_[rank];
  }
  absl::StatusOr<std::unique_ptr<Communicator>> split(int color,
                                                      int key) override;
  absl::Status deadlineExceeded(const Operation &operation) const;
  /// The error of `operation` once another rank has left the job (`left`
  /// names it), unless the operation completes within a moment.
  absl::Status departed(Operation &operation, const absl::Status &left);

  absl::StatusOr<Ticket> startAllReduce(const void *in, void *out,
                                        int64_t count, DType dtype,
                                        ReduceKind kind) override;
  absl::StatusOr<Ticket> startReduceScatter(const void *in, void *out,
                                            int64_t countPerRank, DType dtype,
                                            ReduceKind kind) override;
  absl::StatusOr<Ticket> startAllGather(const void *in, void *out,
                                        int64_t countPerRank,
                                        DType dtype) override;
  absl::StatusOr<Ticket> startBroadcast(const void *in, void *out,
                                        int64_t count, DType dtype,
                                        int root) override;
  absl::StatusOr<Ticket> startAllToAll(const void *in, void *out,
                                       int64_t countPerRank,
                                       DType dtype) override;
  absl::Status wait(Ticket ticket) override;
  absl::Status barrier() override;
  [[noreturn]] void abortJob(absl::string_view message, int exitCode) override;

private:
  /// Checks what every start checks; `count` is the largest element count
  /// of one MPI call.
  absl::Status checkArguments(absl::string_view kind, const void *in,
                              const void *out, int64_t count,
                              bool needsIn) const;
  absl::Status checkReduction(absl::string_view kind, DType dtype,
                              ReduceKind reduce) const;
  /// Float reductions that MPI cannot do, or must not do when deterministic.
  bool fixedOrder(DType dtype) const {
    return dtype == DType::bf16 || dtype == DType::f16 ||
           (dtype == DType::f32 && options_.deterministic);
  }

  /// Takes the next ticket. An operation whose posting fails keeps it, so
  /// that buffers MPI may still use stay alive.
  Operation &newOperation(absl::string_view kind, int64_t bytes);
  int tag(const Operation &operation, int phase) const {
    return static_cast<int>((operation.ticket % tagSpace_) * 2 + phase);
  }
  absl::Status mpiFailed(const Operation &operation, absl::string_view call,
                         int code) const {
    return absl::InternalError(absl::StrCat(operation.what, ": ", call,
                                            " failed: ", mpiErrorString(code)));
  }

  /// Posts the exchange in which rank p receives every rank's slice
  /// [offsets[p], offsets[p] + lengths[p]) of `in`, then queues the fixed
  /// order reduction of the slices into `reduced`.
  absl::Status startFixedOrderReduction(Operation &operation, const char *in,
                                        std::vector<int64_t> offsets,
                                        std::vector<int64_t> lengths,
                                        char *reduced, DType dtype,
                                        ReduceKind kind);
  absl::Status post(Operation &operation, absl::string_view call, int code,
                    MPI_Request request, int peer);

  /// Tests `operation` and runs its steps as far as they go without blocking.
  absl::Status advance(Operation &operation);
  /// Advances every outstanding operation; failures are kept for their wait.
  void advanceAll();

  MPI_Comm comm_;
  int rank_;
  int size_;
  int64_t tagSpace_;
  CommOptions options_;
  // Every rank numbers its starts the same way, so a ticket names the same
  // collective on every rank and doubles as its message tag.
  std::shared_ptr<OperationTable> table_;
  /// Job rank of each rank here; empty: the same numbers.
  std::vector<int> jobRanks_;
};

absl::Status MpiCommunicator::checkArguments(absl::string_view kind,
                                             const void *in, const void *out,
                                             int64_t count,
                                             bool needsIn) const {
  if (count < 0)
    return absl::InvalidArgumentError(
        absl::StrCat(kind, ": negative element count ", count));
  if (count > INT_MAX)
    return absl::InvalidArgumentError(
        absl::StrCat(kind, ": ", count,
                     " elements exceed MPI's limit of 2^31-1 per message"));
  if (count > 0 && ((needsIn && !in) || !out))
    return absl::InvalidArgumentError(
        absl::StrCat(kind, ": null buffer for ", count, " elements"));
  return absl::OkStatus();
}

absl::Status MpiCommunicator::checkReduction(absl::string_view kind,
                                             DType dtype,
                                             ReduceKind reduce) const {
  if (isFloat(dtype) || reduce != ReduceKind::mean)
    return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(kind, ": ", reduceName(reduce), " is not defined for ",
                   dtypeName(dtype), " (integers support sum and max)"));
}

Operation &MpiCommunicator::newOperation(absl::string_view kind,
                                         int64_t bytes) {
  auto operation = std::make_unique<Operation>();
  operation->ticket = table_->nextTicket++;
  operation->owner = this;
  operation->what = absl::StrCat(kind, " of ", bytes, " bytes");
  Operation &result = *operation;
  table_->operations[result.ticket] = std::move(operation);
  return result;
}

absl::Status MpiCommunicator::post(Operation &operation, absl::string_view call,
                                   int code, MPI_Request request, int peer) {
  if (code != MPI_SUCCESS)
    return operation.error = mpiFailed(operation, call, code);
  operation.requests.push_back(request);
  operation.peers.push_back(peer);
  return absl::OkStatus();
}

absl::Status MpiCommunicator::startFixedOrderReduction(
    Operation &operation, const char *in, std::vector<int64_t> offsets,
    std::vector<int64_t> lengths, char *reduced, DType dtype, ReduceKind kind) {
  int64_t elementBytes = dtypeBytes(dtype);
  int64_t mine = lengths[rank_];
  operation.scratch.resize(static_cast<size_t>(std::max<int64_t>(size_ - 1, 0) *
                                               mine * elementBytes));
  auto slot = [&operation, mine, elementBytes, this](int peer) {
    int index = peer < rank_ ? peer : peer - 1;
    return operation.scratch.data() + index * mine * elementBytes;
  };
  MPI_Datatype type = mpiType(dtype);
  int tag1 = tag(operation, 0);
  // Receives first, so that most messages find their buffer posted; peers
  // in a rotated order, so that not every rank sends to rank 0 first.
  for (int step = 1; step < size_; ++step) {
    int peer = (rank_ - step + size_) % size_;
    MPI_Request request;
    int code = MPI_Irecv(slot(peer), static_cast<int>(mine), type, peer, tag1,
                         comm_, &request);
    ZERO_RETURN_IF_ERROR(post(operation, "MPI_Irecv", code, request, peer));
  }
  for (int step = 1; step < size_; ++step) {
    int peer = (rank_ + step) % size_;
    MPI_Request request;
    int code = MPI_Isend(in + offsets[peer] * elementBytes,
                         static_cast<int>(lengths[peer]), type, peer, tag1,
                         comm_, &request);
    ZERO_RETURN_IF_ERROR(post(operation, "MPI_Isend", code, request, peer));
  }
  const char *own = in + offsets[rank_] * elementBytes;
  operation.steps.push_back(
      [this, &operation, own, reduced, mine, dtype, kind, slot]() {
        std::vector<const void *> sources(size_);
        for (int peer = 0; peer < size_; ++peer)
          sources[peer] = peer == rank_ ? own : slot(peer);
        reduceInOrder(sources.data(), size_, reduced, mine, dtype, kind);
        std::vector<char>().swap(operation.scratch);
        return absl::OkStatus();
      });
  return absl::OkStatus();
}

absl::StatusOr<Communicator::Ticket>
MpiCommunicator::startAllReduce(const void *in, void *out, int64_t count,
                                DType dtype, ReduceKind kind) {
  ZERO_RETURN_IF_ERROR(checkArguments("all_reduce", in, out, count, true));
  ZERO_RETURN_IF_ERROR(checkReduction("all_reduce", dtype, kind));
  advanceAll();
  countTraffic("all_reduce", count, dtype);
  int64_t elementBytes = dtypeBytes(dtype);
  Operation &operation = newOperation("all_reduce", count * elementBytes);
  if (!fixedOrder(dtype)) {
    MPI_Request request;
    int code = MPI_Iallreduce(in == out ? MPI_IN_PLACE : in, out,
                              static_cast<int>(count), mpiType(dtype),
                              kind == ReduceKind::max ? MPI_MAX : MPI_SUM,
                              comm_, &request);
    ZERO_RETURN_IF_ERROR(post(operation, "MPI_Iallreduce", code, request, -1));
    if (kind == ReduceKind::mean)
      operation.steps.push_back([out, count, this]() {
        divideInPlace(static_cast<float *>(out), count, size_);
        return absl::OkStatus();
      });
    return operation.ticket;
  }

  // Reduce-scatter over a balanced split of `count`, then all-gather; the
  // split does not change any element's result, which is what makes this
  // equal to the runtime's own reduce_scatter + all_gather.
  std::vector<int64_t> offsets(size_ + 1), lengths(size_);
  for (int peer = 0; peer <= size_; ++peer)
    offsets[peer] = count * peer / size_;
  for (int peer = 0; peer < size_; ++peer)
    lengths[peer] = offsets[peer + 1] - offsets[peer];
  char *outBytes = static_cast<char *>(out);
  char *reduced = outBytes + offsets[rank_] * elementBytes;
  ZERO_RETURN_IF_ERROR(
      startFixedOrderReduction(operation, static_cast<const char *>(in),
                               offsets, lengths, reduced, dtype, kind));
  int tag2 = tag(operation, 1);
  operation.steps.push_back([this, &operation, outBytes, offsets, lengths,
                             elementBytes, dtype, tag2]() -> absl::Status {
    // Safe even in place: every send of the first exchange has completed.
    MPI_Datatype type = mpiType(dtype);
    for (int step = 1; step < size_; ++step) {
      int peer = (rank_ - step + size_) % size_;
      MPI_Request request;
      int code = MPI_Irecv(outBytes + offsets[peer] * elementBytes,
                           static_cast<int>(lengths[peer]), type, peer, tag2,
                           comm_, &request);
      ZERO_RETURN_IF_ERROR(post(operation, "MPI_Irecv", code, request, peer));
    }
    for (int step = 1; step < size_; ++step) {
      int peer = (rank_ + step) % size_;
      MPI_Request request;
      int code = MPI_Isend(outBytes + offsets[rank_] * elementBytes,
                           static_cast<int>(lengths[rank_]), type, peer, tag2,
                           comm_, &request);
      ZERO_RETURN_IF_ERROR(post(operation, "MPI_Isend", code, request, peer));
    }
    return absl::OkStatus();
  });
  return operation.ticket;
}

absl::StatusOr<Communicator::Ticket>
MpiCommunicator::startReduceScatter(const void *in, void *out,
                                    int64_t countPerRank, DType dtype,
                                    ReduceKind kind) {
  ZERO_RETURN_IF_ERROR(
      checkArguments("reduce_scatter", in, out, countPerRank, true));
  ZERO_RETURN_IF_ERROR(checkReduction("reduce_scatter", dtype, kind));
  advanceAll();
  int64_t elements = countPerRank * size_;
  countTraffic("reduce_scatter", elements, dtype);
  Operation &operation =
      newOperation("reduce_scatter", elements * dtypeBytes(dtype));
  if (!fixedOrder(dtype)) {
    MPI_Request request;
    int code = MPI_Ireduce_scatter_block(
        in, out, static_cast<int>(countPerRank), mpiType(dtype),
        kind == ReduceKind::max ? MPI_MAX : MPI_SUM, comm_, &request);
    ZERO_RETURN_IF_ERROR(
        post(operation, "MPI_Ireduce_scatter_block", code, request, -1));
    if (kind == ReduceKind::mean)
      operation.steps.push_back([out, countPerRank, this]() {
        divideInPlace(static_cast<float *>(out), countPerRank, size_);
        return absl::OkStatus();
      });
    return operation.ticket;
  }
  std::vector<int64_t> offsets(size_), lengths(size_, countPerRank);
  for (int peer = 0; peer < size_; ++peer)
    offsets[peer] = countPerRank * peer;
  ZERO_RETURN_IF_ERROR(startFixedOrderReduction(
      operation, static_cast<const char *>(in), offsets, lengths,
      static_cast<char *>(out), dtype, kind));
  return operation.ticket;
}

absl::StatusOr<Communicator::Ticket>
MpiCommunicator::startAllGather(const void *in, void *out, int64_t countPerRank,
                                DType dtype) {
  ZERO_RETURN_IF_ERROR(
      checkArguments("all_gather", in, out, countPerRank, true));
  advanceAll();
  int64_t elements = countPerRank * size_;
  countTraffic("all_gather", elements, dtype);
  Operation &operation =
      newOperation("all_gather", elements * dtypeBytes(dtype));
  const char *own =
      static_cast<char *>(out) + rank_ * countPerRank * dtypeBytes(dtype);
  MPI_Datatype type = mpiType(dtype);
  MPI_Request request;
  int code = MPI_Iallgather(
      in == own ? MPI_IN_PLACE : in, static_cast<int>(countPerRank), type, out,
      static_cast<int>(countPerRank), type, comm_, &request);
  ZERO_RETURN_IF_ERROR(post(operation, "MPI_Iallgather", code, request, -1));
  return operation.ticket;
}

absl::StatusOr<Communicator::Ticket>
MpiCommunicator::startBroadcast(const void *in, void *out, int64_t count,
                                DType dtype, int root) {
  ZERO_RETURN_IF_ERROR(
      checkArguments("broadcast", in, out, count, rank_ == root));
  if (root < 0 || root >= size_)
    return absl::InvalidArgumentError(absl::StrCat(
        "broadcast: root ", root, " is not a rank of a job of ", size_));
  advanceAll();
  countTraffic("broadcast", count, dtype);
  Operation &operation = newOperation("broadcast", count * dtypeBytes(dtype));
  if (rank_ == root && in != out && count > 0)
    std::memcpy(out, in, static_cast<size_t>(count * dtypeBytes(dtype)));
  MPI_Request request;
  int code = MPI_Ibcast(out, static_cast<int>(count), mpiType(dtype), root,
                        comm_, &request);
  ZERO_RETURN_IF_ERROR(post(operation, "MPI_Ibcast", code, request, -1));
  return operation.ticket;
}

absl::StatusOr<Communicator::Ticket>
MpiCommunicator::startAllToAll(const void *in, void *out, int64_t countPerRank,
                               DType dtype) {
  ZERO_RETURN_IF_ERROR(
      checkArguments("all_to_all", in, out, countPerRank, true));
  advanceAll();
  int64_t elements = countPerRank * size_;
  countTraffic("all_to_all", elements, dtype);
  int64_t bytes = elements * dtypeBytes(dtype);
  Operation &operation = newOperation("all_to_all", bytes);
  if (in == out && bytes > 0) {
    // MPI_Ialltoall has no in-place form in every Open MPI component.
    operation.scratch.assign(static_cast<const char *>(in),
                             static_cast<const char *>(in) + bytes);
    in = operation.scratch.data();
  }
  MPI_Datatype type = mpiType(dtype);
  MPI_Request request;
  int code =
      MPI_Ialltoall(in, static_cast<int>(countPerRank), type, out,
                    static_cast<int>(countPerRank), type, comm_, &request);
  ZERO_RETURN_IF_ERROR(post(operation, "MPI_Ialltoall", code, request, -1));
  return operation.ticket;
}

absl::Status MpiCommunicator::advance(Operation &operation) {
  while (!operation.done) {
    if (!operation.error.ok())
      return operation.error;
    if (!operation.requests.empty()) {
      int complete = 0;
      std::vector<MPI_Status> statuses(operation.requests.size());
      int code =
          MPI_Testall(static_cast<int>(operation.requests.size()),
                      operation.requests.data(), &complete, statuses.data());
      if (code == MPI_ERR_IN_STATUS) {
        for (const MPI_Status &status : statuses)
          if (status.MPI_ERROR != MPI_SUCCESS &&
              status.MPI_ERROR != MPI_ERR_PENDING) {
            code = status.MPI_ERROR;
            break;
          }
      }
      if (code != MPI_SUCCESS)
        return operation.error = mpiFailed(operation, "MPI_Testall", code);
      if (!complete)
        return absl::OkStatus();
      operation.requests.clear();
      operation.peers.clear();
    }
    if (operation.steps.empty()) {
      operation.done = true;
      break;
    }
    std::function<absl::Status()> step = std::move(operation.steps.front());
    operation.steps.pop_front();
    if (absl::Status status = step(); !status.ok()) {
      if (operation.error.ok())
        operation.error = status;
      return operation.error;
    }
  }
  return absl::OkStatus();
}

void MpiCommunicator::advanceAll() {
  for (auto &entry : table_->operations)
    (void)advance(*entry.second);
}

absl::Status
MpiCommunicator::deadlineExceeded(const Operation &operation) const {
  // A request that has not completed names the peer it depends on; a
  // collective (peer -1) could be held up by anyone.
  std::set<int> peers;
  bool anyone = false;
  for (size_t i = 0; i < operation.requests.size(); ++i) {
    int complete = 0;
    MPI_Status status;
    MPI_Request request = operation.requests[i];
    if (request == MPI_REQUEST_NULL ||
        (MPI_Request_get_status(request, &complete, &status) == MPI_SUCCESS &&
         complete))
      continue;
    if (operation.peers[i] < 0)
      anyone = true;
    else
      peers.insert(jobRank(operation.peers[i]));
  }
  std::string waitingOn;
  if (!anyone && !peers.empty())
    waitingOn = absl::StrCat(" (waiting on rank", peers.size() > 1 ? "s " : " ",
                             absl::StrJoin(peers, ", "), ")");
  return absl::DeadlineExceededError(absl::StrCat(
      operation.what, " did not complete within ", options_.timeoutSeconds,
      " s: a rank is dead or stuck", waitingOn));
}

absl::Status MpiCommunicator::departed(Operation &operation,
                                       const absl::Status &left) {
  // What the rank that left had sent before it did may still be arriving:
  // a collective that completes within a moment did not need it.
  absl::Time until = absl::Now() + absl::Milliseconds(200);
  while (absl::Now() < until) {
    ZERO_RETURN_IF_ERROR(advance(operation));
    if (operation.done)
      return absl::OkStatus();
    std::this_thread::yield();
  }
  return absl::UnavailableError(absl::StrCat(
      left.message(), " while this rank waited for ", operation.what));
}

absl::Status MpiCommunicator::wait(Ticket ticket) {
  std::map<int64_t, std::unique_ptr<Operation>> &operations =
      table_->operations;
  auto found = operations.find(ticket);
  if (found == operations.end())
    return absl::NotFoundError(
        absl::StrCat("wait: ticket ", ticket,
                     " is not outstanding (never started or already waited)"));
  Operation &operation = *found->second;
  absl::Time start = absl::Now();
  absl::Time deadline = options_.timeoutSeconds > 0
                            ? start + absl::Seconds(options_.timeoutSeconds)
                            : absl::InfiniteFuture();
  absl::Duration pause = absl::Microseconds(50);
  for (;;) {
    ZERO_RETURN_IF_ERROR(advance(operation));
    if (operation.done) {
      operations.erase(found);
      return absl::OkStatus();
    }
    // Another rank may be waiting for a later step of one of ours.
    advanceAll();
    if (absl::Status left = comm::checkDepartures(); !left.ok()) {
      absl::Status status = departed(operation, left);
      if (status.ok())
        operations.erase(found);
      return status;
    }
    absl::Time now = absl::Now();
    if (now >= deadline)
      return operation.owner->deadlineExceeded(operation);
    // MPI moves large messages only while both sides poll, so sleeping
    // between polls slows transfers several-fold; yielding keeps the
    // latency of MPI_Wait and still lets oversubscribed ranks run. A wait
    // that lasts a second is waiting for a slow or stuck peer, not for the
    // wire, and then sleeps so as not to burn a core until the timeout.
    if (now - start < absl::Seconds(1)) {
      std::this_thread::yield();
    } else {
      absl::SleepFor(pause);
      pause = std::min(pause * 2, absl::Milliseconds(1));
    }
  }
}

absl::StatusOr<std::unique_ptr<Communicator>> MpiCommunicator::split(int color,
                                                                     int key) {
  advanceAll();
  MPI_Comm sub;
  int code = MPI_Comm_split(comm_, color, key, &sub);
  if (code != MPI_SUCCESS)
    return absl::UnavailableError(absl::StrCat(
        "MPI communicator: MPI_Comm_split failed: ", mpiErrorString(code)));
  MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(sub, &rank);
  MPI_Comm_size(sub, &size);
  // The job ranks of the group, so that messages name ranks as mpirun does.
  std::vector<int> local(size), job(size);
  for (int index = 0; index < size; ++index)
    local[index] = index;
  MPI_Group group, world;
  MPI_Comm_group(sub, &group);
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  MPI_Group_translate_ranks(group, size, local.data(), world, job.data());
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  auto child = std::make_unique<MpiCommunicator>(sub, rank, size, tagSpace_,
                                                 options_, table_, job);
  child->setTrafficParent(this);
  return std::unique_ptr<Communicator>(std::move(child));
}

absl::Status MpiCommunicator::barrier() {
  advanceAll();
  Operation &operation = newOperation("barrier", 0);
  operation.what = "barrier";
  MPI_Request request;
  int code = MPI_Ibarrier(comm_, &request);
  ZERO_RETURN_IF_ERROR(post(operation, "MPI_Ibarrier", code, request, -1));
  return wait(operation.ticket);
}

void MpiCommunicator::abortJob(absl::string_view message, int exitCode) {
  ending.store(true);
  std::fflush(stdout);
  // Named after the program that fails (zero-run, gpt2_train, a test), as
  // every rank's line is the only thing a user may see of the job.
  std::string line = absl::StrCat(program_invocation_short_name, ": rank ",
                                  rank_, ": ", message, "\n");
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
  if (mpiActive())
    MPI_Abort(MPI_COMM_WORLD, exitCode);
  std::_Exit(exitCode);
}

} // namespace

absl::StatusOr<std::unique_ptr<Communicator>>
createMpiCommunicator(const CommOptions &options) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized)
    return absl::FailedPreconditionError(
        "MPI communicator: MPI was already finalized");
  if (!initialized) {
    // Serialized: the executor may call from a thread other than main, one
    // at a time.
    int provided = 0;
    int code =
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (code != MPI_SUCCESS)
      return absl::UnavailableError(absl::StrCat(
          "MPI communicator: MPI_Init_thread failed: ", mpiErrorString(code)));
    weInitializedMpi = true;
#ifdef __GLIBC__
    on_exit(endJobOnFailedExit, nullptr);
#endif
  }
  MPI_Comm comm;
  int code = MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  if (code != MPI_SUCCESS)
    return absl::UnavailableError(absl::StrCat(
        "MPI communicator: MPI_Comm_dup failed: ", mpiErrorString(code)));
  int rank = 0, size = 1, hasTagBound = 0;
  void *tagBound = nullptr;
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Comm_get_attr(comm, MPI_TAG_UB, &tagBound, &hasTagBound);
  // A launcher that started this process as one of several whose MPI did
  // not join them (torchrun; srun without PMI) would have each train alone.
  absl::StatusOr<Launch> launch = resolveLaunch();
  if (!launch.ok())
    return launch.status();
  ZERO_RETURN_IF_ERROR(checkLaunchAgainstMpi(*launch, rank, size));
  // MPI guarantees tags up to at least 32767.
  int64_t tagSpace = (static_cast<int64_t>(
                          hasTagBound ? *static_cast<int *>(tagBound) : 32767) +
                      1) /
                     2;
  return std::unique_ptr<Communicator>(
      new MpiCommunicator(comm, rank, size, tagSpace, options));
}

void finalizeMpi() {
  if (!weInitializedMpi || !mpiActive())
    return;
  MPI_Finalize();
}

void abortMpiJob(int exitCode) {
  std::fflush(stdout);
  std::fflush(stderr);
  if (mpiActive())
    MPI_Abort(MPI_COMM_WORLD, exitCode);
  std::_Exit(exitCode);
}

} // namespace zero::rt
