// Dataflow checks of a plan: every tensor is written before it is read, every batch tensor is
// bound, bindings are unique, and asynchronous copies are waited for before their bytes are
// touched. Together with the overlap check they mean no verified plan reads stale or
// uninitialised memory, on a backend whose copies are asynchronous as on one whose are not.
//
// Before the first op, what counts as written is what something other than an op is sure to
// have written: input and label bindings (a step refuses to run until the caller has set each)
// and persistent tensors with an init (the session draws them, or, with init_params = 0, the
// caller takes them over). A param binding is not enough: the caller may write a param, but
// nothing makes it, and optimizer state cannot be written from outside at all.
//
// The eval program (the last eval_ops ops) may run before any step and between any two: it is
// checked from the same starting point, and may change nothing a step reads (docs/eval.md).
//
// Data-parallel plans (docs/data-parallel.md): buckets are started in order (0, 1, ...) by the
// step alone, each allreduce_start's inputs are distinct and untouched until the
// allreduce_wait of its bucket, which names the same inputs; and once a plan has one, every
// optimizer update reads a gradient whose all-reduce has finished since it was last written.
#include <string.h>

#include "plan/op_subset.h"
#include "plan/ops.h"
#include "runtime/plan.h"
#include "runtime/port.h"

namespace remat {
namespace {

const char* name_of(const fb::Plan* plan, uint32_t t) {
  const fb::Tensor* x = plan->tensors()->Get(t);
  return x->name() != nullptr ? x->name()->c_str() : "(unnamed)";
}

bool uses(const fb::Op* op, uint32_t t, bool outputs) {
  const auto* ids = outputs ? op->outputs() : op->inputs();
  for (uint32_t k = 0; ids && k < ids->size(); ++k) {
    if (ids->Get(k) == t) return true;
  }
  return false;
}

// Whether |op| writes tensor |t|: one of its outputs, or an input of an all-reduce op, which sums
// (on the CPU, from its start) and divides its inputs in place.
bool writes(const fb::Op* op, uint32_t t) {
  const bool in_place = op_in_build(OpCode::kAllreduceStart) &&
                        (op->code() == static_cast<uint16_t>(OpCode::kAllreduceStart) ||
                         op->code() == static_cast<uint16_t>(OpCode::kAllreduceWait));
  return uses(op, t, true) || (in_place && uses(op, t, false));
}

// What |bound| holds per tensor after check_bindings().
constexpr uint8_t kUnbound = 0, kCallerSet = 1, kParamBinding = 2;

// Bindings name distinct tensors with distinct names, and every Input/Label tensor is bound.
// Marks each bound tensor in |bound|: kCallerSet for inputs and labels, kParamBinding for params.
remat_status check_bindings(const fb::Plan* plan, uint8_t* bound, ErrorBuffer* err) {
  const flatbuffers::Vector<uint32_t>* lists[] = {plan->inputs(), plan->labels(), plan->params()};
  for (int l = 0; l < 3; ++l) {
    for (uint32_t i = 0; lists[l] && i < lists[l]->size(); ++i) {
      const uint32_t t = lists[l]->Get(i);
      if (bound[t] != kUnbound) {
        return set_error(err, REMAT_ERROR_PLAN_CORRUPT, "tensor '%s' is bound twice",
                         name_of(plan, t));
      }
      bound[t] = l == 2 ? kParamBinding : kCallerSet;
    }
  }
  // Inputs and labels share one namespace (remat_session_set_input), params another.
  for (int group = 0; group < 2; ++group) {
    const int first = group == 0 ? 0 : 2, last = group == 0 ? 1 : 2;
    for (int la = first; la <= last; ++la) {
      for (uint32_t i = 0; lists[la] && i < lists[la]->size(); ++i) {
        for (int lb = la; lb <= last; ++lb) {
          for (uint32_t j = la == lb ? i + 1 : 0; lists[lb] && j < lists[lb]->size(); ++j) {
            if (strcmp(name_of(plan, lists[la]->Get(i)), name_of(plan, lists[lb]->Get(j))) == 0) {
              return set_error(err, REMAT_ERROR_PLAN_CORRUPT, "two bindings are named '%s'",
                               name_of(plan, lists[la]->Get(i)));
            }
          }
        }
      }
    }
  }
  for (uint32_t t = 0; t < plan->tensors()->size(); ++t) {
    const fb::Role role = plan->tensors()->Get(t)->role();
    if ((role == fb::Role::Input || role == fb::Role::Label) && !bound[t]) {
      return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                       "tensor '%s' is an input no binding names: it would never be set",
                       name_of(plan, t));
    }
  }
  return REMAT_OK;
}

// What |written| holds for a tensor an op of the eval program wrote.
constexpr uint8_t kWrittenByEval = 2;

// The programs share parameters, state and inputs, and nothing else changes them: an op of the
// eval program writes only arena tensors that are none of these (its loss is one); a step's op
// never writes the eval loss.
remat_status check_program_writes(const fb::Plan* plan, const fb::Op* op, uint32_t i,
                                  uint32_t step_ops, ErrorBuffer* err) {
  for (uint32_t k = 0; op->outputs() && k < op->outputs()->size(); ++k) {
    const uint32_t t = op->outputs()->Get(k);
    const fb::Tensor* x = plan->tensors()->Get(t);
    const bool eval_loss = plan->eval_ops() > 0 && t == plan->eval_loss();
    if (i < step_ops && eval_loss) {
      return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                       "op %u (%s) of the step writes the eval loss '%s'", static_cast<unsigned>(i),
                       op_name(op->code()), name_of(plan, t));
    }
    if (i >= step_ops && !eval_may_write(x)) {
      return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                       "op %u (%s) of the eval program writes %s tensor '%s' in the %s region: it "
                       "may write only "
                       "arena tensors that are no input, label, parameter or state",
                       static_cast<unsigned>(i), op_name(op->code()), fb::EnumNameRole(x->role()),
                       name_of(plan, t), fb::EnumNameRegion(x->region()));
    }
  }
  return REMAT_OK;
}

// The eval loss and every output are written by the eval program (|written| as it ends).
remat_status check_eval_results(const fb::Plan* plan, const uint8_t* written, ErrorBuffer* err) {
  if (plan->eval_ops() > 0 && written[plan->eval_loss()] != kWrittenByEval) {
    return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                     "no op of the eval program writes its loss '%s'",
                     name_of(plan, plan->eval_loss()));
  }
  for (uint32_t i = 0; plan->outputs() && i < plan->outputs()->size(); ++i) {
    if (written[plan->outputs()->Get(i)] != kWrittenByEval) {
      return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                       "no op of the eval program writes output '%s'",
                       name_of(plan, plan->outputs()->Get(i)));
    }
  }
  return REMAT_OK;
}

bool is_code(const fb::Op* op, OpCode code) { return op->code() == static_cast<uint16_t>(code); }

// Whether this build carries the all-reduce ops: a firmware build of a plan without them
// (plan/op_subset.h) refuses them by the op rules already, and leaves their checks out here.
constexpr bool kCarriesAllreduce = op_in_build(OpCode::kAllreduceStart);

int64_t bucket_of(const fb::Op* op) {
  return op->iattrs() != nullptr && op->iattrs()->size() > 0 ? op->iattrs()->Get(0) : -1;
}

// The all-reduce buckets of the step in one pass (a plan may hold many): which bucket each
// tensor is being summed in, and which op started each bucket.
struct Buckets {
  int32_t* flight;      // per tensor: the bucket summing it, or -1
  int32_t* started_at;  // per bucket: its start op, -1 before it, -2 once waited for
  int64_t next = 0;     // the bucket the next start must start
};

// allreduce_start op |i|: a step's op, of distinct tensors none of which is being summed, the
// next bucket.
remat_status start_bucket(const fb::Plan* plan, uint32_t i, uint32_t step_ops, Buckets* b,
                          ErrorBuffer* err) {
  const fb::Op* op = plan->ops()->Get(i);
  const int64_t bucket = bucket_of(op);
  if (i >= step_ops) {
    return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                     "op %u (allreduce_start) is in the eval program: only a step communicates",
                     static_cast<unsigned>(i));
  }
  if (bucket != b->next) {
    return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                     "op %u (allreduce_start) starts bucket %lld, expected %lld: a step starts its "
                     "buckets in order from 0, each once",
                     static_cast<unsigned>(i), static_cast<long long>(bucket),
                     static_cast<long long>(b->next));
  }
  const auto* ids = op->inputs();
  for (uint32_t a = 0; ids && a < ids->size(); ++a) {
    for (uint32_t c = a + 1; c < ids->size(); ++c) {
      if (ids->Get(a) == ids->Get(c)) {
        return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                         "op %u (allreduce_start) names tensor '%s' twice",
                         static_cast<unsigned>(i), name_of(plan, ids->Get(a)));
      }
    }
    b->flight[ids->Get(a)] = static_cast<int32_t>(bucket);
  }
  b->started_at[bucket] = static_cast<int32_t>(i);
  ++b->next;
  return REMAT_OK;
}

// allreduce_wait op |i|: of a bucket started and not yet waited for, over the same tensors.
remat_status finish_bucket(const fb::Plan* plan, uint32_t i, Buckets* b, ErrorBuffer* err) {
  const fb::Op* op = plan->ops()->Get(i);
  const int64_t bucket = bucket_of(op);
  if (bucket < 0 || bucket >= b->next || b->started_at[bucket] < 0) {
    return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                     "op %u (allreduce_wait) of bucket %lld has no allreduce_start before it",
                     static_cast<unsigned>(i), static_cast<long long>(bucket));
  }
  const uint32_t start = static_cast<uint32_t>(b->started_at[bucket]);
  const auto* started = plan->ops()->Get(start)->inputs();
  const auto* waited = op->inputs();
  bool same = waited && started && waited->size() == started->size();
  for (uint32_t k = 0; same && k < started->size(); ++k) same = waited->Get(k) == started->Get(k);
  if (!same) {
    return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                     "op %u (allreduce_wait) of bucket %lld waits for other tensors than op %u "
                     "(allreduce_start) started",
                     static_cast<unsigned>(i), static_cast<long long>(bucket),
                     static_cast<unsigned>(start));
  }
  for (uint32_t k = 0; k < started->size(); ++k) b->flight[started->Get(k)] = -1;
  b->started_at[bucket] = -2;
  return REMAT_OK;
}

// Op |i| other than the wait of their bucket touches no tensor being summed.
remat_status check_not_in_flight(const fb::Plan* plan, uint32_t i, const Buckets& b,
                                 ErrorBuffer* err) {
  const fb::Op* op = plan->ops()->Get(i);
  const bool wait = is_code(op, OpCode::kAllreduceWait);
  for (const auto* ids : {op->inputs(), op->outputs()}) {
    for (uint32_t k = 0; ids && k < ids->size(); ++k) {
      const int32_t bucket = b.flight[ids->Get(k)];
      if (bucket < 0 || (wait && bucket_of(op) == bucket)) continue;
      return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                       "op %u (%s) uses tensor '%s' before the wait of bucket %d, which op %d "
                       "(allreduce_start) is summing over the ranks",
                       static_cast<unsigned>(i), op_name(op->code()), name_of(plan, ids->Get(k)),
                       static_cast<int>(bucket), static_cast<int>(b.started_at[bucket]));
    }
  }
  return REMAT_OK;
}

// After the step's last op: every bucket it started was waited for.
remat_status check_all_waited(const Buckets& b, ErrorBuffer* err) {
  for (int64_t bucket = 0; bucket < b.next; ++bucket) {
    if (b.started_at[bucket] < 0) continue;
    return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                     "op %d (allreduce_start) of bucket %lld is never waited for",
                     static_cast<int>(b.started_at[bucket]), static_cast<long long>(bucket));
  }
  return REMAT_OK;
}

}  // namespace

bool eval_may_write(const fb::Tensor* x) {
  const fb::Role role = x->role();
  return x->region() == fb::Region::Arena && role != fb::Role::Input && role != fb::Role::Label &&
         role != fb::Role::Param && role != fb::Role::State;
}

remat_status verify_dataflow(const fb::Plan* plan, int32_t* copy_end, ErrorBuffer* err) {
  const uint32_t n = plan->tensors()->size();
  const uint32_t n_ops = plan->ops()->size();
  // The buckets' tables (per tensor, per op: a bucket has a start op), then |written|,
  // |initially| and |reduced| per tensor.
  const size_t words = (static_cast<size_t>(n) + 1) + (static_cast<size_t>(n_ops) + 1);
  const size_t flags = 3 * (static_cast<size_t>(n) + 1);
  int32_t* tables = static_cast<int32_t*>(port_alloc(words * sizeof(int32_t) + flags, 8));
  if (tables == nullptr)
    return set_error(err, REMAT_ERROR_RESOURCE_EXHAUSTED, "no memory to verify %u tensors",
                     static_cast<unsigned>(n));
  Buckets buckets{tables, tables + n + 1};
  for (size_t w = 0; w < words; ++w) tables[w] = -1;
  uint8_t* written = reinterpret_cast<uint8_t*>(tables + words);
  uint8_t* initially = written + n + 1;
  // |reduced|: the tensor's all-reduce finished since an op last wrote it.
  uint8_t* reduced = initially + n + 1;
  memset(written, 0, flags);
  bool data_parallel = false;
  for (uint32_t i = 0; kCarriesAllreduce && i < n_ops; ++i)
    data_parallel = data_parallel || is_code(plan->ops()->Get(i), OpCode::kAllreduceStart);
  remat_status status = check_bindings(plan, written, err);
  // Written before the first op (see the top of this file): the input and label bindings, and
  // persistent tensors with an init. (verify_tensor refused an init the session cannot apply.)
  for (uint32_t t = 0; t < n && status == REMAT_OK; ++t) {
    const fb::Tensor* x = plan->tensors()->Get(t);
    const bool initialised = x->region() == fb::Region::Persistent && x->init() != fb::Init::None;
    written[t] = written[t] == kCallerSet || initialised ? 1 : 0;
    initially[t] = written[t];
    copy_end[t] = -1;
  }
  const uint32_t step_ops = n_ops - plan->eval_ops();  // verify_plan checked eval_ops <= n_ops
  for (uint32_t i = 0; i < n_ops && status == REMAT_OK; ++i) {
    const fb::Op* op = plan->ops()->Get(i);
    if (i == step_ops) {
      // The eval program runs on its own, maybe before any step: what it reads must be written
      // as at session creation or by its own ops.
      for (uint32_t t = 0; t < n; ++t) written[t] = initially[t];
    }
    status = check_program_writes(plan, op, i, step_ops, err);
    for (uint32_t k = 0; op->inputs() && k < op->inputs()->size() && status == REMAT_OK; ++k) {
      const uint32_t t = op->inputs()->Get(k);
      if (written[t]) continue;
      const fb::Tensor* x = plan->tensors()->Get(t);
      if (x->region() == fb::Region::Persistent) {
        // Every step reads what the last one left, and the first reads what the session set.
        status = set_error(
            err, REMAT_ERROR_PLAN_CORRUPT,
            "op %u (%s) reads persistent %s tensor '%s' before any op writes it, and its init is "
            "None: a persistent tensor read before it is written needs an init",
            static_cast<unsigned>(i), op_name(op->code()), fb::EnumNameRole(x->role()),
            name_of(plan, t));
      } else {
        status = set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                           "op %u (%s) reads tensor '%s' before any op writes it",
                           static_cast<unsigned>(i), op_name(op->code()), name_of(plan, t));
      }
    }
    if (kCarriesAllreduce && status == REMAT_OK && i == step_ops)
      status = check_all_waited(buckets, err);
    if (kCarriesAllreduce && status == REMAT_OK)
      status = check_not_in_flight(plan, i, buckets, err);
    if (kCarriesAllreduce && status == REMAT_OK && is_code(op, OpCode::kAllreduceStart))
      status = start_bucket(plan, i, step_ops, &buckets, err);
    if (kCarriesAllreduce && status == REMAT_OK && is_code(op, OpCode::kAllreduceWait)) {
      status = finish_bucket(plan, i, &buckets, err);
      for (uint32_t k = 0; op->inputs() && k < op->inputs()->size(); ++k)
        reduced[op->inputs()->Get(k)] = 1;
    }
    if (status == REMAT_OK && data_parallel && i < step_ops && is_optimizer_update(op->code()) &&
        op->inputs() != nullptr && op->inputs()->size() > 1 && !reduced[op->inputs()->Get(1)]) {
      status = set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                         "op %u (%s) reads gradient '%s' before its all-reduce: a data-parallel "
                         "plan updates with the mean of the ranks' gradients",
                         static_cast<unsigned>(i), op_name(op->code()),
                         name_of(plan, op->inputs()->Get(1)));
    }
    for (uint32_t k = 0; op->outputs() && k < op->outputs()->size(); ++k) {
      written[op->outputs()->Get(k)] = i < step_ops ? 1 : kWrittenByEval;
      reduced[op->outputs()->Get(k)] = 0;
    }
    const bool spill = op->code() == static_cast<uint16_t>(OpCode::kSpill);
    const bool prefetch = op->code() == static_cast<uint16_t>(OpCode::kPrefetch);
    if (status != REMAT_OK || (!spill && !prefetch)) continue;
    // The copy may still run until the first wait on its device tensor: nothing may write that
    // tensor before then (read it either, for a prefetch), and the host slot stays in use.
    const uint32_t device = spill ? op->inputs()->Get(0) : op->outputs()->Get(0);
    const uint32_t slot = spill ? op->outputs()->Get(0) : op->inputs()->Get(0);
    const uint32_t program_end = i < step_ops ? step_ops : n_ops;
    uint32_t j = i + 1;
    for (; j < program_end; ++j) {
      const fb::Op* later = plan->ops()->Get(j);
      const bool is_wait =
          later->code() == static_cast<uint16_t>(OpCode::kWait) && uses(later, device, false);
      if (is_wait) break;
      if (writes(later, device) || (prefetch && uses(later, device, false))) {
        status = set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                           "op %u (%s) uses tensor '%s' before the wait for op %u (%s)",
                           static_cast<unsigned>(j), op_name(later->code()), name_of(plan, device),
                           static_cast<unsigned>(i), op_name(op->code()));
        break;
      }
    }
    if (status == REMAT_OK && j == program_end) {
      status =
          set_error(err, REMAT_ERROR_PLAN_CORRUPT, "op %u (%s) of tensor '%s' is never waited for",
                    static_cast<unsigned>(i), op_name(op->code()), name_of(plan, device));
    }
    if (status == REMAT_OK && static_cast<int32_t>(j) > copy_end[slot])
      copy_end[slot] = static_cast<int32_t>(j);
  }
  if (kCarriesAllreduce && status == REMAT_OK && step_ops == n_ops)
    status = check_all_waited(buckets, err);
  status = status == REMAT_OK ? check_eval_results(plan, written, err) : status;
  port_free(tables);
  return status;
}

}  // namespace remat
