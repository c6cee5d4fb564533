// `remat size`: the memory a model needs per checkpoint strategy and batch, the largest batch
// that fits a device budget, and a timeline of live bytes (docs/sizing.md).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "cli/command_flags.h"
#include "cli/commands.h"
#include "cli/json_text.h"
#include "cli/path_collisions.h"
#include "cli/size_timeline.h"
#include "cli/sizing.h"
#include "compiler/templates/aliases.h"
#include "io/atomic_file.h"

namespace remat {
namespace cli {
namespace {

const int64_t kMaxBatch = int64_t{1} << 24;
// A range of more batches than this lists the powers of two inside it and its ends.
const int64_t kMaxListedBatches = 64;
const char kStrategies[] = "none, sqrt, splits, selective, budget, auto, manual:T1,T2,...";

bool is_named_strategy(const std::string& s) {
  return s == "none" || s == "sqrt" || s == "splits" || s == "selective" || s == "budget" ||
         s == "auto";
}

// "none,sqrt,manual:a,b" -> {none, sqrt, manual:a,b}: names after `manual:` that are not
// strategies belong to its tensor list, so manual goes last or on its own.
std::vector<std::string> parse_strategies(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= text.size()) {
    size_t comma = text.find(',', at);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(at, comma - at);
    at = comma + 1;
    if (is_named_strategy(item) || (item.compare(0, 7, "manual:") == 0 && item.size() > 7)) {
      out.push_back(item);
    } else if (!out.empty() && out.back().compare(0, 7, "manual:") == 0 && !item.empty()) {
      out.back() += "," + item;
    } else {
      throw UsageError("--strategy: unknown strategy '" + item + "' (strategies: " + kStrategies +
                       ")");
    }
  }
  return out;
}

int64_t parse_batch_value(const std::string& text, const std::string& whole) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || text[0] == '-' || text[0] == '+' || v < 1 || v > kMaxBatch) {
    throw UsageError("--batch '" + whole +
                     "': expected N or A..B with 1 <= A <= B <= " + std::to_string(kMaxBatch));
  }
  return v;
}

// "--batch N" or "--batch A..B" -> [lo, hi].
void parse_batch(const std::string& text, int64_t* lo, int64_t* hi) {
  const size_t dots = text.find("..");
  if (dots == std::string::npos) {
    *lo = *hi = parse_batch_value(text, text);
    return;
  }
  *lo = parse_batch_value(text.substr(0, dots), text);
  *hi = parse_batch_value(text.substr(dots + 2), text);
  if (*hi < *lo) throw UsageError("--batch '" + text + "': the range ends below its start");
}

std::vector<int64_t> listed_batches(int64_t lo, int64_t hi) {
  std::vector<int64_t> out;
  if (hi - lo + 1 <= kMaxListedBatches) {
    for (int64_t b = lo; b <= hi; ++b) out.push_back(b);
    return out;
  }
  out.push_back(lo);
  for (int64_t p = 1; p < hi; p *= 2) {
    if (p > lo) out.push_back(p);
  }
  out.push_back(hi);
  return out;
}

// Runs |jobs| on up to one thread per core; each writes only its own result.
template <typename Job>
void run_parallel(size_t count, Job job) {
  const size_t threads = std::min<size_t>(count, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (size_t i = t; i < count; i += threads) job(i);
    });
  }
  for (std::thread& th : pool) th.join();
}

std::string number(double v, const char* format) {
  char b[64];
  std::snprintf(b, sizeof(b), format, v);
  return b;
}

// Modelled seconds with a unit that keeps three digits: "12.3 s", "45.6 ms", "789 us".
std::string format_seconds(double s) {
  if (s >= 100.0) return number(s, "%.0f s");
  if (s >= 1.0) return number(s, "%.3g s");
  if (s >= 1e-3) return number(s * 1e3, "%.3g ms");
  return number(s * 1e6, "%.3g us");
}

// A manual strategy's tensor list is in the checkpoints column; the strategy column counts it.
std::string short_strategy(const std::string& s) {
  if (s.size() <= 24 || s.compare(0, 7, "manual:") != 0) return s;
  return "manual (" + std::to_string(std::count(s.begin(), s.end(), ',') + 1) + " tensors)";
}

std::string u64(uint64_t v) { return std::to_string(static_cast<unsigned long long>(v)); }

// One printed row: the figures plus what the mode adds.
struct Line {
  SizeRow row;
  bool max_batch = false;  // a max-batch result
  bool capped = false;
  int compiles = 0;
  double vs_none = 0;       // multiplier against none's max batch (0: not known)
  uint64_t over_bytes = 0;  // device bytes at batch + 1
};

// |precisions|: the table has a precision column (several were asked for). A workspace column
// (the backend's workspace, part of the device total) comes where a row has one: 16-bit plans,
// and on the GPUs plans with fused attention or column sums (their scratch).
void print_table(const std::vector<Line>& lines, bool max_batch, uint64_t budget, bool precisions) {
  const bool workspace = std::any_of(lines.begin(), lines.end(), [](const Line& l) {
    return l.row.ok() && l.row.workspace_bytes > 0;
  });
  std::vector<std::string> head = {"strategy", "batch"};
  if (precisions) head.insert(head.begin() + 1, "precision");
  if (max_batch) head.push_back("x none");
  for (const char* h : {"arena bytes", "arena", "persistent", "host spill", "spills"}) {
    head.push_back(h);
  }
  if (workspace) head.push_back("workspace");
  for (const char* h :
       {"device total", "lower bound", "efficiency", "recomputed", "step (model)", "per sample"}) {
    head.push_back(h);
  }
  if (budget && !max_batch) head.push_back("fits");
  head.push_back("checkpoints");
  std::vector<std::vector<std::string>> cells;
  for (const Line& l : lines) {
    const SizeRow& r = l.row;
    std::vector<std::string> c = {short_strategy(r.strategy),
                                  std::to_string(r.batch) + (l.capped ? "+" : "")};
    if (precisions) c.insert(c.begin() + 1, compiler::precision_name(r.precision));
    if (!r.ok()) {
      c.push_back("error: " + r.error);
      cells.push_back(c);
      continue;
    }
    if (max_batch) c.push_back(l.vs_none > 0 ? number(l.vs_none, "%.2fx") : "-");
    c.push_back(u64(r.arena_bytes));
    c.push_back(format_bytes(r.arena_bytes));
    c.push_back(format_bytes(r.persistent_bytes));
    c.push_back(format_bytes(r.host_bytes));
    c.push_back(std::to_string(r.spills));
    if (workspace) c.push_back(format_bytes(r.workspace_bytes));
    c.push_back(format_bytes(r.device_bytes()));
    c.push_back(format_bytes(r.lower_bound));
    c.push_back(number(100.0 * r.efficiency(), "%.1f%%"));
    c.push_back(number(100.0 * r.recomputed_share(), "%.1f%%"));
    c.push_back(format_seconds(r.predicted_seconds));
    c.push_back(format_seconds(r.seconds_per_sample()));
    if (budget && !max_batch) c.push_back(r.device_bytes() <= budget ? "yes" : "no");
    std::string kept =
        r.strategy == "none" ? "(all activations kept)" : checkpoints_text(r.checkpoints, 60);
    if (!r.nested.empty()) kept += "; nested: " + checkpoints_text(r.nested, 40);
    c.push_back(kept);
    cells.push_back(c);
  }
  std::vector<size_t> width(head.size(), 0);
  for (size_t i = 0; i < head.size(); ++i) width[i] = head[i].size();
  for (const auto& c : cells) {
    // An error spans the figure columns; the checkpoints column is last and never padded.
    for (size_t i = 0; i + 1 < head.size() && i < c.size() && (c.size() == head.size()); ++i) {
      width[i] = std::max(width[i], c[i].size());
    }
    const size_t named = precisions ? 3 : 2;  // strategy, [precision,] batch: also in error rows
    for (size_t i = 0; i < named && i < c.size(); ++i) width[i] = std::max(width[i], c[i].size());
  }
  auto print = [&](const std::vector<std::string>& c) {
    std::string line;
    for (size_t i = 0; i < c.size(); ++i) {
      const bool last = i + 1 == c.size();
      const bool left = i == 0 || i + 1 == head.size() || last;
      std::string cell = c[i];
      if (!last) {
        const std::string pad(width[i] > cell.size() ? width[i] - cell.size() : 0, ' ');
        cell = left ? cell + pad : pad + cell;
      }
      line += (i ? "  " : "") + cell;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::printf("%s\n", line.c_str());
  };
  print(head);
  for (const auto& c : cells) print(c);
}

void print_json(const std::string& model, const SizeSetup& setup, const std::vector<Line>& lines,
                bool max_batch, const std::string& timeline, const std::string& precisions) {
  std::printf(
      "{\n  \"model\": %s,\n  \"template\": %s,\n  \"optimizer\": %s,\n  \"alignment\": %u,\n"
      "  \"precision\": %s,\n  \"data_parallel_bucket_bytes\": %s,\n",
      json_string(model).c_str(), json_string(setup.model).c_str(),
      json_string(setup.optimizer).c_str(), setup.alignment, json_string(precisions).c_str(),
      setup.data_parallel.enabled ? std::to_string(setup.data_parallel.bucket_bytes).c_str()
                                  : "null");
  // The budgets (docs/sizing.md, "Budgets"): each key means what it means in every command.
  std::printf(
      "  \"arena_budget_bytes\": %s,\n  \"device_budget_bytes\": %s,\n  \"host_budget_bytes\": "
      "%s,\n"
      "  \"copy_bandwidth_bytes_per_s\": %s,\n  \"compute_rate_flops_per_s\": %s,\n"
      "  \"max_batch\": %s,\n  \"rows\": [\n",
      setup.arena_budget ? u64(setup.arena_budget).c_str() : "null",
      setup.device_budget ? u64(setup.device_budget).c_str() : "null",
      setup.host_budget == UINT64_MAX ? "null" : u64(setup.host_budget).c_str(),
      number(setup.copy_bandwidth, "%.6g").c_str(), number(setup.compute_rate, "%.6g").c_str(),
      max_batch ? "true" : "false");
  for (size_t k = 0; k < lines.size(); ++k) {
    const Line& l = lines[k];
    const SizeRow& r = l.row;
    std::string o = "    {\"strategy\": " + json_string(r.strategy) +
                    ", \"precision\": " + json_string(compiler::precision_name(r.precision)) +
                    ", \"batch\": " + std::to_string(r.batch);
    if (!r.ok()) {
      o += ", \"error\": " + json_string(r.error) + "}";
    } else {
      std::string checkpoints;
      for (const std::string& c : r.checkpoints)
        checkpoints += (checkpoints.empty() ? "" : ", ") + json_string(c);
      o += ", \"error\": null, \"arena_bytes\": " + u64(r.arena_bytes) +
           ", \"persistent_bytes\": " + u64(r.persistent_bytes) +
           ", \"param_bytes\": " + u64(r.param_bytes) +
           ", \"optimizer_state_bytes\": " + u64(r.state_bytes) +
           ", \"host_bytes\": " + u64(r.host_bytes) + ", \"spills\": " + std::to_string(r.spills) +
           ", \"allreduce_host_bytes\": " +
           (setup.data_parallel.enabled ? u64(r.allreduce_host_bytes) : std::string("null")) +
           ", \"workspace_bytes\": " + u64(r.workspace_bytes) +
           ", \"device_bytes\": " + u64(r.device_bytes()) +
           ", \"lower_bound_bytes\": " + u64(r.lower_bound) +
           ", \"peak_live_bytes\": " + u64(r.peak_live_bytes) +
           ", \"peak_parameter_gradient_bytes\": " + u64(r.peak_param_grad_bytes) +
           ", \"planner_efficiency\": " + number(r.efficiency(), "%.6f") +
           ", \"step_flops\": " + number(r.step_flops, "%.6g") +
           ", \"recomputed_flops_share\": " + number(r.recomputed_share(), "%.6f") +
           ", \"ops\": " + std::to_string(r.op_count) +
           ", \"eval_ops\": " + std::to_string(r.eval_ops) +
           ", \"backward_start_op\": " + std::to_string(r.backward_start) +
           ", \"arena_budget_bytes\": " +
           (r.arena_budget ? u64(r.arena_budget) : std::string("null")) +
           ", \"predicted_step_seconds\": " + number(r.predicted_seconds, "%.6g") +
           ", \"predicted_seconds_per_sample\": " + number(r.seconds_per_sample(), "%.6g") +
           ", \"fits\": " +
           (setup.device_budget ? (r.device_bytes() <= setup.device_budget ? "true" : "false")
                                : "null");
      if (max_batch) {
        o += ", \"capped\": " + std::string(l.capped ? "true" : "false") +
             ", \"vs_none\": " + (l.vs_none > 0 ? number(l.vs_none, "%.6f") : std::string("null")) +
             ", \"compiles\": " + std::to_string(l.compiles) + ", \"next_batch_device_bytes\": " +
             (l.over_bytes ? u64(l.over_bytes) : std::string("null"));
      }
      std::string nested;
      for (const std::string& c : r.nested) nested += (nested.empty() ? "" : ", ") + json_string(c);
      o += ", \"checkpoints\": [" + checkpoints + "], \"nested\": [" + nested + "]}";
    }
    std::printf("%s%s\n", o.c_str(), k + 1 == lines.size() ? "" : ",");
  }
  std::printf("  ],\n  \"timeline\": %s\n}\n",
              timeline.empty() ? "null" : json_string(timeline).c_str());
}

// --precision as a list of fp32, bf16 and fp16, each once (default fp32).
std::vector<compiler::Precision> precision_list(const Args& args) {
  const std::string text = args.text("--precision", "fp32");
  std::vector<compiler::Precision> out;
  size_t at = 0;
  for (;;) {
    const size_t end = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, end - at);
    compiler::Precision p;
    if (!compiler::parse_precision(item, &p)) {
      throw UsageError("--precision '" + item +
                       "': expected fp32, bf16 or fp16, or a list of them (fp32,bf16,fp16)");
    }
    if (std::find(out.begin(), out.end(), p) != out.end())
      throw UsageError("--precision lists '" + item + "' twice");
    out.push_back(p);
    if (end == text.size()) return out;
    at = end + 1;
  }
}

}  // namespace

int run_size(const std::vector<std::string>& argv) {
  const Args args = parse_args("size", argv);
  if (args.positional().size() != 1) throw UsageError("size takes exactly one MODEL");
  const std::string model = args.positional()[0];
  const bool max_batch = args.has("--max-batch");
  const bool json = args.has("--json");
  SizeSetup setup;
  setup.model = compiler::expand_model_alias(model);
  setup.loss = args.text("--loss", "");
  setup.optimizer = optimizer_option(args, compiler::default_optimizer(model));
  setup.finite_checks = finite_checks_option(args);
  setup.eval_program = eval_program_option(args);
  setup.attention = attention_option(args);
  // --precision fp32,bf16,fp16: rows for each precision (and strategy and batch).
  const std::vector<compiler::Precision> precisions = precision_list(args);
  setup.precision = precisions.front();
  setup.loss_scale = loss_scale_option(args, setup.precision);
  setup.data_parallel = data_parallel_option(args);
  const DeviceProfile& profile = compiler::target_profile(args.text("--backend", "cpu"));
  setup.copy_bandwidth = args.real("--copy-bandwidth", profile.copy_bandwidth);
  setup.compute_rate = args.real("--compute-rate", profile.compute_rate);
  setup.asynchronous_copies = profile.asynchronous_copies;
  setup.widening = profile.widening;
  setup.alignment =
      static_cast<uint32_t>(args.integer("--alignment", 1, 1 << 16, profile.alignment));
  if ((setup.alignment & (setup.alignment - 1)) != 0) {
    throw UsageError("--alignment " + std::to_string(setup.alignment) +
                     ": expected a power of two");
  }
  // The budgets (docs/sizing.md, "Budgets"). size --budget was the device budget: deprecated,
  // it keeps its meaning (rows spill only for auto, and only with --host-budget).
  const bool legacy = args.has("--budget");
  if (legacy) {
    for (const char* other : {"--arena-budget", "--device-budget"}) {
      if (args.has(other)) {
        throw UsageError(std::string("--budget and ") + other +
                         ": give one (size --budget is the deprecated name of " +
                         "--device-budget)");
      }
    }
    std::fprintf(stderr,
                 "remat: size --budget is deprecated; use --device-budget (size --budget was "
                 "always the device "
                 "budget, arena + persistent; --device-budget also lets every row spill unless "
                 "--host-budget 0)\n");
  }
  const std::string device_flag = legacy ? "--budget" : "--device-budget";
  for (const std::string& flag : {std::string("--arena-budget"), device_flag}) {
    if (args.has(flag) && args.size(flag, 0) == 0)
      throw UsageError(flag + " " + args.text(flag, "") + ": expected a size above 0");
  }
  setup.arena_budget = args.size("--arena-budget", 0);
  setup.device_budget = args.size(device_flag, 0);
  const bool budget_given = setup.device_budget > 0;
  std::vector<std::string> strategies = parse_strategies(
      args.text("--strategy", budget_given || setup.arena_budget ? "none,sqrt,selective,auto"
                                                                 : "none,sqrt,selective"));
  if (setup.arena_budget &&
      std::none_of(strategies.begin(), strategies.end(), takes_arena_budget)) {
    throw UsageError("--arena-budget applies to strategy budget or auto (add one to --strategy)");
  }
  for (const std::string& s : strategies) {
    if (!budget_given && setup.arena_budget == 0 && takes_arena_budget(s)) {
      throw UsageError("strategy '" + s +
                       "' needs --arena-budget or --device-budget BYTES (see docs/sizing.md)");
    }
  }
  if (budget_given) setup.host_budget = legacy ? 0 : UINT64_MAX;  // spilling allowed, as in compile
  if (legacy) setup.fixed_rows_spill = false;
  if (args.has("--host-budget")) {
    if (!budget_given)
      throw UsageError("--host-budget needs --device-budget (spilling fits the device budget)");
    if (legacy && std::find(strategies.begin(), strategies.end(), "auto") == strategies.end()) {
      throw UsageError(
          "--host-budget with size --budget applies to strategy auto (add it to --strategy)");
    }
    setup.host_budget = args.size("--host-budget", 0);
  }
  int64_t lo = 1, hi = kMaxBatch;
  if (max_batch) {
    if (!budget_given) throw UsageError("--max-batch needs --device-budget BYTES");
    if (args.has("--batch")) {
      parse_batch(args.text("--batch", ""), &lo, &hi);
      if (lo == hi)
        throw UsageError("--max-batch searches a range: give --batch A..B, or no --batch for 1.." +
                         std::to_string(kMaxBatch));
    }
    if (std::find(strategies.begin(), strategies.end(), "none") == strategies.end())
      strategies.insert(strategies.begin(), "none");
  } else {
    if (!args.has("--batch"))
      throw UsageError(
          "size needs --batch N or --batch A..B (or --max-batch --device-budget BYTES)");
    parse_batch(args.text("--batch", ""), &lo, &hi);
  }
  if (args.has("--timeline")) {
    io::require_writable(args.text("--timeline", ""));  // Before the compiles.
    std::vector<FileArgument> files = {{"--timeline", args.text("--timeline", ""), true}};
    add_model_file(model, &files);
    refuse_colliding_files(files);
  }
  if (precisions.size() > 1 && args.has("--timeline"))
    throw UsageError("--timeline draws one precision: give --precision one value");
  // One setup per precision. The budget and auto rows get --arena-budget, else what the device
  // budget leaves after that precision's persistent region and workspace at each batch
  // (the compiler works it out: size_options).
  std::vector<SizeSetup> setups;
  std::vector<std::string> budget_errors;
  for (compiler::Precision precision : precisions) {
    SizeSetup s = setup;
    s.precision = precision;
    s.loss_scale = loss_scale_option(args, precision);
    std::string budget_error;
    if (s.arena_budget == 0 && budget_given &&
        std::any_of(strategies.begin(), strategies.end(), takes_arena_budget)) {
      const uint64_t persistent = persistent_bytes(s, lo);
      if (persistent >= s.device_budget) {
        budget_error = "the persistent region (" + format_bytes(persistent) +
                       ") does not leave any arena in " + device_flag + " " +
                       format_bytes(s.device_budget);
      }
    }
    setups.push_back(s);
    budget_errors.push_back(budget_error);
  }

  const auto start = std::chrono::steady_clock::now();
  std::vector<Line> lines;
  // Line i is precision i / S and strategy i % S (S strategies) in max-batch mode.
  const size_t count = strategies.size();
  if (max_batch) {
    lines.resize(precisions.size() * count);
    auto search = [&](size_t i, int64_t start) {
      const size_t p = i / count;
      const std::string& strategy = strategies[i % count];
      if (takes_arena_budget(strategy) && !budget_errors[p].empty()) {
        lines[i].row.strategy = strategy;
        lines[i].row.precision = precisions[p];
        lines[i].row.error = budget_errors[p];
        return;
      }
      MaxBatch m = find_max_batch(setups[p], strategy, start, hi, setup.device_budget,
                                  setups[p].arena_budget);
      if (start > lo && (!m.row.ok() || m.row.batch == 0)) {
        const int compiles = m.compiles;  // the head start did not hold: search from |lo|
        m = find_max_batch(setups[p], strategy, lo, hi, setup.device_budget,
                           setups[p].arena_budget);
        m.compiles += compiles;
      }
      if (m.row.ok() && m.row.batch == 0) {
        m.row.error =
            "even batch " + std::to_string(lo) + " does not fit: its device total is " +
            format_bytes(m.row.device_bytes()) + " (arena " + format_bytes(m.row.arena_bytes) +
            ", persistent " + format_bytes(m.row.persistent_bytes) +
            (m.row.workspace_bytes > 0 ? ", workspace " + format_bytes(m.row.workspace_bytes)
                                       : std::string()) +
            ")";
      }
      lines[i].row = std::move(m.row);
      lines[i].max_batch = true;
      lines[i].capped = m.capped;
      lines[i].compiles = m.compiles;
      lines[i].over_bytes = m.over_bytes;
    };
    // The fixed strategies first; `auto` tries their schedules too (none, sqrt, selective and
    // splits are in its family), so it fits wherever they do, and its search starts at the
    // largest of their batches instead of doubling up from |lo|.
    std::vector<size_t> fixed, searched;
    for (size_t i = 0; i < lines.size(); ++i)
      (strategies[i % count] == "auto" ? searched : fixed).push_back(i);
    run_parallel(fixed.size(), [&](size_t k) { search(fixed[k], lo); });
    std::vector<int64_t> starts(precisions.size(), lo);  // auto's, per precision
    for (size_t i : fixed) {
      const std::string& s = strategies[i % count];
      const bool in_family = s == "none" || s == "sqrt" || s == "selective" || s == "splits";
      if (in_family && lines[i].row.ok() && !lines[i].capped)
        starts[i / count] = std::max(starts[i / count], lines[i].row.batch);
    }
    run_parallel(searched.size(),
                 [&](size_t k) { search(searched[k], starts[searched[k] / count]); });
    // Each row against none's max batch at its own precision.
    for (size_t i = 0; i < lines.size(); ++i) {
      const Line& none = lines[i - i % count];  // "none" is the first strategy in this mode
      if (strategies[0] == "none" && none.row.ok() && none.row.batch > 0 && lines[i].row.ok()) {
        lines[i].vs_none =
            static_cast<double>(lines[i].row.batch) / static_cast<double>(none.row.batch);
      }
    }
  } else {
    std::vector<size_t> precision_of;
    for (int64_t b : listed_batches(lo, hi)) {
      for (size_t p = 0; p < precisions.size(); ++p) {
        for (const std::string& s : strategies) {
          Line l;
          l.row.strategy = s;
          l.row.batch = b;
          l.row.precision = precisions[p];
          lines.push_back(l);
          precision_of.push_back(p);
        }
      }
    }
    run_parallel(lines.size(), [&](size_t i) {
      const std::string strategy = lines[i].row.strategy;
      const size_t p = precision_of[i];
      if (takes_arena_budget(strategy) && !budget_errors[p].empty()) {
        lines[i].row.error = budget_errors[p];
        return;
      }
      lines[i].row = size_row(setups[p], strategy, lines[i].row.batch, setups[p].arena_budget);
    });
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int compiles = 0;
  for (const Line& l : lines)
    compiles += max_batch ? l.compiles
                          : (std::find(budget_errors.begin(), budget_errors.end(), l.row.error) !=
                                         budget_errors.end() &&
                                     !l.row.error.empty()
                                 ? 0
                                 : 1);
  const auto ok =
      std::find_if(lines.begin(), lines.end(), [](const Line& l) { return l.row.ok(); });
  if (ok == lines.end()) throw Failure(lines.front().row.error);

  std::string timeline;
  if (args.has("--timeline")) {
    timeline = args.text("--timeline", "");
    // The rows of the largest batch listed, or each strategy at its largest batch that fits.
    std::vector<SizeRow> rows;
    for (const Line& l : lines) {
      if (l.row.ok() && l.row.batch > 0 && (max_batch || l.row.batch == hi)) rows.push_back(l.row);
    }
    std::string title = model == setup.model ? model : model + " = " + setup.model;
    title += ", " + setup.optimizer;
    const std::string svg = timeline_svg(title, rows);
    io::write_file(timeline, std::vector<uint8_t>(svg.begin(), svg.end()));
  }
  std::string precision_names;
  for (compiler::Precision p : precisions)
    precision_names +=
        (precision_names.empty() ? "" : ",") + std::string(compiler::precision_name(p));
  if (json) {
    print_json(model, setup, lines, max_batch, timeline, precision_names);
    return 0;
  }
  std::printf("model:      %s\n", model.c_str());
  if (model != setup.model) std::printf("template:   %s\n", setup.model.c_str());
  std::printf("optimizer:  %s, alignment %u\n", setup.optimizer.c_str(), setup.alignment);
  if (setup.data_parallel.enabled) {
    std::printf(
        "data-parallel: gradients averaged over ranks in buckets of %s (each rank's "
        "plan; the batch is a rank's)\n",
        format_bytes(setup.data_parallel.bucket_bytes).c_str());
    // The same for every row: the buckets hold the parameters' gradients (float32) and the loss.
    for (const Line& l : lines) {
      if (!l.row.ok()) continue;
      std::printf(
          "               on OpenCL, and CUDA with --communicator mpi, their host copies take "
          "%s of host memory\n",
          format_bytes(l.row.allreduce_host_bytes).c_str());
      break;
    }
  }
  if (precisions.size() > 1) {
    std::printf(
        "precision:  %s (rows per precision; a 16-bit one stores activations, "
        "checkpoints and their gradients in 16 bits, parameters and optimizer state in "
        "float32)\n",
        precision_names.c_str());
  } else {
    std::printf("precision:  %s%s\n", precision_names.c_str(),
                setup.precision == compiler::Precision::kFp32
                    ? ""
                    : " activations, checkpoints and their gradients; parameters and optimizer "
                      "state float32");
  }
  if (setup.arena_budget) {
    std::printf("arena:      %s (%llu bytes) for the budget and auto rows\n",
                format_bytes(setup.arena_budget).c_str(),
                static_cast<unsigned long long>(setup.arena_budget));
  }
  if (budget_given) {
    const char* spilling = setup.host_budget == 0   ? "no row spills to host"
                           : setup.fixed_rows_spill ? "checkpoints beyond it spill to host"
                                                    : "the auto rows may spill checkpoints to host";
    std::printf("device:     %s (%llu bytes) of device memory for arena + persistent; %s\n",
                format_bytes(setup.device_budget).c_str(),
                static_cast<unsigned long long>(setup.device_budget), spilling);
  }
  if (setup.host_budget > 0 && setup.host_budget != UINT64_MAX) {
    std::printf("host:       %s (%llu bytes) of host memory the rows may spill checkpoints to\n",
                format_bytes(setup.host_budget).c_str(),
                static_cast<unsigned long long>(setup.host_budget));
  }
  if (max_batch) {
    std::printf("largest batch in %lld..%lld whose device total fits the budget, per strategy:\n",
                static_cast<long long>(lo), static_cast<long long>(hi));
  }
  std::printf("\n");
  print_table(lines, max_batch, setup.device_budget, precisions.size() > 1);
  std::printf("\n%d plan%s compiled in %.2f s", compiles, compiles == 1 ? "" : "s", seconds);
  if (!timeline.empty()) std::printf("; timeline written to %s", timeline.c_str());
  std::printf("\n");
  return 0;
}

}  // namespace cli
}  // namespace remat
