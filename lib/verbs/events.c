/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Verbs: completion channels, CQ events and asynchronous events, with the
 * reference counts that make destroy wait for acknowledgements (seed 002
 * sections 8.2 and 9).
 */
#include <errno.h>
#include <stdlib.h>

#include "verbs_priv.h"

struct ibv_comp_channel *
ibv_create_comp_channel(struct ibv_context *ctx)
{
	struct dpib_channel *ch = calloc(1, sizeof(*ch));
	int err;

	if (ch == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	err = ib_evq_init(&ch->evq, 4096, sizeof(struct ib_cq_event));
	if (err) {
		free(ch);
		errno = -err;
		return NULL;
	}
	ch->ibv.context = ctx;
	ch->ibv.fd = ch->evq.efd;
	ch->ibv.refcnt = 0;
	return &ch->ibv;
}

int
ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct dpib_channel *ch = container_of(channel, struct dpib_channel, ibv);

	if (__atomic_load_n(&channel->refcnt, __ATOMIC_RELAXED) != 0)
		return EBUSY;
	ib_evq_fini(&ch->evq);
	free(ch);
	return 0;
}

int
ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
		 void **cq_context)
{
	struct dpib_channel *ch = container_of(channel, struct dpib_channel, ibv);
	struct ib_cq_event ev;
	int err = ib_evq_pop(&ch->evq, &ev);

	if (err) {
		errno = -err;
		return -1;
	}
	*cq = &ev.cq->ibv;
	*cq_context = ev.cq->ibv.cq_context;
	pthread_mutex_lock(&ev.cq->ibv.mutex);
	ev.cq->comp_events_reported++;
	pthread_mutex_unlock(&ev.cq->ibv.mutex);
	return 0;
}

void
ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_broadcast(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

int
ibv_get_async_event(struct ibv_context *ctx, struct ibv_async_event *event)
{
	int err = ib_evq_pop(&to_dctx(ctx)->async, event);

	if (err) {
		errno = -err;
		return -1;
	}
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

void
ibv_ack_async_event(struct ibv_async_event *event)
{
	pthread_mutex_t *mutex;
	pthread_cond_t *cond;
	uint32_t *completed;

	switch (event->event_type) {
	case IBV_EVENT_CQ_ERR:
		mutex = &event->element.cq->mutex;
		cond = &event->element.cq->cond;
		completed = &event->element.cq->async_events_completed;
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		mutex = &event->element.srq->mutex;
		cond = &event->element.srq->cond;
		completed = &event->element.srq->events_completed;
		break;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_DEVICE_FATAL:
		return;
	default:
		mutex = &event->element.qp->mutex;
		cond = &event->element.qp->cond;
		completed = &event->element.qp->events_completed;
		break;
	}
	pthread_mutex_lock(mutex);
	(*completed)++;
	pthread_cond_broadcast(cond);
	pthread_mutex_unlock(mutex);
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
 * Before an object is freed: drop its events nobody has read, then wait
 * until the ones handed out are acknowledged.
 */
void
dpib_events_forget(struct ibv_context *ctx, void *ibv_obj,
		   pthread_mutex_t *mutex, pthread_cond_t *cond,
		   const uint32_t *completed, const uint32_t *reported)
{
	ib_evq_purge(&to_dctx(ctx)->async, async_is_about, ibv_obj);
	pthread_mutex_lock(mutex);
	while (*completed != *reported)
		pthread_cond_wait(cond, mutex);
	pthread_mutex_unlock(mutex);
}

void
dpib_cq_events_forget(struct ib_cq *cq)
{
	struct ibv_comp_channel *channel = cq->ibv.channel;

	if (channel != NULL)
		ib_evq_purge(&container_of(channel, struct dpib_channel,
					   ibv)->evq, cq_event_is_about, cq);
	pthread_mutex_lock(&cq->ibv.mutex);
	while (cq->ibv.comp_events_completed != cq->comp_events_reported)
		pthread_cond_wait(&cq->ibv.cond, &cq->ibv.mutex);
	pthread_mutex_unlock(&cq->ibv.mutex);
	dpib_events_forget(cq->ibv.context, &cq->ibv, &cq->ibv.mutex,
			   &cq->ibv.cond, &cq->ibv.async_events_completed,
			   &cq->async_events_reported);
}
