//===- ByteSizeTest.cpp - Byte counts as people write them ----------------===//

#include "zero/support/ByteSize.h"

#include "gtest/gtest.h"

using zero::parseByteSize;

TEST(ByteSize, PlainBytes) {
  EXPECT_EQ(parseByteSize("0"), 0);
  EXPECT_EQ(parseByteSize("1000000"), 1000000);
  EXPECT_EQ(parseByteSize(" 512 B "), 512);
}

TEST(ByteSize, DecimalAndBinaryUnits) {
  EXPECT_EQ(parseByteSize("80GiB"), int64_t{80} << 30);
  EXPECT_EQ(parseByteSize("80 GB"), int64_t{80'000'000'000});
  EXPECT_EQ(parseByteSize("512MiB"), int64_t{512} << 20);
  EXPECT_EQ(parseByteSize("1kb"), 1000);
  EXPECT_EQ(parseByteSize("2 TiB"), int64_t{2} << 40);
  // Fractions with a unit, rounded down to whole bytes.
  EXPECT_EQ(parseByteSize("1.5GiB"), int64_t{3} << 29);
  EXPECT_EQ(parseByteSize("0.1kB"), 100);
}

TEST(ByteSize, RefusesWhatIsNotASize) {
  for (const char *bad : {"", "GiB", "-1", "1.5", "1.2.3GB", "12 parsecs",
                          "1e9", "0x10", "9999999TiB"})
    EXPECT_FALSE(parseByteSize(bad).has_value()) << bad;
}
