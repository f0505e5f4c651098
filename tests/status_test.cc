#include "fpstore/status.h"

#include <gtest/gtest.h>

#include <string>

namespace fpstore {
namespace {

TEST(StatusTest, OkIsDefaultAndHasNoMessage) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), Status::Code::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, NamedConstructorsCarryCodeAndMessage) {
  Status s = Status::InvalidArgument("blocks (3) must exceed distance (3)");
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_FALSE(s.IsNotFound());
  EXPECT_EQ(s.message(), "blocks (3) must exceed distance (3)");
  EXPECT_EQ(s.ToString(), "Invalid argument: blocks (3) must exceed distance (3)");
  EXPECT_TRUE(Status::Busy("x").IsBusy());
  EXPECT_TRUE(Status::Corruption("x").IsCorruption());
  EXPECT_TRUE(Status::IOError("x").IsIOError());
  EXPECT_TRUE(Status::NotSupported("x").IsNotSupported());
  EXPECT_TRUE(Status::NotFound("x").IsNotFound());
}

TEST(StatusTest, CopiesAreDeepAndIndependent) {
  Status a = Status::Corruption("bad block");
  Status b = a;
  a = Status::OK();
  EXPECT_TRUE(a.ok());
  EXPECT_TRUE(b.IsCorruption());
  EXPECT_EQ(b.message(), "bad block");
}

TEST(StatusTest, WithContextPrefixesErrorsOnly) {
  EXPECT_TRUE(Status::OK().WithContext("file.jsonl:3").ok());
  Status s = Status::InvalidArgument("missing id").WithContext("file.jsonl:3");
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_EQ(s.message(), "file.jsonl:3: missing id");
}

TEST(ResultTest, HoldsValueOrStatus) {
  Result<std::string> good = std::string("value");
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, "value");
  EXPECT_EQ(good->size(), 5u);

  Result<std::string> bad = Status::NotFound("id 7");
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().IsNotFound());
}

}  // namespace
}  // namespace fpstore
