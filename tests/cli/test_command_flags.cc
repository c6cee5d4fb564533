// The commands' flag table (src/cli/command_flags.cc): the synopses --help prints from it show
// every flag a command parses, within 100 columns, and the parser takes exactly the table's
// flags.
// Streams first: cmocka defines a fail() macro that <ios> declares as a member.
#include <sstream>
#include <string>
#include <vector>

#include "cli/command_flags.h"
#include "cli/commands.h"
#include "tests/cmocka_cpp.h"

namespace {

using remat::cli::CommandFlags;
using remat::cli::Flag;

void every_flag_is_in_its_synopsis_within_100_columns(void**) {
  for (const CommandFlags& c : remat::cli::command_table()) {
    const std::string text = remat::cli::synopsis(c, 100);
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.size() > 100)
        fail_msg("%s: a line of %zu columns: %s", c.command, line.size(), line.c_str());
    }
    for (const Flag& f : c.flags) {
      const std::string shown = f.value ? std::string(f.name) + " " + f.value : f.name;
      const bool found = text.find(shown) != std::string::npos;
      if (found == f.deprecated)
        fail_msg("%s: '%s' is %s its synopsis", c.command, shown.c_str(), found ? "in" : "not in");
    }
  }
}

void the_parser_takes_the_table_and_nothing_else(void**) {
  for (const CommandFlags& c : remat::cli::command_table()) {
    for (const Flag& f : c.flags) {
      std::vector<std::string> argv = {f.name};
      if (f.value) argv.push_back("1");
      const remat::cli::Args args = remat::cli::parse_args(c.command, argv);
      if (!args.has(f.name)) fail_msg("%s: %s parsed but not found", c.command, f.name);
    }
  }
  try {
    remat::cli::parse_args("inspect", {"--steps", "3"});
    fail_msg("inspect took --steps");
  } catch (const remat::cli::UsageError& e) {
    if (std::string(e.what()).find("--steps") == std::string::npos)
      fail_msg("the message '%s' does not name --steps", e.what());
  }
}

void the_compile_options_are_flags_of_compile_and_train(void**) {
  for (const char* command : {"compile", "train"}) {
    for (const std::string& name : remat::cli::kCompileFlags) {
      bool found = false;
      for (const Flag& f : remat::cli::flags_of(command).flags) found = found || name == f.name;
      if (!found) fail_msg("%s lacks the compile option %s", command, name.c_str());
    }
  }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_flag_is_in_its_synopsis_within_100_columns),
      cmocka_unit_test(the_parser_takes_the_table_and_nothing_else),
      cmocka_unit_test(the_compile_options_are_flags_of_compile_and_train),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
