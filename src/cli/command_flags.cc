// The `remat` commands' flags (cli/command_flags.h): the parser's lists and the --help synopses.
#include "cli/command_flags.h"

#include "cli/commands.h"

namespace remat {
namespace cli {
namespace {

// The flags that choose how a model is compiled (compile, and train of a MODEL), in synopsis
// order; kCompileFlags holds their names.
std::vector<Flag> compile_option_flags() {
  return {
      {"--loss", "L"},
      {"--optimizer", "SPEC"},
      {"--seed", "N"},
      {"--strategy", "S"},
      {"--arena-budget", "SIZE"},
      {"--budget", "SIZE", false, nullptr, nullptr, true},
      {"--device-budget", "SIZE"},
      {"--host-budget", "SIZE", false, "--device-budget"},
      {"--copy-bandwidth", "BYTES_PER_S"},
      {"--compute-rate", "FLOPS"},
      {"--finite-checks", "on|atomic|off"},
      {"--eval-program", "on|off"},
      {"--matmul-precision", "fp32|tf32"},
      {"--attention", "fused|unfused", false, nullptr,
       "--attention: a template's attention as one op that stores no scores, or unfused"},
      {"--precision", "fp32|bf16|fp16", false, nullptr,
       "--precision: activations in 16 bits; parameters stay float32"},
      {"--loss-scale", "off|dynamic[:init=S][,interval=N]", false, nullptr,
       "--loss-scale: dynamic by default for fp16"},
      {"--data-parallel", nullptr, false, nullptr,
       "--data-parallel: gradients averaged over the ranks of mpirun (docs/data-parallel.md)"},
      {"--bucket-size", "SIZE", false, "--data-parallel"},
  };
}

std::vector<Flag> joined(std::vector<Flag> a, const std::vector<Flag>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<CommandFlags> make_table() {
  const std::vector<Flag> model = compile_option_flags();
  return {
      {"compile", "MODEL", "writes the plan of one training step and prints its figures",
       joined(joined({{"--batch", "N", true}}, model),
              {{"--backend", "B"},
               {"-o", "FILE.rplan|FILE.h", true, nullptr,
                "-o FILE.h, --emit-c FILE.h: the plan as a C array with #defines of its region and "
                "binding sizes, for firmware"},
               {"--emit-c", "FILE.h"}})},
      {"train", "MODEL|FILE.rplan", "trains a MODEL, or a plan compiled before",
       joined(joined({{"--batch", "N"}}, model),
              {{"--backend", "B"},
               {"--threads", "N"},
               {"--steps", "N"},
               {"--data", "FILE.safetensors"},
               {"--load-params", "FILE.safetensors"},
               {"--save-params", "FILE.safetensors"},
               {"--arena", "SIZE"},
               {"--state", "FILE", false, nullptr,
                "--state: resume from FILE (--steps is the step count to reach); saved after "
                "step 1, then every N steps (by default N keeps saving at 1% of the time)"},
               {"--save-every", "N", false, "--state"},
               {"--on-nonfinite", "stop|skip", false, nullptr,
                "--on-nonfinite: a NaN or infinite loss or gradient: exit 1, or skip the update"},
               {"--lr-schedule", "constant|cosine|linear[,warmup=W][,min=M]", false, nullptr,
                "--lr-schedule: from the plan's learning rate"},
               {"--eval-every", "N", false, nullptr,
                "--eval-every: eval loss and accuracy every N steps and at the end"},
               {"--eval-data", "FILE.safetensors"},
               {"--eval-batches", "N"},
               {"--rank-timeout", "SECONDS", false, nullptr,
                "--rank-timeout: a data-parallel rank gives up on a sum after it (default 300)"},
               {"--communicator", "mpi|nccl", false, nullptr,
                "--communicator: how data-parallel ranks sum (default nccl on cuda, else mpi)"}})},
      {"inspect",
       "FILE.rplan",
       "verifies a plan and prints its figures, ops, tensors or parameters",
       {{"--ops", nullptr}, {"--tensors", nullptr}, {"--params", nullptr}, {"--json", nullptr}}},
      {"devices", "", "lists the backends and devices available here", {}},
      {"size",
       "MODEL",
       "the arena and device bytes of each strategy at each batch (docs/sizing.md)",
       {{"--batch", "N|A..B", true},
        {"--loss", "L"},
        {"--strategy", "none,sqrt,splits,selective,budget,auto,manual:T1,T2"},
        {"--device-budget", "SIZE"},
        {"--budget", "SIZE", false, nullptr, nullptr, true},
        {"--host-budget", "SIZE", false, "--device-budget"},
        {"--arena-budget", "SIZE"},
        {"--max-batch", nullptr},
        {"--optimizer", "SPEC"},
        {"--alignment", "N"},
        {"--backend", "B"},
        {"--copy-bandwidth", "BYTES_PER_S"},
        {"--compute-rate", "FLOPS"},
        {"--finite-checks", "on|atomic|off"},
        {"--eval-program", "on|off"},
        {"--attention", "fused|unfused"},
        {"--precision", "fp32|bf16|fp16[,...]", false, nullptr,
         "--precision fp32,bf16,fp16: rows for each precision listed"},
        {"--loss-scale", "off|dynamic[:init=S][,interval=N]"},
        {"--data-parallel", nullptr, false, nullptr,
         "--data-parallel: each rank's plan of data-parallel training (docs/data-parallel.md)"},
        {"--bucket-size", "SIZE", false, "--data-parallel"},
        {"--timeline", "FILE.svg"},
        {"--json", nullptr}}},
  };
}

// "--name VALUE" (or "--name"), with the flags shown within it, in brackets unless required.
std::string shown(const CommandFlags& c, const Flag& f) {
  std::string s = f.name;
  if (f.value != nullptr) s += std::string(" ") + f.value;
  for (const Flag& inner : c.flags) {
    if (inner.within != nullptr && std::string(inner.within) == f.name && !inner.deprecated)
      s += " " + shown(c, inner);
  }
  return f.required ? s : "[" + s + "]";
}

}  // namespace

const std::vector<std::string> kCompileFlags = [] {
  std::vector<std::string> names = {"--batch"};
  for (const Flag& f : compile_option_flags()) names.push_back(f.name);
  return names;
}();

const std::vector<CommandFlags>& command_table() {
  static const std::vector<CommandFlags> table = make_table();
  return table;
}

const CommandFlags& flags_of(const std::string& command) {
  for (const CommandFlags& c : command_table()) {
    if (command == c.command) return c;
  }
  throw UsageError("unknown command '" + command + "'");
}

Args parse_args(const std::string& command, const std::vector<std::string>& argv) {
  std::vector<std::string> valued, switches;
  for (const Flag& f : flags_of(command).flags) (f.value ? valued : switches).push_back(f.name);
  return Args(argv, valued, switches);
}

std::string synopsis(const CommandFlags& c, size_t width) {
  const size_t indent = 10;
  std::string out = std::string("  ") + c.command;
  size_t column = out.size(), line_start = indent;
  // Appends |word| after a space, or on a new line indented to |line_start| where it would
  // pass |width|.
  auto add = [&](const std::string& word) {
    if (column > line_start && column + 1 + word.size() > width) {
      out += "\n" + std::string(line_start, ' ');
      column = line_start;
    } else if (column < indent) {
      out += std::string(indent - column, ' ');
      column = indent;
    } else if (column > line_start) {
      out += " ";
      ++column;
    }
    out += word;
    column += word.size();
  };
  auto words = [&](const std::string& text) {
    size_t at = 0;
    while (at < text.size()) {
      size_t end = text.find(' ', at);
      if (end == std::string::npos) end = text.size();
      add(text.substr(at, end - at));
      at = end + 1;
    }
  };
  if (*c.positionals != '\0') add(c.positionals);
  for (const Flag& f : c.flags) {
    if (f.within == nullptr && !f.deprecated) add(shown(c, f));
  }
  // The summary, then the notes: each a parenthesised paragraph under the synopsis.
  std::vector<std::string> notes = {c.summary};
  for (const Flag& f : c.flags) {
    if (f.note != nullptr) notes.push_back(f.note);
  }
  for (const std::string& note : notes) {
    out += "\n" + std::string(indent, ' ');
    column = indent;
    line_start = indent + 1;
    words("(" + note + ")");
    line_start = indent;
  }
  return out + "\n";
}

}  // namespace cli
}  // namespace remat
