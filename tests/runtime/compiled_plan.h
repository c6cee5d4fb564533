// Shared by the plan tests: a template compiled at batch 2, the plans they corrupt or query.
#ifndef REMAT_TESTS_RUNTIME_COMPILED_PLAN_H_
#define REMAT_TESTS_RUNTIME_COMPILED_PLAN_H_

#include "compiler/compiler.h"

namespace remat_test {

/// |model| compiled at batch 2 with |optimizer| and the other options' defaults.
inline remat::compiler::CompileResult compile_model(const char* model,
                                                    const char* optimizer = "sgd:lr=0.1,momentum=0.9") {
  remat::compiler::CompileOptions o;
  o.model = model;
  o.batch = 2;
  o.optimizer = optimizer;
  return remat::compiler::compile(o);
}

}  // namespace remat_test

#endif  // REMAT_TESTS_RUNTIME_COMPILED_PLAN_H_
