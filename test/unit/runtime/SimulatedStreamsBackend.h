//===- SimulatedStreamsBackend.h - CUDA stream semantics on the host -*- C++
//-*-===//
//
// A test-only backend that runs a step the way the CUDA backend's streams
// could run it, without a GPU: host memory and CPU kernels as on the CPU
// backend, but every zrt stream is a FIFO queue that runs concurrently with
// the others, ordered only by the program's record/wait events and by the
// program order of the collectives (CudaBackend's enqueueCollective). A
// seeded scheduler picks which ready stream moves next, so a dependency the
// compiler forgot shows up as a result that differs from the in-order CPU
// backend's for some seed.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_TEST_UNIT_RUNTIME_SIMULATEDSTREAMSBACKEND_H
#define ZERO_TEST_UNIT_RUNTIME_SIMULATEDSTREAMSBACKEND_H

#include "zero/runtime/ExecutionBackend.h"

#include <cstdint>
#include <memory>
#include <string>

namespace zero::rt::testing {

/// How the simulation picks the next stream among those whose head is ready.
enum class SchedulePolicy {
  /// Uniformly at random.
  uniform,
  /// The head furthest ahead in program order: a stream runs as far past
  /// the others as the events allow, which exposes a missing wait.
  leader,
  /// The head furthest behind in program order: the other streams are
  /// starved, which exposes a record that was issued too early.
  laggard,
  /// The current stream until it blocks or is empty, then a random one.
  sticky,
};
constexpr int kNumSchedulePolicies = 4;

struct SimulationOptions {
  uint64_t seed = 0;
  SchedulePolicy policy = SchedulePolicy::uniform;
  /// Negative tests: drop the first wait on the compute stream whose event
  /// was recorded on another stream, as if the compiler had not emitted it.
  bool dropFirstCrossStreamWait = false;
  /// Hands out memory back to back from one pool, 64-byte aligned, the way
  /// cudaMalloc places consecutive allocations: a buffer may start exactly
  /// where the arena ends.
  bool adjacentAllocations = false;
  /// Negative tests of zero-run --check-memory: the kernel of this name
  /// also writes one f32 past its first result, at the next 64-byte
  /// boundary (where the planner may place the next view), as a kernel
  /// with an off-by-one would. Name one whose result is in the arena: past
  /// a persistent buffer the write would leave its allocation.
  std::string overrunKernel;
  /// Tells the executor its memory is not host addressable, as a GPU's
  /// is: checks that scan memory then go through copyToHost and
  /// copyFromHost, the CUDA backend's path, here on the host.
  bool deviceLikeMemory = false;
};

/// What the backend saw in the step list (filled by prepare).
struct SimulationStats {
  /// Waits whose awaited record is on a different stream than the wait.
  int crossStreamWaits = 0;
  /// Of those, the waits on the compute stream (stream 0).
  int computeCrossStreamWaits = 0;
  /// Index in the step list of the dropped wait, or -1.
  int droppedWait = -1;
  /// Instructions that ran after a later-issued one, summed over the steps
  /// run so far: zero means the schedule was the in-order one.
  int64_t reorderedInstructions = 0;
};

/// `comm` runs the collectives (blocking); `stats`, when not null, is
/// filled by prepare and must outlive the backend.
std::unique_ptr<ExecutionBackend>
createSimulatedStreamsBackend(Communicator &comm,
                              const SimulationOptions &options,
                              SimulationStats *stats = nullptr);

} // namespace zero::rt::testing

#endif // ZERO_TEST_UNIT_RUNTIME_SIMULATEDSTREAMSBACKEND_H
