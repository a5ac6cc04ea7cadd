//===- Crc32.cpp - The CRC-32 of checkpoint, safetensors and zip files ---===//

#include "Crc32.h"

#include <isa-l/crc.h>

uint32_t zero::rt::io::crc32(uint32_t crc, const void *data, uint64_t length) {
  // An empty vector's data() may be null: nothing to read, nothing changes.
  if (length == 0)
    return crc;
  return crc32_gzip_refl(crc, static_cast<const unsigned char *>(data), length);
}
