// The names and contents of every file under a path, to show that a refused
// operation left the disk as it was:
//
//   const FileMap before = SnapshotFiles(path);
//   EXPECT_TRUE(Store::Open(path, options).status().IsInvalidArgument());
//   EXPECT_EQ(ChangedFiles(before, SnapshotFiles(path)), "");

#ifndef FPSTORE_TESTS_DIR_SNAPSHOT_H_
#define FPSTORE_TESTS_DIR_SNAPSHOT_H_

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>

namespace fpstore::testing {

// Path relative to the root ("." for the root itself) → contents; a
// directory maps to "<dir>". Empty if nothing exists at `root`.
using FileMap = std::map<std::string, std::string>;

inline FileMap SnapshotFiles(const std::filesystem::path& root) {
  namespace fs = std::filesystem;
  auto contents = [](const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  FileMap files;
  if (fs::is_regular_file(root)) {
    files["."] = contents(root);
  } else if (fs::is_directory(root)) {
    files["."] = "<dir>";
    for (const fs::directory_entry& entry : fs::recursive_directory_iterator(root)) {
      const std::string name = entry.path().lexically_relative(root).string();
      files[name] = entry.is_directory() ? "<dir>" : contents(entry.path());
    }
  }
  return files;
}

// The names alone, for a directory that a live store may be writing to.
inline FileMap SnapshotNames(const std::filesystem::path& root) {
  FileMap names = SnapshotFiles(root);
  for (auto& [name, data] : names) data.clear();
  return names;
}

// The files added, removed or changed between two snapshots, e.g.
// "added LOG; changed CURRENT"; empty if none.
inline std::string ChangedFiles(const FileMap& before, const FileMap& after) {
  std::ostringstream out;
  auto note = [&out](const char* what, const std::string& name) {
    out << (out.tellp() > 0 ? "; " : "") << what << " " << name;
  };
  for (const auto& [name, data] : before) {
    auto it = after.find(name);
    if (it == after.end()) {
      note("removed", name);
    } else if (it->second != data) {
      note("changed", name);
    }
  }
  for (const auto& [name, data] : after) {
    if (!before.contains(name)) note("added", name);
  }
  return out.str();
}

}  // namespace fpstore::testing

#endif  // FPSTORE_TESTS_DIR_SNAPSHOT_H_
