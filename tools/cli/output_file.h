// Where a tool's --output goes: standard output, or a file that appears whole or not at all.
//
// Thread safety: one thread per OutputFile.

#ifndef FPSTORE_TOOLS_CLI_OUTPUT_FILE_H_
#define FPSTORE_TOOLS_CLI_OUTPUT_FILE_H_

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#include "cli/command.h"

namespace fpstore::cli {

// Where --output goes. "-" is the command's standard output. A regular file
// (or a new one) is written as FILE.tmp-PID beside it and renamed to FILE
// by Commit, so that a run that fails leaves no partial file behind; other
// paths (/dev/stdout, a pipe) are written directly.
class OutputFile {
 public:
  OutputFile(const std::string& path, std::FILE* standard_output) : path_(path) {
    if (path == "-") {
      file_ = standard_output;
      name_ = "standard output";
      return;
    }
    name_ = path;
    std::error_code ec;
    const std::filesystem::file_status status = std::filesystem::status(path, ec);
    if (std::filesystem::is_directory(status))
      throw RuntimeError("cannot write " + path + ": a directory");
    const bool direct =
        std::filesystem::exists(status) && !std::filesystem::is_regular_file(status);
    write_path_ = direct ? path : path + ".tmp-" + std::to_string(::getpid());
    file_ = std::fopen(write_path_.c_str(), "wb");
    if (file_ == nullptr) {
      throw RuntimeError("cannot write " + write_path_ + ": " + std::strerror(errno));
    }
    owned_ = true;
    temporary_ = !direct;
  }

  ~OutputFile() {
    if (owned_) std::fclose(file_);
    if (temporary_) {
      std::error_code ignored;
      std::filesystem::remove(write_path_, ignored);
    }
  }

  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::FILE* get() const { return file_; }

  // "pairs.tsv", or "standard output".
  const std::string& name() const { return name_; }

  // Flushes and puts the file in place. Throws RuntimeError.
  void Commit() {
    const bool failed = std::fflush(file_) != 0 || std::ferror(file_) != 0;
    const int error = errno;
    if (owned_) {
      owned_ = false;
      if (std::fclose(file_) != 0 && !failed) {
        throw RuntimeError("cannot write " + write_path_ + ": " + std::strerror(errno));
      }
    }
    if (failed) throw RuntimeError("cannot write " + name_ + ": " + std::strerror(error));
    if (temporary_) {
      std::error_code ec;
      std::filesystem::rename(write_path_, path_, ec);
      if (ec) {
        throw RuntimeError("cannot rename " + write_path_ + " to " + path_ + ": " + ec.message());
      }
      temporary_ = false;
    }
  }

 private:
  std::string path_;
  std::string name_;
  std::string write_path_;
  std::FILE* file_ = nullptr;
  bool owned_ = false;
  bool temporary_ = false;
};

}  // namespace fpstore::cli

#endif  // FPSTORE_TOOLS_CLI_OUTPUT_FILE_H_
