// The flags each `remat` command takes, in one table: the argument parser accepts exactly these
// and `remat --help` prints its synopses from them, so the two cannot drift.
#ifndef REMAT_CLI_COMMAND_FLAGS_H_
#define REMAT_CLI_COMMAND_FLAGS_H_

#include <string>
#include <vector>

#include "cli/cli_args.h"

namespace remat {
namespace cli {

/// One flag of a command, as its synopsis shows it.
struct Flag {
  const char* name;              ///< "--batch", "-o"
  const char* value;             ///< the value's placeholder ("N", "SIZE"); nullptr: a switch
  bool required = false;         ///< shown without brackets
  const char* within = nullptr;  ///< the flag it goes with, inside whose brackets it is shown
  const char* note = nullptr;    ///< a line after the synopsis, or nullptr
  bool deprecated = false;       ///< accepted, not shown (an old name)
};

/// A command: its name, its positional arguments, what it does, and its flags in synopsis order.
struct CommandFlags {
  const char* command;
  const char* positionals;
  const char* summary;
  std::vector<Flag> flags;
};

/// Every command: compile, train, inspect, devices, size.
const std::vector<CommandFlags>& command_table();

/// The table's entry of |command| (one of command_table()'s).
const CommandFlags& flags_of(const std::string& command);

/// |argv| (after the command) parsed against |command|'s flags: any other is a UsageError.
Args parse_args(const std::string& command, const std::vector<std::string>& argv);

/// |c|'s synopsis for --help: "  NAME POSITIONALS FLAGS..." wrapped before |width| columns,
/// continuation lines indented under the positionals, then its summary and the flags' notes in
/// parentheses.
std::string synopsis(const CommandFlags& c, size_t width);

}  // namespace cli
}  // namespace remat

#endif  // REMAT_CLI_COMMAND_FLAGS_H_
