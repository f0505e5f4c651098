// fpstore-admin: operations on a store (docs/tools/fpstore-admin.md).
//
// Its commands are subcommands, `fpstore-admin COMMAND --db STORE ...`:
//   create       make a new store with a plan and fingerprint options
//   stats        documents, table sizes, bytes on disk, plan, options
//   compact      compact every table fully
//   verify       check checksums and that the tables agree with the documents
//   insert       add documents from a file, in atomic, durable batches
//   remove       remove documents by id
//   find-all     every pair of documents within a distance
//   clusters     groups of near-duplicate documents
//   dump         every document: id, fingerprint, metadata
//   checkpoint   a consistent copy of the store in another directory
// Exit status: 0 ok, 1 runtime error (including a failed verify), 2 usage.

#ifndef FPSTORE_TOOLS_CLI_ADMIN_TOOL_H_
#define FPSTORE_TOOLS_CLI_ADMIN_TOOL_H_

#include "cli/command.h"

namespace fpstore::cli {

CommandRegistry AdminTool();

}  // namespace fpstore::cli

#endif  // FPSTORE_TOOLS_CLI_ADMIN_TOOL_H_
