//===- MachineModel.h - What the hardware of a step costs -------*- C++ -*-===//
//
// The constants a predicted timeline of a lowered step is computed from:
// per placement axis the bandwidth and latency of the collectives' links,
// the matmul rate per element type, the memory bandwidth that bounds every
// other kernel, a per-launch overhead, and the host link of offload copies.
// Presets describe 8-GPU A100, H100 and H200 nodes, clusters of them, and
// the 2-core machine the project is developed on; any other machine is a
// JSON file.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_ANALYSIS_MACHINEMODEL_H
#define ZERO_ANALYSIS_MACHINEMODEL_H

#include "mlir/IR/BuiltinTypeInterfaces.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Types.h"
#include "mlir/Support/LogicalResult.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

#include <array>
#include <string>
#include <vector>

namespace zero {

/// The links of one placement axis, in the alpha-beta model of a ring
/// collective: `latency` per ring step, `bandwidth` the bus bandwidth as
/// NCCL's tests report it (bytes/s a rank's link moves).
struct LinkModel {
  double bandwidth = 0;
  double latency = 0;
};

struct MachineModel {
  std::string name;
  /// One per placement axis, outermost first.
  std::vector<LinkModel> links;
  /// Achieved matmul FLOP/s by element type.
  double matmulFlopsF32 = 0;
  double matmulFlopsBF16 = 0;
  double matmulFlopsF16 = 0;
  /// Achieved bytes/s of device memory, for every kernel other than matmul
  /// and for copies within device memory.
  double memoryBandwidth = 0;
  /// Seconds added to every kernel launch and copy.
  double launchOverhead = 0;
  /// Bytes/s of a copy between host and device memory.
  double hostLinkBandwidth = 0;
  /// Bytes/s of host memory, for kernels of a host stream (offloaded
  /// optimizer updates).
  double hostMemoryBandwidth = 0;
  /// Whether a collective on a communication stream progresses while the
  /// compute stream runs kernels (GPUs with NCCL), or only while the compute
  /// stream waits for it (CPU ranks: Open MPI progresses a non-blocking
  /// collective only inside MPI calls).
  bool asyncCollectives = true;
  /// Bytes of one device's memory, as `nvidia-smi` reports the card's; 0
  /// where the machine does not say (a file without `device_memory`), and
  /// then the prediction says nothing about fitting.
  int64_t deviceMemory = 0;
  /// The fraction of the matmul rate a fused attention kernel achieves
  /// (`attention_efficiency`; FlashAttention's forward and backward run
  /// below a plain GEMM's rate): 1 where the machine does not say.
  double attentionEfficiency = 1.0;
  /// The card's datasheet dense 16-bit tensor-core FLOP/s (`peak_flops`),
  /// what MosaicML's and torchtitan's MFU divide by, whatever the step's
  /// precision; at least every matmul rate. 0 where the machine does not
  /// say, and then the prediction states no MFU.
  double peakFlops = 0;
  /// The output rows, output columns and contracted depth of the tile a
  /// GEMM kernel computes whole (`matmul_tile`): a matmul runs as if each
  /// dimension were rounded up to a multiple of its tile, which is how a
  /// GEMM's efficiency falls off on shapes that do not fill its tiles
  /// (NVIDIA's "tile quantization"). Zeros where the machine does not say:
  /// every shape then runs at the matmul rate.
  std::array<int64_t, 3> matmulTile = {0, 0, 0};

  /// Matmul FLOP/s for `elementType` (f32 for any type without its own).
  double matmulFlops(mlir::Type elementType) const;

  /// Seconds of one collective over `ranks` ranks of `axis` whose full
  /// (gathered, or reduced) buffer is `bytes`; 0 over one rank. Ring
  /// formulas: all-gather, reduce-scatter and all-to-all move (N-1)/N of the
  /// buffer and take N-1 steps, an all-reduce twice that; a broadcast is
  /// pipelined along the ring (the buffer once, N-1 steps).
  double collectiveSeconds(llvm::StringRef kind, int64_t axis, int64_t ranks,
                           double bytes) const;

  /// Seconds of one kernel that reads and writes `bytes` and does `flops`
  /// matmul FLOPs in `elementType`, on a device stream or (`onHost`) a host
  /// stream: a roofline (memory or the matmul rate, whichever is slower)
  /// plus the launch overhead. The FLOPs run at `efficiency` times the
  /// matmul rate (attentionEfficiency for fused attention).
  double kernelSeconds(double bytes, double flops, mlir::Type elementType,
                       bool onHost, double efficiency = 1.0) const;

  /// Seconds of one `train.matmul` with operands `lhs`, `rhs` and result
  /// `out` that reads and writes `bytes`: kernelSeconds of the FLOPs of its
  /// GEMMs' shapes rounded up to whole tiles of `matmulTile`.
  double matmulSeconds(mlir::ShapedType lhs, mlir::ShapedType rhs,
                       mlir::ShapedType out, bool transposeA, double bytes,
                       bool onHost) const;

  /// Seconds of a copy of `bytes` within one memory, which reads and writes
  /// every byte.
  double copySeconds(double bytes, bool onHost) const;
};

/// FLOPs of `train.matmul` with left operand `lhs` and result `out`
/// (`transposeA` contracts over the lhs's rows); 0 below rank 2 or with a
/// dynamic shape.
double getMatmulFlops(mlir::ShapedType lhs, mlir::ShapedType out,
                      bool transposeA);

/// FLOPs of `train.attention` (or, with `backward`, `train.attention_grad`)
/// on query/key/value of type `query` [..., seq, head_dim], as
/// FlashAttention does them: the forward's two [seq, seq, head_dim] matmuls
/// (scores, then probabilities times values), the backward's five (the
/// scores again, and the gradients of values, probabilities, queries and
/// keys); with `causal`, only the seq (seq + 1) / 2 query-key pairs that
/// are not masked; with `seqMajor`, the query is [..., seq, heads,
/// head_dim] (train.attention's `seq_major`). 0 below rank 2 (3 when
/// seq-major) or with a dynamic shape.
double getAttentionFlops(mlir::ShapedType query, bool causal, bool backward,
                         bool seqMajor = false);

/// `machine` in the machine file's format: parseMachineModel reads it back
/// as the same machine.
llvm::json::Object machineToJson(const MachineModel &machine);

/// The preset names, for diagnostics and documentation.
llvm::ArrayRef<llvm::StringRef> getMachinePresetNames();

/// `spec` is a preset name or the path of a JSON machine file. Fails with a
/// diagnostic at `loc` naming the problem: an unknown preset, a file that
/// cannot be read or parsed, a missing, unknown, mistyped or negative field.
mlir::FailureOr<MachineModel> loadMachineModel(llvm::StringRef spec,
                                               mlir::Location loc);

/// The same, from a JSON text; `source` names it in diagnostics.
mlir::FailureOr<MachineModel> parseMachineModel(llvm::StringRef text,
                                                llvm::StringRef source,
                                                mlir::Location loc);

} // namespace zero

#endif // ZERO_ANALYSIS_MACHINEMODEL_H
