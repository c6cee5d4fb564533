/* Reset and vector table of the firmware example (Cortex-M4F): enable the FPU before any float
 * instruction, copy .data from flash, clear .bss, run main, report its status to the host. */
#include <stdint.h>

#include "semihosting.h"

extern uint32_t __data_start, __data_end, __data_load, __bss_start, __bss_end, __stack_top;
extern void (*__init_array_start[])(void);
extern void (*__init_array_end[])(void);

int main(void);
void reset_handler(void);

/* Every fault or interrupt the example does not expect ends the run with a failure, instead of
 * spinning until the timeout. */
static void unexpected_exception(void) {
  semihosting_write("firmware: unexpected exception or fault\n");
  semihosting_exit(1);
}

/* The first words of the image: the initial stack pointer, then the handlers' addresses. */
__attribute__((section(".vectors"), used)) static const uintptr_t vectors[16] = {
    (uintptr_t)&__stack_top,
    (uintptr_t)reset_handler,
    (uintptr_t)unexpected_exception, /* NMI */
    (uintptr_t)unexpected_exception, /* HardFault */
    (uintptr_t)unexpected_exception, /* MemManage */
    (uintptr_t)unexpected_exception, /* BusFault */
    (uintptr_t)unexpected_exception, /* UsageFault */
    0,
    0,
    0,
    0,
    (uintptr_t)unexpected_exception, /* SVCall */
    (uintptr_t)unexpected_exception, /* DebugMonitor */
    0,
    (uintptr_t)unexpected_exception, /* PendSV */
    (uintptr_t)unexpected_exception, /* SysTick */
};

void reset_handler(void) {
  /* CPACR: full access to coprocessors 10 and 11 (the FPU); until then a float op faults. */
  volatile uint32_t* cpacr = (volatile uint32_t*)0xE000ED88u;
  *cpacr |= 0xFu << 20;
  __asm__ volatile("dsb\n\tisb" ::: "memory");
  const uint32_t* from = &__data_load;
  for (uint32_t* to = &__data_start; to < &__data_end;) *to++ = *from++;
  for (uint32_t* p = &__bss_start; p < &__bss_end;) *p++ = 0;
  for (void (**f)(void) = __init_array_start; f < __init_array_end; ++f) (*f)();
  semihosting_exit(main());
}
