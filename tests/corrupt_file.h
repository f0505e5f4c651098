// Damages a file in place, for tests that check corruption is reported
// rather than fatal.

#ifndef FPSTORE_TESTS_CORRUPT_FILE_H_
#define FPSTORE_TESTS_CORRUPT_FILE_H_

#include <filesystem>
#include <fstream>
#include <string>

namespace fpstore::testing {

// Flips every bit of 64 bytes in the middle of `path`; false on I/O failure.
inline bool FlipBytesInTheMiddle(const std::string& path) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  const auto middle = static_cast<std::streamoff>(std::filesystem::file_size(path) / 2);
  char bytes[64];
  file.seekg(middle);
  file.read(bytes, sizeof bytes);
  for (char& b : bytes) b = static_cast<char>(b ^ 0x5a);
  file.seekp(middle);
  file.write(bytes, sizeof bytes);
  return file.good();
}

}  // namespace fpstore::testing

#endif  // FPSTORE_TESTS_CORRUPT_FILE_H_
