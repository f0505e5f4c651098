// How a store's Redis URL is read and shown, without a cluster: its credentials percent-decoded
// and merged with StoreOptions', its password hidden in whatever is printed.

#include <gtest/gtest.h>

#include "fpstore/store.h"
#include "redis/access.h"

namespace fpstore::internal::redis {
namespace {

TEST(RedisAddressTest, HidesThePasswordOnly) {
  EXPECT_EQ(HidePassword("redis://:pw@h:7000/crawl"), "redis://:***@h:7000/crawl");
  EXPECT_EQ(HidePassword("redis://fps:p@ss:w/rd@h:7000/crawl"), "redis://fps:***@h:7000/crawl");
  EXPECT_EQ(HidePassword("rediss://fps:%40x@h:7000/crawl"), "rediss://fps:***@h:7000/crawl");
  EXPECT_EQ(HidePassword("redis://fps@h:7000/crawl"), "redis://fps@h:7000/crawl");
  EXPECT_EQ(HidePassword("redis://h:7000/crawl"), "redis://h:7000/crawl");
  EXPECT_EQ(HidePassword("/var/lib/a:b@c"), "/var/lib/a:b@c");
  EXPECT_EQ(fpstore::HidePassword("redis://:pw@h:7000/crawl"), "redis://:***@h:7000/crawl");
}

TEST(RedisAddressTest, DecodesTheCredentials) {
  Result<StoreAddress> a = ReadStoreAddress("redis://f%70s:p%40ss%3Aw%2Frd%25@h:7000/crawl", {});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->seed, "h:7000");
  EXPECT_EQ(a->name, "crawl");
  EXPECT_EQ(a->client.credentials.user, "fps");
  EXPECT_EQ(a->client.credentials.password, "p@ss:w/rd%");
  EXPECT_EQ(a->shown, "redis://f%70s:***@h:7000/crawl");
  EXPECT_EQ(a->client.tls, nullptr);

  // A raw '@' or '/' in the password: the last '@' ends it.
  a = ReadStoreAddress("redis://:a@b/c@h:7000/crawl", {});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->client.credentials.password, "a@b/c");
  EXPECT_EQ(a->seed, "h:7000");
}

TEST(RedisAddressTest, MergesTheOptions) {
  StoreOptions options;
  options.redis_user = "fps";
  options.redis_password = "secret";
  Result<StoreAddress> a = ReadStoreAddress("redis://h:7000/crawl", options);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->client.credentials.user, "fps");
  EXPECT_EQ(a->client.credentials.password, "secret");
  a = ReadStoreAddress("redis://fps:secret@h:7000/crawl", options);
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  a = ReadStoreAddress("redis://fps:other@h:7000/crawl", options);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("StoreOptions::redis_password differ"), std::string::npos);
  EXPECT_EQ(a.status().message().find("secret"), std::string::npos) << a.status().ToString();
  EXPECT_EQ(a.status().message().find("other"), std::string::npos) << a.status().ToString();
}

TEST(RedisAddressTest, RefusesWhatIsMalformed) {
  for (const char* url : {"redis://:pw%2@h:7000/crawl", "redis://:pw%zz@h:7000/crawl"}) {
    Result<StoreAddress> a = ReadStoreAddress(url, {});
    ASSERT_FALSE(a.ok()) << url;
    EXPECT_NE(a.status().message().find("must start %XX"), std::string::npos) << url;
    EXPECT_EQ(a.status().message().find("pw"), std::string::npos) << a.status().ToString();
  }
  for (const char* url : {"redis://:pw@h:7000", "redis://:pw@/crawl", "redis://"}) {
    Result<StoreAddress> a = ReadStoreAddress(url, {});
    ASSERT_FALSE(a.ok()) << url;
    EXPECT_NE(a.status().message().find("is not a Redis store's address"), std::string::npos)
        << a.status().ToString();
    EXPECT_EQ(a.status().message().find("pw"), std::string::npos) << a.status().ToString();
  }
  StoreOptions tls;
  tls.redis_tls_ca_file = "/etc/ssl/certs/ca-certificates.crt";
  Result<StoreAddress> a = ReadStoreAddress("redis://h:7000/crawl", tls);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("redis_tls_* options are for TLS"), std::string::npos);
  tls.redis_tls_ca_file = "/nonexistent/ca.crt";
  a = ReadStoreAddress("rediss://h:7000/crawl", tls);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("redis_tls_ca_file: no CA certificate read from"),
            std::string::npos)
      << a.status().ToString();
}

}  // namespace
}  // namespace fpstore::internal::redis
