//===- Crc32.h - The CRC-32 of checkpoint, safetensors and zip files -----===//
//
// Internal to the io library. The checksum is zlib's and zip's CRC-32
// (polynomial 0xEDB88320, reflected), so files written before keep their
// values. ISA-L computes it with carry-less multiplies: about five times
// zlib 1.2's speed here, which matters because an asynchronous save
// checksums the whole shard on a core the training steps also use.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_IO_CRC32_H
#define ZERO_RUNTIME_IO_CRC32_H

#include <cstdint>

namespace zero::rt::io {

/// The CRC-32 of `length` bytes at `data` continued from `crc`, the value
/// of the bytes before them (0 for none), as zlib's crc32() chains.
uint32_t crc32(uint32_t crc, const void *data, uint64_t length);

} // namespace zero::rt::io

#endif // ZERO_RUNTIME_IO_CRC32_H
