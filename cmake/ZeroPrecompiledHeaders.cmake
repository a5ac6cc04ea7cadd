# Precompiled headers for the compiler's own code (docs/building.md, "Build
# time").
#
# Every translation unit of the dialects, passes, analyses, front end and
# tools parses the same 170,000 lines of MLIR and of our generated op
# classes before its own code; on two cores that was half of the Release
# build. ZeroMlirHeaders (and ZeroTestHeaders, the same with GoogleTest's)
# compile those headers once, and each target named in
# zero_reuse_precompiled_headers() includes the result instead (GCC's .gch,
# clang's .pch, through CMake's target_precompile_headers). A target can only
# reuse it when it compiles with the same flags, which LLVM's
# llvm_update_compile_flags gives all of them; GCC's -Winvalid-pch (a
# warning, so an error under ZERO_WERROR) says so when one does not.
#
#   -DZERO_PCH=OFF   every file parses its headers itself (e.g. to check
#                    that each includes what it uses)

option(ZERO_PCH "Precompile the MLIR and dialect headers the compiler's targets share" ON)

# The headers almost every file of the compiler includes: MLIR's IR, pass
# and dialect headers, and our three dialects' ops (whose TableGen output is
# the largest part).
set(ZERO_MLIR_PCH_HEADERS
  [["llvm/ADT/STLExtras.h"]]
  [["llvm/ADT/SmallVector.h"]]
  [["llvm/Support/raw_ostream.h"]]
  [["mlir/Dialect/Arith/IR/Arith.h"]]
  [["mlir/Dialect/Func/IR/FuncOps.h"]]
  [["mlir/IR/Builders.h"]]
  [["mlir/IR/BuiltinAttributes.h"]]
  [["mlir/IR/BuiltinOps.h"]]
  [["mlir/IR/BuiltinTypes.h"]]
  [["mlir/IR/OpImplementation.h"]]
  [["mlir/IR/PatternMatch.h"]]
  [["mlir/Interfaces/SideEffectInterfaces.h"]]
  [["mlir/Pass/Pass.h"]]
  [["zero/dialects/dist/DistOps.h"]]
  [["zero/dialects/train/TrainOps.h"]]
  [["zero/dialects/zrt/ZrtOps.h"]])

# zero_add_precompiled_headers(NAME HEADERS header... [LINK_LIBS lib...]):
# an object library that precompiles the headers, with LLVM's compile flags
# and the usage requirements (include directories, definitions) of
# LINK_LIBS. Nothing where ZERO_PCH is off.
function(zero_add_precompiled_headers name)
  cmake_parse_arguments(ARG "" "" "HEADERS;LINK_LIBS" ${ARGN})
  if(NOT ZERO_PCH)
    return()
  endif()
  set(source ${PROJECT_BINARY_DIR}/${name}.cpp)
  file(CONFIGURE OUTPUT ${source}
    CONTENT "// The translation unit that precompiles ${name}'s headers.\n")
  add_library(${name} OBJECT ${source})
  llvm_update_compile_flags(${name})
  target_link_libraries(${name} PRIVATE ${ARG_LINK_LIBS})
  target_precompile_headers(${name} PRIVATE ${ARG_HEADERS})
  # The dialect headers include their TableGen output.
  add_dependencies(${name} ZeroDistIncGen ZeroTrainIncGen ZeroZrtIncGen)
endfunction()

# zero_reuse_precompiled_headers(PROVIDER TARGET...): the targets compile
# against PROVIDER's precompiled headers instead of parsing them; a target
# this configuration does not build (the CUDA tests without nvcc) is passed
# over.
function(zero_reuse_precompiled_headers provider)
  if(NOT ZERO_PCH)
    return()
  endif()
  foreach(target IN LISTS ARGN)
    if(TARGET ${target})
      target_precompile_headers(${target} REUSE_FROM ${provider})
    endif()
  endforeach()
endfunction()

# The compiler's libraries and tools.
zero_add_precompiled_headers(ZeroMlirHeaders HEADERS ${ZERO_MLIR_PCH_HEADERS})
# The GoogleTest binaries of the compiler and the kernels: the same headers
# and GoogleTest's (with its definitions, e.g. GTEST_HAS_PTHREAD).
zero_add_precompiled_headers(ZeroTestHeaders
  HEADERS ${ZERO_MLIR_PCH_HEADERS} <gtest/gtest.h>
  LINK_LIBS GTest::gtest)
