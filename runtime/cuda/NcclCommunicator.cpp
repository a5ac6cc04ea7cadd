//===- NcclCommunicator.cpp - Collectives on device buffers over NCCL -----===//
//
// Every collective is one NCCL call on a stream (all-to-all: one group of
// sends and receives). The ticketed forms run on the communicator's own
// stream and mark their end with a CUDA event; waiting polls that event so
// that an NCCL error, or a peer that never joins, ends the wait with a status
// instead of a hang. Once the NCCL communicator has been aborted every later
// call fails at once: its handle is gone, and the job is ending anyway.
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/NcclCommunicator.h"
#include "zero/support/Status.h"

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>

namespace zero::rt {
namespace {

// The bootstrap moves the id as i32 elements.
static_assert(sizeof(ncclUniqueId) == 128, "ncclUniqueId is 32 i32 words");

ncclDataType_t ncclType(DType dtype) {
  switch (dtype) {
  case DType::f32:
    return ncclFloat32;
  case DType::bf16:
    return ncclBfloat16;
  case DType::f16:
    return ncclFloat16;
  case DType::i32:
    return ncclInt32;
  case DType::i64:
    return ncclInt64;
  case DType::i8:
    return ncclInt8;
  }
  return ncclInt8;
}

std::string describe(absl::string_view kind, int64_t elements, DType dtype) {
  return absl::StrCat(kind, " of ", elements * dtypeBytes(dtype), " bytes");
}

absl::Status checkBuffers(absl::string_view kind, const void *in,
                          const void *out, int64_t count, bool needsIn) {
  if (count < 0)
    return absl::InvalidArgumentError(
        absl::StrCat(kind, ": negative element count ", count));
  if (count > 0 && ((needsIn && !in) || !out))
    return absl::InvalidArgumentError(
        absl::StrCat(kind, ": null buffer for ", count, " elements"));
  return absl::OkStatus();
}

absl::StatusOr<ncclRedOp_t> reduceOp(absl::string_view kind, DType dtype,
                                     ReduceKind reduce) {
  switch (reduce) {
  case ReduceKind::sum:
    return ncclSum;
  case ReduceKind::max:
    return ncclMax;
  case ReduceKind::mean:
    // ncclAvg divides in the element type; an integer mean would truncate.
    if (isFloat(dtype))
      return ncclAvg;
    return absl::InvalidArgumentError(
        absl::StrCat(kind, ": mean is not defined for ", dtypeName(dtype),
                     " (integers support sum and max)"));
  }
  return absl::InvalidArgumentError(absl::StrCat(kind, ": unknown reduction"));
}

} // namespace

struct NcclCommunicator::State {
  State(Communicator &bootstrap, const CommOptions &options)
      : bootstrap(bootstrap), options(options), rank(bootstrap.rank()),
        size(bootstrap.size()) {}
  ~State();

  /// FailedPrecondition once the NCCL communicator is gone.
  absl::Status usable() const {
    if (!aborted)
      return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        "rank ", rank, ": the NCCL communicator was aborted after a failure"));
  }
  /// usable(), then the checks of every collective's count and buffers.
  absl::Status check(absl::string_view kind, const void *in, const void *out,
                     int64_t count, bool needsIn) const {
    ZERO_RETURN_IF_ERROR(usable());
    return checkBuffers(kind, in, out, count, needsIn);
  }
  /// OK, or InternalError "rank R: WHAT: CALL failed: ERROR", with NCCL's
  /// last message where it has one.
  absl::Status ncclStatus(ncclResult_t result, absl::string_view call,
                          absl::string_view what) const {
    if (result == ncclSuccess)
      return absl::OkStatus();
    const char *last = comm ? ncclGetLastError(comm) : nullptr;
    return absl::InternalError(absl::StrCat(
        "rank ", rank, ": ", what, ": ", call,
        " failed: ", ncclGetErrorString(result),
        last && *last ? absl::StrCat(" (", last, ")") : std::string()));
  }
  absl::Status cudaStatus(cudaError_t error, absl::string_view call,
                          absl::string_view what) const {
    if (error == cudaSuccess)
      return absl::OkStatus();
    return absl::InternalError(
        absl::StrCat("rank ", rank, ": ", what, ": ", call,
                     " failed: ", cudaGetErrorName(error), " (",
                     cudaGetErrorString(error), ")"));
  }
  /// Polls `query` (cudaEventQuery or cudaStreamQuery) until the work is
  /// done; on any error or at the timeout it aborts the NCCL communicator,
  /// so that a dead peer cannot hold this rank in a kernel forever.
  absl::Status poll(absl::FunctionRef<cudaError_t()> query,
                    absl::string_view call, absl::string_view what);
  void abort() {
    if (!comm)
      return;
    aborted = true;
    ncclCommAbort(comm);
    // The handle is freed: messages must no longer ask it for its error.
    comm = nullptr;
  }
  /// Runs `enqueue` on the communicator's stream and returns a ticket for an
  /// event recorded after it.
  template <typename Enqueue>
  absl::StatusOr<Ticket> start(std::string what, Enqueue enqueue);

  struct Pending {
    cudaEvent_t event;
    std::string what;
  };

  Communicator &bootstrap;
  CommOptions options;
  int rank;
  int size;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  /// One i32 for barrier(), which cannot allocate while it runs.
  void *scratch = nullptr;
  bool aborted = false;
  Ticket nextTicket = 1;
  std::map<Ticket, Pending> pending;
};

NcclCommunicator::State::~State() {
  // A communicator with its own work still in flight is destroyed only once
  // that work is done; past the timeout it is aborted instead, since
  // ncclCommDestroy would wait for it forever.
  if (comm && stream &&
      !poll([this] { return cudaStreamQuery(stream); }, "cudaStreamQuery",
            "shutdown")
           .ok())
    abort();
  if (comm)
    ncclCommDestroy(comm);
  for (auto &entry : pending)
    cudaEventDestroy(entry.second.event);
  if (scratch)
    cudaFree(scratch);
  if (stream)
    cudaStreamDestroy(stream);
}

absl::Status
NcclCommunicator::State::poll(absl::FunctionRef<cudaError_t()> query,
                              absl::string_view call, absl::string_view what) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  for (;;) {
    cudaError_t error = query();
    if (error == cudaSuccess)
      return absl::OkStatus();
    if (error != cudaErrorNotReady) {
      abort();
      return cudaStatus(error, call, what);
    }
    ncclResult_t asyncError = ncclSuccess;
    absl::Status status = ncclStatus(ncclCommGetAsyncError(comm, &asyncError),
                                     "ncclCommGetAsyncError", what);
    if (status.ok() && asyncError != ncclInProgress)
      status = ncclStatus(asyncError, "the NCCL collective", what);
    if (!status.ok()) {
      abort();
      return status;
    }
    double elapsed =
        std::chrono::duration<double>(Clock::now() - start).count();
    if (options.timeoutSeconds > 0 && elapsed >= options.timeoutSeconds) {
      abort();
      return absl::DeadlineExceededError(
          absl::StrCat("rank ", rank, ": ", what, " did not finish within ",
                       options.timeoutSeconds, " s: a rank died or stopped"));
    }
    // NCCL runs on the GPU without host help, so a short sleep costs no
    // bandwidth and leaves the core to the other ranks.
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

template <typename Enqueue>
absl::StatusOr<Communicator::Ticket>
NcclCommunicator::State::start(std::string what, Enqueue enqueue) {
  cudaEvent_t event = nullptr;
  // Made first, so that a collective is never left in flight without one.
  ZERO_RETURN_IF_ERROR(
      cudaStatus(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                 "cudaEventCreateWithFlags", what));
  absl::Status status = enqueue(static_cast<CudaStreamHandle>(stream));
  if (status.ok())
    status =
        cudaStatus(cudaEventRecord(event, stream), "cudaEventRecord", what);
  if (!status.ok()) {
    cudaEventDestroy(event);
    return status;
  }
  Ticket ticket = nextTicket++;
  pending[ticket] = {event, std::move(what)};
  return ticket;
}

NcclCommunicator::NcclCommunicator(std::unique_ptr<State> state)
    : state(std::move(state)) {}

NcclCommunicator::~NcclCommunicator() = default;

absl::StatusOr<std::unique_ptr<NcclCommunicator>>
NcclCommunicator::create(Communicator &bootstrap, const CommOptions &options) {
  if (options.deterministic)
    return absl::InvalidArgumentError(
        "NCCL communicator: deterministic reductions are not available: "
        "NCCL reduces floats in their own type along its ring or tree, not "
        "in f32 in rank order; use the MPI communicator");
  auto state = std::make_unique<State>(bootstrap, options);
  absl::string_view what = "creating the NCCL communicator";
  // Rank 0 makes the id and every rank receives it; should rank 0 fail here,
  // the others fail in the broadcast and the caller ends the job.
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (state->rank == 0)
    ZERO_RETURN_IF_ERROR(
        state->ncclStatus(ncclGetUniqueId(&id), "ncclGetUniqueId", what));
  if (absl::Status status = bootstrap.broadcast(
          &id, &id, sizeof(id) / sizeof(int32_t), DType::i32, /*root=*/0);
      !status.ok())
    return absl::Status(
        status.code(),
        absl::StrCat(what, ": broadcasting the NCCL id: ", status.message()));
  ncclComm_t comm = nullptr;
  ncclResult_t result = ncclCommInitRank(&comm, state->size, id, state->rank);
  if (result != ncclSuccess)
    return state->ncclStatus(result, "ncclCommInitRank", what);
  state->comm = comm;
  // Non-blocking: the legacy default stream must not order this stream's
  // collectives after unrelated work.
  absl::Status status = state->cudaStatus(
      cudaStreamCreateWithFlags(&state->stream, cudaStreamNonBlocking),
      "cudaStreamCreateWithFlags", what);
  if (status.ok())
    status = state->cudaStatus(cudaMalloc(&state->scratch, sizeof(int32_t)),
                               "cudaMalloc", what);
  if (status.ok())
    status = state->cudaStatus(cudaMemset(state->scratch, 0, sizeof(int32_t)),
                               "cudaMemset", what);
  if (!status.ok())
    return status;
  return std::unique_ptr<NcclCommunicator>(
      new NcclCommunicator(std::move(state)));
}

int NcclCommunicator::rank() const { return state->rank; }
int NcclCommunicator::size() const { return state->size; }

absl::Status NcclCommunicator::enqueueAllReduce(const void *in, void *out,
                                                int64_t count, DType dtype,
                                                ReduceKind kind,
                                                CudaStreamHandle stream) {
  ZERO_RETURN_IF_ERROR(state->check("all_reduce", in, out, count, true));
  ZERO_ASSIGN_OR_RETURN(ncclRedOp_t op, reduceOp("all_reduce", dtype, kind));
  countTraffic("all_reduce", count, dtype);
  return state->ncclStatus(
      ncclAllReduce(in, out, static_cast<size_t>(count), ncclType(dtype), op,
                    state->comm, static_cast<cudaStream_t>(stream)),
      "ncclAllReduce", describe("all_reduce", count, dtype));
}

absl::Status NcclCommunicator::enqueueReduceScatter(const void *in, void *out,
                                                    int64_t countPerRank,
                                                    DType dtype,
                                                    ReduceKind kind,
                                                    CudaStreamHandle stream) {
  ZERO_RETURN_IF_ERROR(
      state->check("reduce_scatter", in, out, countPerRank, true));
  ZERO_ASSIGN_OR_RETURN(ncclRedOp_t op,
                        reduceOp("reduce_scatter", dtype, kind));
  int64_t elements = countPerRank * state->size;
  countTraffic("reduce_scatter", elements, dtype);
  return state->ncclStatus(
      ncclReduceScatter(in, out, static_cast<size_t>(countPerRank),
                        ncclType(dtype), op, state->comm,
                        static_cast<cudaStream_t>(stream)),
      "ncclReduceScatter", describe("reduce_scatter", elements, dtype));
}

absl::Status NcclCommunicator::enqueueAllGather(const void *in, void *out,
                                                int64_t countPerRank,
                                                DType dtype,
                                                CudaStreamHandle stream) {
  ZERO_RETURN_IF_ERROR(state->check("all_gather", in, out, countPerRank, true));
  int64_t elements = countPerRank * state->size;
  countTraffic("all_gather", elements, dtype);
  // In place (`in` is this rank's block of `out`) is NCCL's own in-place form.
  return state->ncclStatus(
      ncclAllGather(in, out, static_cast<size_t>(countPerRank), ncclType(dtype),
                    state->comm, static_cast<cudaStream_t>(stream)),
      "ncclAllGather", describe("all_gather", elements, dtype));
}

absl::Status NcclCommunicator::enqueueBroadcast(const void *in, void *out,
                                                int64_t count, DType dtype,
                                                int root,
                                                CudaStreamHandle stream) {
  ZERO_RETURN_IF_ERROR(
      state->check("broadcast", in, out, count, state->rank == root));
  if (root < 0 || root >= state->size)
    return absl::InvalidArgumentError(absl::StrCat(
        "broadcast: root ", root, " is not a rank of a job of ", state->size));
  countTraffic("broadcast", count, dtype);
  return state->ncclStatus(
      ncclBroadcast(in, out, static_cast<size_t>(count), ncclType(dtype), root,
                    state->comm, static_cast<cudaStream_t>(stream)),
      "ncclBroadcast", describe("broadcast", count, dtype));
}

absl::Status NcclCommunicator::enqueueAllToAll(const void *in, void *out,
                                               int64_t countPerRank,
                                               DType dtype,
                                               CudaStreamHandle stream) {
  ZERO_RETURN_IF_ERROR(state->check("all_to_all", in, out, countPerRank, true));
  // Sends and receives of one group run concurrently, so in place would
  // overwrite blocks before they are sent, and a copy would need scratch that
  // a captured stream cannot allocate.
  if (in == out && countPerRank > 0 && state->size > 1)
    return absl::InvalidArgumentError(
        "all_to_all: in place is not supported by the NCCL communicator");
  int64_t elements = countPerRank * state->size;
  countTraffic("all_to_all", elements, dtype);
  std::string what = describe("all_to_all", elements, dtype);
  int64_t blockBytes = countPerRank * dtypeBytes(dtype);
  auto cudaStream = static_cast<cudaStream_t>(stream);
  absl::Status status =
      state->ncclStatus(ncclGroupStart(), "ncclGroupStart", what);
  if (!status.ok())
    return status;
  for (int peer = 0; peer < state->size && status.ok(); ++peer) {
    status = state->ncclStatus(
        ncclSend(static_cast<const char *>(in) + peer * blockBytes,
                 static_cast<size_t>(countPerRank), ncclType(dtype), peer,
                 state->comm, cudaStream),
        "ncclSend", what);
    if (status.ok())
      status = state->ncclStatus(
          ncclRecv(static_cast<char *>(out) + peer * blockBytes,
                   static_cast<size_t>(countPerRank), ncclType(dtype), peer,
                   state->comm, cudaStream),
          "ncclRecv", what);
  }
  // The group must be closed even after a failed call inside it.
  absl::Status ended = state->ncclStatus(ncclGroupEnd(), "ncclGroupEnd", what);
  return status.ok() ? ended : status;
}

absl::Status NcclCommunicator::synchronize(CudaStreamHandle stream,
                                           absl::string_view what) {
  ZERO_RETURN_IF_ERROR(state->usable());
  auto cudaStream = static_cast<cudaStream_t>(stream);
  return state->poll([cudaStream] { return cudaStreamQuery(cudaStream); },
                     "cudaStreamQuery", what);
}

absl::StatusOr<Communicator::Ticket>
NcclCommunicator::startAllReduce(const void *in, void *out, int64_t count,
                                 DType dtype, ReduceKind kind) {
  return state->start(
      describe("all_reduce", count, dtype), [&](CudaStreamHandle stream) {
        return enqueueAllReduce(in, out, count, dtype, kind, stream);
      });
}

absl::StatusOr<Communicator::Ticket>
NcclCommunicator::startReduceScatter(const void *in, void *out,
                                     int64_t countPerRank, DType dtype,
                                     ReduceKind kind) {
  return state->start(describe("reduce_scatter", countPerRank * size(), dtype),
                      [&](CudaStreamHandle stream) {
                        return enqueueReduceScatter(in, out, countPerRank,
                                                    dtype, kind, stream);
                      });
}

absl::StatusOr<Communicator::Ticket>
NcclCommunicator::startAllGather(const void *in, void *out,
                                 int64_t countPerRank, DType dtype) {
  return state->start(describe("all_gather", countPerRank * size(), dtype),
                      [&](CudaStreamHandle stream) {
                        return enqueueAllGather(in, out, countPerRank, dtype,
                                                stream);
                      });
}

absl::StatusOr<Communicator::Ticket>
NcclCommunicator::startBroadcast(const void *in, void *out, int64_t count,
                                 DType dtype, int root) {
  return state->start(
      describe("broadcast", count, dtype), [&](CudaStreamHandle stream) {
        return enqueueBroadcast(in, out, count, dtype, root, stream);
      });
}

absl::StatusOr<Communicator::Ticket>
NcclCommunicator::startAllToAll(const void *in, void *out, int64_t countPerRank,
                                DType dtype) {
  return state->start(describe("all_to_all", countPerRank * size(), dtype),
                      [&](CudaStreamHandle stream) {
                        return enqueueAllToAll(in, out, countPerRank, dtype,
                                               stream);
                      });
}

absl::Status NcclCommunicator::wait(Ticket ticket) {
  auto found = state->pending.find(ticket);
  if (found == state->pending.end())
    return absl::InvalidArgumentError(
        absl::StrCat("wait: ticket ", ticket,
                     " is not outstanding (never started or already waited)"));
  ZERO_RETURN_IF_ERROR(state->usable());
  cudaEvent_t event = found->second.event;
  ZERO_RETURN_IF_ERROR(state->poll([event] { return cudaEventQuery(event); },
                                   "cudaEventQuery", found->second.what));
  cudaEventDestroy(event);
  state->pending.erase(found);
  return absl::OkStatus();
}

absl::Status NcclCommunicator::barrier() {
  ZERO_RETURN_IF_ERROR(state->usable());
  // Not an enqueueAllReduce: a barrier moves no program data and is not
  // counted as traffic.
  ZERO_RETURN_IF_ERROR(state->ncclStatus(
      ncclAllReduce(state->scratch, state->scratch, 1, ncclInt32, ncclSum,
                    state->comm, state->stream),
      "ncclAllReduce", "barrier"));
  return synchronize(state->stream, "barrier");
}

void NcclCommunicator::abortJob(absl::string_view message, int exitCode) {
  // Frees this rank's GPU from collectives that will never complete before
  // the bootstrap ends every rank.
  state->abort();
  state->bootstrap.abortJob(message, exitCode);
  // Unreachable: the bootstrap never returns either.
  std::_Exit(exitCode);
}

} // namespace zero::rt
