//===- KernelParamsFromAttr.cpp - An MLIR dictionary as KernelParams ------===//
//
// The one place the kernels' attributes are read as MLIR attributes: on the
// host, by the program's own MLIR (KernelParams.h says why). Kept apart
// from the kernels so that the CUDA module, which links the CPU kernel
// library for its bind-time checks, pulls in no MLIR code.
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/KernelParams.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/raw_ostream.h"

using namespace zero::rt;

static KernelParam convert(mlir::Attribute attr) {
  KernelParam param;
  llvm::raw_string_ostream os(param.text);
  attr.print(os);
  os.flush();
  if (mlir::isa<mlir::UnitAttr>(attr)) {
    param.kind = KernelParam::Kind::unit;
  } else if (auto flag = mlir::dyn_cast<mlir::BoolAttr>(attr)) {
    param.kind = KernelParam::Kind::boolean;
    param.boolean = flag.getValue();
  } else if (auto integer = mlir::dyn_cast<mlir::IntegerAttr>(attr)) {
    param.kind = KernelParam::Kind::integer;
    param.integer = integer.getValue().getSExtValue();
  } else if (auto real = mlir::dyn_cast<mlir::FloatAttr>(attr)) {
    param.kind = KernelParam::Kind::real;
    param.real = real.getValueAsDouble();
  } else if (auto string = mlir::dyn_cast<mlir::StringAttr>(attr)) {
    param.kind = KernelParam::Kind::string;
    param.string = string.getValue().str();
  } else if (auto dense = mlir::dyn_cast<mlir::DenseI64ArrayAttr>(attr)) {
    param.kind = KernelParam::Kind::integers;
    param.integers.assign(dense.asArrayRef().begin(), dense.asArrayRef().end());
  } else if (auto array = mlir::dyn_cast<mlir::ArrayAttr>(attr)) {
    // Integers only (a mesh's grid); an array of anything else stays
    // `other`, for the reader to refuse.
    std::vector<int64_t> values;
    for (mlir::Attribute element : array) {
      auto value = mlir::dyn_cast<mlir::IntegerAttr>(element);
      if (!value || mlir::isa<mlir::BoolAttr>(element))
        return param;
      values.push_back(value.getValue().getSExtValue());
    }
    param.kind = KernelParam::Kind::integers;
    param.integers = std::move(values);
  }
  return param;
}

KernelParams::KernelParams(mlir::DictionaryAttr attrs) {
  if (!attrs)
    return;
  for (mlir::NamedAttribute named : attrs)
    insert(named.getName().str(), convert(named.getValue()));
}
