//===- CudaBackendMemoryTest.cpp - The CUDA backend's device memory -------===//
//
// What the metrics report of a GPU rank's memory (Trainer.metrics'
// device_bytes, zero-run's measured device_memory): the backend's own
// allocations, now and at their high water, and the driver's figure for the
// whole device. Without a GPU the test reports as skipped.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"

#include "zero/runtime/CudaBackend.h"

using namespace zero::rt;
using namespace zero::rt::test;

TEST(CudaBackendMemory, CountsAllocationsAndTheirHighWater) {
  SKIP_WITHOUT_CUDA_GPU();
  OneRank comm;
  CudaBackendOptions options;
  // Host-staged: no NCCL communicator is needed for allocations.
  options.collectives = CudaBackendOptions::Collectives::hostStaged;
  absl::StatusOr<std::unique_ptr<ExecutionBackend>> backend =
      createCudaBackend(comm, options);
  ASSERT_TRUE(backend.ok()) << backend.status();
  std::optional<ExecutionBackend::DeviceMemory> before =
      (*backend)->deviceMemory();
  ASSERT_TRUE(before.has_value()) << "a CUDA backend measures its device";
  constexpr int64_t kBytes = int64_t{64} << 20;
  absl::StatusOr<void *> first = (*backend)->allocate(kBytes);
  absl::StatusOr<void *> second = (*backend)->allocate(kBytes);
  ASSERT_TRUE(first.ok() && second.ok());
  std::optional<ExecutionBackend::DeviceMemory> held =
      (*backend)->deviceMemory();
  EXPECT_EQ(held->allocatedBytes, before->allocatedBytes + 2 * kBytes);
  EXPECT_EQ(held->peakAllocatedBytes, held->allocatedBytes);
  // The driver counts at least what was allocated, on a device that has it.
  EXPECT_GE(held->usedBytes, 2 * kBytes);
  EXPECT_LE(held->usedBytes, held->totalBytes);
  (*backend)->release(*first);
  std::optional<ExecutionBackend::DeviceMemory> after =
      (*backend)->deviceMemory();
  EXPECT_EQ(after->allocatedBytes, before->allocatedBytes + kBytes);
  EXPECT_EQ(after->peakAllocatedBytes, held->peakAllocatedBytes)
      << "the high water stays where it was";
  (*backend)->release(*second);
}

TEST(CudaBackendMemory, HostBackendHasNoDevice) {
  // The CPU twin: no device, no figures (None in Python, absent in JSON).
  OneRank comm;
  std::unique_ptr<ExecutionBackend> host = createCpuBackend(comm);
  EXPECT_FALSE(host->deviceMemory().has_value());
}
