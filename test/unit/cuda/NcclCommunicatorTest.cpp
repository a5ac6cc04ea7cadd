//===- NcclCommunicatorTest.cpp - The NCCL communicator on one rank -------===//
//
// One rank cannot show that NCCL moves data between GPUs (the multi-rank
// runs do), but it exercises everything around it: the bootstrap, every
// collective's buffers, dtypes and reductions, both ways of issuing work,
// the traffic counters and the argument checks. Without a GPU (or NCCL) the
// tests that need one report as skipped.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"

#include "zero/runtime/NcclCommunicator.h"

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

#ifdef ZERO_TEST_HAS_MPI
/// MPI is initialized (as a singleton) only by a test that runs on a GPU,
/// and finalized once after the last test, when every communicator is gone.
class FinalizeMpi : public ::testing::Environment {
public:
  void TearDown() override { finalizeMpi(); }
};
const ::testing::Environment *const finalizeMpiAtExit =
    ::testing::AddGlobalTestEnvironment(new FinalizeMpi);
#endif

/// A device buffer holding `values`, freed with the object.
class DeviceArray {
public:
  template <typename T> explicit DeviceArray(const std::vector<T> &values) {
    bytes_ = values.size() * sizeof(T);
    EXPECT_EQ(cudaMalloc(&data_, bytes_ ? bytes_ : 1), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(data_, values.data(), bytes_, cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray &) = delete;
  DeviceArray &operator=(const DeviceArray &) = delete;

  void *get() const { return data_; }
  template <typename T> std::vector<T> read() const {
    std::vector<T> values(bytes_ / sizeof(T));
    EXPECT_EQ(cudaMemcpy(values.data(), data_, bytes_, cudaMemcpyDeviceToHost),
              cudaSuccess);
    return values;
  }

private:
  void *data_ = nullptr;
  size_t bytes_ = 0;
};

class NcclCommunicatorTest : public ::testing::Test {
protected:
  void SetUp() override {
    SKIP_WITHOUT_CUDA_GPU();
#ifndef ZERO_HAS_NCCL
    GTEST_SKIP() << "built without NCCL";
#endif
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
#ifdef ZERO_TEST_HAS_MPI
    absl::StatusOr<std::unique_ptr<Communicator>> mpi =
        createMpiCommunicator(CommOptions());
    ASSERT_TRUE(mpi.ok()) << mpi.status();
    bootstrap = std::move(*mpi);
#else
    bootstrap = std::make_unique<OneRank>();
#endif
    ASSERT_EQ(bootstrap->size(), 1) << "run this test as a single process";
    CommOptions options;
    options.timeoutSeconds = 60;
    absl::StatusOr<std::unique_ptr<NcclCommunicator>> created =
        NcclCommunicator::create(*bootstrap, options);
    ASSERT_TRUE(created.ok()) << created.status();
    nccl = std::move(*created);
  }

  std::unique_ptr<Communicator> bootstrap;
  std::unique_ptr<NcclCommunicator> nccl;
};

std::vector<float> floats(size_t count) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i)
    values[i] = static_cast<float>(i % 17) * 0.25f - 2.0f;
  return values;
}

TEST(NcclCommunicator, RejectsDeterministic) {
#ifndef ZERO_HAS_NCCL
  GTEST_SKIP() << "built without NCCL";
#endif
  // Rejected before any CUDA or NCCL call, so no GPU is needed.
  OneRank bootstrap;
  CommOptions options;
  options.deterministic = true;
  absl::StatusOr<std::unique_ptr<NcclCommunicator>> created =
      NcclCommunicator::create(bootstrap, options);
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(created.status().message().find("deterministic"),
            absl::string_view::npos)
      << created.status();
}

TEST_F(NcclCommunicatorTest, CollectivesOnOneRank) {
  EXPECT_EQ(nccl->rank(), 0);
  EXPECT_EQ(nccl->size(), 1);
  const int64_t count = 1000;
  std::vector<float> f32 = floats(count);
  std::vector<uint16_t> bf16(count);
  std::vector<int64_t> i64(count);
  for (int64_t i = 0; i < count; ++i) {
    bf16[i] = floatToBf16(f32[i]);
    i64[i] = (int64_t{1} << 40) + i * 7 - 300;
  }

  // With one rank every collective is the identity: the data must come back
  // bit for bit, whatever the reduction.
  for (ReduceKind kind : {ReduceKind::sum, ReduceKind::max, ReduceKind::mean}) {
    DeviceArray in(f32), out(std::vector<float>(count, 0.0f));
    ASSERT_TRUE(
        nccl->allReduce(in.get(), out.get(), count, DType::f32, kind).ok());
    EXPECT_EQ(out.read<float>(), f32);
    DeviceArray inPlace(bf16);
    ASSERT_TRUE(
        nccl->allReduce(inPlace.get(), inPlace.get(), count, DType::bf16, kind)
            .ok());
    EXPECT_EQ(inPlace.read<uint16_t>(), bf16);
  }
  {
    DeviceArray in(i64), out(std::vector<int64_t>(count, 0));
    ASSERT_TRUE(
        nccl->allReduce(in.get(), out.get(), count, DType::i64, ReduceKind::sum)
            .ok());
    EXPECT_EQ(out.read<int64_t>(), i64);
    ASSERT_TRUE(nccl->reduceScatter(in.get(), out.get(), count, DType::i64,
                                    ReduceKind::max)
                    .ok());
    EXPECT_EQ(out.read<int64_t>(), i64);
  }
  {
    DeviceArray in(bf16), out(std::vector<uint16_t>(count, 0));
    ASSERT_TRUE(nccl->allGather(in.get(), out.get(), count, DType::bf16).ok());
    EXPECT_EQ(out.read<uint16_t>(), bf16);
  }
  {
    DeviceArray in(f32), out(std::vector<float>(count, 0.0f));
    ASSERT_TRUE(
        nccl->broadcast(in.get(), out.get(), count, DType::f32, 0).ok());
    EXPECT_EQ(out.read<float>(), f32);
  }
  {
    DeviceArray in(i64), out(std::vector<int64_t>(count, 0));
    ASSERT_TRUE(nccl->allToAll(in.get(), out.get(), count, DType::i64).ok());
    EXPECT_EQ(out.read<int64_t>(), i64);
  }
  EXPECT_TRUE(nccl->barrier().ok());

  const std::map<std::string, TrafficCount> &traffic = nccl->traffic();
  ASSERT_EQ(traffic.count("all_reduce"), 1u);
  EXPECT_EQ(traffic.at("all_reduce").count, 7);
  EXPECT_EQ(traffic.at("all_reduce").elements, 7 * count);
  EXPECT_EQ(traffic.at("all_reduce").bytes,
            3 * count * 4 + 3 * count * 2 + count * 8);
  EXPECT_EQ(traffic.at("all_reduce").sentBytesPerRank, 0.0);
  EXPECT_EQ(traffic.at("reduce_scatter").count, 1);
  EXPECT_EQ(traffic.at("reduce_scatter").bytes, count * 8);
  EXPECT_EQ(traffic.at("all_gather").bytes, count * 2);
  EXPECT_EQ(traffic.at("broadcast").bytes, count * 4);
  EXPECT_EQ(traffic.at("all_to_all").elements, count);
  EXPECT_EQ(traffic.at("all_to_all").bytes, count * 8);
}

TEST_F(NcclCommunicatorTest, EnqueueOnCallerStream) {
  const int64_t count = 257;
  std::vector<float> f32 = floats(count);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
            cudaSuccess);
  DeviceArray in(f32), out(std::vector<float>(count, 0.0f));
  EXPECT_TRUE(nccl->enqueueAllReduce(in.get(), out.get(), count, DType::f32,
                                     ReduceKind::mean, stream)
                  .ok());
  EXPECT_TRUE(
      nccl->enqueueBroadcast(out.get(), out.get(), count, DType::f32, 0, stream)
          .ok());
  EXPECT_TRUE(nccl->synchronize(stream, "test collectives").ok());
  EXPECT_EQ(out.read<float>(), f32);
  EXPECT_EQ(nccl->traffic().at("all_reduce").count, 1);
  EXPECT_EQ(nccl->traffic().at("broadcast").count, 1);
  cudaStreamDestroy(stream);
}

TEST_F(NcclCommunicatorTest, BadArguments) {
  DeviceArray buffer(std::vector<int64_t>(16, 1));
  absl::StatusOr<Communicator::Ticket> mean = nccl->startAllReduce(
      buffer.get(), buffer.get(), 16, DType::i64, ReduceKind::mean);
  EXPECT_EQ(mean.status().code(), absl::StatusCode::kInvalidArgument)
      << mean.status();
  EXPECT_EQ(
      nccl->broadcast(buffer.get(), buffer.get(), 16, DType::i64, 1).code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(nccl->allGather(buffer.get(), buffer.get(), -1, DType::i64).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(nccl->wait(12345).code(), absl::StatusCode::kInvalidArgument);
  // Rejected calls move nothing.
  EXPECT_TRUE(nccl->traffic().empty());
  // The communicator is still usable.
  EXPECT_TRUE(nccl->allReduce(buffer.get(), buffer.get(), 16, DType::i64,
                              ReduceKind::max)
                  .ok());
}

} // namespace
