// After remat_session_create returns, a training step and an eval allocate nothing: this test
// counts every malloc/calloc/realloc/memalign (and so every operator new) made during them.
#include "tests/cmocka_cpp.h"

#include <vector>

#include "compiler/compiler.h"
#include "remat/remat.h"
#include "tests/runtime/compiled_plan.h"
#include "tests/sanitized.h"

#if !defined(REMAT_SANITIZED)
// glibc's own entry points, so the counting wrappers below can forward to them.
extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);
extern "C" void* __libc_memalign(size_t, size_t);

static volatile int g_counting = 0;
static volatile long g_allocations = 0;

extern "C" void* malloc(size_t n) {
  if (g_counting) g_allocations = g_allocations + 1;
  return __libc_malloc(n);
}
extern "C" void* calloc(size_t n, size_t m) {
  if (g_counting) g_allocations = g_allocations + 1;
  return __libc_calloc(n, m);
}
extern "C" void* realloc(void* p, size_t n) {
  if (g_counting) g_allocations = g_allocations + 1;
  return __libc_realloc(p, n);
}
extern "C" int posix_memalign(void** out, size_t alignment, size_t n) {
  if (g_counting) g_allocations = g_allocations + 1;
  *out = __libc_memalign(alignment, n);
  return *out ? 0 : 12;
}
extern "C" void* aligned_alloc(size_t alignment, size_t n) {
  if (g_counting) g_allocations = g_allocations + 1;
  return __libc_memalign(alignment, n);
}

static remat::compiler::CompileOptions options(const char* model, const char* optimizer,
                                               const char* strategy) {
  remat::compiler::CompileOptions o;
  o.model = model;
  o.batch = 4;
  o.optimizer = optimizer;
  o.strategy = strategy;
  return o;
}

static void run_steps_and_count(const remat::compiler::CompileOptions& o) {
  const auto compiled = remat::compiler::compile(o);
  remat_plan* plan = nullptr;
  remat_session* session = nullptr;
  assert_int_equal(remat_plan_open(compiled.plan.data(), compiled.plan.size(), &plan, nullptr, 0),
                   REMAT_OK);
  assert_int_equal(remat_session_create(plan, nullptr, &session, nullptr, 0), REMAT_OK);
  assert_int_equal(remat_test::set_inputs_to_zeros(session, plan), REMAT_OK);
  float loss = 0;
  g_allocations = 0;
  g_counting = 1;
  int evaluated = 0;
  for (int step = 0; step < 3; ++step) {
    if (remat_session_step(session, &loss) != REMAT_OK) break;
    // The eval program and its outputs between steps: no allocation either.
    if (remat_session_eval(session, &loss) != REMAT_OK) break;
    float first_logit[64];
    remat_tensor_info logits;
    if (remat_plan_binding(plan, REMAT_BINDING_OUTPUT, 0, &logits) != REMAT_OK ||
        logits.bytes > sizeof(first_logit) ||
        remat_session_read_output(session, logits.name, first_logit, logits.bytes) != REMAT_OK) {
      break;
    }
    ++evaluated;
  }
  g_counting = 0;
  assert_int_equal(remat_session_step_count(session), 3);
  assert_int_equal(evaluated, 3);
  assert_int_equal(g_allocations, 0);
  remat_session_destroy(session);
  remat_plan_close(plan);
}

static const char* const kMlp = "mlp:layers=3,width=32,in=16,classes=4,dropout=0.1";
static const char* const kTransformer =
    "transformer:layers=2,hidden=16,heads=2,ffn=32,seq=8,vocab=20,classes=3,dropout=0.1";

static void mlp_steps_allocate_nothing(void**) {
  run_steps_and_count(options(kMlp, "sgd:lr=0.1,momentum=0.9", "none"));
}

static void transformer_steps_allocate_nothing(void**) {
  run_steps_and_count(options(kTransformer, "adamw:lr=0.001", "none"));
}

static void steps_that_recompute_allocate_nothing(void**) {
  for (const char* model : {kMlp, kTransformer}) {
    const auto o = options(model, "adamw:lr=0.001", "sqrt");
    if (!(remat::compiler::compile(o).report.recomputed_flops > 0))
      fail_msg("%s: sqrt recomputes nothing", model);
    run_steps_and_count(o);
  }
}

static void steps_that_spill_to_host_allocate_nothing(void**) {
  for (const char* model : {kMlp, kTransformer}) {
    // 80% of the arena `splits` needs without spilling: some checkpoints must go to host.
    auto o = options(model, "adamw:lr=0.001", "splits");
    const auto plain = remat::compiler::compile(o).report;
    o.device_budget = plain.persistent_bytes + plain.arena_bytes * 8 / 10;
    const auto spilled = remat::compiler::compile(o).report;
    if (spilled.spilled.empty() || spilled.host_bytes == 0) fail_msg("%s: nothing spilled", model);
    run_steps_and_count(o);
  }
}
#endif

int main() {
#if defined(REMAT_SANITIZED)
  // AddressSanitizer replaces malloc itself; the count is taken in the plain build.
  return 77;
#else
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(mlp_steps_allocate_nothing),
      cmocka_unit_test(transformer_steps_allocate_nothing),
      cmocka_unit_test(steps_that_recompute_allocate_nothing),
      cmocka_unit_test(steps_that_spill_to_host_allocate_nothing),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
#endif
}
