// A directory under the system temp dir, removed with its contents when the
// object dies.

#ifndef FPSTORE_TESTS_TEMP_DIR_H_
#define FPSTORE_TESTS_TEMP_DIR_H_

#include <cstdlib>
#include <filesystem>
#include <string>

namespace fpstore::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "fpstore-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // A path inside the directory that does not exist yet.
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace fpstore::testing

#endif  // FPSTORE_TESTS_TEMP_DIR_H_
