// fpstore-query: ad-hoc near-duplicate checks. See docs/tools/fpstore-query.md.

#include "cli/query_tool.h"

int main(int argc, char** argv) {
  return fpstore::cli::Main(argc, argv, fpstore::cli::QueryTool());
}
