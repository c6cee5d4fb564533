/* libremat_mpi's C API (include/remat/remat_mpi.h) as a C caller uses it; run by
 * test_mpi_api.py.
 *
 *   mpi_api_probe failures
 *     (one process) every failure path of remat_mpi_join, remat_mpi_communicator and
 *     remat_mpi_leave, and MPI's one start per process.
 *   mpirun -np N mpi_api_probe train DP_PLAN FULL_PLAN STEPS CLASSES OUT_DIR
 *     each rank trains DP_PLAN (`remat compile --data-parallel`, a rank's batch B) on its rows
 *     [rank x B, (rank + 1) x B) of each step's batch of N x B rows, with the communicator of
 *     remat_mpi_join, and writes its parameters to OUT_DIR/rankR.bin; rank 0 then trains
 *     FULL_PLAN (the same model at batch N x B, one process, no communicator) on the whole
 *     batches and writes OUT_DIR/full.bin. Rows come from a formula of (row, step, column).
 *   mpi_api_probe nccl GPU DP_PLAN PLAIN_PLAN STEPS CLASSES OUT_DIR
 *     (one process) the refusals of remat_mpi_join_nccl, then its join on the rank's device.
 *     With GPU 1 the join must succeed: DP_PLAN trains through NCCL's communicator on that
 *     device (OUT_DIR/nccl.bin) and PLAIN_PLAN, the same model and batch without data-parallel
 *     training, without one (OUT_DIR/plain.bin). With GPU 0 the join must fail, naming what is
 *     missing, and leave MPI finalised.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remat/remat.h"
#include "remat/remat_mpi.h"

static int failures = 0;

static void expect(int condition, const char* what, const char* detail) {
  if (!condition) {
    ++failures;
    fprintf(stderr, "FAILED: %s (%s)\n", what, detail != NULL ? detail : "");
  }
}

/* The whole file |path| in a buffer of malloc's (aligned for any scalar); exits on failure. */
static void* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (f == NULL || fseek(f, 0, SEEK_END) != 0) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(2);
  }
  const long length = ftell(f);
  void* bytes = malloc(length > 0 ? (size_t)length : 1);
  rewind(f);
  if (bytes == NULL || fread(bytes, 1, (size_t)length, f) != (size_t)length) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(2);
  }
  fclose(f);
  *size = (size_t)length;
  return bytes;
}

static void check_failures(void) {
  char message[256];
  remat_mpi* mpi = (remat_mpi*)1;
  expect(remat_mpi_join(30, NULL, message, sizeof message) == REMAT_ERROR_INVALID_ARGUMENT &&
             strstr(message, "out is NULL") != NULL,
         "a NULL out is refused naming it", message);
  const double bad[] = {0, -1, NAN, 86401, INFINITY};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    expect(remat_mpi_join(bad[i], &mpi, message, sizeof message) == REMAT_ERROR_INVALID_ARGUMENT &&
               strstr(message, "timeout_seconds is") != NULL && mpi == NULL,
           "a timeout out of range is refused naming it, *out NULL", message);
  }
  expect(remat_mpi_join(0, &mpi, NULL, 0) == REMAT_ERROR_INVALID_ARGUMENT,
         "no message buffer: the status alone", NULL);
  expect(remat_mpi_communicator(NULL) == NULL, "remat_mpi_communicator(NULL) is NULL", NULL);
  remat_mpi_leave(NULL);
  expect(remat_mpi_join(30, &mpi, message, sizeof message) == REMAT_OK, "join", message);
  const remat_communicator* c = remat_mpi_communicator(mpi);
  expect(c != NULL && c->struct_size == sizeof(remat_communicator) && c->rank == 0 &&
             c->size == 1 && c->allreduce_start != NULL && c->allreduce_wait != NULL,
         "one process: rank 0 of 1 with both callbacks", NULL);
  if (c != NULL) {
    /* The callbacks as a session calls them: one rank's sum is its own values. */
    float values[4] = {1.5f, -2.0f, 3.25f, 0.0f};
    remat_buffer part = {values, 4};
    expect(c->allreduce_start(c->user, 0, &part, 1) == REMAT_OK &&
               c->allreduce_wait(c->user, 0) == REMAT_OK && values[0] == 1.5f &&
               values[1] == -2.0f && values[2] == 3.25f && values[3] == 0.0f,
           "one rank's sum of a bucket leaves its values", NULL);
    remat_buffer nine[9];
    for (int i = 0; i < 9; ++i) nine[i] = part;
    expect(c->allreduce_start(c->user, 1, nine, 9) == REMAT_ERROR_INVALID_ARGUMENT,
           "a bucket of more than 8 arrays is refused", NULL);
    expect(c->allreduce_wait(c->user, 77) == REMAT_ERROR_FAILED_PRECONDITION,
           "a wait for a bucket never started is refused", NULL);
  }
  remat_mpi* again = (remat_mpi*)1;
  expect(remat_mpi_join(30, &again, message, sizeof message) == REMAT_ERROR_FAILED_PRECONDITION &&
             strstr(message, "initialised already") != NULL && again == NULL,
         "a second join while joined is refused", message);
  remat_mpi_leave(mpi);
  expect(remat_mpi_join(30, &again, message, sizeof message) == REMAT_ERROR_FAILED_PRECONDITION &&
             strstr(message, "finalised already") != NULL && again == NULL,
         "a join after leaving is refused (MPI starts once)", message);
  if (failures == 0) printf("ok  failure paths of remat_mpi_join, _communicator, _leave\n");
}

/* Row |row|'s input at |step| (columns |cols|) and its label (|classes| classes). */
static float input_value(uint32_t row, uint32_t step, uint32_t col) {
  return (float)sin(0.37 * row + 1.3 * step + 0.71 * col);
}
static int32_t label_value(uint32_t row, uint32_t step, int32_t classes) {
  return (int32_t)((row * 7u + step * 3u) % (uint32_t)classes);
}

/* Trains |plan_path| for |steps| steps on rows [first_row, first_row + B) of each batch, with
 * |communicator| (may be NULL), and writes its parameters, in binding order, to |out_path|. */
static void train(const char* plan_path, const char* backend,
                  const remat_communicator* communicator, uint32_t first_row, uint32_t steps,
                  int32_t classes, const char* out_path) {
  size_t size = 0;
  void* bytes = read_file(plan_path, &size);
  char message[512];
  remat_plan* plan = NULL;
  if (remat_plan_open(bytes, size, &plan, message, sizeof message) != REMAT_OK) {
    fprintf(stderr, "%s: %s\n", plan_path, message);
    exit(2);
  }
  remat_session_options options;
  remat_session_options_init(&options);
  options.backend = backend;
  options.threads = 1;
  options.communicator = communicator;
  remat_session* session = NULL;
  if (remat_session_create(plan, &options, &session, message, sizeof message) != REMAT_OK) {
    fprintf(stderr, "%s: %s\n", plan_path, message);
    exit(2);
  }
  remat_tensor_info x, y;
  if (remat_plan_binding(plan, REMAT_BINDING_INPUT, 0, &x) != REMAT_OK ||
      remat_plan_binding(plan, REMAT_BINDING_LABEL, 0, &y) != REMAT_OK || x.rank != 2 ||
      x.dtype != REMAT_DTYPE_F32 || y.dtype != REMAT_DTYPE_I32) {
    fprintf(stderr, "%s: not an mlp plan of one f32 input [B, C] and i32 labels\n", plan_path);
    exit(2);
  }
  const uint32_t rows = (uint32_t)x.dims[0], cols = (uint32_t)x.dims[1];
  float* xs = malloc(x.bytes);
  int32_t* ys = malloc(y.bytes);
  for (uint32_t step = 0; step < steps; ++step) {
    for (uint32_t r = 0; r < rows; ++r) {
      for (uint32_t c = 0; c < cols; ++c) xs[r * cols + c] = input_value(first_row + r, step, c);
      ys[r] = label_value(first_row + r, step, classes);
    }
    float loss = 0;
    if (remat_session_set_input(session, x.name, xs, x.bytes) != REMAT_OK ||
        remat_session_set_input(session, y.name, ys, y.bytes) != REMAT_OK ||
        remat_session_step(session, &loss) != REMAT_OK) {
      fprintf(stderr, "%s step %u: %s\n", plan_path, step, remat_session_last_error(session));
      exit(2);
    }
  }
  FILE* out = fopen(out_path, "wb");
  uint32_t count = 0;
  remat_plan_binding_count(plan, REMAT_BINDING_PARAM, &count);
  for (uint32_t i = 0; out != NULL && i < count; ++i) {
    remat_tensor_info p;
    remat_plan_binding(plan, REMAT_BINDING_PARAM, i, &p);
    void* values = malloc(p.bytes);
    if (remat_session_read_param(session, p.name, values, p.bytes) != REMAT_OK ||
        fwrite(values, 1, p.bytes, out) != p.bytes) {
      fprintf(stderr, "%s: cannot write %s\n", out_path, p.name);
      exit(2);
    }
    free(values);
  }
  if (out == NULL || fclose(out) != 0) {
    fprintf(stderr, "cannot write %s\n", out_path);
    exit(2);
  }
  free(xs);
  free(ys);
  remat_session_destroy(session);
  remat_plan_close(plan);
  free(bytes);
}

/* The nccl mode (above): argv[2..7] are GPU DP_PLAN PLAIN_PLAN STEPS CLASSES OUT_DIR. */
static void check_nccl(char** argv) {
  const int gpu = atoi(argv[2]);
  const uint32_t steps = (uint32_t)atoi(argv[5]);
  const int32_t classes = atoi(argv[6]);
  char message[512], path[4096];
  remat_mpi* mpi = (remat_mpi*)1;
  const int32_t bad[] = {-2, 1024};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    expect(remat_mpi_join_nccl(30, bad[i], &mpi, message, sizeof message) ==
                   REMAT_ERROR_INVALID_ARGUMENT &&
               strstr(message, "cuda_device is") != NULL && mpi == NULL,
           "a device out of range is refused naming it, *out NULL", message);
  }
  expect(
      remat_mpi_join_nccl(30, 0, NULL, message, sizeof message) == REMAT_ERROR_INVALID_ARGUMENT &&
          strstr(message, "remat_mpi_join_nccl: out is NULL") != NULL,
      "a NULL out is refused naming it", message);
  expect(
      remat_mpi_join_nccl(-1, 0, &mpi, message, sizeof message) == REMAT_ERROR_INVALID_ARGUMENT &&
          strstr(message, "remat_mpi_join_nccl: timeout_seconds is -1") != NULL,
      "a timeout out of range is refused naming it", message);
  const remat_status joined = remat_mpi_join_nccl(30, -1, &mpi, message, sizeof message);
  if (!gpu) {
    expect(joined == REMAT_ERROR_UNAVAILABLE && mpi == NULL &&
               strstr(message, "rank 0: ") != NULL &&
               (strstr(message, "CUDA") != NULL || strstr(message, "NCCL") != NULL),
           "without a GPU the join fails naming what is missing", message);
    remat_mpi* again = (remat_mpi*)1;
    expect(remat_mpi_join(30, &again, message, sizeof message) == REMAT_ERROR_FAILED_PRECONDITION &&
               again == NULL,
           "a failed join leaves MPI finalised", message);
    if (failures == 0) printf("ok  remat_mpi_join_nccl's refusals; without a GPU it fails\n");
    return;
  }
  if (joined == REMAT_ERROR_UNAVAILABLE && (strstr(message, "cannot load NCCL") != NULL ||
                                            strstr(message, "built without NCCL") != NULL)) {
    /* NCCL is a dependency the machine, or the build, may lack. */
    printf("ok  remat_mpi_join_nccl's refusals; NCCL not installed: %s\n", message);
    return;
  }
  expect(joined == REMAT_OK, "remat_mpi_join_nccl on a GPU", message);
  if (joined != REMAT_OK) return;
  const remat_communicator* c = remat_mpi_communicator(mpi);
  expect(c->memory == REMAT_MEMORY_CUDA && c->device == 0 && c->rank == 0 && c->size == 1,
         "one process: rank 0 of 1 summing CUDA memory of device 0 (its local rank)", NULL);
  char backend[32];
  snprintf(backend, sizeof backend, "cuda:%d", (int)c->device);
  snprintf(path, sizeof path, "%s/nccl.bin", argv[7]);
  train(argv[3], backend, c, 0, steps, classes, path);
  snprintf(path, sizeof path, "%s/plain.bin", argv[7]);
  train(argv[4], backend, NULL, 0, steps, classes, path);
  remat_mpi_leave(mpi);
  if (failures == 0) printf("ok  remat_mpi_join_nccl's refusals; one rank trained through NCCL\n");
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "failures") == 0) {
    check_failures();
    return failures == 0 ? 0 : 1;
  }
  if (argc == 8 && strcmp(argv[1], "nccl") == 0) {
    check_nccl(argv);
    return failures == 0 ? 0 : 1;
  }
  if (argc != 7 || strcmp(argv[1], "train") != 0) {
    fprintf(stderr,
            "usage: mpi_api_probe failures | train DP_PLAN FULL_PLAN STEPS CLASSES OUT_DIR | nccl "
            "GPU DP_PLAN PLAIN_PLAN STEPS CLASSES OUT_DIR\n");
    return 2;
  }
  const uint32_t steps = (uint32_t)atoi(argv[4]);
  const int32_t classes = atoi(argv[5]);
  char message[256], path[4096];
  remat_mpi* mpi = NULL;
  if (remat_mpi_join(60, &mpi, message, sizeof message) != REMAT_OK) {
    fprintf(stderr, "remat_mpi_join: %s\n", message);
    return 1;
  }
  const remat_communicator* c = remat_mpi_communicator(mpi);
  size_t size = 0;
  void* bytes = read_file(argv[2], &size);
  remat_plan* plan = NULL;
  uint32_t batch = 0;
  if (remat_plan_open(bytes, size, &plan, message, sizeof message) != REMAT_OK ||
      remat_plan_batch(plan, &batch) != REMAT_OK) {
    fprintf(stderr, "%s: %s\n", argv[2], message);
    return 2;
  }
  remat_plan_close(plan);
  free(bytes);
  snprintf(path, sizeof path, "%s/rank%d.bin", argv[6], (int)c->rank);
  train(argv[2], "cpu", c, (uint32_t)c->rank * batch, steps, classes, path);
  printf("rank %d of %d: trained %u steps of %u rows\n", (int)c->rank, (int)c->size,
         (unsigned)steps, (unsigned)batch);
  if (c->rank == 0) {
    snprintf(path, sizeof path, "%s/full.bin", argv[6]);
    train(argv[3], "cpu", NULL, 0, steps, classes, path);
  }
  remat_mpi_leave(mpi);
  return 0;
}
