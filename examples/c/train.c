/* The smallest complete remat program: load a plan file, bind static memory, train.
 *
 *   remat compile mlp:layers=4,width=64,in=32,classes=4 --batch 16 -o mlp.rplan
 *   ./train_example mlp.rplan 200
 *
 * Plain C99 with no heap of its own: the arena and the persistent region are static buffers,
 * as they would be in firmware. The batch is synthetic: x uniform in [-1, 1), the label is 1
 * when the row's sum is positive, else 0 (any plan with one f32 input and an i32 label of at
 * least two classes can learn it). At the end it evaluates a held-out batch with the plan's
 * eval program and prints its loss and accuracy.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"

#define ARENA_BYTES (8u * 1024u * 1024u)
#define PERSISTENT_BYTES (4u * 1024u * 1024u)
#define PLAN_BYTES (1u * 1024u * 1024u)
#define BATCH_BYTES (1u * 1024u * 1024u)
#define ALIGNMENT 64u

static unsigned char arena_storage[ARENA_BYTES + ALIGNMENT];
static unsigned char persistent_storage[PERSISTENT_BYTES + ALIGNMENT];
static unsigned char plan_storage[PLAN_BYTES + ALIGNMENT];
static float input_buffer[BATCH_BYTES / sizeof(float)];
static int32_t label_buffer[BATCH_BYTES / sizeof(int32_t)];
static float logits_buffer[BATCH_BYTES / sizeof(float)];

/* Rounds |p| up to ALIGNMENT: C99 has no alignas, so the buffers carry slack instead. */
static void* aligned(unsigned char* p) {
  return p + ((ALIGNMENT - (uintptr_t)p % ALIGNMENT) % ALIGNMENT);
}

/* A tiny deterministic generator so the example needs nothing else. */
static uint32_t next_random(uint32_t* state) {
  *state = *state * 1664525u + 1013904223u;
  return *state;
}

static int fail(const char* what, remat_status status, const char* detail) {
  fprintf(stderr, "%s: %s: %s\n", what, remat_status_string(status), detail);
  return 1;
}

/* Draws a batch into the input and label buffers and sets them in |session|. */
static remat_status set_batch(remat_session* session, const remat_tensor_info* input,
                              const remat_tensor_info* label, uint32_t* random_state) {
  int64_t row, col;
  remat_status status;
  for (row = 0; row < input->dims[0]; ++row) {
    float sum = 0.0f;
    for (col = 0; col < input->dims[1]; ++col) {
      float v = (float)(next_random(random_state) >> 8) / 8388608.0f - 1.0f;
      input_buffer[row * input->dims[1] + col] = v;
      sum += v;
    }
    label_buffer[row] = sum > 0.0f ? 1 : 0;
  }
  status = remat_session_set_input(session, input->name, input_buffer, (size_t)input->bytes);
  if (status == REMAT_OK)
    status = remat_session_set_input(session, label->name, label_buffer, (size_t)label->bytes);
  return status;
}

int main(int argc, char** argv) {
  char message[512];
  unsigned char* plan_bytes = (unsigned char*)aligned(plan_storage);
  remat_plan* plan = NULL;
  remat_session* session = NULL;
  remat_session_options options;
  remat_tensor_info input, label, logits;
  remat_version_info version;
  remat_status status;
  size_t plan_size;
  long steps = argc > 2 ? strtol(argv[2], NULL, 10) : 100;
  long step;
  uint32_t random_state = 12345u;
  FILE* file;

  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE.rplan [STEPS]\n", argv[0]);
    return 2;
  }
  /* The library loaded at run time must have the API this program was compiled against. */
  version.struct_size = sizeof(version);
  status = remat_version(&version);
  if (status != REMAT_OK) return fail("asking the library its version", status, "");
  if (version.api_version != REMAT_API_VERSION) {
    fprintf(stderr, "libremat has API version %u, this program needs %d\n",
            (unsigned)version.api_version, REMAT_API_VERSION);
    return 1;
  }
  file = fopen(argv[1], "rb");
  if (file == NULL) {
    fprintf(stderr, "cannot open %s\n", argv[1]);
    return 1;
  }
  plan_size = fread(plan_bytes, 1, PLAN_BYTES, file);
  fclose(file);

  status = remat_plan_open(plan_bytes, plan_size, &plan, message, sizeof(message));
  if (status != REMAT_OK) return fail("opening the plan", status, message);
  if (remat_plan_binding(plan, REMAT_BINDING_INPUT, 0, &input) != REMAT_OK ||
      remat_plan_binding(plan, REMAT_BINDING_LABEL, 0, &label) != REMAT_OK ||
      input.dtype != REMAT_DTYPE_F32 || label.dtype != REMAT_DTYPE_I32 || input.rank != 2 ||
      input.bytes > BATCH_BYTES || label.bytes > BATCH_BYTES) {
    remat_plan_close(plan);
    return fail("checking the plan", REMAT_ERROR_INVALID_ARGUMENT,
                "this example needs one f32 [batch, features] input and one i32 label");
  }

  remat_session_options_init(&options);
  options.arena = aligned(arena_storage);
  options.arena_size = ARENA_BYTES;
  options.persistent = aligned(persistent_storage);
  options.persistent_size = PERSISTENT_BYTES;
  status = remat_session_create(plan, &options, &session, message, sizeof(message));
  if (status != REMAT_OK) {
    remat_plan_close(plan);
    return fail("creating the session", status, message);
  }

  for (step = 0; step < steps; ++step) {
    float loss = 0.0f;
    status = set_batch(session, &input, &label, &random_state);
    if (status == REMAT_OK) status = remat_session_step(session, &loss);
    if (status != REMAT_OK) {
      fail("training", status, remat_session_last_error(session));
      break;
    }
    if (step % 10 == 0 || step + 1 == steps) printf("step %ld loss %.6f\n", step + 1, loss);
  }
  /* A batch the run has not trained on, through the plan's eval program (no dropout, no update):
   * its loss, and the accuracy of its logits. */
  if (status == REMAT_OK &&
      remat_plan_binding(plan, REMAT_BINDING_OUTPUT, 0, &logits) == REMAT_OK && logits.rank == 2 &&
      (size_t)logits.bytes <= sizeof(logits_buffer)) {
    float loss = 0.0f;
    int64_t row, col, correct = 0;
    status = set_batch(session, &input, &label, &random_state);
    if (status == REMAT_OK) status = remat_session_eval(session, &loss);
    if (status == REMAT_OK)
      status = remat_session_read_output(session, logits.name, logits_buffer, (size_t)logits.bytes);
    if (status != REMAT_OK) return fail("evaluating", status, remat_session_last_error(session));
    for (row = 0; row < logits.dims[0]; ++row) {
      int64_t best = 0;
      for (col = 1; col < logits.dims[1]; ++col) {
        if (logits_buffer[row * logits.dims[1] + col] > logits_buffer[row * logits.dims[1] + best])
          best = col;
      }
      correct += best == label_buffer[row];
    }
    printf("eval loss %.6f, accuracy %lld of %lld\n", loss, (long long)correct,
           (long long)logits.dims[0]);
  }
  remat_session_destroy(session);
  remat_plan_close(plan);
  return status == REMAT_OK ? 0 : 1;
}
