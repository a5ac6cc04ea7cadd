//===- LocalReduce.h - Rank-order reduction ---------------------*- C++ -*-===//
//
// The deterministic collectives receive every rank's contribution to a block
// and reduce them here, always in rank order, so that the result does not
// depend on message timing, on the algorithm MPI picks, or on which
// collective (all-reduce or reduce-scatter) produced it.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_COMM_LOCALREDUCE_H
#define ZERO_RUNTIME_COMM_LOCALREDUCE_H

#include "zero/runtime/Communicator.h"

#include <cstdint>

namespace zero::rt {

/// Reduces `count` float elements of `dtype` from `sources[0]`, ...,
/// `sources[numSources - 1]` into `out` as ((s0 op s1) op s2) op ... in f32,
/// divides by `numSources` for a mean, and rounds once into `dtype`. `out`
/// may be one of the sources (element i is written only after every source's
/// element i was read). max propagates NaN.
void reduceInOrder(const void *const *sources, int numSources, void *out,
                   int64_t count, DType dtype, ReduceKind kind);

/// Divides `count` f32 elements in place by `divisor` (the mean of MPI's sum).
void divideInPlace(float *data, int64_t count, int divisor);

} // namespace zero::rt

#endif // ZERO_RUNTIME_COMM_LOCALREDUCE_H
