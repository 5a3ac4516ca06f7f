/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * The SPSC ring behind the SQ, RQ and CQ: its capacity, its accounting with
 * cached indices, free-running indices across 2^32, and order without loss
 * or duplication between two threads.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_memory.h>
#include <rte_pause.h>

#include "check.h"
#include "eal_util.h"
#include "ib_queue.h"

#define THREAD_ITEMS	10000000ull
#define THREAD_RING	64
#define THREAD_LIMIT_S	60.0

/* The CPUs we may use before EAL pins the main thread to lcore 0. */
static cpu_set_t start_cpus;

/* Queue sizes are powers of two so that an index maps with a mask. */
static void
capacity_rounds_to_pow2(void)
{
	static const struct {
		uint32_t min, size;
	} cases[] = {
		{ 0, 1 }, { 1, 1 }, { 2, 2 }, { 3, 4 }, { 5, 8 }, { 63, 64 },
		{ 64, 64 }, { 65, 128 }, { 1000, 1024 }, { 1025, 2048 },
		{ 4096, 4096 },
	};
	const uint32_t stride = 24;	/* not a power of two: no shortcuts */
	struct ib_queue q;
	unsigned int i;
	uint32_t j;

	for (i = 0; i < RTE_DIM(cases); i++) {
		CHECK(ib_queue_init(&q, cases[i].min, stride, SOCKET_ID_ANY) == 0,
		      "init %u entries", cases[i].min);
		CHECK(q.size == cases[i].size && q.mask == q.size - 1 &&
		      q.stride == stride, "%u entries: size %u mask %#x",
		      cases[i].min, q.size, q.mask);
		CHECK(ib_queue_room(&q) == q.size && ib_queue_count(&q) == 0,
		      "%u entries: a new ring is empty", cases[i].min);
		for (j = 0; j < q.size; j++) {
			uint8_t *s = ib_queue_slot(&q, j);

			CHECK(s == q.buf + (size_t)j * stride,
			      "slot %u of %u", j, q.size);
			CHECK(ib_queue_slot(&q, j + q.size) == s &&
			      ib_queue_slot(&q, j + (UINT32_MAX - q.mask)) == s,
			      "slot %u does not repeat every %u", j, q.size);
		}
		for (j = 0; j < q.size * stride; j++)
			CHECK(q.buf[j] == 0, "byte %u not zeroed", j);
		ib_queue_free(&q);
		CHECK(q.buf == NULL, "freed ring keeps its buffer");
	}
	/* Past 2^31 the next power of two is 2^32: no zero-entry ring. */
	CHECK(ib_queue_init(&q, (1u << 31) + 1, stride, SOCKET_ID_ANY) != 0,
	      "a ring of %u entries was created with size %u", (1u << 31) + 1,
	      q.size);
}

static void
produce(struct ib_queue *q, uint32_t n, uint32_t *seq)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		*(uint32_t *)ib_queue_slot(q, q->prod + i) = (*seq)++;
	ib_queue_publish(q, q->prod + n);
}

static void
consume(struct ib_queue *q, uint32_t n, uint32_t *seq)
{
	uint32_t i, v;

	for (i = 0; i < n; i++) {
		v = *(uint32_t *)ib_queue_slot(q, q->cons + i);
		CHECK(v == *seq, "slot %u holds %u, want %u", q->cons + i, v,
		      *seq);
		(*seq)++;
	}
	ib_queue_consume(q, q->cons + n);
}

/*
 * Each side sees the other through a cached index: room and count may
 * under-report but never over-report, and are exact when they hit zero.
 */
static void
room_count_accounting(void)
{
	uint32_t in = 0, out = 0, room, n, total = 0;
	struct ib_queue q;

	CHECK(ib_queue_init(&q, 8, sizeof(uint32_t), SOCKET_ID_ANY) == 0,
	      "init");
	CHECK(ib_queue_room(&q) == 8 && ib_queue_count(&q) == 0, "empty");
	produce(&q, 3, &in);
	CHECK(ib_queue_room(&q) == 5, "room %u after 3", ib_queue_room(&q));
	CHECK(ib_queue_count(&q) == 3, "count %u after 3", ib_queue_count(&q));
	consume(&q, 2, &out);
	CHECK(ib_queue_count(&q) == 1, "count %u after taking 2 of 3",
	      ib_queue_count(&q));
	room = ib_queue_room(&q);
	CHECK(room >= 5 && room <= 7, "room %u with 1 of 8 used", room);

	/* Filling until room says 0 must fill the ring exactly. */
	while ((room = ib_queue_room(&q)) > 0) {
		produce(&q, room, &in);
		CHECK(q.prod - q.cons <= q.size, "overfilled: %u in %u",
		      q.prod - q.cons, q.size);
	}
	CHECK(q.prod - q.cons == 8 && in == 10, "full at %u of 8, %u produced",
	      q.prod - q.cons, in);
	CHECK(ib_queue_room(&q) == 0, "a full ring has room");

	while ((n = ib_queue_count(&q)) > 0) {
		CHECK(n <= q.prod - q.cons, "count %u over %u", n,
		      q.prod - q.cons);
		consume(&q, n, &out);
		total += n;
	}
	CHECK(total == 8 && out == in, "drained %u, %u of %u", total, out, in);
	CHECK(ib_queue_room(&q) == 8, "room %u after draining",
	      ib_queue_room(&q));
	ib_queue_free(&q);
}

static uint32_t
lcg(uint32_t *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 16;
}

/* Free-running 32-bit indices: the wrap past 2^32 must be seamless. */
static void
wrap_around_many_cycles(void)
{
	static const uint32_t starts[] = { 0, UINT32_MAX - 100 };
	const uint32_t cycles = 200000;
	uint32_t in, out, rnd = 1, c, n, used, room, count;
	unsigned int i;
	struct ib_queue q;

	for (i = 0; i < RTE_DIM(starts); i++) {
		CHECK(ib_queue_init(&q, 16, sizeof(uint32_t), SOCKET_ID_ANY) == 0,
		      "init");
		q.prod = q.cons = q.cons_cache = q.prod_cache = starts[i];
		in = out = 0;
		for (c = 0; c < cycles; c++) {
			used = q.prod - q.cons;
			room = ib_queue_room(&q);
			CHECK(room <= q.size - used && (room > 0 || used == q.size),
			      "room %u with %u of %u used", room, used, q.size);
			n = lcg(&rnd) % (room + 1);
			produce(&q, n, &in);

			used = q.prod - q.cons;
			count = ib_queue_count(&q);
			CHECK(count <= used && (count > 0 || used == 0),
			      "count %u with %u used", count, used);
			n = lcg(&rnd) % (count + 1);
			consume(&q, n, &out);
		}
		while ((n = ib_queue_count(&q)) > 0)
			consume(&q, n, &out);
		CHECK(out == in && in > 100 * q.size, "%u in, %u out", in, out);
		CHECK(q.prod == starts[i] + in, "producer index %u", q.prod);
		ib_queue_free(&q);
	}
}

struct spsc_run {
	struct ib_queue q;
	uint64_t total;
	double deadline;
	int stop;		/* either side timed out or saw an error */
	uint64_t received;
	uint64_t bad_at;	/* first out-of-order value, UINT64_MAX if none */
	uint64_t bad_value;
};

/* A full or empty ring waits on the other thread: spin, then yield. */
static int
wait_turn(struct spsc_run *r, unsigned int *idle)
{
	rte_pause();
	if (++*idle % 1024 != 0)
		return 0;
	sched_yield();
	if (check_now() > r->deadline)
		__atomic_store_n(&r->stop, 1, __ATOMIC_RELAXED);
	return __atomic_load_n(&r->stop, __ATOMIC_RELAXED);
}

static void *
producer(void *arg)
{
	struct spsc_run *r = arg;
	struct ib_queue *q = &r->q;
	uint64_t next = 0;
	unsigned int idle = 0;
	uint32_t room, i, n;

	while (next < r->total) {
		room = ib_queue_room(q);
		if (room == 0) {
			if (wait_turn(r, &idle))
				break;
			continue;
		}
		/* Uneven bursts so that both indices drift across the ring. */
		n = RTE_MIN(room, 1 + (uint32_t)(next % 37));
		n = (uint32_t)RTE_MIN((uint64_t)n, r->total - next);
		for (i = 0; i < n; i++)
			*(uint64_t *)ib_queue_slot(q, q->prod + i) = next + i;
		ib_queue_publish(q, q->prod + n);
		next += n;
	}
	return NULL;
}

static void *
consumer(void *arg)
{
	struct spsc_run *r = arg;
	struct ib_queue *q = &r->q;
	unsigned int idle = 0;
	uint32_t count, i;
	uint64_t v;

	while (r->received < r->total) {
		count = ib_queue_count(q);
		if (count == 0) {
			if (wait_turn(r, &idle))
				break;
			continue;
		}
		for (i = 0; i < count; i++) {
			v = *(uint64_t *)ib_queue_slot(q, q->cons + i);
			if (v != r->received + i && r->bad_at == UINT64_MAX) {
				r->bad_at = r->received + i;
				r->bad_value = v;
				__atomic_store_n(&r->stop, 1, __ATOMIC_RELAXED);
			}
		}
		ib_queue_consume(q, q->cons + count);
		r->received += count;
		if (r->bad_at != UINT64_MAX)
			break;
	}
	return NULL;
}

/*
 * Release/acquire on the indices: entries published by one thread arrive
 * at the other in order, each exactly once.
 */
static void
two_threads_keep_order(void)
{
	static struct spsc_run r;
	pthread_t tp, tc;
	pthread_attr_t attr;
	double t0, secs;

	memset(&r, 0, sizeof(r));
	CHECK(ib_queue_init(&r.q, THREAD_RING, sizeof(uint64_t),
			    SOCKET_ID_ANY) == 0, "init");
	r.total = THREAD_ITEMS;
	r.bad_at = UINT64_MAX;
	t0 = check_now();
	r.deadline = t0 + THREAD_LIMIT_S;

	/* EAL pinned this thread to lcore 0; the pair may use every CPU. */
	CHECK(pthread_attr_init(&attr) == 0, "attr");
	if (CPU_COUNT(&start_cpus) > 0)
		CHECK(pthread_attr_setaffinity_np(&attr, sizeof(start_cpus),
						  &start_cpus) == 0, "affinity");
	CHECK(pthread_create(&tc, &attr, consumer, &r) == 0, "consumer");
	CHECK(pthread_create(&tp, &attr, producer, &r) == 0, "producer");
	pthread_join(tp, NULL);
	pthread_join(tc, NULL);
	pthread_attr_destroy(&attr);
	secs = check_now() - t0;

	CHECK(r.bad_at == UINT64_MAX, "item %" PRIu64 " arrived as %" PRIu64,
	      r.bad_at, r.bad_value);
	CHECK(r.received == r.total, "%" PRIu64 " of %" PRIu64
	      " items in %.1f s (limit %.0f s)", r.received, r.total, secs,
	      THREAD_LIMIT_S);
	CHECK(ib_queue_count(&r.q) == 0, "items left over");
	printf("  %llu items through %u entries in %.2f s (%.1f Mitems/s)\n",
	       THREAD_ITEMS, THREAD_RING, secs, THREAD_ITEMS / secs / 1e6);
	ib_queue_free(&r.q);
}

int
main(void)
{
	if (sched_getaffinity(0, sizeof(start_cpus), &start_cpus) != 0)
		CPU_ZERO(&start_cpus);
	eal_up("test_queue", "tq");
	/* A failed CHECK exits; the runtime directory must go then too. */
	atexit(eal_down);
	RUN(capacity_rounds_to_pow2);
	RUN(room_count_accounting);
	RUN(wrap_around_many_cycles);
	RUN(two_threads_keep_order);
	eal_down();
	CHECK_DONE();
}
