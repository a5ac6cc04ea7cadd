//===- TrainGradientInterface.td - Reverse-mode gradient rules -*- tablegen -*-===//
//
// The one thing `train-autodiff` asks of an op: how to turn the gradients of
// its results into gradients of its operands. Train compute ops implement it
// in TableGen; upstream ops a step may use get it as external models.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_TRAIN_GRADIENT_INTERFACE
#define ZERO_TRAIN_GRADIENT_INTERFACE

include "mlir/IR/OpBase.td"

def Train_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::zero::train";
  let description = [{
    An op with a reverse-mode gradient rule. Given the gradient of the loss
    with respect to each result, the op builds ops (at the builder's
    insertion point) that compute the gradient with respect to each operand
    and has the operand's type.

    `resultGradients` holds one value per result; a null value means the
    loss does not depend on that result (its gradient is zero). At least
    one is non-null. `operandGradients` receives one value per operand;
    null marks an operand with no gradient: integer ids and labels, or an
    operand the rule does not differentiate. A rule may build gradients
    that nobody needs: `train-autodiff` erases the unused ones afterwards.
    A rule that cannot handle a case returns failure after emitting a
    diagnostic on the op.
  }];
  let methods = [
    InterfaceMethod<
      "Builds the operand gradients from the result gradients.",
      "::mlir::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultGradients,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGradients)>,
  ];
}

#endif // ZERO_TRAIN_GRADIENT_INTERFACE
