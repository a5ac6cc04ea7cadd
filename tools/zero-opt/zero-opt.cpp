//===- zero-opt.cpp - The ZeRO compiler's mlir-opt ------------------------===//
//
// Parses, verifies, transforms and prints IR in the project's dialects and
// the upstream dialects a training step may be written in. Every error is a
// located diagnostic and a non-zero exit status.
//
//===----------------------------------------------------------------------===//

#include "zero/passes/Pipeline.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  zero::registerZeroPasses();

  mlir::DialectRegistry registry;
  zero::registerZeroDialects(registry);
  registry.insert<mlir::cf::ControlFlowDialect, mlir::linalg::LinalgDialect,
                  mlir::math::MathDialect, mlir::mesh::MeshDialect,
                  mlir::scf::SCFDialect, mlir::tensor::TensorDialect>();

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "ZeRO compiler: dialects dist, train, zrt and their passes\n",
      registry));
}
