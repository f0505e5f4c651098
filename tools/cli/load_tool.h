// fpstore-load: bulk import into a store (docs/tools/fpstore-load.md).
//
// One command, the default: read documents (JSONL, fingerprinted on several
// threads with the store's options) or fingerprints (tsv, hash), hand them
// to the store's BulkLoader, and ingest them all in one atomic step. A
// malformed line, an error or an interruption before that step leaves the
// store exactly as it was; a store the load created is removed again.
// Exit status: 0 loaded, 1 failed (store unchanged), 2 bad command line,
// 130 or 143 interrupted by SIGINT or SIGTERM (store unchanged).

#ifndef FPSTORE_TOOLS_CLI_LOAD_TOOL_H_
#define FPSTORE_TOOLS_CLI_LOAD_TOOL_H_

#include "cli/command.h"

namespace fpstore::cli {

CommandRegistry LoadTool();

}  // namespace fpstore::cli

#endif  // FPSTORE_TOOLS_CLI_LOAD_TOOL_H_
