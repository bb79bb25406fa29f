/* SPDX-License-Identifier: MIT */
#ifndef TXPATH_CK_RING_SHIM_H
#define TXPATH_CK_RING_SHIM_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

struct txpath_ck_ring;
/* size: a power of two; capacity is size - 1. NULL on allocation failure. */
struct txpath_ck_ring *txpath_ck_ring_create(unsigned size);
void txpath_ck_ring_destroy(struct txpath_ck_ring *r);
bool txpath_ck_ring_enqueue_mpmc(struct txpath_ck_ring *r, void *p);
bool txpath_ck_ring_dequeue_mpmc(struct txpath_ck_ring *r, void **p);
unsigned txpath_ck_ring_size(const struct txpath_ck_ring *r);

#ifdef __cplusplus
}
#endif

#endif
