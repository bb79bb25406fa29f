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

unsigned txpath_ck_ring_enqueue_burst_mpmc(struct txpath_ck_ring *r, void *const *in, unsigned n) {
  /* The multi-producer form, on the same fields: reserve k slots with one CAS on p_head (k at
   * most the free room), fill them, wait until every earlier reservation is published (p_tail
   * reaches ours: producers publish in reservation order), then one store fence and one p_tail
   * store publish the k slots. Compatible with ck's dequeue, which takes one published slot at a
   * time. */
  const unsigned mask = r->ring.mask;
  unsigned producer = ck_pr_load_uint(&r->ring.p_head);
  unsigned k = 0;
  if (n == 0) return 0;
  for (;;) {
    ck_pr_fence_load();
    const unsigned used = producer - ck_pr_load_uint(&r->ring.c_head);
    if (used < mask) {
      k = n < mask - used ? n : mask - used;
      if (ck_pr_cas_uint_value(&r->ring.p_head, producer, producer + k, &producer)) break;
      continue;
    }
    /* Full, or our p_head reading is older than the consumer's c_head: read p_head again; full
     * only if it has not moved. */
    ck_pr_fence_load();
    const unsigned again = ck_pr_load_uint(&r->ring.p_head);
    if (again == producer) return 0;
    producer = again;
  }
  TSAN_RELEASE(r);
  for (unsigned i = 0; i < k; ++i) r->slots[(producer + i) & mask].value = in[i];
  while (ck_pr_load_uint(&r->ring.p_tail) != producer) ck_pr_stall();
  ck_pr_fence_store();
  ck_pr_store_uint(&r->ring.p_tail, producer + k);
  return k;
}

/* SPSC (the drainer's per-sender rings). The same annotation as above: the producer releases on
 * the ring before publishing, the consumer acquires after taking at least one entry, so TSan sees
 * the happens-before that ck's p_tail store/load (with its store and load fences) provides. */
unsigned txpath_ck_ring_enqueue_burst_spsc(struct txpath_ck_ring *r, void *const *in, unsigned n) {
  /* Our own multi-entry form of ck's single-producer enqueue, on ck's public ring fields: the
   * producer alone writes p_tail; the ring holds at most `mask` entries. Fill the free slots,
   * then one store fence and one store of p_tail publish them all (the consumer reads p_tail,
   * then a load fence, then the slots). */
  const unsigned mask = r->ring.mask;
  const unsigned consumer = ck_pr_load_uint(&r->ring.c_head);
  const unsigned producer = r->ring.p_tail;
  const unsigned room = mask - (producer - consumer);
  const unsigned k = n < room ? n : room;
  if (k == 0) return 0;
  TSAN_RELEASE(r);
  for (unsigned i = 0; i < k; ++i) r->slots[(producer + i) & mask].value = in[i];
  ck_pr_fence_store();
  ck_pr_store_uint(&r->ring.p_tail, producer + k);
  return k;
}

unsigned txpath_ck_ring_dequeue_burst_spsc(struct txpath_ck_ring *r, void **out, unsigned n) {
  unsigned got = 0;
  while (got < n && ck_ring_dequeue_spsc(&r->ring, r->slots, &out[got])) ++got;
  if (got > 0) TSAN_ACQUIRE(r);
  return got;
}
