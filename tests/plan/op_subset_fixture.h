/* A plan header's op list as `remat compile --emit-c` writes it: matmul (1) and relu (6) alone,
   for test_op_subset.cc's build of the verifier (plan/op_subset.h). */
#define FIXTURE_OP_CODES 1, 6
#ifndef REMAT_PLAN_OPS_ONLY
#error "op_subset.h reads the op list alone"
#endif
