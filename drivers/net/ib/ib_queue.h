/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef IB_QUEUE_H
#define IB_QUEUE_H

/*
 * Single-producer/single-consumer ring of fixed-size entries: the SQ, RQ and
 * CQ between an application thread and the engine.
 *
 * Ownership: only the producer writes prod and the entries in [cons, prod) it
 * has not yet published; only the consumer writes cons. Each side keeps a
 * private copy of the other's index on its own cache line and refreshes it
 * with an acquire load only when the copy says the ring is full/empty. The
 * release store of prod publishes the entries; the release store of cons
 * hands slots back.
 */

#include <stdint.h>
#include <rte_common.h>

struct ib_queue {
	/* Producer's line. */
	uint32_t prod __rte_cache_aligned;
	uint32_t cons_cache;
	/* Consumer's line. */
	uint32_t cons __rte_cache_aligned;
	uint32_t prod_cache;
	/* Read-only after creation. */
	uint32_t size __rte_cache_aligned;	/* entries, a power of two */
	uint32_t mask;
	uint32_t stride;			/* bytes per entry */
	uint8_t *buf;
};

int ib_queue_init(struct ib_queue *q, uint32_t min_entries, uint32_t stride,
		  int socket);
void ib_queue_free(struct ib_queue *q);

static inline void *
ib_queue_slot(const struct ib_queue *q, uint32_t idx)
{
	return q->buf + (size_t)(idx & q->mask) * q->stride;
}

/*
 * Ask for @p's line to be owned here, ready for stores (x86 PREFETCHW,
 * which CPUs older than Broadwell run as a no-op).
 */
static inline void
ib_prefetchw(const void *p)
{
#if defined(RTE_ARCH_X86)
	asm volatile("prefetchw %0" : : "m" (*(const volatile char *)p));
#else
	__builtin_prefetch(p, 1, 3);
#endif
}

/*
 * Slots ahead of the producer that it asks for (ib_queue_warm). With an
 * engine lcore the consumer's CPU read a slot last, so a store into it
 * waits for the line to come back; a post that starts with its WQE's
 * lines already here does not (dpib-perf's 64 B WRITE stream on the
 * loopback device, 20 % of all samples on the first stores into the WQE;
 * interleaved runs, 0 / 1 / 2 / 4 / 8 / 16 slots ahead: 11.1 / 14.6 /
 * 15.0 / 15.2 / 14.8 / 14.3 M msg/s).
 */
#define IB_QUEUE_AHEAD	4

/*
 * Producer side, @prod the next slot it fills: ask for the first two lines
 * of slot @prod + IB_QUEUE_AHEAD if it is known to be free (the consumer
 * is done with it: never a slot the consumer may still read).
 */
static inline void
ib_queue_warm(const struct ib_queue *q, uint32_t prod)
{
	uint32_t idx = prod + IB_QUEUE_AHEAD;
	const uint8_t *p;

	if (idx - q->cons_cache >= q->size)
		return;
	p = (const uint8_t *)ib_queue_slot(q, idx);
	ib_prefetchw(p);
	if (q->stride > RTE_CACHE_LINE_SIZE)
		ib_prefetchw(p + RTE_CACHE_LINE_SIZE);
}

/* Producer side. */
static inline uint32_t
ib_queue_room(struct ib_queue *q)
{
	uint32_t room = q->size - (q->prod - q->cons_cache);

	if (room == 0) {
		q->cons_cache = __atomic_load_n(&q->cons, __ATOMIC_ACQUIRE);
		room = q->size - (q->prod - q->cons_cache);
	}
	return room;
}

static inline void
ib_queue_publish(struct ib_queue *q, uint32_t new_prod)
{
	__atomic_store_n(&q->prod, new_prod, __ATOMIC_RELEASE);
}

/* Consumer side. */
static inline uint32_t
ib_queue_count(struct ib_queue *q)
{
	uint32_t n = q->prod_cache - q->cons;

	/* Also refresh when cons ran past the copy: a flush or a reset
	 * consumes up to the producer index itself.
	 */
	if ((int32_t)n <= 0) {
		q->prod_cache = __atomic_load_n(&q->prod, __ATOMIC_ACQUIRE);
		n = q->prod_cache - q->cons;
	}
	return n;
}

/* The consumer, outside its own pace (a purge): every entry published
 * now, whatever its cached copy of the producer index says.
 */
static inline uint32_t
ib_queue_count_all(struct ib_queue *q)
{
	q->prod_cache = __atomic_load_n(&q->prod, __ATOMIC_ACQUIRE);
	return q->prod_cache - q->cons;
}

static inline void
ib_queue_consume(struct ib_queue *q, uint32_t new_cons)
{
	__atomic_store_n(&q->cons, new_cons, __ATOMIC_RELEASE);
}

#endif /* IB_QUEUE_H */
