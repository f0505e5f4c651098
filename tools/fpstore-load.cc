// fpstore-load: bulk import into a store. See docs/tools/fpstore-load.md.

#include "cli/load_tool.h"

int main(int argc, char** argv) { return fpstore::cli::Main(argc, argv, fpstore::cli::LoadTool()); }
