/* The firmware example's output and exit through Arm semihosting (qemu -semihosting-config
 * enable=on): no C library stdio, no heap. */
#ifndef REMAT_EXAMPLES_FIRMWARE_SEMIHOSTING_H_
#define REMAT_EXAMPLES_FIRMWARE_SEMIHOSTING_H_

/* Writes the NUL-terminated |text| to the host's console. */
void semihosting_write(const char* text);

/* Ends the program: the host (qemu) exits with status 0 when |status| is 0, else 1. */
void semihosting_exit(int status) __attribute__((noreturn));

#endif
