// Models learn the synthetic task, and training is deterministic to the byte.
#include "tests/cmocka_cpp.h"

#include <cstdio>

#include "compiler/templates/aliases.h"
#include "io/synthetic_task.h"
#include "training_harness.h"

// Trains |steps| steps on the synthetic task; returns (mean loss of the first |window| steps, of
// the last |window|).
static std::pair<float, float> train(TrainingRun& run, const std::string& model, int64_t batch,
                                     int steps, int window = 5) {
  remat::io::SyntheticTask task(remat::compiler::expand_model_alias(model), batch, 0);
  float first = 0, last = 0;
  for (int s = 0; s < steps; ++s) {
    const auto values = task.batch(static_cast<uint64_t>(s));
    const auto names = task.names();
    for (size_t i = 0; i < names.size(); ++i) run.set(names[i], values[i].data(), values[i].size());
    const float loss = run.step();
    if (s < window) first += loss / static_cast<float>(window);
    if (s >= steps - window) last += loss / static_cast<float>(window);
  }
  return {first, last};
}

// What `remat train MODEL` does without --optimizer: every template, bert-base included (its
// default is SGD at lr 0.01, on a synthetic task of 64 token ids), learns its synthetic task.
static void every_template_learns_with_its_default_optimizer(void**) {
  struct Case {
    const char* model;
    int64_t batch;
    int steps, window;
  };
  const Case cases[] = {
      {"mlp:layers=2,width=64,in=16,classes=4", 32, 150, 20},
      {"resmlp:layers=2,width=64,in=16,classes=4", 32, 150, 20},
      {"transformer:layers=2,hidden=32,heads=2,ffn=64,seq=8,vocab=64,classes=2", 32, 150, 20},
      {"cnn:channels=4x8,in=1x12x12,classes=2", 32, 150, 20},
      {"resnet:depth=8,width=4,in=3x8x8,classes=2", 32, 400, 20},
      {"dscnn:blocks=2,width=8,in=1x16x10,classes=4", 32, 400, 20},
      {"bert-base:seq=4", 16, 40, 5},
  };
  for (const Case& c : cases) {
    const std::string optimizer = remat::compiler::default_optimizer(c.model);
    TrainingRun run(c.model, c.batch, optimizer, 0, "none", 0, 0, 2);
    const auto loss = train(run, c.model, c.batch, c.steps, c.window);
    std::printf("%s with %s: loss %.4f -> %.4f\n", c.model, optimizer.c_str(), loss.first,
                loss.second);
    if (!(loss.second < 0.75f * loss.first))
      fail_msg("%s did not learn with %s", c.model, optimizer.c_str());
  }
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
      cmocka_unit_test(every_template_learns_with_its_default_optimizer),
      cmocka_unit_test(training_with_dropout_is_byte_identical_run_to_run),
      cmocka_unit_test(another_seed_gives_other_parameters),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
