//===- SanitizerSelfTest.cpp - The sanitizer stage can fail ---------------===//
//
// A sanitizer build whose runtime is missing, misconfigured or silenced
// would pass every test and prove nothing. Each case here commits one
// deliberate error in a forked child and expects the report that the
// sanitizer stage relies on. The lit configuration sends reports to files
// (log_path) so that none is lost behind an expected failure; the children
// here send theirs to stderr, where the death test can read it.
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

extern "C" void __sanitizer_set_report_path(const char *path);

namespace {

// Opaque to the optimizer, so that the erroneous access is not folded away.
template <typename T> T launder(T value) {
  asm volatile("" : "+r"(value));
  return value;
}

[[maybe_unused]] int readPastHeapArray() {
  __sanitizer_set_report_path("stderr");
  auto values = std::make_unique<int[]>(8);
  std::memset(values.get(), 0, 8 * sizeof(int));
  return launder(values.get())[launder(8)];
}

[[maybe_unused]] int readAfterFree() {
  __sanitizer_set_report_path("stderr");
  int *values = new int[8]();
  delete[] launder(values);
  return launder(values)[0];
}

[[maybe_unused]] int overflowSignedAdd() {
  __sanitizer_set_report_path("stderr");
  int big = launder(std::numeric_limits<int>::max());
  return big + launder(1);
}

#ifdef ZERO_TEST_ASAN
TEST(SanitizerSelfTest, ReportsHeapBufferOverflow) {
  EXPECT_DEATH(std::exit(readPastHeapArray()),
               "AddressSanitizer: heap-buffer-overflow");
}

TEST(SanitizerSelfTest, ReportsHeapUseAfterFree) {
  EXPECT_DEATH(std::exit(readAfterFree()),
               "AddressSanitizer: heap-use-after-free");
}
#endif

#ifdef ZERO_TEST_UBSAN
TEST(SanitizerSelfTest, ReportsSignedOverflow) {
  EXPECT_DEATH(std::exit(overflowSignedAdd()), "signed integer overflow");
}
#endif

} // namespace
