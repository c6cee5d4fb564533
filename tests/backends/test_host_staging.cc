// The GPU backends' host slots of a data-parallel plan's buckets (backends/gpu/host_staging.h):
// the layout (one slot per bucket, its arrays one after the other at 64-byte multiples, whole
// pages allocated), a plan
// without buckets, a second layout replacing the first, and the refusal of a bucket numbered
// past the plan's buckets or started twice, naming the op.
#include "tests/cmocka_cpp.h"

#include <stdint.h>
#include <string.h>

#include <initializer_list>

#include "backends/gpu/host_staging.h"
#include "plan/ops.h"
#include "tests/backends/op_cases.h"

namespace {

using remat::OpCall;
using remat::TensorRef;
using remat::gpu::HostStaging;

// A float32 [n] arena tensor.
TensorRef floats(int64_t n) {
  TensorRef t{};
  t.region = remat::Region::kArena;
  t.dtype = REMAT_DTYPE_F32;
  t.rank = 1;
  t.bytes = static_cast<uint64_t>(n) * 4;
  t.numel = n;
  t.dims[0] = n;
  return t;
}

// An op of |code| at plan position |index| on |inputs|, with |bucket| as its int attribute.
struct Call {
  const TensorRef* inputs[8];
  int64_t bucket;
  OpCall call;
  Call(remat::OpCode code, uint32_t index, std::initializer_list<const TensorRef*> in, int64_t b)
      : bucket(b), call{} {
    int n = 0;
    for (const TensorRef* t : in) inputs[n++] = t;
    call.code = static_cast<uint16_t>(code);
    call.index = index;
    call.num_inputs = static_cast<uint8_t>(n);
    call.inputs = inputs;
    call.iattrs = &bucket;
    call.num_iattrs = 1;
  }
};

constexpr remat::OpCode kStart = remat::OpCode::kAllreduceStart;
constexpr remat::OpCode kWait = remat::OpCode::kAllreduceWait;

void buckets_get_slots_of_their_arrays_at_64_byte_multiples(void**) {
  const TensorRef a = floats(3), b = floats(17), c = floats(16);
  const TensorRef relu = floats(5);
  Call calls[] = {{kStart, 4, {&a, &b}, 0},
                  {remat::OpCode::kRelu, 5, {&relu}, 0},
                  {kStart, 6, {&c}, 1},
                  {kWait, 7, {&a, &b}, 0},
                  {kWait, 8, {&c}, 1}};
  OpCall list[5];
  for (int i = 0; i < 5; ++i) list[i] = calls[i].call;
  remat_test::Errors e;
  HostStaging staging;
  assert_int_equal(staging.prepare(list, 5, &e.buf), REMAT_OK);
  assert_int_equal(HostStaging::array_bytes(a), 64);   // 12 bytes
  assert_int_equal(HostStaging::array_bytes(b), 128);  // 68 bytes
  assert_int_equal(HostStaging::array_bytes(c), 64);   // 64 bytes
  assert_int_equal(staging.bytes(), 256);
  assert_int_equal(staging.page_bytes(), 4096);
  assert_non_null(staging.slot(0));
  assert_ptr_equal(staging.slot(0), staging.base());
  assert_int_equal(reinterpret_cast<uintptr_t>(staging.base()) % 4096, 0);
  assert_ptr_equal(staging.slot(1), staging.slot(0) + 192);
  assert_null(staging.slot(2));
  // Every byte of its pages is the caller's (ASan checks the writes).
  memset(staging.base(), 0x5a, staging.page_bytes());

  // A plan without buckets replaces the layout with none.
  assert_int_equal(staging.prepare(list + 1, 1, &e.buf), REMAT_OK);
  assert_int_equal(staging.bytes(), 0);
  assert_null(staging.slot(0));
}

void a_bucket_past_the_plans_or_started_twice_is_refused(void**) {
  const TensorRef a = floats(8);
  Call past[] = {{kStart, 3, {&a}, 0}, {kStart, 9, {&a}, 2}};
  Call twice[] = {{kStart, 3, {&a}, 0}, {kStart, 11, {&a}, 0}};
  OpCall list[2];
  remat_test::Errors e;
  HostStaging staging;
  for (int i = 0; i < 2; ++i) list[i] = past[i].call;
  assert_int_equal(staging.prepare(list, 2, &e.buf), REMAT_ERROR_FAILED_PRECONDITION);
  assert_string_equal(e.text, "op 9 (allreduce_start): bucket 2 is past the plan's buckets");
  assert_null(staging.slot(0));
  for (int i = 0; i < 2; ++i) list[i] = twice[i].call;
  assert_int_equal(staging.prepare(list, 2, &e.buf), REMAT_ERROR_FAILED_PRECONDITION);
  assert_string_equal(e.text, "op 11 (allreduce_start): bucket 0 is started twice");
  assert_int_equal(staging.bytes(), 0);
  assert_null(staging.slot(0));
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(buckets_get_slots_of_their_arrays_at_64_byte_multiples),
      cmocka_unit_test(a_bucket_past_the_plans_or_started_twice_is_refused),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
