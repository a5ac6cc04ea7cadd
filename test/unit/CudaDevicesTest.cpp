//===- CudaDevicesTest.cpp - The CUDA backend's first piece ---------------===//
//
// Runs on a machine with a GPU; elsewhere every test is reported as skipped.
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/CudaDevices.h"

#include "gtest/gtest.h"

using namespace zero::cuda;

namespace {
std::vector<CudaDeviceInfo> devicesOrSkip() {
  absl::StatusOr<std::vector<CudaDeviceInfo>> devices = listCudaDevices();
  EXPECT_TRUE(devices.ok()) << devices.status();
  if (!devices.ok())
    return {};
  return *devices;
}
} // namespace

TEST(CudaDevices, ListingNeverFailsWithoutAGpu) {
  absl::StatusOr<std::vector<CudaDeviceInfo>> devices = listCudaDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
}

TEST(CudaDevices, DescribesEveryGpu) {
  std::vector<CudaDeviceInfo> devices = devicesOrSkip();
  if (devices.empty())
    GTEST_SKIP() << "no CUDA GPU on this machine";
  for (const CudaDeviceInfo &device : devices) {
    EXPECT_FALSE(device.name.empty());
    EXPECT_GE(device.major, 7) << device.name;
    EXPECT_GT(device.totalMemoryBytes, 0) << device.name;
    EXPECT_GT(device.multiprocessors, 0) << device.name;
  }
}

TEST(CudaDevices, KernelRunsOnEveryGpu) {
  std::vector<CudaDeviceInfo> devices = devicesOrSkip();
  if (devices.empty())
    GTEST_SKIP() << "no CUDA GPU on this machine";
  for (const CudaDeviceInfo &device : devices)
    EXPECT_TRUE(runKernelSelfTest(device.ordinal).ok()) << device.name;
}
