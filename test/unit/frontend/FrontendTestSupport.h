//===- FrontendTestSupport.h - What the frontend tests share ---*- C++ -*-===//
//
// The models both frontend test files build, the reference they are
// trained against, and the single-rank communicator every test shares.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_TEST_UNIT_FRONTEND_FRONTENDTESTSUPPORT_H
#define ZERO_TEST_UNIT_FRONTEND_FRONTENDTESTSUPPORT_H

#include "zero/frontend/CompiledGraph.h"
#include "zero/frontend/Graph.h"
#include "zero/runtime/Communicator.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace zero::frontend::testsupport {

/// MPI may be initialized and finalized once per process, so the
/// single-rank communicator (made by main, FrontendTestSupport.cpp)
/// outlives every test.
extern rt::Communicator *theComm;

/// How far the bf16 GPT-2's losses may drift from the f32 model's over 5
/// steps (see Bf16Gpt2TracksTheF32Losses).
constexpr float kBf16LossTolerance = 2e-3f;

std::string sourcePath(const std::string &relative);

/// The MLP of examples/mlp-forward.mlir: 784 -> 128 (ReLU) -> 10, batch 32.
Graph buildMlp(int64_t batch = 32);

/// The GPT-2 of gen_gpt2.py --forward-only --layers 1 --dim 32 --heads 2
/// --seq 8 --vocab 64 --batch 2 (--dtype bf16 with `precision` bf16).
/// With `checkpoint`, the blocks are marked as by --recompute.
/// With `selective` (and `checkpoint`), selective checkpointing.
Graph buildGpt2(DType precision = DType::f32, bool checkpoint = false,
                bool selective = false);

std::string printed(mlir::ModuleOp module);

/// A context and the parsed step of a .mlir file.
struct ParsedFile {
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};
ParsedFile parseFile(const std::string &path);

/// The reference: the file compiled as `zero-opt --train-autodiff` then
/// `zero-run --stage 0`, trained with the runtime directly.
std::vector<float> trainFile(const std::string &path, int64_t steps,
                             uint64_t seed);

std::vector<float> trainGraph(const Graph &graph, int64_t steps, uint64_t seed);

/// Bitwise: the same ops in the same order must round the same way.
void expectSameBits(const std::vector<float> &actual,
                    const std::vector<float> &expected);

/// The message of a compilation that must fail.
std::string compileError(const Graph &graph);

} // namespace zero::frontend::testsupport

#endif // ZERO_TEST_UNIT_FRONTEND_FRONTENDTESTSUPPORT_H
