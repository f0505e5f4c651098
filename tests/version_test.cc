#include "fpstore/version.h"

#include <gtest/gtest.h>

#include <string>

namespace fpstore {
namespace {

// FPSTORE_PROJECT_VERSION is project()'s version, passed by the build.
TEST(VersionTest, HeaderMacrosAreTheProjectVersion) {
  EXPECT_EQ(FPSTORE_VERSION_STRING, std::string(FPSTORE_PROJECT_VERSION));
  EXPECT_EQ(std::to_string(FPSTORE_VERSION_MAJOR) + "." + std::to_string(FPSTORE_VERSION_MINOR) +
                "." + std::to_string(FPSTORE_VERSION_PATCH),
            FPSTORE_PROJECT_VERSION);
  EXPECT_EQ(FPSTORE_VERSION,
            FPSTORE_VERSION_MAJOR * 10000 + FPSTORE_VERSION_MINOR * 100 + FPSTORE_VERSION_PATCH);
}

TEST(VersionTest, LibraryReportsTheHeadersVersion) { EXPECT_EQ(Version(), FPSTORE_VERSION_STRING); }

}  // namespace
}  // namespace fpstore
