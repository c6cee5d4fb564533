/* Firmware example: trains the plan in firmware_plan.h (an MLP or a CNN classifier, compiled on
 * the host with `remat compile ... --emit-c firmware_plan.h`) on a Cortex-M4F for a few hundred
 * steps, on a synthetic task it makes itself (every input value uniform in [-1, 1), label 1 when
 * the sample's sum is positive),
 * and prints "step N loss X" over semihosting. Exits 0 when the loss of the last steps is below
 * that of the first ones, 1 otherwise or on any error.
 *
 * No heap: the arena and the persistent region are static buffers of the sizes the header
 * states; the session's small tables come from the bare-metal port's static pool. */
#include <stdint.h>
#include <string.h>

#include "firmware_plan.h"
#include "ports/baremetal/remat_baremetal.h"
#include "remat/remat.h"
#include "semihosting.h"

#ifndef FIRMWARE_STEPS
#define FIRMWARE_STEPS 300
#endif

/* Steps averaged at the start and at the end to decide whether the loss fell. */
#define WINDOW 20

static unsigned char arena[FIRMWARE_PLAN_ARENA_BYTES]
    __attribute__((aligned(FIRMWARE_PLAN_ALIGNMENT)));
static unsigned char persistent[FIRMWARE_PLAN_PERSISTENT_BYTES]
    __attribute__((aligned(FIRMWARE_PLAN_ALIGNMENT)));

/* The batch, of the sizes the plan's bindings have. */
static float inputs[FIRMWARE_PLAN_INPUT0_BYTES / sizeof(float)];
static int32_t labels[FIRMWARE_PLAN_LABEL0_BYTES / sizeof(int32_t)];

/* SysTick on the processor clock (25 MHz on mps2-an386), counting down from 2^24 - 1: under
 * qemu's -icount shift=0 one instruction is one virtual nanosecond, so a tick is 40
 * instructions. */
#define SYST_CSR (*(volatile uint32_t*)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t*)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t*)0xE000E018u)
#define INSTRUCTIONS_PER_TICK 40u

static void systick_start(void) {
  SYST_RVR = 0x00FFFFFFu;
  SYST_CVR = 0;
  SYST_CSR = 0x5u; /* enabled, processor clock, no interrupt */
}

/* Ticks since |start| (a SysTick value read before), for spans under 2^24 ticks. */
static uint32_t systick_since(uint32_t start) { return (start - SYST_CVR) & 0x00FFFFFFu; }

static uint32_t next_random(uint32_t* state) {
  *state = *state * 1664525u + 1013904223u;
  return *state;
}

/* Appends |text| to |line|, which holds |capacity| bytes. */
static void append(char* line, size_t capacity, const char* text) {
  size_t used = strlen(line);
  while (*text != '\0' && used + 1 < capacity) line[used++] = *text++;
  line[used] = '\0';
}

/* Appends |value| in decimal. */
static void append_unsigned(char* line, size_t capacity, uint32_t value) {
  char digits[11];
  int n = 0;
  do {
    digits[n++] = (char)('0' + value % 10u);
    value /= 10u;
  } while (value != 0);
  char text[12];
  for (int i = 0; i < n; ++i) text[i] = digits[n - 1 - i];
  text[n] = '\0';
  append(line, capacity, text);
}

/* Appends |value| with six decimals (no printf: newlib's would bring its float formatting and
 * its heap). */
static void append_fixed6(char* line, size_t capacity, float value) {
  if (value < 0.0f) {
    append(line, capacity, "-");
    value = -value;
  }
  if (!(value < 4.0e9f)) {
    append(line, capacity, "inf-or-nan");
    return;
  }
  const uint32_t whole = (uint32_t)value;
  const uint32_t micro = (uint32_t)((value - (float)whole) * 1.0e6f + 0.5f);
  append_unsigned(line, capacity, micro >= 1000000u ? whole + 1u : whole);
  append(line, capacity, ".");
  char fraction[8] = "";
  append_unsigned(fraction, sizeof(fraction), micro >= 1000000u ? 0u : micro);
  for (size_t pad = strlen(fraction); pad < 6; ++pad) append(line, capacity, "0");
  append(line, capacity, fraction);
}

static int fail(const char* what, remat_status status, const char* detail) {
  char line[320] = "firmware: ";
  append(line, sizeof(line), what);
  append(line, sizeof(line), ": ");
  append(line, sizeof(line), remat_status_string(status));
  append(line, sizeof(line), ": ");
  append(line, sizeof(line), detail);
  append(line, sizeof(line), "\n");
  semihosting_write(line);
  return 1;
}

int main(void) {
  char message[256];
  remat_plan* plan = NULL;
  remat_session* session = NULL;
  remat_tensor_info input, label;
  remat_status status =
      remat_plan_open(firmware_plan_bytes, firmware_plan_size, &plan, message, sizeof(message));
  if (status != REMAT_OK) return fail("opening the plan", status, message);
  if (remat_plan_binding(plan, REMAT_BINDING_INPUT, 0, &input) != REMAT_OK ||
      remat_plan_binding(plan, REMAT_BINDING_LABEL, 0, &label) != REMAT_OK ||
      input.dtype != REMAT_DTYPE_F32 || label.dtype != REMAT_DTYPE_I32 || input.rank < 2 ||
      input.bytes > sizeof(inputs) || label.bytes > sizeof(labels)) {
    return fail("checking the plan", REMAT_ERROR_INVALID_ARGUMENT,
                "this example trains a plan with one f32 [batch, ...] input and an i32 label");
  }
  remat_session_options options;
  remat_session_options_init(&options);
  options.arena = arena;
  options.arena_size = sizeof(arena);
  options.persistent = persistent;
  options.persistent_size = sizeof(persistent);
  options.threads = 1;
  status = remat_session_create(plan, &options, &session, message, sizeof(message));
  if (status != REMAT_OK) return fail("creating the session", status, message);
  {
    char line[160] = "arena ";
    append_unsigned(line, sizeof(line), (uint32_t)sizeof(arena));
    append(line, sizeof(line), " bytes, persistent ");
    append_unsigned(line, sizeof(line), (uint32_t)sizeof(persistent));
    append(line, sizeof(line), " bytes, port pool ");
    append_unsigned(line, sizeof(line), (uint32_t)remat_baremetal_pool_used());
    append(line, sizeof(line), " of ");
    append_unsigned(line, sizeof(line), (uint32_t)remat_baremetal_pool_size());
    append(line, sizeof(line), " bytes\n");
    semihosting_write(line);
  }

  uint32_t random_state = 12345u;
  uint64_t step_ticks = 0;
  systick_start();
  float first = 0.0f, last = 0.0f;
  for (uint32_t step = 0; step < FIRMWARE_STEPS; ++step) {
    /* Each sample's values in a row, whatever its shape ([features], or an image [C, H, W]). */
    const int64_t rows = input.dims[0], cols = (int64_t)(input.bytes / sizeof(float)) / rows;
    for (int64_t r = 0; r < rows; ++r) {
      float sum = 0.0f;
      for (int64_t c = 0; c < cols; ++c) {
        const float v = (float)(next_random(&random_state) >> 8) / 8388608.0f - 1.0f;
        inputs[r * cols + c] = v;
        sum += v;
      }
      labels[r] = sum > 0.0f ? 1 : 0;
    }
    float loss = 0.0f;
    status = remat_session_set_input(session, input.name, inputs, (size_t)input.bytes);
    if (status == REMAT_OK)
      status = remat_session_set_input(session, label.name, labels, (size_t)label.bytes);
    const uint32_t before = SYST_CVR;
    if (status == REMAT_OK) status = remat_session_step(session, &loss);
    step_ticks += systick_since(before);
    if (status != REMAT_OK) return fail("training", status, remat_session_last_error(session));
    if (step < WINDOW) first += loss / WINDOW;
    if (step >= FIRMWARE_STEPS - WINDOW) last += loss / WINDOW;
    if (step % 25 == 0 || step + 1 == FIRMWARE_STEPS) {
      char line[64] = "step ";
      append_unsigned(line, sizeof(line), step + 1);
      append(line, sizeof(line), " loss ");
      append_fixed6(line, sizeof(line), loss);
      append(line, sizeof(line), "\n");
      semihosting_write(line);
    }
  }
  char line[96] = "mean loss of the first 20 steps ";
  append_fixed6(line, sizeof(line), first);
  append(line, sizeof(line), ", of the last 20 ");
  append_fixed6(line, sizeof(line), last);
  append(line, sizeof(line), "\n");
  semihosting_write(line);
  char cost[128] = "instructions per step (qemu -icount shift=0): ";
  append_unsigned(cost, sizeof(cost),
                  (uint32_t)(step_ticks * INSTRUCTIONS_PER_TICK / FIRMWARE_STEPS));
  append(cost, sizeof(cost), "\n");
  semihosting_write(cost);
  remat_session_destroy(session);
  remat_plan_close(plan);
  return last < first ? 0 : 1;
}
