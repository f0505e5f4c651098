// fpstore-admin: operations on a store. See docs/tools/fpstore-admin.md.

#include "cli/admin_tool.h"

int main(int argc, char** argv) {
  return fpstore::cli::Main(argc, argv, fpstore::cli::AdminTool());
}
