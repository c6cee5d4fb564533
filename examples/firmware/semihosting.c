/* Arm semihosting calls (the "Semihosting for AArch32 and AArch64" specification): an operation
 * in r0, its argument in r1, then BKPT 0xAB, which the debugger or qemu answers. */
#include "semihosting.h"

#include <stdint.h>

enum { kSysWrite0 = 0x04, kSysExit = 0x18 };
/* SYS_EXIT reasons: ADP_Stopped_ApplicationExit is a normal end, RunTimeErrorUnknown a failure. */
enum { kApplicationExit = 0x20026, kRunTimeError = 0x20023 };

static int32_t call(int32_t operation, const void* argument) {
  register int32_t r0 __asm__("r0") = operation;
  register const void* r1 __asm__("r1") = argument;
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

void semihosting_write(const char* text) { call(kSysWrite0, text); }

void semihosting_exit(int status) {
  /* On AArch32 the argument is the reason itself, not a pointer to a block. */
  call(kSysExit, (const void*)(uintptr_t)(status == 0 ? kApplicationExit : kRunTimeError));
  for (;;) {}
}
