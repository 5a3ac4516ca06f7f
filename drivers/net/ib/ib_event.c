/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Event queues: how the engine tells application threads about completion
 * events (a completion channel) and asynchronous events (a context's
 * async_fd). Records go through an SPSC ring; an eventfd in semaphore mode
 * counts them, so the descriptor works with read(), poll() and epoll, and
 * O_NONBLOCK gives EAGAIN. The engine writes the eventfd only when it
 * produces an event, which the application asked for by arming.
 */
#include <errno.h>
#include <string.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include <rte_cycles.h>
#include <rte_malloc.h>

#include "ib_hca.h"

/* Each record starts with this word; purged records read as not valid. */
#define REC_VALID	0x45564e54u

int
ib_evq_init(struct ib_evq *e, uint32_t entries, uint32_t rec_size)
{
	int ret;

	ret = ib_queue_init(&e->q, entries, RTE_ALIGN_CEIL(rec_size +
				sizeof(uint32_t), 8), SOCKET_ID_ANY);
	if (ret != 0)
		return ret;
	e->rec_size = rec_size;
	e->efd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	if (e->efd < 0) {
		ret = -errno;
		ib_queue_free(&e->q);
		return ret;
	}
	rte_spinlock_init(&e->lock);
	rte_spinlock_init(&e->push_lock);
	e->dropped = 0;
	return 0;
}

void
ib_evq_fini(struct ib_evq *e)
{
	if (e->efd >= 0)
		close(e->efd);
	e->efd = -1;
	ib_queue_free(&e->q);
}

/*
 * Queue one record. A full queue loses the event (counted). Producers
 * take turns: the engines (QPs of one context on several) and the port
 * watch on the interrupt thread; events are rare, the lock uncontended.
 */
int
ib_evq_push(struct ib_evq *e, const void *rec)
{
	static const uint64_t one = 1;
	uint32_t prod;
	uint8_t *slot;

	rte_spinlock_lock(&e->push_lock);
	prod = e->q.prod;
	if (ib_queue_room(&e->q) == 0) {
		e->dropped++;
		rte_spinlock_unlock(&e->push_lock);
		return -ENOSPC;
	}
	slot = ib_queue_slot(&e->q, prod);
	*(uint32_t *)slot = REC_VALID;
	memcpy(slot + sizeof(uint32_t), rec, e->rec_size);
	ib_queue_publish(&e->q, prod + 1);
	rte_spinlock_unlock(&e->push_lock);
	if (write(e->efd, &one, sizeof(one)) != sizeof(one))
		return -errno;
	return 0;
}

/*
 * Would a signal that interrupted a wait have interrupted the kernel's
 * read() on a verbs descriptor? Only one whose handler lacks SA_RESTART
 * (qperf's SIGALRM ends its ibv_get_cq_event that way; perftest's,
 * installed by signal(), restarts it). Which signal came is not known
 * here: any handler without SA_RESTART among those @orig lets through
 * counts. Runs only after an interruption.
 */
static int
wait_interrupted(const sigset_t *orig)
{
	struct sigaction sa;
	int sig;

	for (sig = 1; sig < NSIG; sig++) {
		if (sigismember(orig, sig) == 1 ||
		    sigaction(sig, NULL, &sa) != 0)
			continue;
		if (sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN &&
		    !(sa.sa_flags & SA_RESTART))
			return 1;
	}
	return 0;
}

/*
 * Inline mode: the waiting thread runs passes itself, between short
 * waits on the descriptor once traffic has stopped (the loop thread
 * takes over when it does not). A blocking read of a kernel HCA's
 * descriptor returns EINTR when a signal's handler without SA_RESTART
 * runs meanwhile; programs stop their wait loops that way. So signals
 * stay blocked while this thread spins, and reach it only inside the
 * waits (ppoll with the program's own mask), which end with EINTR when
 * the kernel's read would have. Synchronous faults are never blocked.
 */
static int
evq_wait_inline(struct ib_evq *e, uint64_t *v, int nonblock)
{
	struct pollfd p = { .fd = e->efd, .events = POLLIN };
	const struct timespec nap = { .tv_nsec = 1000000 };
	uint64_t spin = rte_get_tsc_hz() / 1000000 * IB_INLINE_SPIN_US;
	uint64_t busy = rte_rdtsc();
	sigset_t held, orig;
	int ret;

	/* An event there already (or a non-blocking call) costs no masks. */
	(void)ib_engine_progress();
	if (read(e->efd, v, sizeof(*v)) == sizeof(*v))
		return 0;
	if (errno != EAGAIN || nonblock)
		return -errno;
	sigfillset(&held);
	sigdelset(&held, SIGSEGV);
	sigdelset(&held, SIGBUS);
	sigdelset(&held, SIGFPE);
	sigdelset(&held, SIGILL);
	sigdelset(&held, SIGTRAP);
	sigdelset(&held, SIGABRT);
	pthread_sigmask(SIG_BLOCK, &held, &orig);
	for (;;) {
		if (ib_engine_progress())
			busy = rte_rdtsc();
		if (read(e->efd, v, sizeof(*v)) == sizeof(*v)) {
			ret = 0;
			break;
		}
		if (errno != EAGAIN) {
			ret = -errno;
			break;
		}
		/* Spin while traffic is recent, then nap between passes. */
		if (rte_rdtsc() - busy > spin &&
		    ppoll(&p, 1, &nap, &orig) < 0 && errno == EINTR &&
		    wait_interrupted(&orig)) {
			ret = -EINTR;
			break;
		}
	}
	pthread_sigmask(SIG_SETMASK, &orig, NULL);
	return ret;
}

/*
 * Application: take one record, blocking unless the descriptor is
 * non-blocking. Records purged after they were counted are skipped.
 */
int
ib_evq_pop(struct ib_evq *e, void *rec)
{
	uint64_t v;

	for (;;) {
		uint8_t *slot;
		int valid;

		if (ib_engine_inline) {
			int flags = fcntl(e->efd, F_GETFL);
			int ret;

			fcntl(e->efd, F_SETFL, flags | O_NONBLOCK);
			ret = evq_wait_inline(e, &v, flags & O_NONBLOCK);
			fcntl(e->efd, F_SETFL, flags);
			if (ret < 0)
				return ret;
		} else if (read(e->efd, &v, sizeof(v)) != sizeof(v)) {
			return errno ? -errno : -EIO;
		}
		/* The count read is a valid record's: purged ones gave
		 * theirs back (ib_evq_purge) and are only stepped over.
		 */
		rte_spinlock_lock(&e->lock);
		valid = 0;
		while (!valid && ib_queue_count(&e->q) != 0) {
			slot = ib_queue_slot(&e->q, e->q.cons);
			valid = *(uint32_t *)slot == REC_VALID;
			if (valid)
				memcpy(rec, slot + sizeof(uint32_t),
				       e->rec_size);
			ib_queue_consume(&e->q, e->q.cons + 1);
		}
		rte_spinlock_unlock(&e->lock);
		if (valid)
			return 0;
	}
}

/*
 * Application: forget the queued records @match selects (an object being
 * destroyed). The engine must no longer produce records for that object.
 */
void
ib_evq_purge(struct ib_evq *e, int (*match)(const void *rec, void *arg),
	     void *arg)
{
	uint32_t i, n;

	rte_spinlock_lock(&e->lock);
	/* Every published record, not only those the consumer's cached
	 * producer index counts: a record for the object pushed after the
	 * last pop's refresh was left, and handed out after the object was
	 * freed (a QP's LAST_WQE_REACHED: ibv_get_async_event then locked
	 * the freed QP's mutex; test_random).
	 */
	n = ib_queue_count_all(&e->q);
	for (i = 0; i < n; i++) {
		uint8_t *slot = ib_queue_slot(&e->q, e->q.cons + i);

		if (*(uint32_t *)slot == REC_VALID &&
		    match(slot + sizeof(uint32_t), arg)) {
			struct pollfd p = { .fd = e->efd, .events = POLLIN };
			uint64_t v;

			*(uint32_t *)slot = 0;
			/* Its count goes too: the descriptor stays readable
			 * only while a record is there to read, and a reader
			 * woken for a purged one would block in
			 * ibv_get_async_event. A count not written yet (its
			 * push under way) only wakes a reader once.
			 */
			if (poll(&p, 1, 0) == 1 &&
			    read(e->efd, &v, sizeof(v)) != sizeof(v))
				IB_LOG(DEBUG, "event fd: %s", strerror(errno));
		}
	}
	rte_spinlock_unlock(&e->lock);
}

/* Engine: an affiliated asynchronous event on @obj (QP, CQ or SRQ). */
void
ib_async_event(struct ib_evq *e, enum ibv_event_type type, void *obj)
{
	struct ibv_async_event ev = { .event_type = type };

	if (e == NULL)
		return;
	switch (type) {
	case IBV_EVENT_CQ_ERR:
		ev.element.cq = &((struct ib_cq *)obj)->ibv;
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		ev.element.srq = &((struct ib_srq *)obj)->ibv;
		break;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
		ev.element.port_num = 1;
		break;
	default:
		ev.element.qp = &((struct ib_qp *)obj)->ibv;
		break;
	}
	ib_evq_push(e, &ev);
}

static struct ib_evq *
ib_evq_new(uint32_t entries, uint32_t rec_size)
{
	struct ib_evq *e = rte_zmalloc("ib_evq", sizeof(*e), 0);
	int ret;

	if (e == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ib_evq_init(e, entries, rec_size);
	if (ret != 0) {
		rte_free(e);
		errno = -ret;
		return NULL;
	}
	return e;
}

/* A context's queue of asynchronous events (struct ibv_async_event). */
struct ib_evq *
ib_evq_async(void)
{
	return ib_evq_new(1024, sizeof(struct ibv_async_event));
}

/* A completion channel's queue of CQ events. */
struct ib_evq *
ib_evq_channel(void)
{
	return ib_evq_new(4096, sizeof(struct ib_cq_event));
}

void
ib_evq_free(struct ib_evq *e)
{
	if (e == NULL)
		return;
	ib_evq_fini(e);
	rte_free(e);
}

/* The descriptor to read, poll or epoll for the queue's records. */
int
ib_evq_fd(const struct ib_evq *e)
{
	return e->efd;
}

/* A completion channel's next record (blocking unless O_NONBLOCK). */
int
ib_cq_event_get(struct ib_evq *channel, struct ibv_cq **cq, void **cq_context)
{
	struct ib_cq_event ev;
	int err = ib_evq_pop(channel, &ev);

	if (err)
		return -err;
	*cq = &ev.cq->ibv;
	*cq_context = ev.cq->ibv.cq_context;
	pthread_mutex_lock(&ev.cq->ibv.mutex);
	ev.cq->comp_events_reported++;
	pthread_mutex_unlock(&ev.cq->ibv.mutex);
	return 0;
}

/* A context's next asynchronous event, counted against its object. */
int
ib_async_event_get(struct ib_evq *async, struct ibv_async_event *event)
{
	int err = ib_evq_pop(async, event);

	if (err)
		return -err;
	switch (event->event_type) {
	case IBV_EVENT_CQ_ERR:
		pthread_mutex_lock(&event->element.cq->mutex);
		to_cq(event->element.cq)->async_events_reported++;
		pthread_mutex_unlock(&event->element.cq->mutex);
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		pthread_mutex_lock(&event->element.srq->mutex);
		to_srq(event->element.srq)->events_reported++;
		pthread_mutex_unlock(&event->element.srq->mutex);
		break;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_DEVICE_FATAL:
		break;
	default:
		pthread_mutex_lock(&event->element.qp->mutex);
		to_qp(event->element.qp)->events_reported++;
		pthread_mutex_unlock(&event->element.qp->mutex);
		break;
	}
	return 0;
}

static int
async_is_about(const void *rec, void *obj)
{
	const struct ibv_async_event *ev = rec;

	return ev->element.qp == obj;	/* the union's pointers alias */
}

static int
cq_event_is_about(const void *rec, void *cq)
{
	return ((const struct ib_cq_event *)rec)->cq == cq;
}

/*
 * Before an object is freed: drop its events nobody has read from @async,
 * then wait until the ones handed out are acknowledged.
 */
void
ib_events_forget(struct ib_evq *async, void *ibv_obj, pthread_mutex_t *mutex,
		 pthread_cond_t *cond, const uint32_t *completed,
		 const uint32_t *reported)
{
	if (async != NULL)
		ib_evq_purge(async, async_is_about, ibv_obj);
	pthread_mutex_lock(mutex);
	while (*completed != *reported)
		pthread_cond_wait(cond, mutex);
	pthread_mutex_unlock(mutex);
}

/* The same for a CQ, whose completion events may also be waiting. */
void
ib_cq_events_forget(struct ib_cq *cq)
{
	if (cq->channel != NULL)
		ib_evq_purge(cq->channel, cq_event_is_about, cq);
	pthread_mutex_lock(&cq->ibv.mutex);
	while (cq->ibv.comp_events_completed != cq->comp_events_reported)
		pthread_cond_wait(&cq->ibv.cond, &cq->ibv.mutex);
	pthread_mutex_unlock(&cq->ibv.mutex);
	ib_events_forget(cq->async, &cq->ibv, &cq->ibv.mutex, &cq->ibv.cond,
			 &cq->ibv.async_events_completed,
			 &cq->async_events_reported);
}
