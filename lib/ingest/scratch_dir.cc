#include "ingest/scratch_dir.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <system_error>

namespace fpstore::internal {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kPrefix = "bulk-load.";

// Removes the scratch directories of processes that are gone.
void SweepAbandoned(const std::string& store_path) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(store_path, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory(ec) || !name.starts_with(kPrefix)) continue;
    const pid_t pid = static_cast<pid_t>(std::atol(name.c_str() + kPrefix.size()));
    if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) fs::remove_all(entry, ec);
  }
}

}  // namespace

Result<ScratchDir> ScratchDir::Make(const std::string& store_path, const std::string& parent) {
  static std::atomic<int> counter{0};
  const std::string name = std::string(kPrefix) + std::to_string(::getpid()) + "." +
                           std::to_string(counter.fetch_add(1));
  if (parent.empty()) SweepAbandoned(store_path);
  const std::string path =
      ((parent.empty() ? fs::path(store_path) : fs::path(parent)) / name).string();
  std::error_code ec;
  if (!fs::create_directories(path, ec)) {
    return Status::IOError("creating " + path + ": " + (ec ? ec.message() : "it exists"));
  }
  return ScratchDir(path);
}

ScratchDir::~ScratchDir() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace fpstore::internal
