// fpstore-query: ad-hoc near-duplicate checks (docs/tools/fpstore-query.md).
//
// Its commands are chosen by a mode flag:
//   (default)            --db STORE (--hash H | --text T | --file F | --input FILE):
//                        near-duplicates in a store, opened read-only (so it
//                        works beside a writer), as a table or JSON lines.
//   --fingerprint        the fingerprint of a text, a file, or each document
//                        of a JSONL file (with --db: the store's options).
//   --distance-between   the Hamming distance between two fingerprints,
//                        given as hashes or computed from texts or files.
// Exit status like grep: 0 found (or done), 1 nothing found, 2 error.

#ifndef FPSTORE_TOOLS_CLI_QUERY_TOOL_H_
#define FPSTORE_TOOLS_CLI_QUERY_TOOL_H_

#include "cli/command.h"

namespace fpstore::cli {

CommandRegistry QueryTool();

}  // namespace fpstore::cli

#endif  // FPSTORE_TOOLS_CLI_QUERY_TOOL_H_
