//===- CudaBackend.h - Runs a loaded step on a GPU ---------------*- C++
//-*-===//
//
// The CUDA execution backend. Every persistent buffer and the arena are
// allocated once in device memory; kernels come from CudaKernels.h; each zrt
// stream of the program is a CUDA stream and each zrt event a CUDA event, so
// collectives on a communication stream overlap the kernels on the compute
// stream exactly where the program's events allow.
//
// Collectives go one of two ways:
//  - nccl: an NcclCommunicator bootstrapped over the job's host communicator,
//    one GPU per rank. The whole step can then be captured once as a CUDA
//    graph (NCCL calls included) and replayed every step.
//  - hostStaged: each collective waits for its stream, copies its input to
//    pinned host memory, runs on the host communicator (MPI), and copies the
//    result back. Slow, but ranks may share a GPU, so a test machine with
//    one GPU runs N ranks whose device memory is each rank's own.
//
// Per step the host does: one 8-byte copy of the step number into device
// memory (the step-dependent kernels read it there), the batch upload the
// caller makes, and then either the instruction list (eager) or one
// cudaGraphLaunch (graph), followed by one synchronization.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_CUDABACKEND_H
#define ZERO_RUNTIME_CUDABACKEND_H

#include "zero/runtime/ExecutionBackend.h"

namespace zero::rt {

struct CudaBackendOptions {
  enum class Collectives { nccl, hostStaged };
  Collectives collectives = Collectives::nccl;
  /// The CUDA device; -1 picks the rank's local index (among the ranks on
  /// its node) modulo the devices visible.
  int device = -1;
  /// Capture the step as a CUDA graph on its first run and replay it (nccl
  /// only: host-staged collectives run on the host).
  bool cudaGraph = false;
  /// Timeout of a step (a dead rank leaves NCCL waiting forever) and the
  /// options of the NCCL communicator.
  CommOptions comm;
};

/// Selects and initializes this rank's device and, for nccl, creates the
/// NCCL communicator over `hostComm` (collective: every rank calls it, in the
/// same order as its other communicator creations). `hostComm` must outlive
/// the backend. Fails with a message a user can act on: no GPU, more ranks
/// on a node than GPUs with nccl, a graph with host staging.
absl::StatusOr<std::unique_ptr<ExecutionBackend>>
createCudaBackend(Communicator &hostComm, const CudaBackendOptions &options);

} // namespace zero::rt

#endif // ZERO_RUNTIME_CUDABACKEND_H
