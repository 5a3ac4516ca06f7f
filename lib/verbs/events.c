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

	if (ch == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	ch->evq = ib_evq_channel();
	if (ch->evq == NULL) {
		free(ch);
		return NULL;
	}
	ch->ibv.context = ctx;
	ch->ibv.fd = ib_evq_fd(ch->evq);
	ch->ibv.refcnt = 0;
	return &ch->ibv;
}

int
ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct dpib_channel *ch = to_dchannel(channel);

	if (__atomic_load_n(&channel->refcnt, __ATOMIC_RELAXED) != 0)
		return EBUSY;
	ib_evq_free(ch->evq);
	free(ch);
	return 0;
}

int
ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
		 void **cq_context)
{
	int err = ib_cq_event_get(to_dchannel(channel)->evq, cq, cq_context);

	if (err) {
		errno = err;
		return -1;
	}
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
	int err = ib_async_event_get(to_dctx(ctx)->async, event);

	if (err) {
		errno = err;
		return -1;
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
