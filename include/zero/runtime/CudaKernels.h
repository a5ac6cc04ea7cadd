//===- CudaKernels.h - CUDA kernels of the runtime --------------*- C++ -*-===//
//
// The CUDA twin of CpuKernels.h: the same kernel names, attributes, dtypes
// (f32, bf16 or f16 storage, f32 arithmetic) and aliasing rules, so that one
// lowered program binds against either backend. A bind checks its request
// with the CPU kernels' own checks (same messages), then allocates whatever
// device scratch the kernel needs; the bound kernel frees it when its last
// copy is destroyed.
//
// Buffers are device pointers of the device that was current at bind time,
// and that device must be current when a bound kernel is called. A call only
// enqueues work on the bound stream: it does no allocation and never
// synchronizes, so its status reports launch errors only; faults inside a
// kernel surface at the next synchronization. Reductions run in a fixed order
// for a given shape, so repeated calls give the same bits, but not the CPU's
// bits (see docs/runtime.md, "CUDA kernels", for the tolerances).
//
// Where a CPU kernel returns an error from data it reads at call time (an id
// out of range, an Adam step below 1) the CUDA kernel cannot without a
// synchronization; it writes NaN into the affected results instead (the
// row of a bad embedding id, the loss and gradient row of a bad label, the
// whole Adam update), and embedding_grad skips bad ids. It never reads or
// writes out of bounds.
//
// The header needs no CUDA headers: a stream is passed as an opaque pointer
// (a cudaStream_t; nullptr is the legacy default stream).
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_CUDAKERNELS_H
#define ZERO_RUNTIME_CUDAKERNELS_H

#include "zero/runtime/CpuKernels.h"

#include <string>
#include <vector>

namespace zero::rt {

/// A cudaStream_t, type-erased so that code without CUDA headers can hold it.
using CudaStreamHandle = void *;

/// Binds kernel `name` for these specs and attributes, to run on `stream`.
/// Unknown names give UnimplementedError ("no CUDA kernel for 'NAME'"); bad
/// shapes, dtypes or attributes give the InvalidArgumentError bindCpuKernel
/// gives; CUDA or cuBLAS failures at bind time give InternalError.
absl::StatusOr<KernelFn> bindCudaKernel(absl::string_view name,
                                        const KernelParams &params,
                                        absl::Span<const TensorSpec> ins,
                                        absl::Span<const TensorSpec> outs,
                                        CudaStreamHandle stream);

/// Every kernel name bindCudaKernel knows, sorted.
std::vector<std::string> cudaKernelNames();

} // namespace zero::rt

#endif // ZERO_RUNTIME_CUDAKERNELS_H
