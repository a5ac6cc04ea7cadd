//===- OptionEnums.h - The choices of the ZeRO options ----------*- C++ -*-===//
//
// MeshScheme, OffloadPlacement and ReportFormat, with their
// symbolize*/stringify* pairs, from OptionEnums.td; and the command-line
// parser every enum-valued option uses, which names the choices when a
// value is not one of them.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_SUPPORT_OPTIONENUMS_H
#define ZERO_SUPPORT_OPTIONENUMS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>

#include "zero/support/OptionEnums.h.inc"

namespace zero {

/// llvm::cl::parser<T> for an enum-valued option, but a value that is none
/// of the choices is refused with the choices listed ("'yaml' is not a
/// choice: none, text, json or timeline") rather than "Cannot find option
/// named 'yaml'!". It specializes llvm::cl::parser (ZERO_CHOICE_PARSER
/// below), so that llvm::cl::opt and MLIR's pass options both use it; MLIR
/// prints an option's value through the same `Values`.
template <typename T>
class ChoiceParser : public llvm::cl::generic_parser_base {
protected:
  class OptionInfo : public GenericOptionInfo {
  public:
    OptionInfo(llvm::StringRef name, T value, llvm::StringRef help)
        : GenericOptionInfo(name, help), V(value) {}
    llvm::cl::OptionValue<T> V;
  };
  llvm::SmallVector<OptionInfo, 4> Values;

public:
  explicit ChoiceParser(llvm::cl::Option &owner) : generic_parser_base(owner) {}
  using parser_data_type = T;

  unsigned getNumOptions() const override { return Values.size(); }
  llvm::StringRef getOption(unsigned n) const override {
    return Values[n].Name;
  }
  llvm::StringRef getDescription(unsigned n) const override {
    return Values[n].HelpStr;
  }
  const llvm::cl::GenericOptionValue &
  getOptionValue(unsigned n) const override {
    return Values[n].V;
  }

  /// Returns true on error, as llvm::cl::parser does.
  bool parse(llvm::cl::Option &option, llvm::StringRef argName,
             llvm::StringRef arg, T &value) {
    llvm::StringRef given = Owner.hasArgStr() ? arg : argName;
    for (const OptionInfo &info : Values)
      if (info.Name == given) {
        value = info.V.getValue();
        return false;
      }
    std::string choices;
    for (size_t i = 0; i < Values.size(); ++i)
      choices += (i == 0                   ? ""
                  : i + 1 == Values.size() ? " or "
                                           : ", ") +
                 Values[i].Name.str();
    return option.error("'" + given + "' is not a choice: " + choices);
  }

  template <typename V>
  void addLiteralOption(llvm::StringRef name, const V &value,
                        llvm::StringRef help) {
    Values.push_back(OptionInfo(name, static_cast<T>(value), help));
    llvm::cl::AddLiteralOption(Owner, name);
  }
  void removeLiteralOption(llvm::StringRef name) {
    Values.erase(Values.begin() + findOption(name));
  }
};

} // namespace zero

/// Makes ChoiceParser the parser of every option of enum type `T`; at
/// global scope, before any option of that type.
#define ZERO_CHOICE_PARSER(T)                                                  \
  template <> class llvm::cl::parser<T> : public ::zero::ChoiceParser<T> {     \
  public:                                                                      \
    using ::zero::ChoiceParser<T>::ChoiceParser;                               \
  }

ZERO_CHOICE_PARSER(::zero::MeshScheme);
ZERO_CHOICE_PARSER(::zero::OffloadPlacement);
ZERO_CHOICE_PARSER(::zero::ReportFormat);

#endif // ZERO_SUPPORT_OPTIONENUMS_H
