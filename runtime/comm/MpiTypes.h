//===- MpiTypes.h - Our element types and reductions, in MPI's terms ------===//
//
// Internal to the MPI communicator.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_COMM_MPITYPES_H
#define ZERO_RUNTIME_COMM_MPITYPES_H

#include "zero/runtime/Communicator.h"
#include "zero/runtime/DType.h"

#include <mpi.h>

namespace zero::rt {

inline MPI_Datatype mpiType(DType dtype) {
  switch (dtype) {
  case DType::f32:
    return MPI_FLOAT;
  case DType::bf16:
  case DType::f16:
    // Only ever moved, never reduced, by MPI.
    return MPI_UINT16_T;
  case DType::i32:
    return MPI_INT32_T;
  case DType::i64:
    return MPI_INT64_T;
  case DType::i8:
    return MPI_INT8_T;
  }
  return MPI_BYTE;
}

inline const char *reduceName(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::sum:
    return "sum";
  case ReduceKind::mean:
    return "mean";
  case ReduceKind::max:
    return "max";
  }
  return "?";
}

} // namespace zero::rt

#endif // ZERO_RUNTIME_COMM_MPITYPES_H
