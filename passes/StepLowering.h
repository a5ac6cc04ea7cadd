//===- StepLowering.h - One training step as a zrt program ------*- C++ -*-===//
//
// The state of zero-lower-to-runtime while it rewrites one step: which
// memref holds each tensor, the arena buffers and their lifetimes, the
// collectives still in flight on the communication stream.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_PASSES_STEPLOWERING_H
#define ZERO_PASSES_STEPLOWERING_H

#include "zero/analysis/ArenaPlanner.h"
#include "zero/analysis/PlanReport.h"
#include "zero/analysis/TrainingStep.h"
#include "zero/dialects/dist/DistOps.h"
#include "zero/dialects/train/TrainOps.h"
#include "zero/dialects/zrt/ZrtOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace zero::lowering {

using namespace mlir;

/// A transient buffer: its arena view and the instructions it lives across.
struct ArenaBuffer {
  zrt::ArenaViewOp view;
  /// The first and last instruction that name the buffer (through views of
  /// it); a buffer made ahead of its first use holds no bytes until then.
  int64_t begin = 0;
  int64_t end = 0;
  bool used = false;
};

/// A collective issued on the communication stream whose completion the
/// compute stream has not waited for yet.
struct PendingCollective {
  FlatSymbolRefAttr done;
  SmallVector<Value> reads, writes;
};

class StepLowering {
public:
  StepLowering(ModuleOp module, func::FuncOp step, int64_t alignment,
               bool asyncCollectives)
      : module(module), step(step), alignment(alignment),
        asyncCollectives(asyncCollectives), builder(module.getContext()) {}

  /// Builds the program at the end of the module, with the step as its
  /// body of `kind` (`step`, or `micro` with gradient accumulation). Fails
  /// with a diagnostic on the first op it cannot lower.
  LogicalResult lower(DictionaryAttr report,
                      zrt::StepKind kind = zrt::StepKind::step);
  /// Adds the step to `into`, built by an earlier lower(), as its body of
  /// `kind` (the `apply` step of gradient accumulation): same buffers,
  /// streams and arena, which grows to what this body needs.
  LogicalResult lowerInto(zrt::ProgramOp into, zrt::StepKind kind);

private:
  // Declarations.
  void declareState();
  void declareInterface();
  FlatSymbolRefAttr declareEvent(StringRef prefix);
  Value getBufferRef(StringRef symbol);
  zrt::BufferOp createBuffer(Location loc, StringRef name, zrt::BufferRole role,
                             Type tensorType);

  // Memory.
  Value newArenaBuffer(MemRefType type);
  Value getView(Value memref, int64_t elementOffset, MemRefType type);
  Value getFlatView(Value memref, int64_t elementOffset, int64_t count);
  void touch(Value memref);
  bool sameMemory(Value a, Value b);
  Value lookup(Value tensor) { return memrefOf.lookup(tensor); }

  // Instructions.
  /// Makes the compute stream wait for the pending collectives whose
  /// buffers these reads and writes touch (or for all of them).
  void waitForCollectives(ValueRange reads, ValueRange writes,
                          bool all = false);
  /// Makes the compute stream wait for the pending collectives that `mustWait`
  /// picks, and so for every one issued before them; all their buffers stay
  /// reserved until that one wait.
  void waitForCollectives(function_ref<bool(PendingCollective &)> mustWait);
  /// Before a new hand-off to the communication stream: waits for the
  /// collectives of earlier hand-offs that read arena buffers, so the arena
  /// can reuse those inputs (packed buckets) instead of holding them to the
  /// end of the step.
  void releaseCollectiveInputs();
  void emitLaunch(StringRef kernel, ValueRange ins, ValueRange outs,
                  DictionaryAttr params);
  void emitCopy(Value source, Value target);
  void emitFill(Value target, double value);
  template <typename OpTy, typename... Args>
  void emitCollective(Value input, Value output, Args &&...args);
  void finishInstruction(Operation *op, ValueRange memrefs);

  // Ops of the step.
  LogicalResult lowerOp(Operation *op);
  LogicalResult lowerLoad(train::LoadOp load);
  void lowerStore(train::StoreOp store);
  LogicalResult lowerConstant(arith::ConstantOp constant);
  void lowerCompute(Operation *op, StringRef kernel, DictionaryAttr params);
  LogicalResult lowerUpdate(Operation *op);
  void lowerScaleByNorm(train::ScaleByNormOp op);
  LogicalResult lowerCollective(Operation *op);
  void lowerPack(dist::PackOp pack);
  void lowerUnpack(dist::UnpackOp unpack);
  void lowerReturn(func::ReturnOp ret);

  /// Creates the step body of `kind` and lowers the step into it.
  LogicalResult lowerBody(zrt::StepKind kind);
  void planMemory();
  /// The last op (by index in the step) that reads `value` or a view of it.
  int64_t getLastUse(Value value);
  bool loadNeedsCopy(train::LoadOp load);
  /// The state an update's result may be written to directly (the kernels
  /// update in place), instead of through the arena and a copy.
  std::optional<StringRef> getInPlaceState(Operation *update, Value result);
  /// `result` written directly into that state's buffer, or null.
  Value getInPlaceTarget(Operation *op, Value result);

  ModuleOp module;
  func::FuncOp step;
  int64_t alignment;
  bool asyncCollectives;
  OpBuilder builder;
  SymbolTableCollection symbols;

  zrt::ProgramOp program;
  Block *declarations = nullptr;
  Block *body = nullptr;
  /// Where buffer_refs go: before the first instruction, so that a
  /// reference made at any later point dominates every use.
  Operation *firstInstruction = nullptr;

  DenseMap<Value, Value> memrefOf;
  /// The arena buffer (index) or persistent buffer a memref lives in.
  DenseMap<Value, int64_t> arenaBufferOf;
  DenseMap<Value, StringAttr> persistentBufferOf;
  llvm::StringMap<Value> bufferRefs;
  SmallVector<ArenaBuffer> arenaBuffers;
  SmallVector<PendingCollective> pending;
  /// Index of the next instruction (launch, copy, collective, record, wait).
  int64_t position = 0;
  bool computeSinceLastHandoff = true;
  int64_t eventCount = 0;
  FlatSymbolRefAttr computeStream, commStream;
  /// Original op -> index, to decide when a load must be copied, and what
  /// the step loads and stores of each state, so that deciding is linear.
  DenseMap<Operation *, int64_t> opIndex;
  DenseMap<Value, int64_t> lastUses;
  llvm::StringMap<SmallVector<train::LoadOp>> loadsOf;
  llvm::StringMap<SmallVector<train::StoreOp>> storesOf;
};

/// The memref type of a static tensor type.
MemRefType toMemRef(Type tensorType);

/// Rows along dimension 0 of a shaped type, and elements per row (1 and 1
/// for a scalar).
std::pair<int64_t, int64_t> getRowsAndRowElements(Type type);

} // namespace zero::lowering

#endif // ZERO_PASSES_STEPLOWERING_H
