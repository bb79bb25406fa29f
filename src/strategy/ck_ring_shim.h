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
/* Enqueues the first k of in[0..n) (k: as many as fit) with one reservation and one publish;
 * returns k (0 when full). A burst's form of txpath_ck_ring_enqueue_mpmc. */
unsigned txpath_ck_ring_enqueue_burst_mpmc(struct txpath_ck_ring *r, void *const *in, unsigned n);

/* Single-producer / single-consumer side of the same ring (ck_ring_*_spsc), for the `drainer`
 * strategy's per-sender rings: at most one thread enqueues and one dequeues at any time (callers
 * that share a producer side serialise it themselves, and hand it over with release/acquire).
 * Never mix these with the _mpmc functions on one ring. */
/* Enqueues the first k of in[0..n) (k: as many as fit) with one publish of the producer index;
 * returns k (0 when full). */
unsigned txpath_ck_ring_enqueue_burst_spsc(struct txpath_ck_ring *r, void *const *in, unsigned n);
/* Dequeues up to n entries into out[0..n); returns how many (0 when empty). */
unsigned txpath_ck_ring_dequeue_burst_spsc(struct txpath_ck_ring *r, void **out, unsigned n);

#ifdef __cplusplus
}
#endif

#endif
