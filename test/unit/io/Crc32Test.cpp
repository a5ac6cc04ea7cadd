//===- Crc32Test.cpp - The files' CRC-32 is zlib's, in any pieces ---------===//
//
// Checkpoints written before ISA-L carry zlib's CRC-32 in their manifests;
// the new checksum must give the same values, for any split of the data,
// or every old checkpoint would fail to load.
//
//===----------------------------------------------------------------------===//

#include "Crc32.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <random>
#include <vector>

namespace io = zero::rt::io;

namespace {

TEST(Crc32, CheckValueOfTheStandard) {
  // The "check" value of CRC-32/ISO-HDLC (the catalogue of parametrised
  // CRC algorithms): the CRC of the ASCII digits 1 to 9.
  const char digits[] = "123456789";
  EXPECT_EQ(io::crc32(0, digits, 9), 0xCBF43926u);
}

TEST(Crc32, EmptyInputLeavesTheValue) {
  EXPECT_EQ(io::crc32(0, nullptr, 0), 0u);
  EXPECT_EQ(io::crc32(0x12345678u, nullptr, 0), 0x12345678u);
}

TEST(Crc32, EqualsZlibForAnySplit) {
  std::mt19937 engine(11);
  std::vector<uint8_t> bytes((3 << 20) + 17);
  for (uint8_t &byte : bytes)
    byte = static_cast<uint8_t>(engine());
  const uint32_t whole = static_cast<uint32_t>(
      ::crc32_z(0, bytes.data(), static_cast<z_size_t>(bytes.size())));
  EXPECT_EQ(io::crc32(0, bytes.data(), bytes.size()), whole);
  for (int trial = 0; trial < 20; ++trial) {
    uint32_t chained = 0;
    size_t at = 0;
    while (at < bytes.size()) {
      size_t piece = std::min<size_t>(bytes.size() - at,
                                      engine() % 2 ? engine() % 63 + 1
                                                   : engine() % (1 << 20));
      chained = io::crc32(chained, bytes.data() + at, piece);
      at += piece;
    }
    ASSERT_EQ(chained, whole) << "trial " << trial;
  }
}

} // namespace
