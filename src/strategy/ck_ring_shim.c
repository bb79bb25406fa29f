/* SPDX-License-Identifier: MIT
 * A C shim around Concurrency Kit's ck_ring: ck_ring.h is C (it returns `false` from a function
 * returning void*, which C++ rejects), so the peer baseline reaches it through these functions.
 */
#include "strategy/ck_ring_shim.h"

#include <ck_ring.h>
#include <stdlib.h>

/* ThreadSanitizer cannot see ck's fences (inline assembly), so under TSan this file is built
 * uninstrumented (CMakeLists.txt) and states the ring's synchronisation itself: every enqueue
 * releases, every dequeue acquires, on the ring object — the happens-before ck provides. */
#ifdef TXPATH_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define TSAN_RELEASE(a) __tsan_release(a)
#define TSAN_ACQUIRE(a) __tsan_acquire(a)
#else
#define TSAN_RELEASE(a) ((void)(a))
#define TSAN_ACQUIRE(a) ((void)(a))
#endif

struct txpath_ck_ring {
  ck_ring_t ring;
  ck_ring_buffer_t *slots;
};

struct txpath_ck_ring *txpath_ck_ring_create(unsigned size) {
  struct txpath_ck_ring *r = calloc(1, sizeof(*r));
  if (r == NULL) return NULL;
  r->slots = calloc(size, sizeof(ck_ring_buffer_t));
  if (r->slots == NULL) {
    free(r);
    return NULL;
  }
  ck_ring_init(&r->ring, size);
  return r;
}

void txpath_ck_ring_destroy(struct txpath_ck_ring *r) {
  if (r == NULL) return;
  free(r->slots);
  free(r);
}

bool txpath_ck_ring_enqueue_mpmc(struct txpath_ck_ring *r, void *p) {
  TSAN_RELEASE(r);
  return ck_ring_enqueue_mpmc(&r->ring, r->slots, p);
}

bool txpath_ck_ring_dequeue_mpmc(struct txpath_ck_ring *r, void **p) {
  const bool ok = ck_ring_dequeue_mpmc(&r->ring, r->slots, p);
  if (ok) TSAN_ACQUIRE(r);
  return ok;
}

unsigned txpath_ck_ring_size(const struct txpath_ck_ring *r) { return ck_ring_size(&r->ring); }

/* SPSC (the drainer's per-sender rings). The same annotation as above: the producer releases on
 * the ring before publishing, the consumer acquires after taking at least one entry, so TSan sees
 * the happens-before that ck's p_tail store/load (with its store and load fences) provides. */
bool txpath_ck_ring_enqueue_spsc(struct txpath_ck_ring *r, void *p) {
  TSAN_RELEASE(r);
  return ck_ring_enqueue_spsc(&r->ring, r->slots, p);
}

unsigned txpath_ck_ring_dequeue_burst_spsc(struct txpath_ck_ring *r, void **out, unsigned n) {
  unsigned got = 0;
  while (got < n && ck_ring_dequeue_spsc(&r->ring, r->slots, &out[got])) ++got;
  if (got > 0) TSAN_ACQUIRE(r);
  return got;
}
