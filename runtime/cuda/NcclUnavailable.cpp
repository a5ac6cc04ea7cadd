//===- NcclUnavailable.cpp - NcclCommunicator where NCCL is missing -------===//
//
// Built instead of NcclCommunicator.cpp when CMake finds no NCCL, so that the
// CUDA backend links without it: create() says why, and since no communicator
// can exist, the other members are never reached.
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/NcclCommunicator.h"

#include <cstdlib>

namespace zero::rt {

struct NcclCommunicator::State {};

NcclCommunicator::NcclCommunicator(std::unique_ptr<State> state)
    : state(std::move(state)) {}
NcclCommunicator::~NcclCommunicator() = default;

absl::StatusOr<std::unique_ptr<NcclCommunicator>>
NcclCommunicator::create(Communicator &, const CommOptions &) {
  return absl::UnimplementedError(
      "built without NCCL: CMake found no libnccl/nccl.h next to the CUDA "
      "toolkit; install NCCL and reconfigure");
}

namespace {
absl::Status unavailable() {
  return absl::UnimplementedError("built without NCCL");
}
} // namespace

int NcclCommunicator::rank() const { return 0; }
int NcclCommunicator::size() const { return 1; }

absl::Status NcclCommunicator::enqueueAllReduce(const void *, void *, int64_t,
                                                DType, ReduceKind,
                                                CudaStreamHandle) {
  return unavailable();
}
absl::Status NcclCommunicator::enqueueReduceScatter(const void *, void *,
                                                    int64_t, DType, ReduceKind,
                                                    CudaStreamHandle) {
  return unavailable();
}
absl::Status NcclCommunicator::enqueueAllGather(const void *, void *, int64_t,
                                                DType, CudaStreamHandle) {
  return unavailable();
}
absl::Status NcclCommunicator::enqueueBroadcast(const void *, void *, int64_t,
                                                DType, int, CudaStreamHandle) {
  return unavailable();
}
absl::Status NcclCommunicator::enqueueAllToAll(const void *, void *, int64_t,
                                               DType, CudaStreamHandle) {
  return unavailable();
}
absl::Status NcclCommunicator::synchronize(CudaStreamHandle,
                                           absl::string_view) {
  return unavailable();
}
absl::StatusOr<Communicator::Ticket>
NcclCommunicator::startAllReduce(const void *, void *, int64_t, DType,
                                 ReduceKind) {
  return unavailable();
}
absl::StatusOr<Communicator::Ticket>
NcclCommunicator::startReduceScatter(const void *, void *, int64_t, DType,
                                     ReduceKind) {
  return unavailable();
}
absl::StatusOr<Communicator::Ticket>
NcclCommunicator::startAllGather(const void *, void *, int64_t, DType) {
  return unavailable();
}
absl::StatusOr<Communicator::Ticket>
NcclCommunicator::startBroadcast(const void *, void *, int64_t, DType, int) {
  return unavailable();
}
absl::StatusOr<Communicator::Ticket>
NcclCommunicator::startAllToAll(const void *, void *, int64_t, DType) {
  return unavailable();
}
absl::Status NcclCommunicator::wait(Ticket) { return unavailable(); }
absl::Status NcclCommunicator::barrier() { return unavailable(); }
void NcclCommunicator::abortJob(absl::string_view, int exitCode) {
  std::_Exit(exitCode);
}

} // namespace zero::rt
