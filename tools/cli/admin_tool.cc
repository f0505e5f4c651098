#include "cli/admin_tool.h"

#include "cli/admin_common.h"

namespace fpstore::cli {

CommandRegistry AdminTool() {
  CommandRegistry tool(admin::kTool,
                       "Operations on an fpstore: create, inspect, change, scan, back up.",
                       ExitPolicy::Standard(), CommandRegistry::Dispatch::kSubcommand);
  tool.Register(admin::NewCreateCommand);
  tool.Register(admin::NewStatsCommand);
  tool.Register(admin::NewCompactCommand);
  tool.Register(admin::NewVerifyCommand);
  tool.Register(admin::NewRepairCommand);
  tool.Register(admin::NewRecoverCommand);
  tool.Register(admin::NewInsertCommand);
  tool.Register(admin::NewRemoveCommand);
  tool.Register(admin::NewExpireCommand);
  tool.Register(admin::NewFindAllCommand);
  tool.Register(admin::NewClustersCommand);
  tool.Register(admin::NewDumpCommand);
  tool.Register(admin::NewCheckpointCommand);
  return tool;
}

}  // namespace fpstore::cli
