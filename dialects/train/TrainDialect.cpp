//===- TrainDialect.cpp - The ahead-of-time training step -----------------===//

#include "zero/dialects/train/TrainDialect.h"
#include "zero/dialects/train/TrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

#include <charconv>
#include <cmath>
#include <string>

using namespace mlir;
using namespace zero::train;

#include "zero/dialects/train/TrainEnums.cpp.inc"

#include "zero/dialects/train/TrainDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "zero/dialects/train/TrainAttrs.cpp.inc"

void TrainDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "zero/dialects/train/TrainAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "zero/dialects/train/TrainOps.cpp.inc"
      >();
}

LogicalResult TrainDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  // The recompute mark goes on the ops of a step, not on the function.
  if (name == getRecomputeAttrName() || name == getRecomputedAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError()
             << "'" << name << "' is a unit attribute and takes no value";
    return success();
  }
  if (name != getStepAttrName() && name != getApplyStepAttrName() &&
      name != getAccumulateStepsAttrName())
    return op->emitError() << "unknown train attribute '" << name
                           << "'; the dialect defines '" << getStepAttrName()
                           << "', '" << getAccumulateStepsAttrName() << "', '"
                           << getApplyStepAttrName() << "', '"
                           << getRecomputeAttrName() << "' and '"
                           << getRecomputedAttrName() << "'";
  if (!isa<func::FuncOp>(op))
    return op->emitError() << "'" << name
                           << "' marks a training-step func.func, not '"
                           << op->getName() << "'";
  if (name == getAccumulateStepsAttrName()) {
    auto steps = dyn_cast<IntegerAttr>(attr.getValue());
    if (!steps || steps.getInt() < 1)
      return op->emitError()
             << "'" << name
             << "' must be a positive number of micro-batches, got "
             << attr.getValue();
    if (!op->hasAttr(getStepAttrName()))
      return op->emitError() << "'" << name << "' belongs on the '"
                             << getStepAttrName() << "' function";
    return success();
  }
  if (!isa<UnitAttr>(attr.getValue()))
    return op->emitError() << "'" << name
                           << "' is a unit attribute and takes no value";
  return success();
}

//===----------------------------------------------------------------------===//
// InitAttr
//===----------------------------------------------------------------------===//

/// Number of numeric arguments each initializer takes.
static int numInitArguments(InitKind kind) {
  switch (kind) {
  case InitKind::zeros:
  case InitKind::ones:
    return 0;
  case InitKind::constant:
    return 1;
  case InitKind::normal:
  case InitKind::uniform:
    return 2;
  }
  return 0;
}

/// Parses `zeros`, `ones`, `constant(v)`, `normal(mean, std)`,
/// `uniform(low, high)`.
static ParseResult parseInitBody(AsmParser &parser, InitAttr &init) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<InitKind> kind = symbolizeInitKind(keyword);
  if (!kind)
    return parser.emitError(loc, "unknown initializer '")
           << keyword << "'; expected zeros, ones, constant(v), "
           << "normal(mean, std) or uniform(low, high)";
  double values[2] = {0.0, 0.0};
  int count = numInitArguments(*kind);
  if (count > 0) {
    if (parser.parseLParen())
      return failure();
    for (int i = 0; i < count; ++i)
      if ((i > 0 && parser.parseComma()) || parser.parseFloat(values[i]))
        return failure();
    if (parser.parseRParen())
      return failure();
  }
  init = InitAttr::getChecked([&] { return parser.emitError(loc); },
                              parser.getContext(), *kind, APFloat(values[0]),
                              APFloat(values[1]));
  return success(static_cast<bool>(init));
}

/// Shortest decimal that reads back as the same double: initializers are
/// written by people (0.02, not 2.000000e-02 or 0.0200000000000000004).
static void printInitArgument(AsmPrinter &printer, const APFloat &value) {
  char buffer[32];
  double number = value.convertToDouble();
  if (!std::isfinite(number)) {
    printer.printFloat(value);
    return;
  }
  std::to_chars_result end =
      std::to_chars(buffer, buffer + sizeof(buffer), number);
  std::string text(buffer, end.ptr);
  // MLIR float literals need a '.' before any exponent: 1e-30 -> 1.0e-30.
  if (text.find('.') == std::string::npos) {
    size_t exponent = text.find('e');
    text.insert(exponent == std::string::npos ? text.size() : exponent, ".0");
  }
  printer << text;
}

static void printInitBody(AsmPrinter &printer, InitAttr init) {
  printer << stringifyInitKind(init.getKind());
  int count = numInitArguments(init.getKind());
  if (count == 0)
    return;
  printer << "(";
  printInitArgument(printer, init.getA());
  if (count == 2) {
    printer << ", ";
    printInitArgument(printer, init.getB());
  }
  printer << ")";
}

// Op-format wrappers (ParamOp's `custom<InitBody>`).
static ParseResult parseInitBody(OpAsmParser &parser, InitAttr &init) {
  return parseInitBody(static_cast<AsmParser &>(parser), init);
}
static void printInitBody(OpAsmPrinter &printer, Operation *, InitAttr init) {
  printInitBody(static_cast<AsmPrinter &>(printer), init);
}

/// `over 0` or, cut over several axes of a mesh, `over 1, 0` (the major
/// axis first).
static ParseResult parseShardAxes(OpAsmParser &parser,
                                  DenseI64ArrayAttr &axes) {
  SmallVector<int64_t> list;
  if (parser.parseCommaSeparatedList([&]() -> ParseResult {
        SMLoc loc = parser.getCurrentLocation();
        int64_t axis = 0;
        if (parser.parseInteger(axis))
          return failure();
        if (axis < 0)
          return parser.emitError(loc, "a shard axis is a placement axis, "
                                       "not negative; got ")
                 << axis;
        list.push_back(axis);
        return success();
      }))
    return failure();
  axes = DenseI64ArrayAttr::get(parser.getContext(), list);
  return success();
}
static void printShardAxes(OpAsmPrinter &printer, Operation *,
                           DenseI64ArrayAttr axes) {
  if (!axes) {
    printer << 0;
    return;
  }
  llvm::interleaveComma(axes.asArrayRef(), printer);
}

Attribute InitAttr::parse(AsmParser &parser, Type) {
  InitAttr init;
  if (parser.parseLess() || parseInitBody(parser, init) ||
      parser.parseGreater())
    return {};
  return init;
}

void InitAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printInitBody(printer, *this);
  printer << ">";
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, APFloat first, APFloat second) {
  double a = first.convertToDouble(), b = second.convertToDouble();
  if (kind == InitKind::normal && !(b > 0.0))
    return emitError() << "normal(mean, std) needs std > 0, got " << b;
  if (kind == InitKind::uniform && !(a < b))
    return emitError() << "uniform(low, high) needs low < high, got (" << a
                       << ", " << b << ")";
  return success();
}

#define GET_OP_CLASSES
#include "zero/dialects/train/TrainOps.cpp.inc"
