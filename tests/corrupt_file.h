// Damages a file in place, for tests that check corruption is reported
// rather than fatal.

#ifndef FPSTORE_TESTS_CORRUPT_FILE_H_
#define FPSTORE_TESTS_CORRUPT_FILE_H_

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace fpstore::testing {

// XORs `count` bytes of `path` from byte `at` with 0x5a; false on I/O failure.
inline bool FlipBytes(const std::string& path, std::uintmax_t at, int count) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  std::string bytes(static_cast<std::size_t>(count), '\0');
  file.seekg(static_cast<std::streamoff>(at));
  file.read(bytes.data(), count);
  for (char& b : bytes) b = static_cast<char>(b ^ 0x5a);
  file.seekp(static_cast<std::streamoff>(at));
  file.write(bytes.data(), count);
  return file.good();
}

// Flips 64 bytes in the middle of `path`; false on I/O failure.
inline bool FlipBytesInTheMiddle(const std::string& path) {
  return FlipBytes(path, std::filesystem::file_size(path) / 2, 64);
}

}  // namespace fpstore::testing

#endif  // FPSTORE_TESTS_CORRUPT_FILE_H_
