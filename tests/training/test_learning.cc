// Models learn the synthetic task, and training is deterministic to the byte.
#include "tests/cmocka_cpp.h"

#include <cstdio>

#include "io/synthetic_task.h"
#include "training_harness.h"

// Trains |steps| steps on the synthetic task; returns (mean loss of the first 5, of the last 5).
static std::pair<float, float> train(TrainingRun& run, const std::string& model, int64_t batch,
                                     int steps) {
  remat::io::SyntheticTask task(model, batch, 0);
  float first = 0, last = 0;
  for (int s = 0; s < steps; ++s) {
    const auto values = task.batch(static_cast<uint64_t>(s));
    const auto names = task.names();
    for (size_t i = 0; i < names.size(); ++i) run.set(names[i], values[i].data(), values[i].size());
    const float loss = run.step();
    if (s < 5) first += loss / 5;
    if (s >= steps - 5) last += loss / 5;
  }
  return {first, last};
}

static void mlp_learns_the_synthetic_task(void**) {
  const std::string model = "mlp:layers=2,width=64,in=16,classes=4";
  TrainingRun run(model, 32, "sgd:lr=0.1,momentum=0.9");
  const auto loss = train(run, model, 32, 150);
  std::printf("mlp loss %.4f -> %.4f\n", loss.first, loss.second);
  assert_true(loss.second < 0.5f * loss.first);
}

static void transformer_learns_the_synthetic_task(void**) {
  const std::string model =
      "transformer:layers=1,hidden=32,heads=2,ffn=64,seq=8,vocab=16,classes=4";
  TrainingRun run(model, 16, "adam:lr=0.003");
  const auto loss = train(run, model, 16, 150);
  std::printf("transformer loss %.4f -> %.4f\n", loss.first, loss.second);
  assert_true(loss.second < 0.5f * loss.first);
}

static void training_with_dropout_is_byte_identical_run_to_run(void**) {
  const std::string model =
      "transformer:layers=2,hidden=16,heads=2,ffn=32,seq=6,vocab=20,classes=3,dropout=0.2";
  TrainingRun a(model, 4, "adamw:lr=0.01", 42), b(model, 4, "adamw:lr=0.01", 42);
  train(a, model, 4, 5);
  train(b, model, 4, 5);
  assert_true(a.params() == b.params());
}

static void another_seed_gives_other_parameters(void**) {
  const std::string model = "mlp:layers=2,width=16,in=8,classes=3,dropout=0.3";
  TrainingRun a(model, 4, "sgd:lr=0.1", 1), b(model, 4, "sgd:lr=0.1", 2);
  assert_true(a.params() != b.params());
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(mlp_learns_the_synthetic_task),
      cmocka_unit_test(transformer_learns_the_synthetic_task),
      cmocka_unit_test(training_with_dropout_is_byte_identical_run_to_run),
      cmocka_unit_test(another_seed_gives_other_parameters),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
