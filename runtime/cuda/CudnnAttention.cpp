//===- CudnnAttention.cpp - train.attention on cuDNN's fused SDPA ---------===//
//
// `train.attention` and `train.attention_grad` on 16-bit tensors run as
// cuDNN's fused scaled dot-product attention (FlashAttention's algorithm on
// tensor cores) through cudnn-frontend's graph API: one graph per bound
// kernel, built at bind time for its shapes, executed on the kernel's stream.
// cuDNN's "Stats" output is our log-sum-exp: per query row, in f32, the
// natural log of the sum of the exponentials of the scaled scores; the
// backward is cuDNN's deterministic algorithm, so that a step repeats its
// bits as every other CUDA kernel does.
//
// libcudnn.so.9 is not linked: cudnn-frontend calls it through dlsym on the
// handle opened here (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING), so the backend
// loads where cuDNN is absent (PyTorch's nvidia-cudnn-cu13 wheel ships it;
// bin/zero-env finds it as it finds cuBLAS) and the built-in kernel of
// Attention.cu serves then, and for f32, head dimensions cuDNN does not
// take, and shapes its heuristics refuse. Where the choice falls is said on
// stderr once per reason. ZERO_CUDNN=0 keeps cuDNN unloaded.
//
//===----------------------------------------------------------------------===//

#include "CudaSupport.h"
#include "zero/support/Status.h"

#include "absl/strings/str_cat.h"

#include <cudnn_frontend.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

// The handle cudnn-frontend resolves every cuDNN call in.
namespace cudnn_frontend {
void *cudnn_dlhandle = nullptr;
} // namespace cudnn_frontend

namespace zero::rt::cuda {
namespace {

namespace fe = cudnn_frontend;

/// Says once per distinct line where train.attention runs.
void sayOnce(const std::string &line) {
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mutex);
  if (said.insert(line).second)
    std::fprintf(stderr, "zero: %s\n", line.c_str());
}

/// Opens libcudnn.so.9 once: OK, or why cuDNN does not serve.
const absl::Status &cudnnLoaded() {
  static const absl::Status status = []() -> absl::Status {
    if (const char *choice = std::getenv("ZERO_CUDNN");
        choice && std::string(choice) == "0")
      return absl::UnavailableError("ZERO_CUDNN=0");
    void *handle = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_GLOBAL);
    if (!handle) {
      const char *error = dlerror();
      return absl::UnavailableError(
          absl::StrCat("libcudnn.so.9 did not load (",
                       error ? error : "unknown error", ")"));
    }
    using Version = size_t (*)();
    auto version = reinterpret_cast<Version>(dlsym(handle, "cudnnGetVersion"));
    // Fused SDPA with a deterministic backward needs cuDNN 9.
    if (!version || version() < 90000)
      return absl::UnavailableError(
          absl::StrCat("cuDNN ", version ? version() : 0,
                       " is older than 9.0, which fused attention needs"));
    fe::cudnn_dlhandle = handle;
    return absl::OkStatus();
  }();
  return status;
}

size_t cudnnVersion() {
  using Version = size_t (*)();
  auto version =
      reinterpret_cast<Version>(dlsym(fe::cudnn_dlhandle, "cudnnGetVersion"));
  return version ? version() : 0;
}

/// One cuDNN handle per stream, shared by the attention kernels bound to it.
struct StreamCudnn {
  cudnnHandle_t handle = nullptr;
  StreamCudnn() = default;
  StreamCudnn(const StreamCudnn &) = delete;
  StreamCudnn &operator=(const StreamCudnn &) = delete;
  ~StreamCudnn() {
    if (handle)
      fe::detail::destroy_handle(handle);
  }
};

absl::StatusOr<std::shared_ptr<StreamCudnn>>
getStreamCudnn(absl::string_view kernel, cudaStream_t stream) {
  static std::mutex mutex;
  static std::map<cudaStream_t, std::weak_ptr<StreamCudnn>> streams;
  std::lock_guard<std::mutex> lock(mutex);
  if (std::shared_ptr<StreamCudnn> shared = streams[stream].lock())
    return shared;
  auto created = std::make_shared<StreamCudnn>();
  if (cudnnStatus_t status = fe::detail::create_handle(&created->handle);
      status != CUDNN_STATUS_SUCCESS)
    return absl::InternalError(
        absl::StrCat(kernel, ": cudnnCreate: ", fe::to_string(status)));
  if (cudnnStatus_t status = fe::detail::set_stream(created->handle, stream);
      status != CUDNN_STATUS_SUCCESS)
    return absl::InternalError(
        absl::StrCat(kernel, ": cudnnSetStream: ", fe::to_string(status)));
  streams[stream] = created;
  return created;
}

enum Uid : int64_t {
  kQuery = 1,
  kKey,
  kValue,
  kResult,
  kStats,
  kResultGrad,
  kQueryGrad,
  kKeyGrad,
  kValueGrad
};

/// The request as cuDNN's [batch, heads, seq, head_dim]: [..., seq,
/// head_dim] with the leading dimensions folded into the batch and one head
/// a slice, or a seq-major [..., seq, heads, head_dim] by its strides, which
/// is the layout cuDNN's own examples use.
struct Geometry {
  dev::AttentionDims dims;
  fe::DataType_t io = fe::DataType_t::BFLOAT16;

  int64_t batch() const { return dims.slices / dims.heads; }
  std::vector<int64_t> sizes() const {
    return {batch(), dims.heads, dims.seq, dims.headDim};
  }
  std::vector<int64_t> strides() const {
    int64_t d = dims.headDim, s = dims.seq, h = dims.heads;
    if (dims.seqMajor)
      return {s * h * d, d, h * d, 1};
    return {h * s * d, s * d, d, 1};
  }
  /// The log-sum-exp, [..., heads, seq] in either layout.
  std::vector<int64_t> statsSizes() const {
    return {batch(), dims.heads, dims.seq, 1};
  }
  std::vector<int64_t> statsStrides() const {
    return {dims.heads * dims.seq, dims.seq, 1, 1};
  }
};

std::shared_ptr<fe::graph::Tensor_attributes>
input(fe::graph::Graph &graph, const Geometry &g, const char *name, Uid uid) {
  return graph.tensor(fe::graph::Tensor_attributes()
                          .set_name(name)
                          .set_uid(uid)
                          .set_dim(g.sizes())
                          .set_stride(g.strides()));
}

void asOutput(fe::graph::Tensor_attributes &tensor, const Geometry &g,
              Uid uid) {
  tensor.set_output(true).set_uid(uid).set_dim(g.sizes()).set_stride(
      g.strides());
}

/// A graph and its workspace, executed with the pointers of one call.
struct BoundGraph {
  std::shared_ptr<fe::graph::Graph> graph;
  std::shared_ptr<StreamCudnn> cudnn;
  std::shared_ptr<DeviceScratch> workspace;
};

/// Builds `graph` for the stream's handle: the bound graph, nothing where
/// cuDNN has no engine for it (said once), an error where CUDA fails.
absl::StatusOr<std::optional<BoundGraph>>
build(const BindRequest &request, cudaStream_t stream,
      std::shared_ptr<fe::graph::Graph> graph) {
  absl::StatusOr<std::shared_ptr<StreamCudnn>> handle =
      getStreamCudnn(request.name, stream);
  if (!handle.ok()) {
    // No cuDNN handle (no device, a driver cuDNN does not support): the
    // built-in kernel serves.
    sayOnce(absl::StrCat(request.name, " runs on the built-in CUDA kernel: ",
                         handle.status().message()));
    return std::optional<BoundGraph>();
  }
  std::shared_ptr<StreamCudnn> cudnn = *std::move(handle);
  fe::error_t built = graph->build(cudnn->handle, {fe::HeurMode_t::A});
  if (!built.is_good()) {
    sayOnce(absl::StrCat(request.name,
                         " runs on the built-in CUDA kernel for a shape "
                         "cuDNN's fused attention refuses: ",
                         built.get_message()));
    return std::optional<BoundGraph>();
  }
  int64_t bytes = 0;
  if (fe::error_t sized = graph->get_workspace_size(bytes); !sized.is_good())
    return request.invalid("cuDNN workspace size: ", sized.get_message());
  ZERO_ASSIGN_OR_RETURN(
      std::shared_ptr<DeviceScratch> workspace,
      DeviceScratch::allocate(request.name, std::max<int64_t>(bytes, 1)));
  return std::optional<BoundGraph>(
      BoundGraph{std::move(graph), std::move(cudnn), std::move(workspace)});
}

KernelFn executing(std::string name, BoundGraph bound, std::vector<Uid> inUids,
                   std::vector<Uid> outUids) {
  return [name = std::move(name), bound = std::move(bound),
          inUids = std::move(inUids), outUids = std::move(outUids)](
             absl::Span<const void *const> ins, absl::Span<void *const> outs,
             const KernelContext &) -> absl::Status {
    std::unordered_map<fe::graph::Tensor_attributes::uid_t, void *> pack;
    for (size_t i = 0; i < inUids.size(); ++i)
      pack[inUids[i]] = const_cast<void *>(ins[i]);
    for (size_t i = 0; i < outUids.size(); ++i)
      pack[outUids[i]] = outs[i];
    fe::error_t ran = bound.graph->execute(bound.cudnn->handle, pack,
                                           bound.workspace->as<void>());
    if (!ran.is_good())
      return absl::InternalError(
          absl::StrCat(name, ": cuDNN fused attention: ", ran.get_message()));
    return absl::OkStatus();
  };
}

/// The kernel that runs `graph`, built for the request's shapes, with its
/// operands and results as `inUids` and `outUids`; nothing where cuDNN has
/// no engine for it.
absl::StatusOr<std::optional<KernelFn>>
bindGraph(const BindRequest &request, cudaStream_t stream,
          std::shared_ptr<fe::graph::Graph> graph, std::vector<Uid> inUids,
          std::vector<Uid> outUids) {
  ZERO_ASSIGN_OR_RETURN(std::optional<BoundGraph> bound,
                        build(request, stream, std::move(graph)));
  if (!bound)
    return std::optional<KernelFn>();
  return std::optional<KernelFn>(executing(std::string(request.name),
                                           *std::move(bound), std::move(inUids),
                                           std::move(outUids)));
}

/// The geometry of a request cuDNN can take, or why it cannot.
absl::StatusOr<Geometry> geometryOf(const BindRequest &request) {
  const TensorSpec &query = request.ins[1]; // the key: the query's spec
  if (query.dtype != DType::bf16 && query.dtype != DType::f16)
    return absl::UnavailableError("f32 attention");
  Geometry g;
  g.io = query.dtype == DType::bf16 ? fe::DataType_t::BFLOAT16
                                    : fe::DataType_t::HALF;
  ZERO_ASSIGN_OR_RETURN(g.dims, attentionDims(request));
  // cuDNN's fused attention takes head dimensions that are multiples of 8,
  // up to 128 on every architecture it supports.
  if (g.dims.headDim % 8 != 0 || g.dims.headDim > 128)
    return absl::UnavailableError(
        absl::StrCat("head dimension ", g.dims.headDim,
                     " (cuDNN takes multiples of 8 up to 128)"));
  return g;
}

std::shared_ptr<fe::graph::Graph> newGraph(const Geometry &g) {
  auto graph = std::make_shared<fe::graph::Graph>();
  graph->set_io_data_type(g.io)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return graph;
}

absl::StatusOr<std::optional<KernelFn>> bindForward(const BindRequest &request,
                                                    cudaStream_t stream,
                                                    const Geometry &g) {
  std::shared_ptr<fe::graph::Graph> graph = newGraph(g);
  auto q = input(*graph, g, "q", kQuery), k = input(*graph, g, "k", kKey),
       v = input(*graph, g, "v", kValue);
  auto options = fe::graph::SDPA_attributes()
                     .set_name("attention")
                     .set_generate_stats(true)
                     .set_attn_scale(g.dims.scale);
  if (g.dims.causal)
    options.set_causal_mask(true);
  auto [result, stats] = graph->sdpa(q, k, v, options);
  asOutput(*result, g, kResult);
  stats->set_output(true)
      .set_uid(kStats)
      .set_data_type(fe::DataType_t::FLOAT)
      .set_dim(g.statsSizes())
      .set_stride(g.statsStrides());
  return bindGraph(request, stream, std::move(graph), {kQuery, kKey, kValue},
                   {kResult, kStats});
}

absl::StatusOr<std::optional<KernelFn>> bindBackward(const BindRequest &request,
                                                     cudaStream_t stream,
                                                     const Geometry &g) {
  std::shared_ptr<fe::graph::Graph> graph = newGraph(g);
  auto dO = input(*graph, g, "dO", kResultGrad),
       q = input(*graph, g, "q", kQuery), k = input(*graph, g, "k", kKey),
       v = input(*graph, g, "v", kValue), o = input(*graph, g, "o", kResult);
  auto stats = graph->tensor(fe::graph::Tensor_attributes()
                                 .set_name("stats")
                                 .set_uid(kStats)
                                 .set_dim(g.statsSizes())
                                 .set_stride(g.statsStrides())
                                 .set_data_type(fe::DataType_t::FLOAT));
  auto options = fe::graph::SDPA_backward_attributes()
                     .set_name("attention_grad")
                     .set_attn_scale(g.dims.scale)
                     .set_deterministic_algorithm(true);
  if (g.dims.causal)
    options.set_causal_mask(true);
  auto [dq, dk, dv] = graph->sdpa_backward(q, k, v, o, dO, stats, options);
  asOutput(*dq, g, kQueryGrad);
  asOutput(*dk, g, kKeyGrad);
  asOutput(*dv, g, kValueGrad);
  // train.attention_grad's operands: dO, q, k, v, o, lse.
  return bindGraph(request, stream, std::move(graph),
                   {kResultGrad, kQuery, kKey, kValue, kResult, kStats},
                   {kQueryGrad, kKeyGrad, kValueGrad});
}

} // namespace

absl::Status cudnnAttentionStatus() { return cudnnLoaded(); }

absl::StatusOr<std::optional<KernelFn>>
bindCudnnAttention(const BindRequest &request, cudaStream_t stream) {
  if (const absl::Status &loaded = cudnnLoaded(); !loaded.ok()) {
    sayOnce(absl::StrCat("train.attention runs on the built-in CUDA kernel: ",
                         loaded.message()));
    return std::optional<KernelFn>();
  }
  absl::StatusOr<Geometry> g = geometryOf(request);
  if (!g.ok()) {
    if (!absl::IsUnavailable(g.status()))
      return g.status();
    sayOnce(absl::StrCat(request.name, " runs on the built-in CUDA kernel for ",
                         g.status().message()));
    return std::optional<KernelFn>();
  }
  // cudnn-frontend reports most failures as statuses; a failed dlsym or
  // CUDA call inside it throws.
  try {
    absl::StatusOr<std::optional<KernelFn>> bound =
        request.name == "train.attention_grad"
            ? bindBackward(request, stream, *g)
            : bindForward(request, stream, *g);
    if (bound.ok() && *bound)
      sayOnce(absl::StrCat(request.name, " runs on cuDNN ", cudnnVersion(),
                           "'s fused attention"));
    return bound;
  } catch (const std::exception &error) {
    return request.invalid("cuDNN fused attention: ", error.what());
  }
}

} // namespace zero::rt::cuda
