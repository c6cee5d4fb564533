/* The bare-metal port's memory, for firmware: remat's handles and the session's tables come
 * from a static pool of REMAT_BAREMETAL_POOL_BYTES (meson option firmware_pool_bytes). */
#ifndef REMAT_PORTS_BAREMETAL_REMAT_BAREMETAL_H_
#define REMAT_PORTS_BAREMETAL_REMAT_BAREMETAL_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Bytes of the pool in use now: after remat_session_create(), what the plan and the session
 *  take (temporary tables of verification and initialisation are back in the pool). */
size_t remat_baremetal_pool_used(void);

/** Bytes of the pool in all. */
size_t remat_baremetal_pool_size(void);

#ifdef __cplusplus
}
#endif

#endif
