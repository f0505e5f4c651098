// The three tools on values of any length: an id, hash, number or word of
// 3,000 bytes fails as a short one does (exit status, FILE:LINE:, the
// reason, nothing written), and its message quotes at most 40 bytes of it,
// as every message quotes input.

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "fpstore/store.h"
#include "scratch_dir.h"
#include "tool_runner.h"

namespace fpstore::cli {
namespace {

using fpstore::testing::RunTool;
using fpstore::testing::ScratchDir;
using fpstore::testing::ToolResult;

const std::string kDigits(3000, '1');  // the offending value
const std::string kForty(40, '1');     // what a message shows of it
const std::string kBadId =
    "\"id\" must be an integer from 0 to 18446744073709551615 or a string of its digits, got ";

// The message (its first line: a usage error's hint follows) is short (the
// longest, fpstore-admin insert's, is under 200 bytes besides the input's
// name) and holds at most 40 of the value's bytes.
void ExpectShort(const ToolResult& r, const std::string& file = "") {
  const std::string message = r.err.substr(0, r.err.find('\n'));
  EXPECT_LT(message.size(), 200u + file.size()) << r.err;
  EXPECT_EQ(r.err.find(std::string(41, '1')), std::string::npos) << r.err;
}

// Usage errors are followed by the tool's hint.
std::string Usage(const std::string& tool, const std::string& message) {
  return tool + ": " + message + "\nTry '" + tool + " --help' for more information.\n";
}

// A store holding documents 1 and 2, made with the library.
std::string TwoDocumentStore(const ScratchDir& dir) {
  const std::string db = (dir.path() / "store").string();
  Result<std::unique_ptr<Store>> store = Store::Open(db);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  const std::vector<NewDocument> docs = {{1, 0x1111, "a"}, {2, 0x2222, "b"}};
  EXPECT_TRUE((*store)->InsertBatch(docs).ok());
  EXPECT_TRUE((*store)->Close().ok());
  return db;
}

std::uint64_t DocumentsOf(const std::string& db) {
  StoreOptions options;
  options.read_only = true;
  options.create_if_missing = false;
  Result<std::unique_ptr<Store>> store = Store::Open(db, options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  if (!store.ok()) return 0;
  Result<StoreStats> stats = (*store)->Stats();
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  return stats.ok() ? stats->documents : 0;
}

// The bug: a 3,000-digit JSON id was copied whole into the message.
TEST(LongInputTest, LoadQuotesAtMost40BytesOfAnIdOrHash) {
  ScratchDir dir;
  const std::string db = TwoDocumentStore(dir);
  const std::string jsonl =
      dir.Write("big_id.jsonl",
                "{\"id\": 3, \"text\": \"fine\"}\n{\"id\": " + kDigits + ", \"text\": \"t\"}\n");
  ToolResult r = RunTool(FPSTORE_LOAD_BINARY, {"--db", db, "--input", jsonl});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "fpstore-load: " + jsonl + ":2: " + kBadId + kForty + "... (3000 bytes)\n");
  ExpectShort(r, jsonl);
  EXPECT_EQ(DocumentsOf(db), 2u);

  const std::string string_id =
      dir.Write("string_id.jsonl", "{\"id\": \"" + kDigits + "\", \"text\": \"t\"}\n");
  r = RunTool(FPSTORE_LOAD_BINARY, {"--db", db, "--input", string_id});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "fpstore-load: " + string_id + ":1: " + kBadId + "\"" + std::string(39, '1') +
                       "... (3002 bytes)\n");
  ExpectShort(r, string_id);

  const std::string tsv_id = dir.Write("big_id.tsv", "3\t0x3\n" + kDigits + "\t0x4\n");
  r = RunTool(FPSTORE_LOAD_BINARY, {"--db", db, "--input", tsv_id, "--format", "tsv"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "fpstore-load: " + tsv_id + ":2: id \"" + kForty +
                       "\"... (3000 bytes) does not fit in 64 bits\n");
  ExpectShort(r, tsv_id);

  const std::string tsv_hash = dir.Write("big_hash.tsv", "3\t" + kDigits + "\n");
  r = RunTool(FPSTORE_LOAD_BINARY, {"--db", db, "--input", tsv_hash, "--format", "tsv"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "fpstore-load: " + tsv_hash + ":1: hash \"" + kForty +
                       "\"... (3000 bytes) does not fit in 64 bits\n");
  ExpectShort(r, tsv_hash);
  EXPECT_EQ(DocumentsOf(db), 2u);
}

TEST(LongInputTest, QueryQuotesAtMost40BytesOfAnIdOrHash) {
  ScratchDir dir;
  const std::string jsonl =
      dir.Write("big_id.jsonl", "{\"text\": \"t\", \"id\": " + kDigits + "}\n");
  ToolResult r = RunTool(FPSTORE_QUERY_BINARY, {"--fingerprint", "--input", jsonl});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "fpstore-query: " + jsonl + ":1: " + kBadId + kForty + "... (3000 bytes)\n");
  ExpectShort(r, jsonl);

  const std::string db = TwoDocumentStore(dir);
  const std::string too_big = "hash \"" + kForty + "\"... (3000 bytes) does not fit in 64 bits";
  r = RunTool(FPSTORE_QUERY_BINARY, {"--db", db, "--hash", kDigits});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, Usage("fpstore-query", "--hash: " + too_big));
  ExpectShort(r);

  r = RunTool(FPSTORE_QUERY_BINARY, {"--distance-between", "0x1", kDigits});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, Usage("fpstore-query", "--distance-between: hash \"" + kForty +
                                              "\"... (3000 bytes) does not fit in 128 bits"));

  r = RunTool(FPSTORE_QUERY_BINARY, {"--db", db, "--hash", "1", "--distance", kDigits});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, Usage("fpstore-query", "--distance: \"" + kForty +
                                              "\"... (3000 bytes) is not a whole number from 0 "
                                              "to 128"));

  r = RunTool(FPSTORE_QUERY_BINARY, {"--db", db, "--hash", "1", "--" + kDigits});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, Usage("fpstore-query",
                         "unrecognised option \"--" + std::string(38, '1') + "\"... (3002 bytes)"));
}

TEST(LongInputTest, AdminQuotesAtMost40BytesOfAnIdOrNumber) {
  ScratchDir dir;
  const std::string db = TwoDocumentStore(dir);
  const std::string jsonl =
      dir.Write("big_id.jsonl", "{\"id\": 3, \"text\": \"fine\"}\n{\"id\": " + kDigits + "}\n");
  ToolResult r = RunTool(FPSTORE_ADMIN_BINARY, {"insert", "--db", db, "--input", jsonl});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "fpstore-admin: " + jsonl + ":2: " + kBadId + kForty +
                       "... (3000 bytes) (nothing was inserted)\n");
  ExpectShort(r, jsonl);
  EXPECT_EQ(DocumentsOf(db), 2u);

  const std::string id = "id \"" + kForty + "\"... (3000 bytes) does not fit in 64 bits";
  r = RunTool(FPSTORE_ADMIN_BINARY, {"remove", "--db", db, "1", kDigits});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, Usage("fpstore-admin", id));
  const std::string ids = dir.Write("ids.txt", "1\n" + kDigits + "\n");
  r = RunTool(FPSTORE_ADMIN_BINARY, {"remove", "--db", db, "--ids-file", ids});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "fpstore-admin: " + ids + ":2: " + id + "\n");
  ExpectShort(r, ids);
  EXPECT_EQ(DocumentsOf(db), 2u);

  // Numbers Boost used to read, quoting the whole value.
  const std::string fresh = (dir.path() / "fresh").string();
  r = RunTool(FPSTORE_ADMIN_BINARY,
              {"create", "--db", fresh, "--expected-documents", kDigits + "x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, Usage("fpstore-admin", "--expected-documents: \"" + kForty +
                                              "\"... (3001 bytes) is not a number"));
  ExpectShort(r);
  r = RunTool(FPSTORE_ADMIN_BINARY, {"create", "--db", fresh, "--expected-documents", "1e8",
                                     "--disk-budget", kDigits + "GB"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, Usage("fpstore-admin",
                         "--disk-budget: \"" + kForty + "\"... (3002 bytes) is not a number"));
  ExpectShort(r);
  EXPECT_FALSE(std::filesystem::exists(fresh));

  r = RunTool(FPSTORE_ADMIN_BINARY, {kDigits, "--db", db});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, Usage("fpstore-admin", "unknown command \"" + kForty + "\"... (3000 bytes)"));
  r = RunTool(FPSTORE_ADMIN_BINARY, {"stats", "--db", db, kDigits});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            Usage("fpstore-admin", "unexpected argument \"" + kForty + "\"... (3000 bytes)"));
}

}  // namespace
}  // namespace fpstore::cli
