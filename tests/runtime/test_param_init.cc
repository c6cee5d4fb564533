// A session's initial parameters are the values docs/plan-format.md states: Uniform(-s, s) as
// uniform_init() of word i of the tensor's Philox stream (seed, REMAT_PHILOX_INIT_STEP, tensor
// index), Normal(0, s) by Box-Muller on words 2i and 2i + 1, drawn here one word at a time with
// philox_word() as an independent reference, whatever the session's threads.
#include <math.h>
#include <string.h>

#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "plan/philox.h"
#include "plan/plan_generated.h"
#include "remat/remat.h"
#include "tests/cmocka_cpp.h"

namespace {

float reference(remat::fb::Init init, float scale, uint64_t seed, uint32_t tensor, uint64_t i) {
  const uint64_t step = REMAT_PHILOX_INIT_STEP;
  switch (init) {
    case remat::fb::Init::Zeros: return 0.0f;
    case remat::fb::Init::Ones: return 1.0f;
    case remat::fb::Init::Uniform:
      return remat::uniform_init(remat::philox_word(seed, step, tensor, i), scale);
    case remat::fb::Init::Normal: {
      const float u1 =
          (static_cast<float>(remat::philox_word(seed, step, tensor, 2 * i) >> 8) + 1.0f) *
          (1.0f / 16777217.0f);
      const float u2 = remat::uniform01(remat::philox_word(seed, step, tensor, 2 * i + 1));
      return scale * sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958647692f * u2);
    }
    default: fail_msg("unexpected init %d", static_cast<int>(init));
  }
  return 0.0f;
}

// A transformer whose embedding (vocab x hidden, odd) is past the size the host draws with a
// team of threads, with weights of odd sizes (Philox's groups of four straddle chunks): every
// Uniform and Normal parameter read back from sessions of 1 and 3 threads.
void initial_parameters_are_the_streams_values(void**) {
  remat::compiler::CompileOptions o;
  o.model = "transformer:layers=1,hidden=66,heads=2,ffn=130,seq=4,vocab=1001,classes=3";
  o.batch = 2;
  const std::vector<uint8_t> bytes = remat::compiler::compile(o).plan;
  const remat::fb::Plan* fb_plan = remat::fb::GetPlan(bytes.data());
  remat_plan* plan = nullptr;
  char message[512] = "";
  assert_int_equal(remat_plan_open(bytes.data(), bytes.size(), &plan, message, sizeof message),
                   REMAT_OK);
  for (size_t threads : {size_t{1}, size_t{3}}) {
    remat_session_options options;
    remat_session_options_init(&options);
    options.threads = threads;
    remat_session* session = nullptr;
    if (remat_session_create(plan, &options, &session, message, sizeof message) != REMAT_OK)
      fail_msg("session: %s", message);
    int uniform = 0, normal = 0;
    int64_t largest = 0;
    for (uint32_t t = 0; t < fb_plan->tensors()->size(); ++t) {
      const remat::fb::Tensor* x = fb_plan->tensors()->Get(t);
      if (x->role() != remat::fb::Role::Param) continue;
      if (x->init() != remat::fb::Init::Uniform && x->init() != remat::fb::Init::Normal) continue;
      (x->init() == remat::fb::Init::Uniform ? uniform : normal) += 1;
      std::vector<float> got(x->size() / sizeof(float));
      largest =
          got.size() > static_cast<size_t>(largest) ? static_cast<int64_t>(got.size()) : largest;
      assert_int_equal(remat_session_read_param(session, x->name()->c_str(), got.data(), x->size()),
                       REMAT_OK);
      for (size_t i = 0; i < got.size(); ++i) {
        const float want = reference(x->init(), x->init_scale(), fb_plan->seed(), t, i);
        if (memcmp(&want, &got[i], sizeof want) != 0)
          fail_msg("%zu threads: %s[%zu] = %.9g, the stream gives %.9g", threads,
                   x->name()->c_str(), i, static_cast<double>(got[i]), static_cast<double>(want));
      }
    }
    // The case covers both draws and the threads' path (65536 elements and more).
    if (uniform == 0 || normal == 0 || largest < 65536)
      fail_msg("%d uniform, %d normal parameters, the largest %lld elements", uniform, normal,
               static_cast<long long>(largest));
    remat_session_destroy(session);
  }
  remat_plan_close(plan);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(initial_parameters_are_the_streams_values),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
