//===- NcclCommunicator.h - Collectives on device buffers over NCCL -*- C++
//-*-===//
//
// The GPU ranks' communicator. It is bootstrapped over the job's host
// communicator (MPI): rank 0 makes the ncclUniqueId and broadcasts it, and
// every rank joins with ncclCommInitRank on the CUDA device it selected
// before. One NcclCommunicator spans the ranks of one placement axis.
//
// Buffers are device pointers of that device. Two ways to issue work:
//  - `enqueue*` put the collective on a given CUDA stream and return at once;
//    they do no allocation and no synchronization, so they may be called
//    while that stream is being captured into a CUDA graph. This is what the
//    CUDA backend uses: ordering with compute is by CUDA events.
//  - the Communicator interface (`start*` and `wait`) enqueues on the
//    communicator's own stream and returns a ticket; `wait` blocks the host
//    until the collective is done, for at most the timeout.
//
// A rank that dies or stops leaves NCCL waiting forever; `wait` (and
// `synchronize`) poll instead, check ncclCommGetAsyncError, and after the
// timeout abort the NCCL communicator and return DeadlineExceeded naming the
// rank and the collective, so that the job ends with a message, not a hang.
//
// Reductions are NCCL's: float types reduce in their own type along NCCL's
// ring or tree, so results are reproducible run to run on one topology but
// are not the rank-order f32 sums of the MPI communicator with
// `deterministic`; create() rejects `deterministic` for that reason.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_NCCLCOMMUNICATOR_H
#define ZERO_RUNTIME_NCCLCOMMUNICATOR_H

#include "zero/runtime/Communicator.h"
#include "zero/runtime/CudaKernels.h"

#include <memory>

namespace zero::rt {

class NcclCommunicator : public Communicator {
public:
  /// Collective over every rank of `bootstrap`, which must outlive the
  /// result (abortJob goes through it). Each rank must have made its CUDA
  /// device current first, and no two ranks may share a device (NCCL's rule;
  /// the host-staged backend is for that). Fails with a message naming the
  /// NCCL error.
  static absl::StatusOr<std::unique_ptr<NcclCommunicator>>
  create(Communicator &bootstrap, const CommOptions &options);
  ~NcclCommunicator() override;

  int rank() const override;
  int size() const override;

  // Stream-ordered forms: same buffer rules as the Communicator interface.
  // Traffic is counted here, once per call.
  absl::Status enqueueAllReduce(const void *in, void *out, int64_t count,
                                DType dtype, ReduceKind kind,
                                CudaStreamHandle stream);
  absl::Status enqueueReduceScatter(const void *in, void *out,
                                    int64_t countPerRank, DType dtype,
                                    ReduceKind kind, CudaStreamHandle stream);
  absl::Status enqueueAllGather(const void *in, void *out, int64_t countPerRank,
                                DType dtype, CudaStreamHandle stream);
  absl::Status enqueueBroadcast(const void *in, void *out, int64_t count,
                                DType dtype, int root, CudaStreamHandle stream);
  /// Grouped ncclSend/ncclRecv, one pair per peer.
  absl::Status enqueueAllToAll(const void *in, void *out, int64_t countPerRank,
                               DType dtype, CudaStreamHandle stream);

  /// Blocks until `stream` has finished everything enqueued on it, polling
  /// so that an NCCL error or the timeout ends the wait (see above).
  /// `what` names the work in the error message.
  absl::Status synchronize(CudaStreamHandle stream, absl::string_view what);

  // Communicator.
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
  struct State;
  explicit NcclCommunicator(std::unique_ptr<State> state);
  std::unique_ptr<State> state;
};

} // namespace zero::rt

#endif // ZERO_RUNTIME_NCCLCOMMUNICATOR_H
