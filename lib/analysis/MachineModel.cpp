//===- MachineModel.cpp - What the hardware of a step costs ---------------===//
//
// The presets are JSON texts read by the same parser as a user's file, so
// that the documented format is the whole of what a machine is and every
// preset passes the checks a file does. Where each preset's numbers come
// from is in docs/zero-opt.md ("Machine models").
//
//===----------------------------------------------------------------------===//

#include "zero/analysis/MachineModel.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>
#include <optional>

using namespace mlir;

namespace zero {

double MachineModel::matmulFlops(Type elementType) const {
  if (elementType.isBF16())
    return matmulFlopsBF16;
  if (elementType.isF16())
    return matmulFlopsF16;
  return matmulFlopsF32;
}

double MachineModel::collectiveSeconds(StringRef kind, int64_t axis,
                                       int64_t ranks, double bytes) const {
  if (ranks <= 1 || axis < 0 || axis >= static_cast<int64_t>(links.size()))
    return 0.0;
  const LinkModel &link = links[axis];
  double steps = static_cast<double>(ranks - 1);
  double share = steps / static_cast<double>(ranks);
  if (kind == "broadcast")
    return bytes / link.bandwidth + steps * link.latency;
  double once = share * bytes / link.bandwidth + steps * link.latency;
  return kind == "all_reduce" ? 2.0 * once : once;
}

double MachineModel::kernelSeconds(double bytes, double flops, Type elementType,
                                   bool onHost, double efficiency) const {
  double seconds = bytes / (onHost ? hostMemoryBandwidth : memoryBandwidth);
  // A roofline: a small matmul is bound by its memory traffic.
  if (flops > 0)
    seconds =
        std::max(seconds, flops / (matmulFlops(elementType) * efficiency));
  return seconds + launchOverhead;
}

double MachineModel::copySeconds(double bytes, bool onHost) const {
  return 2.0 * bytes / (onHost ? hostMemoryBandwidth : memoryBandwidth) +
         launchOverhead;
}

namespace {

/// FLOPs of a matmul whose output rows, columns and contracted depth are
/// each rounded up to a multiple of `tile` (0: not rounded). A linear layer
/// on [..., T, K] x [K, N] without transpose_a is one GEMM of all the
/// leading rows, as the CUDA backend runs it; any other batched matmul one
/// GEMM per slice.
double tiledMatmulFlops(ShapedType lhs, ShapedType rhs, ShapedType out,
                        bool transposeA, const std::array<int64_t, 3> &tile) {
  if (!lhs.hasStaticShape() || !out.hasStaticShape())
    return 0.0;
  int64_t rank = lhs.getRank();
  int64_t outRank = out.getRank();
  if (rank < 2 || outRank < 2 || out.getNumElements() == 0)
    return 0.0;
  auto rounded = [](int64_t size, int64_t multiple) {
    return static_cast<double>(
        multiple > 0 ? llvm::divideCeil(size, multiple) * multiple : size);
  };
  int64_t cols = out.getDimSize(outRank - 1);
  int64_t rows = out.getDimSize(outRank - 2);
  if (rhs && rhs.getRank() == 2 && rank > 2 && !transposeA)
    rows = out.getNumElements() / cols;
  double batch = static_cast<double>(out.getNumElements()) /
                 (static_cast<double>(rows) * static_cast<double>(cols));
  int64_t contracted = lhs.getDimSize(rank - (transposeA ? 2 : 1));
  return 2.0 * batch * rounded(rows, tile[0]) * rounded(cols, tile[1]) *
         rounded(contracted, tile[2]);
}

} // namespace

double MachineModel::matmulSeconds(ShapedType lhs, ShapedType rhs,
                                   ShapedType out, bool transposeA,
                                   double bytes, bool onHost) const {
  return kernelSeconds(bytes,
                       tiledMatmulFlops(lhs, rhs, out, transposeA, matmulTile),
                       out.getElementType(), onHost);
}

double getMatmulFlops(ShapedType lhs, ShapedType out, bool transposeA) {
  return tiledMatmulFlops(lhs, ShapedType(), out, transposeA, {0, 0, 0});
}

double getAttentionFlops(ShapedType query, bool causal, bool backward,
                         bool seqMajor) {
  if (!query.hasStaticShape() || query.getRank() < (seqMajor ? 3 : 2))
    return 0.0;
  int64_t rank = query.getRank();
  // [..., seq, head_dim], or [..., seq, heads, head_dim] when seq-major.
  double seq = static_cast<double>(query.getDimSize(rank - (seqMajor ? 3 : 2)));
  double headDim = static_cast<double>(query.getDimSize(rank - 1));
  double slices = static_cast<double>(query.getNumElements()) / (seq * headDim);
  double pairs = causal ? seq * (seq + 1) / 2 : seq * seq;
  double matmuls = backward ? 5.0 : 2.0;
  return matmuls * 2.0 * slices * pairs * headDim;
}

llvm::json::Object machineToJson(const MachineModel &machine) {
  llvm::json::Array links;
  for (const LinkModel &link : machine.links)
    links.push_back(llvm::json::Object{{"bandwidth", link.bandwidth},
                                       {"latency", link.latency}});
  llvm::json::Object object{
      {"name", machine.name},
      {"links", std::move(links)},
      {"matmul_flops", llvm::json::Object{{"f32", machine.matmulFlopsF32},
                                          {"bf16", machine.matmulFlopsBF16},
                                          {"f16", machine.matmulFlopsF16}}},
      {"memory_bandwidth", machine.memoryBandwidth},
      {"launch_overhead", machine.launchOverhead},
      {"host_link_bandwidth", machine.hostLinkBandwidth},
      {"host_memory_bandwidth", machine.hostMemoryBandwidth},
      {"async_collectives", machine.asyncCollectives}};
  // Written only where stated, so that a machine read back is the same.
  if (machine.deviceMemory > 0)
    object["device_memory"] = machine.deviceMemory;
  if (machine.attentionEfficiency != 1.0)
    object["attention_efficiency"] = machine.attentionEfficiency;
  if (machine.peakFlops > 0)
    object["peak_flops"] = machine.peakFlops;
  if (machine.matmulTile[0] > 0)
    object["matmul_tile"] = llvm::json::Array{
        machine.matmulTile[0], machine.matmulTile[1], machine.matmulTile[2]};
  return object;
}

//===----------------------------------------------------------------------===//
// Presets
//===----------------------------------------------------------------------===//

namespace {

struct Preset {
  StringRef name;
  StringRef json;
};

// 8x H100 SXM5 in one node, NVLink4 through NVSwitch. Links: the bus
// bandwidth NCCL's tests report for large collectives over the 8 GPUs, and
// a ring step latency that gives their ~20 us small-message all-reduce.
// Compute: 65% of the dense tensor-core peak (989 TFLOP/s bf16/f16; 67
// TFLOP/s f32 without TF32, which the CUDA backend does not use, at 70%),
// on whole 128x128x64 tiles (an assumption: a tile size common among
// cuBLAS's 16-bit GEMM kernels, not one read from its heuristics; the A100
// presets take 128x128x32).
// Memory: 80% of HBM3's 3.35 TB/s; 81559 MiB a card. Host: PCIe Gen5 x16
// with pinned memory, and one rank's share of the host's DDR5.
constexpr StringLiteral kH100 = R"({
  "name": "h100-nvlink-8",
  "links": [{"bandwidth": 450e9, "latency": 1.5e-6}],
  "matmul_flops": {"f32": 47e12, "bf16": 643e12, "f16": 643e12},
  "memory_bandwidth": 2.68e12,
  "launch_overhead": 2e-6,
  "host_link_bandwidth": 50e9,
  "host_memory_bandwidth": 40e9,
  "async_collectives": true,
  "device_memory": 85520809984,
  "peak_flops": 989e12,
  "matmul_tile": [128, 128, 64]
})";

// 8x H200 SXM: the H100's compute and NVLink4, HBM3e at 4.8 TB/s (80%),
// 143771 MiB a card.
constexpr StringLiteral kH200 = R"({
  "name": "h200-nvlink-8",
  "links": [{"bandwidth": 450e9, "latency": 1.5e-6}],
  "matmul_flops": {"f32": 47e12, "bf16": 643e12, "f16": 643e12},
  "memory_bandwidth": 3.84e12,
  "launch_overhead": 2e-6,
  "host_link_bandwidth": 50e9,
  "host_memory_bandwidth": 40e9,
  "async_collectives": true,
  "device_memory": 150754820096,
  "peak_flops": 989e12,
  "matmul_tile": [128, 128, 64]
})";

// Nodes of 8x H100 SXM5 (the h100-nvlink-8 node: its compute, memory,
// host link and NVLink as axis 1) joined by 400 Gb/s InfiniBand NDR per
// GPU (one ConnectX-7 per GPU, rail-optimized) as axis 0: 50 GB/s a
// direction, of which NCCL's inter-node ring achieves about 90% on large
// messages (45 GB/s bus bandwidth), and a ring step latency of ~6 us
// across the fabric. For meshes `[R, 8]` (zero-pipeline mesh=R,8): R nodes.
constexpr StringLiteral kH100Nodes = R"({
  "name": "h100-nodes-ib400",
  "links": [{"bandwidth": 45e9, "latency": 6e-6},
            {"bandwidth": 450e9, "latency": 1.5e-6}],
  "matmul_flops": {"f32": 47e12, "bf16": 643e12, "f16": 643e12},
  "memory_bandwidth": 2.68e12,
  "launch_overhead": 2e-6,
  "host_link_bandwidth": 50e9,
  "host_memory_bandwidth": 40e9,
  "async_collectives": true,
  "device_memory": 85520809984,
  "peak_flops": 989e12,
  "matmul_tile": [128, 128, 64]
})";

// 8x the H100 of torchtitan's Llama 3.1 benchmarks (Meta's Grand Teton):
// SXM, 96 GB HBM2e at 2.4 TB/s (80%), at the default 500 W power limit,
// NVLink4 as in h100-nvlink-8. Compute: bf16/f16 505.1 TFLOP/s (51.1% of the
// SXM's peak), fitted to torchtitan's FSDP Llama 3.1 8B run on 8 of these GPUs
// (`bench/published_runs.py --fit`, the one fitted constant of these
// presets; torchtitan says this card's peak lies between the SXM's 989 and
// the NVL's 835 TFLOP/s); f32 as the H100's. Device memory: 96 GiB less
// the 361 MiB nvidia-smi withholds on the 80 GB card, 97943 MiB (an
// estimate: no reading of this card is published).
constexpr StringLiteral kH100x96 = R"({
  "name": "h100-96gb-nvlink-8",
  "links": [{"bandwidth": 450e9, "latency": 1.5e-6}],
  "matmul_flops": {"f32": 47e12, "bf16": 505.1e12, "f16": 505.1e12},
  "memory_bandwidth": 1.92e12,
  "launch_overhead": 2e-6,
  "host_link_bandwidth": 50e9,
  "host_memory_bandwidth": 40e9,
  "async_collectives": true,
  "device_memory": 102700679168,
  "peak_flops": 989e12,
  "matmul_tile": [128, 128, 64]
})";

// Nodes of h100-96gb-nvlink-8 (axis 1) joined by torchtitan's "backend
// RDMA network with 400 Gb/s per GPU" (axis 0), as h100-nodes-ib400's.
constexpr StringLiteral kH100x96Nodes = R"({
  "name": "h100-96gb-nodes-ib400",
  "links": [{"bandwidth": 45e9, "latency": 6e-6},
            {"bandwidth": 450e9, "latency": 1.5e-6}],
  "matmul_flops": {"f32": 47e12, "bf16": 505.1e12, "f16": 505.1e12},
  "memory_bandwidth": 1.92e12,
  "launch_overhead": 2e-6,
  "host_link_bandwidth": 50e9,
  "host_memory_bandwidth": 40e9,
  "async_collectives": true,
  "device_memory": 102700679168,
  "peak_flops": 989e12,
  "matmul_tile": [128, 128, 64]
})";

// 8x A100 SXM4 in one node (DGX A100), NVLink3 through NVSwitch: 300 GB/s a
// direction per GPU, of which NCCL's all-reduce reaches ~230 GB/s bus
// bandwidth; the H100's ring step latency. Compute: bf16/f16 217.6 TFLOP/s,
// 69.8% of the dense tensor-core peak (312 TFLOP/s), fitted to MosaicML's
// MPT-7B run on 8 of these GPUs (`bench/published_runs.py --fit`, the one
// fitted constant of the A100 presets); 70% of the 19.5 TFLOP/s FP32 peak,
// as for the H100. Memory: 80% of HBM2's 1.555 TB/s (40 GB card,
// 40960 MiB) or HBM2e's 2.039 TB/s (80 GB card, 81920 MiB). Host: PCIe Gen4
// x16 with pinned memory (~25 of 32 GB/s) and one rank's share of two
// EPYC 7742s' DDR4.
constexpr StringLiteral kA100x40 = R"({
  "name": "a100-40gb-nvlink-8",
  "links": [{"bandwidth": 230e9, "latency": 1.5e-6}],
  "matmul_flops": {"f32": 13.7e12, "bf16": 217.6e12, "f16": 217.6e12},
  "memory_bandwidth": 1.24e12,
  "launch_overhead": 2e-6,
  "host_link_bandwidth": 25e9,
  "host_memory_bandwidth": 30e9,
  "async_collectives": true,
  "device_memory": 42949672960,
  "peak_flops": 312e12,
  "matmul_tile": [128, 128, 32]
})";

constexpr StringLiteral kA100x80 = R"({
  "name": "a100-80gb-nvlink-8",
  "links": [{"bandwidth": 230e9, "latency": 1.5e-6}],
  "matmul_flops": {"f32": 13.7e12, "bf16": 217.6e12, "f16": 217.6e12},
  "memory_bandwidth": 1.63e12,
  "launch_overhead": 2e-6,
  "host_link_bandwidth": 25e9,
  "host_memory_bandwidth": 30e9,
  "async_collectives": true,
  "device_memory": 85899345920,
  "peak_flops": 312e12,
  "matmul_tile": [128, 128, 32]
})";

// Nodes of a100-40gb-nvlink-8 (axis 1) joined by 200 Gb/s RoCE per GPU
// (axis 0), the network of MosaicML's MPT-13B runs: 25 GB/s a direction,
// ~90% of it as NCCL's inter-node bus bandwidth, and ~8 us a ring step
// (RoCE's switches add to InfiniBand's 6).
constexpr StringLiteral kA100Nodes = R"({
  "name": "a100-40gb-nodes-roce200",
  "links": [{"bandwidth": 22.5e9, "latency": 8e-6},
            {"bandwidth": 230e9, "latency": 1.5e-6}],
  "matmul_flops": {"f32": 13.7e12, "bf16": 217.6e12, "f16": 217.6e12},
  "memory_bandwidth": 1.24e12,
  "launch_overhead": 2e-6,
  "host_link_bandwidth": 25e9,
  "host_memory_bandwidth": 30e9,
  "async_collectives": true,
  "device_memory": 42949672960,
  "peak_flops": 312e12,
  "matmul_tile": [128, 128, 32]
})";

// The project's 2-core development machine (Intel Xeon, KVM), one rank per
// core over Open MPI's shared memory, one BLAS thread per rank: measured
// with `bench/predicted_step.py --parts calibrate` (zero-run's profile of a
// calibration step, docs/zero-opt.md). "Memory" is what the runtime's
// non-matmul kernels achieve (their arithmetic, exp and tanh, bounds them
// more than DRAM); a launch includes the executor's own cost per
// instruction; host and device memory are one, so a copy between them is a
// memcpy. bf16/f16 matmuls were not measured: a quarter of f32.
constexpr StringLiteral kCpu = R"({
  "name": "cpu",
  "links": [{"bandwidth": 3.3e9, "latency": 5e-6}],
  "matmul_flops": {"f32": 127e9, "bf16": 32e9, "f16": 32e9},
  "memory_bandwidth": 19.6e9,
  "launch_overhead": 4e-7,
  "host_link_bandwidth": 9.8e9,
  "host_memory_bandwidth": 19.6e9,
  "async_collectives": false
})";

constexpr Preset kPresets[] = {{"a100-40gb-nvlink-8", kA100x40},
                               {"a100-80gb-nvlink-8", kA100x80},
                               {"a100-40gb-nodes-roce200", kA100Nodes},
                               {"h100-nvlink-8", kH100},
                               {"h200-nvlink-8", kH200},
                               {"h100-nodes-ib400", kH100Nodes},
                               {"h100-96gb-nvlink-8", kH100x96},
                               {"h100-96gb-nodes-ib400", kH100x96Nodes},
                               {"cpu", kCpu}};

} // namespace

ArrayRef<StringRef> getMachinePresetNames() {
  static const std::vector<StringRef> names = [] {
    std::vector<StringRef> result;
    for (const Preset &preset : kPresets)
      result.push_back(preset.name);
    return result;
  }();
  return names;
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

namespace {

/// Reads one JSON object's fields and keeps the first problem found, named
/// by the field's path (`links[0].bandwidth`), for one diagnostic.
class FieldReader {
public:
  FieldReader(const llvm::json::Object &object, std::string path,
              std::optional<std::string> &error)
      : object(object), path(std::move(path)), error(error) {}

  const llvm::json::Value *get(StringRef key) {
    seen.insert(key);
    const llvm::json::Value *value = object.get(key);
    if (!value)
      fail("missing field '" + name(key) + "'");
    return value;
  }

  /// The field `key` where it is present, else null: an optional field.
  const llvm::json::Value *optional(StringRef key) {
    seen.insert(key);
    return object.get(key);
  }

  /// A number > 0 (or >= 0 with `allowZero`).
  void number(StringRef key, double &out, bool allowZero = false) {
    const llvm::json::Value *value = get(key);
    if (!value)
      return;
    std::optional<double> number = value->getAsNumber();
    if (!number)
      return fail("field '" + name(key) + "' must be a number");
    if (*number < 0 || (!allowZero && *number == 0) || !std::isfinite(*number))
      return fail("field '" + name(key) + "' must be " +
                  (allowZero ? "non-negative" : "positive") + ", got " +
                  llvm::formatv("{0}", *number).str());
    out = *number;
  }

  /// A number > 0 where the field is present; `out` is left as it is where
  /// it is absent.
  void optionalNumber(StringRef key, double &out) {
    if (optional(key))
      number(key, out);
  }

  void boolean(StringRef key, bool &out) {
    const llvm::json::Value *value = get(key);
    if (!value)
      return;
    std::optional<bool> flag = value->getAsBoolean();
    if (!flag)
      return fail("field '" + name(key) + "' must be true or false");
    out = *flag;
  }

  void string(StringRef key, std::string &out) {
    const llvm::json::Value *value = get(key);
    if (!value)
      return;
    std::optional<StringRef> text = value->getAsString();
    if (!text)
      return fail("field '" + name(key) + "' must be a string");
    out = text->str();
  }

  /// Every key of the object must have been read.
  void rejectUnknown() {
    // Sorted, so the key reported does not depend on the map's hashing.
    std::vector<std::string> keys;
    for (const auto &entry : object)
      keys.push_back(entry.first.str());
    llvm::sort(keys);
    for (const std::string &key : keys)
      if (!seen.contains(key))
        return fail("unknown field '" + name(key) + "'");
  }

  std::string name(StringRef key) const {
    return path.empty() ? key.str() : path + "." + key.str();
  }

  void fail(const std::string &message) {
    if (!error)
      error = message;
  }

private:
  const llvm::json::Object &object;
  std::string path;
  std::optional<std::string> &error;
  llvm::StringSet<> seen;
};

} // namespace

FailureOr<MachineModel> parseMachineModel(StringRef text, StringRef source,
                                          Location loc) {
  auto emit = [&]() -> InFlightDiagnostic {
    return mlir::emitError(loc) << "machine '" << source << "': ";
  };
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed)
    return emit() << "not valid JSON: " << llvm::toString(parsed.takeError());
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return emit() << "expected a JSON object";
  MachineModel model;
  std::optional<std::string> error;
  FieldReader top(*root, "", error);
  top.string("name", model.name);
  if (const llvm::json::Value *links = top.get("links")) {
    const llvm::json::Array *array = links->getAsArray();
    if (!array || array->empty())
      top.fail("field 'links' must be a non-empty array, one {\"bandwidth\", "
               "\"latency\"} per placement axis");
    for (size_t index = 0; array && index < array->size(); ++index) {
      std::string path = "links[" + std::to_string(index) + "]";
      const llvm::json::Object *object = (*array)[index].getAsObject();
      if (!object) {
        top.fail("field '" + path + "' must be an object");
        break;
      }
      LinkModel link;
      FieldReader fields(*object, path, error);
      fields.number("bandwidth", link.bandwidth);
      fields.number("latency", link.latency, /*allowZero=*/true);
      fields.rejectUnknown();
      model.links.push_back(link);
    }
  }
  if (const llvm::json::Value *flops = top.get("matmul_flops")) {
    if (const llvm::json::Object *object = flops->getAsObject()) {
      FieldReader fields(*object, "matmul_flops", error);
      fields.number("f32", model.matmulFlopsF32);
      fields.number("bf16", model.matmulFlopsBF16);
      fields.number("f16", model.matmulFlopsF16);
      fields.rejectUnknown();
    } else {
      top.fail("field 'matmul_flops' must be an object with f32, bf16 and "
               "f16");
    }
  }
  top.number("memory_bandwidth", model.memoryBandwidth);
  top.number("launch_overhead", model.launchOverhead, /*allowZero=*/true);
  top.number("host_link_bandwidth", model.hostLinkBandwidth);
  top.number("host_memory_bandwidth", model.hostMemoryBandwidth);
  top.boolean("async_collectives", model.asyncCollectives);
  double deviceMemory = 0;
  top.optionalNumber("device_memory", deviceMemory);
  model.deviceMemory = static_cast<int64_t>(deviceMemory);
  top.optionalNumber("attention_efficiency", model.attentionEfficiency);
  top.optionalNumber("peak_flops", model.peakFlops);
  if (const llvm::json::Value *tile = top.optional("matmul_tile")) {
    const llvm::json::Array *array = tile->getAsArray();
    bool valid = array && array->size() == 3;
    for (size_t index = 0; valid && index < 3; ++index) {
      std::optional<int64_t> size = (*array)[index].getAsInteger();
      // A bound far above any GEMM tile keeps the rounding in range.
      valid = size && *size > 0 && *size <= 65536;
      if (valid)
        model.matmulTile[index] = *size;
    }
    if (!valid) {
      std::string got;
      llvm::raw_string_ostream os(got);
      os << *tile;
      top.fail("field 'matmul_tile' must be three integers from 1 to 65536: "
               "the output rows, output columns and contracted depth of a "
               "GEMM kernel's tile, such as [128, 128, 64]; got " +
               got);
    }
  }
  // The datasheet peak bounds what a kernel achieves: a fitted matmul rate
  // above it is a typo in one of the two, and the MFU would exceed 100%.
  double matmulPeak = std::max(
      {model.matmulFlopsF32, model.matmulFlopsBF16, model.matmulFlopsF16});
  if (!error && model.peakFlops > 0 && matmulPeak > model.peakFlops) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::format("field 'peak_flops' (%g) is below the machine's "
                       "fastest matmul rate (%g); it is the card's datasheet "
                       "peak, which no kernel exceeds",
                       model.peakFlops, matmulPeak);
    top.fail(text);
  }
  if (!error && model.attentionEfficiency > 1.0)
    top.fail("field 'attention_efficiency' must be at most 1 (a fraction of "
             "the matmul rate), got " +
             llvm::formatv("{0}", model.attentionEfficiency).str());
  top.rejectUnknown();
  if (error)
    return emit() << *error;
  return model;
}

FailureOr<MachineModel> loadMachineModel(StringRef spec, Location loc) {
  for (const Preset &preset : kPresets)
    if (spec == preset.name)
      return parseMachineModel(preset.json, preset.name, loc);
  if (!spec.ends_with(".json")) {
    InFlightDiagnostic diag = mlir::emitError(loc) << "machine '" << spec
                                                   << "' is neither a preset (";
    llvm::interleaveComma(getMachinePresetNames(), diag);
    diag << ") nor a .json file";
    return failure();
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(spec, /*IsText=*/true);
  if (!file)
    return mlir::emitError(loc)
           << "machine '" << spec
           << "': cannot read it: " << file.getError().message();
  return parseMachineModel((*file)->getBuffer(), spec, loc);
}

} // namespace zero
