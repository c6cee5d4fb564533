/* A plan header's op list as `remat compile --emit-c` writes it: matmul (1) and relu (6) alone,
   no 16-bit float tensors, for test_op_subset.cc's and test_small_flash.cc's builds of the
   verifier (plan/op_subset.h). */
#define FIXTURE_OP_CODES 1, 6
#define FIXTURE_HALF_FLOATS 0
#ifndef REMAT_PLAN_OPS_ONLY
#error "op_subset.h reads the op list alone"
#endif
