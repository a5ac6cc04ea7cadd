//===- TrainDialect.td - The ahead-of-time training step ---*- tablegen -*-===//

#ifndef ZERO_TRAIN_DIALECT
#define ZERO_TRAIN_DIALECT

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/DialectBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"

def Train_Dialect : Dialect {
  let name = "train";
  let summary = "Persistent training state, optimizers and the compute of a training step";
  let description = [{
    The `train` dialect holds one training step of a model, ahead of time:

    * persistent tensors (`train.param`) with a role (parameter, frozen
      parameter, fp32 master copy, optimizer slot, gradient accumulator), an
      initializer and a storage layout (replicated, flat-sharded or
      dim-0-sharded over a placement axis). The logical shape is always
      recorded; the local shape each rank holds is derived and verified;
    * `train.load` / `train.store` of those tensors, an optimizer
      declaration, the high-level `train.apply_gradient` and the explicit
      update ops (`train.sgd`, `train.adam`, `train.adamw`, ...) that a pass
      materializes from it, so every byte of optimizer state is visible;
    * the compute op set an MLP, GPT-2 or Llama needs, in f32, bf16 or f16,
      each op with a gradient op where its gradient is not a composition of
      others.

    The step itself is a `func.func` carrying the unit attribute
    `train.step`; it runs once per micro-batch on the rank's local batch.
  }];
  let cppNamespace = "::zero::train";
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Unit attribute marking the training-step function.
    static constexpr ::llvm::StringLiteral getStepAttrName() {
      return ::llvm::StringLiteral("train.step");
    }
    /// Integer attribute on the step function: the step runs this many
    /// micro-batches, accumulating gradients, before each optimizer update.
    static constexpr ::llvm::StringLiteral getAccumulateStepsAttrName() {
      return ::llvm::StringLiteral("train.accumulate_steps");
    }
    /// Unit attribute marking the function that applies accumulated
    /// gradients once every `train.accumulate_steps` micro-batches.
    static constexpr ::llvm::StringLiteral getApplyStepAttrName() {
      return ::llvm::StringLiteral("train.apply_step");
    }
    /// Argument attribute of a step under gradient accumulation, on the
    /// f32 scalar that replaced a `train.count_labels`: `{labels = i,
    /// ignore_index = n, begin = [...], end = [...]}`. The runtime fills it
    /// before each step with the labels other than n in the box [begin,
    /// end) of argument i (a causal-LM loss counts from position 1), over
    /// every micro-batch of the step this rank holds, divided by the
    /// micro-batches, so that each micro-step divides its loss by the
    /// step's count, not its own.
    static constexpr ::llvm::StringLiteral getLabelCountAttrName() {
      return ::llvm::StringLiteral("train.label_count");
    }
    /// Unit attribute on a forward op of a step: `train-autodiff
    /// recompute=true` recomputes its results in the backward instead of
    /// keeping them alive from the forward.
    static constexpr ::llvm::StringLiteral getRecomputeAttrName() {
      return ::llvm::StringLiteral("train.recompute");
    }
    /// Unit attribute `train-autodiff recompute=true` puts on the clones it
    /// emits in the backward: the ops a run executes twice. It changes no
    /// result; it lets the plan tell the step's model FLOPs (each op once)
    /// from those it executes, as MFU counts them.
    static constexpr ::llvm::StringLiteral getRecomputedAttrName() {
      return ::llvm::StringLiteral("train.recomputed");
    }
  }];
}

//===----------------------------------------------------------------------===//
// Enumerations
//===----------------------------------------------------------------------===//

def Train_Role : I32EnumAttr<"Role", "what a persistent tensor is for", [
    I32EnumAttrCase<"param", 0>,
    I32EnumAttrCase<"frozen", 1>,
    I32EnumAttrCase<"master", 2>,
    I32EnumAttrCase<"slot", 3>,
    I32EnumAttrCase<"grad_accum", 4>,
    I32EnumAttrCase<"scaler", 5>
  ]> {
  let cppNamespace = "::zero::train";
}

def Train_StorageLayout : I32EnumAttr<"StorageLayoutKind",
    "how a persistent tensor is stored across ranks", [
    I32EnumAttrCase<"replicated", 0>,
    I32EnumAttrCase<"flat", 1>,
    I32EnumAttrCase<"dim0", 2>
  ]> {
  let cppNamespace = "::zero::train";
}

def Train_OptimizerKind : I32EnumAttr<"OptimizerKind", "optimizer algorithm", [
    I32EnumAttrCase<"sgd", 0>,
    I32EnumAttrCase<"momentum", 1>,
    I32EnumAttrCase<"adam", 2>,
    I32EnumAttrCase<"adamw", 3>
  ]> {
  let cppNamespace = "::zero::train";
}

def Train_ScheduleKind : I32EnumAttr<"ScheduleKind",
    "learning-rate schedule", [
    I32EnumAttrCase<"constant", 0>,
    I32EnumAttrCase<"linear", 1>,
    I32EnumAttrCase<"cosine", 2>
  ]> {
  let cppNamespace = "::zero::train";
}

def Train_InitKind : I32EnumAttr<"InitKind", "initializer of a persistent tensor", [
    I32EnumAttrCase<"zeros", 0>,
    I32EnumAttrCase<"ones", 1>,
    I32EnumAttrCase<"constant", 2>,
    I32EnumAttrCase<"normal", 3>,
    I32EnumAttrCase<"uniform", 4>
  ]> {
  let cppNamespace = "::zero::train";
  let genSpecializedAttr = 0;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def Train_InitAttr : AttrDef<Train_Dialect, "Init"> {
  let mnemonic = "init";
  let summary = "How a persistent tensor's logical value is initialized";
  let description = [{
    `zeros`, `ones`, `constant(v)`, `normal(mean, std)` or
    `uniform(low, high)`, as in `#train.init<normal(0.0, 0.02)>`. The
    initializer describes the logical tensor: the runtime draws it from the
    seed the same way whatever the number of ranks and the layout, and each
    rank keeps its shard. Master copies start as their parameter, so they
    take no initializer.
  }];
  let parameters = (ins
    "::zero::train::InitKind":$kind,
    APFloatParameter<"first argument: value, mean or low">:$a,
    APFloatParameter<"second argument: std or high">:$b
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    double getFirst() const { return getA().convertToDouble(); }
    double getSecond() const { return getB().convertToDouble(); }
  }];
}

#endif // ZERO_TRAIN_DIALECT
