/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * The RDMA-CM API of rdma_cma.h (librdmacm.so.1, rdma-core 44) over dpib's
 * CM (cm.c). Functions return 0, or -1 with errno set, as librdmacm does.
 * An id made without an event channel is synchronous (rdma_create_ep's
 * ids): each call waits for its own event on a private channel.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "cma_priv.h"

#define ERR(e)	(errno = (e), -1)
#define DEFAULT_ACK_TIMEOUT	14	/* 67 ms, as perftest's and pingpong's */

/* Events handed out and not yet acknowledged, across all channels. */
static TAILQ_HEAD(, cma_event) handed_out =
	TAILQ_HEAD_INITIALIZER(handed_out);

static const char *const event_names[] = {
	[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
	[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
	[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
	[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
	[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
	[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
	[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
	[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
	[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
	[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
	[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
	[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
	[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
	[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
	[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
	[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
};

const char *
rdma_event_str(enum rdma_cm_event_type event)
{
	if ((unsigned int)event < sizeof(event_names) / sizeof(event_names[0]))
		return event_names[event];
	return "UNKNOWN EVENT";
}

/* ---- addresses ----------------------------------------------------- */

int
cma_port_of(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}

static void
set_port(struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons(port);
	else if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
}

int
cma_addr_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(
			&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return 1;
}

socklen_t
cma_addr_len(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return sizeof(struct sockaddr_in);
	if (sa->sa_family == AF_INET6)
		return sizeof(struct sockaddr_in6);
	return 0;
}

static void
addr_from_gid(const union ibv_gid *g, int family, struct sockaddr *sa)
{
	if (family == AF_INET) {
		struct sockaddr_in *s = (void *)sa;

		memset(s, 0, sizeof(*s));
		s->sin_family = AF_INET;
		memcpy(&s->sin_addr, &g->raw[12], 4);
	} else {
		struct sockaddr_in6 *s = (void *)sa;

		memset(s, 0, sizeof(*s));
		s->sin6_family = AF_INET6;
		memcpy(&s->sin6_addr, g->raw, 16);
	}
}

__be16
rdma_get_src_port(struct rdma_cm_id *id)
{
	return htons((uint16_t)cma_port_of(&id->route.addr.src_addr));
}

__be16
rdma_get_dst_port(struct rdma_cm_id *id)
{
	return htons((uint16_t)cma_port_of(&id->route.addr.dst_addr));
}

/* ---- channels and events ------------------------------------------- */

static struct cma_chan *
chan_new(void)
{
	struct cma_chan *ch = calloc(1, sizeof(*ch));

	if (ch == NULL)
		return NULL;
	TAILQ_INIT(&ch->events);
	pthread_cond_init(&ch->cond, NULL);
	ch->ch.fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	if (ch->ch.fd < 0) {
		free(ch);
		return NULL;
	}
	return ch;
}

/* One count off the channel's eventfd, for an event leaving its queue:
 * the count is at least one (see struct cma_chan), so even an fd the
 * application left blocking returns at once.
 */
static void
count_down(struct cma_chan *ch)
{
	uint64_t v;

	if (read(ch->ch.fd, &v, sizeof(v)) != sizeof(v))
		abort();
}

static void
count_up(struct cma_chan *ch)
{
	uint64_t one = 1;

	if (write(ch->ch.fd, &one, sizeof(one)) != sizeof(one))
		abort();	/* an eventfd write fails only on overflow */
}

static struct cma_chan *
to_chan(struct rdma_event_channel *c)
{
	return (struct cma_chan *)c;
}

static struct cma_id *
to_id(struct rdma_cm_id *id)
{
	return (struct cma_id *)id;
}

struct rdma_event_channel *
rdma_create_event_channel(void)
{
	struct cma_chan *ch;
	int err;

	pthread_mutex_lock(&cma.lock);
	err = cm_start();
	pthread_mutex_unlock(&cma.lock);
	if (err) {
		errno = err;
		return NULL;
	}
	ch = chan_new();
	if (ch == NULL)
		errno = errno ? errno : ENOMEM;
	return ch != NULL ? &ch->ch : NULL;
}

/*
 * A channel goes with its queued events. A thread still waiting in
 * rdma_get_cm_event on it (rping's event thread, when the main thread
 * tears down) stays asleep, as on a kernel rdma_cm fd that was closed
 * under a blocked read; the channel's memory stays for it. So does an
 * application's channel (keep): its event thread may be between two
 * calls, handling the last event, and call again on it - rping 44 does,
 * and would read freed memory while the process exits (seen as a crash
 * under MALLOC_PERTURB_). Such a call sleeps too (rdma_get_cm_event).
 * What stays is the structure, a hundred bytes per destroyed channel.
 */
static void
chan_free(struct cma_chan *ch, int keep)
{
	struct cma_event *e;

	while ((e = TAILQ_FIRST(&ch->events)) != NULL) {
		TAILQ_REMOVE(&ch->events, e, link);
		free(e);
	}
	close(ch->ch.fd);
	ch->ch.fd = -1;
	if (keep || ch->waiters > 0) {
		ch->dead = 1;
		return;
	}
	pthread_cond_destroy(&ch->cond);
	free(ch);
}

void
rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	if (channel == NULL)
		return;
	pthread_mutex_lock(&cma.lock);
	chan_free(to_chan(channel), 1);
	pthread_mutex_unlock(&cma.lock);
}

struct cma_event *
cma_event_new(struct cma_id *c, enum rdma_cm_event_type t, int status)
{
	struct cma_event *e = calloc(1, sizeof(*e));

	if (e == NULL)
		return NULL;
	e->ev.id = &c->id;
	e->ev.event = t;
	e->ev.status = status;
	e->owner = c;
	return e;
}

void
cma_event_post(struct cma_id *c, struct cma_event *e)
{
	/* A destroyed channel takes nothing more: closing the kernel's
	 * rdma_cm fd ends its ids' events too (its ids stay, silent).
	 */
	if (c->chan->dead) {
		free(e);
		return;
	}
	TAILQ_INSERT_TAIL(&c->chan->events, e, link);
	count_up(c->chan);
	pthread_cond_signal(&c->chan->cond);
}

void
cma_report(struct cma_id *c, enum rdma_cm_event_type t, int status)
{
	struct cma_event *e = cma_event_new(c, t, status);

	if (e != NULL)
		cma_event_post(c, e);
}

/*
 * The kernel's rdma_ucm ends a blocking rdma_get_cm_event with EINTR when
 * a signal's handler without SA_RESTART runs (a server's SIGINT handler
 * that sets a flag stops its event loop that way). Which signal came is
 * not known after poll(): any such handler the thread lets through counts.
 */
static int
signal_ends_wait(void)
{
	struct sigaction sa;
	sigset_t cur;
	int sig;

	if (pthread_sigmask(SIG_BLOCK, NULL, &cur) != 0)
		return 0;
	for (sig = 1; sig < NSIG; sig++)
		if (sigismember(&cur, sig) != 1 &&
		    sigaction(sig, NULL, &sa) == 0 &&
		    sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN &&
		    !(sa.sa_flags & SA_RESTART))
			return 1;
	return 0;
}

/* Wait, unlocked, for the channel's fd to turn readable: 1 when a signal
 * ended the wait as it ends the kernel's, else 0 (look again).
 */
static int
chan_wait(struct cma_chan *ch)
{
	struct pollfd p = { .fd = ch->ch.fd, .events = POLLIN };
	int n, err;

	pthread_mutex_unlock(&cma.lock);
	n = poll(&p, 1, -1);
	err = errno;
	pthread_mutex_lock(&cma.lock);
	return n < 0 && err == EINTR && signal_ends_wait();
}

int
rdma_get_cm_event(struct rdma_event_channel *channel,
		  struct rdma_cm_event **event)
{
	struct cma_chan *ch = to_chan(channel);
	struct cma_event *e;
	int nonblock, intr = 0;

	if (event == NULL)
		return ERR(EINVAL);
	pthread_mutex_lock(&cma.lock);
	/* O_NONBLOCK on the channel's fd makes an empty channel EAGAIN, as
	 * on the kernel's rdma_cm fd. A destroyed channel has no fd and
	 * never an event: its caller sleeps (see chan_free).
	 */
	nonblock = !ch->dead &&
		   (fcntl(ch->ch.fd, F_GETFL) & O_NONBLOCK) != 0;
	ch->waiters++;
	while ((ch->dead || (e = TAILQ_FIRST(&ch->events)) == NULL) &&
	       !nonblock && !intr) {
		if (ch->dead)
			pthread_cond_wait(&ch->cond, &cma.lock);
		else
			intr = chan_wait(ch);
	}
	ch->waiters--;
	if (e != NULL) {
		TAILQ_REMOVE(&ch->events, e, link);
		count_down(ch);
		/* A request counts against its listener's backlog until it
		 * is handed out, as in the kernel's rdma_ucm (not until it
		 * is answered: a server that takes requests and answers them
		 * later has room for more).
		 */
		e->counted = e->owner;
		if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			cm_release_pending(e->owner);
			if (e->owner->listener != NULL)
				e->counted = e->owner->listener;
		}
		e->counted->events_out++;
		TAILQ_INSERT_TAIL(&handed_out, e, link);
	}
	pthread_mutex_unlock(&cma.lock);
	if (e == NULL)
		return ERR(intr ? EINTR : EAGAIN);
	*event = &e->ev;
	return 0;
}

int
rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct cma_event *e = (struct cma_event *)event;

	if (event == NULL)
		return ERR(EINVAL);
	pthread_mutex_lock(&cma.lock);
	TAILQ_REMOVE(&handed_out, e, link);
	if (e->counted != NULL && e->counted->events_out > 0) {
		e->counted->events_out--;
		pthread_cond_broadcast(&cma.acked);
	}
	pthread_mutex_unlock(&cma.lock);
	free(e);
	return 0;
}

/*
 * A synchronous id's call waits for its event here and keeps it in
 * id->event (rdma_get_request hands the request's out that way). An
 * error event becomes the call's errno: ECONNREFUSED for a rejection.
 */
static int
sync_wait(struct cma_id *c)
{
	struct rdma_cm_event *ev;

	if (!c->sync)
		return 0;
	if (c->id.event != NULL) {
		rdma_ack_cm_event(c->id.event);
		c->id.event = NULL;
	}
	if (rdma_get_cm_event(c->id.channel, &ev) != 0)
		return -1;
	c->id.event = ev;
	if (ev->status == 0 && ev->event != RDMA_CM_EVENT_REJECTED &&
	    ev->event != RDMA_CM_EVENT_UNREACHABLE &&
	    ev->event != RDMA_CM_EVENT_ADDR_ERROR &&
	    ev->event != RDMA_CM_EVENT_ROUTE_ERROR &&
	    ev->event != RDMA_CM_EVENT_CONNECT_ERROR)
		return 0;
	if (ev->event == RDMA_CM_EVENT_REJECTED)
		return ERR(ECONNREFUSED);
	return ERR(ev->status < 0 ? -ev->status :
		   ev->status ? ev->status : EIO);
}

/* ---- ids ------------------------------------------------------------ */

struct cma_id *
cma_id_new(struct cma_chan *chan, void *context, enum rdma_port_space ps,
	   enum ibv_qp_type qpt)
{
	struct cma_id *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->chan = chan;
	c->id.channel = &chan->ch;
	c->id.context = context;
	c->id.ps = ps;
	c->id.qp_type = qpt;
	c->ud = ps == RDMA_PS_UDP || qpt == IBV_QPT_UD;
	c->local_ack_timeout = DEFAULT_ACK_TIMEOUT;
	c->hop_limit = 64;
	c->max_cm_retries = CMA_MAX_CM_RETRIES;
	c->cm_timeout = 18;
	c->state = CS_IDLE;
	LIST_INIT(&c->mcs);
	chan->nids++;
	TAILQ_INSERT_TAIL(&cma.ids, c, link);
	return c;
}

void
cma_id_free(struct cma_id *c)
{
	TAILQ_REMOVE(&cma.ids, c, link);
	c->chan->nids--;
	free(c);
}

static int
create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
	  void *context, enum rdma_port_space ps, enum ibv_qp_type qpt)
{
	struct cma_chan *ch = NULL;
	struct cma_id *c;
	int err;

	if (id == NULL)
		return ERR(EINVAL);
	if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IB &&
	    ps != RDMA_PS_IPOIB)
		return ERR(EINVAL);
	pthread_mutex_lock(&cma.lock);
	err = cm_start();
	if (!err && channel == NULL) {
		ch = chan_new();
		if (ch == NULL)
			err = ENOMEM;
	}
	c = err ? NULL : cma_id_new(ch != NULL ? ch : to_chan(channel),
				     context, ps, qpt);
	if (c != NULL)
		c->sync = ch != NULL;
	else if (!err)
		err = ENOMEM;
	pthread_mutex_unlock(&cma.lock);
	if (err) {
		if (ch != NULL)
			chan_free(ch, 0);
		return ERR(err);
	}
	*id = &c->id;
	return 0;
}

int
rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
	       void *context, enum rdma_port_space ps)
{
	return create_id(channel, id, context, ps,
			 ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ?
			 IBV_QPT_UD : IBV_QPT_RC);
}

static void
mc_leave_all(struct cma_id *c)
{
	struct cma_mc *m;

	while ((m = LIST_FIRST(&c->mcs)) != NULL) {
		LIST_REMOVE(m, link);
		if (m->attached && c->id.qp != NULL)
			ibv_detach_mcast(c->id.qp, &m->mgid, 0);
		free(m);
	}
}

/*
 * librdmacm's rdma_destroy_id returns once every event it handed out for
 * the id is acknowledged: an event thread still handling the id's last
 * event (rping's, a DISCONNECTED, while its main thread destroys the id)
 * never reads a freed id. The wait is bounded here (ACK_WAIT_S): a thread
 * that destroys an id whose event it holds itself would wait for ever
 * under librdmacm; here it goes on after that, and the event, ownerless,
 * is freed at its acknowledgement.
 */
#define ACK_WAIT_S	2

static void
ack_wait(struct cma_id *c)
{
	struct timespec until;

	if (c->events_out == 0)
		return;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ACK_WAIT_S;
	while (c->events_out > 0 &&
	       pthread_cond_timedwait(&cma.acked, &cma.lock, &until) == 0)
		;
}

int
rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cma_id *c = to_id(id), *o;
	struct cma_chan *sync_ch = NULL;
	struct cma_event *e, *t;

	if (c->sync && id->event != NULL) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	pthread_mutex_lock(&cma.lock);
	ack_wait(c);
	c->destroying = 1;
	cm_id_detach(c);
	mc_leave_all(c);
	cm_release_pending(c);
	TAILQ_FOREACH(o, &cma.ids, link)
		if (o->listener == c)
			o->listener = NULL;
	/* Its queued events go (the kernel drops a destroyed id's unread
	 * events too); those handed out lose their owner and are freed at
	 * rdma_ack_cm_event.
	 */
	for (e = TAILQ_FIRST(&c->chan->events); e != NULL; e = t) {
		t = TAILQ_NEXT(e, link);
		if (e->owner != c)
			continue;
		TAILQ_REMOVE(&c->chan->events, e, link);
		count_down(c->chan);
		free(e);
	}
	TAILQ_FOREACH(e, &handed_out, link) {
		if (e->owner == c)
			e->owner = NULL;
		if (e->counted == c)
			e->counted = NULL;
	}
	if (c->sync)
		sync_ch = c->chan;
	cma_id_free(c);
	if (sync_ch != NULL && sync_ch->nids == 0)
		chan_free(sync_ch, 0);
	pthread_mutex_unlock(&cma.lock);
	return 0;
}

/* ---- binding --------------------------------------------------------- */

/* Is @port of space @ps taken for @sa: 0, or the errno binding gets. */
static int
port_taken(const struct cma_id *self, int ps, int port,
	   const struct sockaddr *sa)
{
	const struct cma_id *c;
	union ibv_gid a, b;

	cm_gid_of(sa, &a);
	TAILQ_FOREACH(c, &cma.ids, link) {
		if (c == self || !c->bound || c->destroying ||
		    (int)c->id.ps != ps || c->passive ||
		    cma_port_of(&c->id.route.addr.src_addr) != port)
			continue;
		if ((self->reuseaddr && c->reuseaddr &&
		     c->state != CS_LISTEN))
			continue;
		/* As the kernel's cma_check_port tells them apart. */
		if (cma_addr_any(sa) || cma_addr_any(&c->id.route.addr.src_addr))
			return EADDRNOTAVAIL;
		cm_gid_of(&c->id.route.addr.src_addr, &b);
		if (memcmp(&a, &b, sizeof(a)) == 0)
			return EADDRINUSE;
	}
	return 0;
}

static int
pick_port(struct cma_id *c, struct sockaddr *sa)
{
	int i;

	for (i = 0; i < 28232; i++) {
		uint16_t p = cma.next_port++;

		if (cma.next_port < 32768 || cma.next_port >= 61000)
			cma.next_port = 32768;
		if (p < 32768 || p >= 61000)
			continue;
		if (!port_taken(c, (int)c->id.ps, p, sa)) {
			set_port(sa, p);
			return 0;
		}
	}
	return EADDRINUSE;
}

static void
bind_dev(struct cma_id *c, struct cma_dev *d, int gidx)
{
	c->dev = d;
	c->id.verbs = d->verbs;
	c->id.pd = d->pd;	/* as librdmacm: rdma_reg_msgs() before a QP */
	c->id.port_num = 1;
	c->sgid_index = (uint8_t)gidx;
	c->mtu = d->mtu;
	c->id.route.addr.addr.ibaddr.sgid = d->gid[gidx];
	c->id.route.addr.addr.ibaddr.pkey = htobe16(0xffff);
}

static int
bind_locked(struct cma_id *c, const struct sockaddr *addr)
{
	struct sockaddr_storage ss;
	struct cma_dev *d = NULL;
	int gidx = 0, port;

	/* librdmacm refuses an address it cannot size (EINVAL) before the
	 * kernel sees it.
	 */
	if (addr == NULL || cma_addr_len(addr) == 0)
		return EINVAL;
	if (c->bound || c->state != CS_IDLE)
		return EINVAL;
	memset(&ss, 0, sizeof(ss));
	memcpy(&ss, addr, cma_addr_len(addr));
	if (!cma_addr_any(addr)) {
		d = cm_dev_by_addr(addr, &gidx);
		if (d == NULL)
			return EADDRNOTAVAIL;
	}
	/* A port in use: EADDRINUSE for the same address, EADDRNOTAVAIL
	 * where either is the wildcard or no port is left, as the kernel's
	 * rdma_bind_addr says.
	 */
	port = cma_port_of(addr);
	if (port != 0) {
		int taken = port_taken(c, (int)c->id.ps, port, (void *)&ss);

		if (taken)
			return taken;
	} else if (pick_port(c, (void *)&ss) != 0) {
		return EADDRNOTAVAIL;
	}
	memcpy(&c->id.route.addr.src_storage, &ss, sizeof(ss));
	if (d != NULL)
		bind_dev(c, d, gidx);
	c->bound = 1;
	return 0;
}

int
rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	int err;

	pthread_mutex_lock(&cma.lock);
	err = bind_locked(to_id(id), addr);
	pthread_mutex_unlock(&cma.lock);
	return err ? ERR(err) : 0;
}

int
rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
		  struct sockaddr *dst_addr, int timeout_ms)
{
	struct cma_id *c = to_id(id);
	struct sockaddr_storage any;
	struct cma_dev *d;
	int err = 0, gidx = 0;

	if (dst_addr == NULL || cma_addr_len(dst_addr) == 0)
		return ERR(EINVAL);
	pthread_mutex_lock(&cma.lock);
	if (c->state != CS_IDLE && c->state != CS_ADDR_RESOLVED)
		err = EINVAL;
	if (!err && !c->bound) {
		if (src_addr == NULL || cma_addr_len(src_addr) == 0) {
			memset(&any, 0, sizeof(any));
			any.ss_family = dst_addr->sa_family;
			src_addr = (struct sockaddr *)&any;
		}
		err = bind_locked(c, src_addr);
	}
	if (!err && c->id.route.addr.src_addr.sa_family != dst_addr->sa_family)
		err = EINVAL;
	if (!err && c->dev == NULL) {
		d = cm_dev_for_dst(dst_addr, &gidx);
		if (d == NULL) {
			err = EADDRNOTAVAIL;
		} else {
			int port = cma_port_of(&c->id.route.addr.src_addr);

			addr_from_gid(&d->gid[gidx], dst_addr->sa_family,
				      &c->id.route.addr.src_addr);
			set_port(&c->id.route.addr.src_addr, (uint16_t)port);
			bind_dev(c, d, gidx);
		}
	}
	if (!err) {
		memset(&c->id.route.addr.dst_storage, 0,
		       sizeof(c->id.route.addr.dst_storage));
		memcpy(&c->id.route.addr.dst_storage, dst_addr,
		       cma_addr_len(dst_addr));
		cm_gid_of(dst_addr, &c->dgid);
		c->id.route.addr.addr.ibaddr.dgid = c->dgid;
		c->state = CS_ADDR_QUERY;
		c->addr_deadline = cm_now() +
			(uint64_t)(timeout_ms > 0 ? timeout_ms : 2000) * 1000000ull;
		(void)cm_addr_poll(c);
	}
	pthread_mutex_unlock(&cma.lock);
	if (err)
		return ERR(err);
	return sync_wait(c);
}

int
rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cma_id *c = to_id(id);
	struct ibv_sa_path_rec *p = &c->path;

	(void)timeout_ms;
	pthread_mutex_lock(&cma.lock);
	if (c->state != CS_ADDR_RESOLVED) {
		pthread_mutex_unlock(&cma.lock);
		return ERR(EINVAL);
	}
	/* RoCE has no SA: the path is the GIDs, the port's MTU and what
	 * rdma_set_option asked for.
	 */
	memset(p, 0, sizeof(*p));
	p->sgid = c->dev->gid[c->sgid_index];
	p->dgid = c->dgid;
	p->pkey = htobe16(0xffff);
	p->hop_limit = c->hop_limit;
	p->traffic_class = c->tos;
	p->reversible = 1;
	p->numb_path = 1;
	p->mtu_selector = 2;
	p->mtu = c->mtu;
	p->rate_selector = 2;
	p->packet_life_time_selector = 2;
	p->packet_life_time = c->local_ack_timeout > 0 ?
			      c->local_ack_timeout - 1 : 0;
	c->traffic_class = c->tos;
	id->route.path_rec = p;
	id->route.num_paths = 1;
	c->state = CS_ROUTE_RESOLVED;
	cma_report(c, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	pthread_mutex_unlock(&cma.lock);
	return sync_wait(c);
}

/* ---- QPs ------------------------------------------------------------- */

static int
create_cqs(struct rdma_cm_id *id, uint32_t send_wr, uint32_t recv_wr)
{
	if (id->recv_cq == NULL) {
		id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
		if (id->recv_cq_channel == NULL)
			return -1;
		id->recv_cq = ibv_create_cq(id->verbs, (int)(recv_wr ? recv_wr : 1),
					    id, id->recv_cq_channel, 0);
		if (id->recv_cq == NULL)
			return -1;
	}
	if (id->send_cq == NULL) {
		id->send_cq_channel = ibv_create_comp_channel(id->verbs);
		if (id->send_cq_channel == NULL)
			return -1;
		id->send_cq = ibv_create_cq(id->verbs, (int)(send_wr ? send_wr : 1),
					    id, id->send_cq_channel, 0);
		if (id->send_cq == NULL)
			return -1;
	}
	return 0;
}

static void
destroy_cqs(struct rdma_cm_id *id)
{
	if (id->recv_cq != NULL) {
		ibv_destroy_cq(id->recv_cq);
		id->recv_cq = NULL;
	}
	if (id->recv_cq_channel != NULL) {
		ibv_destroy_comp_channel(id->recv_cq_channel);
		id->recv_cq_channel = NULL;
	}
	if (id->send_cq != NULL && id->send_cq != id->recv_cq) {
		ibv_destroy_cq(id->send_cq);
	}
	id->send_cq = NULL;
	if (id->send_cq_channel != NULL) {
		ibv_destroy_comp_channel(id->send_cq_channel);
		id->send_cq_channel = NULL;
	}
}

/* A new QP goes where the id's connection needs it: INIT for RC/UC (RTR
 * and RTS come with the handshake), RTS at once for UD.
 */
static int
qp_ready(struct cma_id *c)
{
	struct ibv_qp_attr a;
	int mask, err;
	enum ibv_qp_state s;

	for (s = IBV_QPS_INIT; s <= (c->ud ? IBV_QPS_RTS : IBV_QPS_INIT); s++) {
		a.qp_state = s;
		err = cm_init_qp_attr(c, &a, &mask);
		if (!err && s == IBV_QPS_RTS)
			a.sq_psn = 0;
		if (err || ibv_modify_qp(c->id.qp, &a, mask) != 0)
			return err ? err : errno;
	}
	return 0;
}

int
rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct cma_id *c = to_id(id);
	struct ibv_qp *qp;
	int made_cqs = 0, err;

	if (id->verbs == NULL || attr == NULL)
		return ERR(EINVAL);
	if (id->qp != NULL)
		return ERR(EINVAL);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || attr->pd == NULL) {
		attr->pd = id->pd != NULL ? id->pd : c->dev->pd;
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
	}
	if (attr->pd->context != id->verbs)
		return ERR(EINVAL);
	if (c->ud && attr->qp_type != IBV_QPT_UD)
		return ERR(EINVAL);
	if (attr->send_cq == NULL || attr->recv_cq == NULL) {
		if (create_cqs(id, attr->send_cq == NULL ? attr->cap.max_send_wr : 0,
			       attr->recv_cq == NULL ? attr->cap.max_recv_wr : 0))
			goto fail_cqs;
		made_cqs = 1;
		if (attr->send_cq == NULL)
			attr->send_cq = id->send_cq;
		if (attr->recv_cq == NULL)
			attr->recv_cq = id->recv_cq;
	}
	if (attr->srq == NULL && id->srq != NULL)
		attr->srq = id->srq;
	qp = ibv_create_qp_ex(id->verbs, attr);
	if (qp == NULL)
		goto fail_cqs;
	id->qp = qp;
	id->pd = attr->pd;	/* rdma_reg_msgs() registers there */
	pthread_mutex_lock(&cma.lock);
	err = qp_ready(c);
	pthread_mutex_unlock(&cma.lock);
	if (err) {
		ibv_destroy_qp(qp);
		id->qp = NULL;
		errno = err;
		goto fail_cqs;
	}
	c->qp_owned = 1;
	/* The id's ECE is now its QP's, and a dpib QP has none
	 * (ibv_query_ece: EOPNOTSUPP): what rdma_set_local_ece set goes, as
	 * librdmacm drops it for a provider without ECE (rxe).
	 */
	pthread_mutex_lock(&cma.lock);
	memset(&c->local_ece, 0, sizeof(c->local_ece));
	pthread_mutex_unlock(&cma.lock);
	return 0;

fail_cqs:
	err = errno;
	if (made_cqs)
		destroy_cqs(id);
	return ERR(err ? err : ENOMEM);
}

int
rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
	       struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ex;
	int ret;

	if (qp_init_attr == NULL)
		return ERR(EINVAL);
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, qp_init_attr, sizeof(*qp_init_attr));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	ret = rdma_create_qp_ex(id, &ex);
	if (ret == 0) {
		/* what the QP was made with, as librdmacm reports it */
		qp_init_attr->cap = ex.cap;
		qp_init_attr->send_cq = ex.send_cq;
		qp_init_attr->recv_cq = ex.recv_cq;
	}
	return ret;
}

void
rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (id->qp != NULL) {
		ibv_destroy_qp(id->qp);
		id->qp = NULL;
	}
	destroy_cqs(id);
	to_id(id)->qp_owned = 0;
}

int
rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct cma_id *c = to_id(id);
	struct ibv_srq_init_attr sa;
	struct ibv_srq *srq;

	if (id->verbs == NULL || attr == NULL)
		return ERR(EINVAL);
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	    attr->srq_type != IBV_SRQT_BASIC)
		return ERR(EOPNOTSUPP);
	memset(&sa, 0, sizeof(sa));
	sa.srq_context = attr->srq_context;
	sa.attr = attr->attr;
	srq = ibv_create_srq((attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) &&
			     attr->pd != NULL ? attr->pd :
			     (id->pd != NULL ? id->pd : c->dev->pd), &sa);
	if (srq == NULL)
		return -1;
	attr->attr = sa.attr;
	id->srq = srq;
	return 0;
}

int
rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
		struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex;
	int ret;

	if (attr == NULL)
		return ERR(EINVAL);
	memset(&ex, 0, sizeof(ex));
	ex.srq_context = attr->srq_context;
	ex.attr = attr->attr;
	ex.comp_mask = IBV_SRQ_INIT_ATTR_PD;
	ex.pd = pd;
	ret = rdma_create_srq_ex(id, &ex);
	if (ret == 0)
		attr->attr = ex.attr;
	return ret;
}

void
rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (id->srq != NULL) {
		ibv_destroy_srq(id->srq);
		id->srq = NULL;
	}
}

int
rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
		  int *qp_attr_mask)
{
	int err;

	if (qp_attr == NULL || qp_attr_mask == NULL)
		return ERR(EINVAL);
	pthread_mutex_lock(&cma.lock);
	err = cm_init_qp_attr(to_id(id), qp_attr, qp_attr_mask);
	pthread_mutex_unlock(&cma.lock);
	return err ? ERR(err) : 0;
}

/* ---- connections ----------------------------------------------------- */

/* RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH ask for the device's limit. */
static int
valid_param(struct cma_id *c, struct rdma_conn_param *p)
{
	struct ibv_device_attr da;

	if (ibv_query_device(c->id.verbs, &da) != 0)
		return errno;
	if (p->responder_resources == RDMA_MAX_RESP_RES)
		p->responder_resources = (uint8_t)da.max_qp_rd_atom;
	else if (p->responder_resources > da.max_qp_rd_atom)
		return EINVAL;
	if (p->initiator_depth == RDMA_MAX_INIT_DEPTH)
		p->initiator_depth = (uint8_t)da.max_qp_init_rd_atom;
	else if (p->initiator_depth > da.max_qp_init_rd_atom)
		return EINVAL;
	return 0;
}

int
rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct cma_id *c = to_id(id);
	struct rdma_conn_param p = { 0 };
	int err = 0;

	if (conn_param != NULL) {
		p = *conn_param;
	} else {
		/* librdmacm's defaults: the device's READ/atomic limits
		 * both ways, and every retry there is.
		 */
		p.initiator_depth = RDMA_MAX_INIT_DEPTH;
		p.responder_resources = RDMA_MAX_RESP_RES;
		p.retry_count = 7;
		p.rnr_retry_count = 7;
	}
	pthread_mutex_lock(&cma.lock);
	if (c->state != CS_ROUTE_RESOLVED) {
		err = EINVAL;
	} else if (c->ud) {
		if (p.private_data_len > CM_SIDR_REQ_PDATA - CMA_HDR_LEN)
			err = EINVAL;
		else
			err = cm_send_sidr_req(c, &p);
	} else if (p.private_data_len > CM_REQ_PDATA - CMA_HDR_LEN) {
		err = EINVAL;
	} else {
		err = valid_param(c, &p);
		if (!err)
			err = cm_send_req(c, &p);
	}
	pthread_mutex_unlock(&cma.lock);
	if (err)
		return ERR(err);
	return sync_wait(c);
}

int
rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct cma_id *c = to_id(id);
	struct sockaddr_in any = { .sin_family = AF_INET };
	int err = 0;

	pthread_mutex_lock(&cma.lock);
	if (!c->bound)
		err = bind_locked(c, (struct sockaddr *)&any);
	if (!err && c->state != CS_IDLE)
		err = EINVAL;
	if (!err) {
		c->state = CS_LISTEN;
		/* As the kernel's rdma_ucm: 0, a negative one or one past
		 * its max_backlog (1024) is 1024.
		 */
		c->backlog = backlog > 0 && backlog < CMA_MAX_BACKLOG ?
			     backlog : CMA_MAX_BACKLOG;
		cm_listen_started();
	}
	pthread_mutex_unlock(&cma.lock);
	return err ? ERR(err) : 0;
}

int
rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct cma_id *c = to_id(id);
	struct rdma_conn_param p = { 0 };
	int err = 0;

	if (conn_param != NULL)
		p = *conn_param;
	pthread_mutex_lock(&cma.lock);
	if (c->state == CS_SIDR_REQ_RCVD) {
		cm_release_pending(c);
		err = cm_send_sidr_rep(c, CM_SIDR_SUCCESS, p.private_data,
				       p.private_data_len);
		pthread_mutex_unlock(&cma.lock);
		return err ? ERR(err) : 0;
	}
	if (c->state != CS_REQ_RCVD)
		err = EINVAL;
	else if (p.private_data_len > CM_REP_PDATA)
		err = EINVAL;
	if (!err && conn_param == NULL) {
		/* librdmacm's defaults: what the peer asked for, within
		 * the device's limits
		 */
		struct ibv_device_attr da;

		p.responder_resources = c->resp_res;
		p.initiator_depth = c->init_depth;
		p.rnr_retry_count = 7;
		if (ibv_query_device(c->id.verbs, &da) == 0) {
			if (p.responder_resources > da.max_qp_rd_atom)
				p.responder_resources = (uint8_t)da.max_qp_rd_atom;
			if (p.initiator_depth > da.max_qp_init_rd_atom)
				p.initiator_depth = (uint8_t)da.max_qp_init_rd_atom;
		}
	}
	if (!err)
		err = valid_param(c, &p);
	if (!err) {
		c->resp_res = p.responder_resources;
		c->init_depth = p.initiator_depth;
		c->local_psn = cm_random() & 0xffffff;
		if (c->id.qp != NULL) {
			/* our RNR retries are the peer's to state (REQ) */
			err = cm_qp_rtr_rts(c);
			if (err)
				(void)cm_send_rej(c, CM_REJ_CONSUMER_DEFINED,
						  NULL, 0);
		}
	}
	if (!err) {
		cm_release_pending(c);
		err = cm_send_rep(c, &p);
	}
	pthread_mutex_unlock(&cma.lock);
	if (err)
		return ERR(err);
	return sync_wait(c);
}

static int
reject(struct rdma_cm_id *id, const void *pdata, uint8_t len, uint16_t reason)
{
	struct cma_id *c = to_id(id);
	int err = 0;

	pthread_mutex_lock(&cma.lock);
	if (c->state == CS_REQ_RCVD && len <= CM_REJ_PDATA) {
		err = cm_send_rej(c, reason, pdata, len);
		c->state = CS_ERROR;
	} else if (c->state == CS_SIDR_REQ_RCVD && len <= CM_SIDR_REP_PDATA) {
		err = cm_send_sidr_rep(c, CM_SIDR_REJECT, pdata, len);
	} else {
		err = EINVAL;
	}
	if (!err)
		cm_release_pending(c);
	pthread_mutex_unlock(&cma.lock);
	return err ? ERR(err) : 0;
}

int
rdma_reject(struct rdma_cm_id *id, const void *private_data,
	    uint8_t private_data_len)
{
	return reject(id, private_data, private_data_len,
		      CM_REJ_CONSUMER_DEFINED);
}

/* A rejection for ECE options this side will not take (IBA reason 35). */
int
rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
		uint8_t private_data_len)
{
	return reject(id, private_data, private_data_len,
		      CM_REJ_VENDOR_OPTION_NOT_SUPPORTED);
}

/*
 * ECE, as librdmacm keeps it: the options an id's REQ or REP carries,
 * set before its QP exists (later its QP's own would count, and dpib's
 * QPs have none), and the peer's, read before the QP too.
 */
int
rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	struct cma_id *c;

	if (id == NULL || id->qp != NULL || ece == NULL ||
	    ece->vendor_id == 0 || ece->comp_mask != 0)
		return ERR(EINVAL);
	c = to_id(id);
	pthread_mutex_lock(&cma.lock);
	c->local_ece.vendor_id = ece->vendor_id;
	c->local_ece.options = ece->options;
	pthread_mutex_unlock(&cma.lock);
	return 0;
}

int
rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	struct cma_id *c;

	if (id == NULL || id->qp != NULL || ece == NULL)
		return ERR(EINVAL);
	c = to_id(id);
	pthread_mutex_lock(&cma.lock);
	ece->vendor_id = c->remote_ece.vendor_id;
	ece->options = c->remote_ece.options;
	ece->comp_mask = 0;
	pthread_mutex_unlock(&cma.lock);
	return 0;
}

int
rdma_establish(struct rdma_cm_id *id)
{
	struct cma_id *c = to_id(id);
	int err = 0;

	pthread_mutex_lock(&cma.lock);
	if (c->state == CS_REP_RCVD) {
		err = cm_send_rtu(c);
		c->state = CS_ESTABLISHED;
	} else {
		err = EINVAL;
	}
	pthread_mutex_unlock(&cma.lock);
	return err ? ERR(err) : 0;
}

/*
 * An asynchronous event of the id's QP, told to the CM as the kernel's
 * ib_cm_notify takes it. IBV_EVENT_COMM_EST: the QP saw its first packet,
 * so the connection is up although the RTU was lost (IBA 12.6.9); EISCONN
 * once established, EINVAL before a REP went out. A LID change means
 * nothing on RoCE; a path migration needs an established connection.
 * Any other event: EINVAL.
 */
int
rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	struct cma_id *c = to_id(id);
	int err = 0;

	pthread_mutex_lock(&cma.lock);
	switch (event) {
	case IBV_EVENT_COMM_EST:
		if (c->state == CS_REP_SENT)
			cm_established(c);
		else
			err = c->state == CS_ESTABLISHED ? EISCONN : EINVAL;
		break;
	case IBV_EVENT_LID_CHANGE:
		if (c->state == CS_IDLE || c->state == CS_ADDR_QUERY ||
		    c->state == CS_ADDR_RESOLVED || c->state == CS_ROUTE_RESOLVED)
			err = EINVAL;	/* no CM connection to tell */
		break;
	case IBV_EVENT_PATH_MIG:
		if (c->state != CS_ESTABLISHED)
			err = EINVAL;
		break;
	default:
		err = EINVAL;
		break;
	}
	pthread_mutex_unlock(&cma.lock);
	return err ? ERR(err) : 0;
}

/*
 * A synchronous id's rdma_disconnect returns with the connection's end,
 * as librdmacm's (ucma_complete): its DISCONNECTED event, which the DREP
 * (or the DREQ's time-out: ETIMEDOUT) brings, or which the peer's DREQ
 * queued already. Where no event is to come (a UD id, a connection
 * already ended) it returns at once; librdmacm would wait for ever.
 */
int
rdma_disconnect(struct rdma_cm_id *id)
{
	struct cma_id *c = to_id(id);
	int err = 0, ends = 0;

	pthread_mutex_lock(&cma.lock);
	switch (c->state) {
	case CS_ESTABLISHED:
	case CS_REP_SENT:
		(void)cm_qp_error(c);
		err = c->ud ? 0 : cm_send_dreq(c);
		ends = !c->ud;
		break;
	case CS_DREQ_RCVD:
		(void)cm_qp_error(c);
		err = cm_send_drep(c);
		ends = 1;
		break;
	case CS_REQ_SENT:
	case CS_REP_RCVD:
		(void)cm_qp_error(c);
		err = cm_send_rej(c, CM_REJ_CONSUMER_DEFINED, NULL, 0);
		c->state = CS_ERROR;
		break;
	case CS_DREQ_SENT:
	case CS_TIMEWAIT:
	case CS_DISCONNECTED:
		break;
	default:
		err = EINVAL;
		break;
	}
	pthread_mutex_unlock(&cma.lock);
	if (err)
		return ERR(err);
	return ends ? sync_wait(c) : 0;
}

/*
 * As librdmacm's: a synchronous id needs a channel to go to (EINVAL),
 * and leaves its own with the event it held acknowledged; the call
 * returns once the events handed out for the id on the old channel are
 * acknowledged (bounded: ack_wait), so none is handled there after.
 */
int
rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct cma_id *c = to_id(id);
	struct cma_chan *to, *from;
	struct cma_event *e, *t;

	if (c->sync && channel == NULL)
		return ERR(EINVAL);
	if (c->sync && id->event != NULL) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	to = channel != NULL ? to_chan(channel) : chan_new();
	if (to == NULL)
		return ERR(ENOMEM);
	pthread_mutex_lock(&cma.lock);
	ack_wait(c);
	from = c->chan;
	/* Its queued events move with it, counts and all. */
	for (e = TAILQ_FIRST(&from->events); e != NULL; e = t) {
		t = TAILQ_NEXT(e, link);
		if (e->owner != c)
			continue;
		TAILQ_REMOVE(&from->events, e, link);
		count_down(from);
		TAILQ_INSERT_TAIL(&to->events, e, link);
		count_up(to);
		pthread_cond_signal(&to->cond);
	}
	from->nids--;
	to->nids++;
	c->chan = to;
	c->id.channel = &to->ch;
	if (c->sync && from->nids == 0)
		chan_free(from, 0);
	c->sync = channel == NULL;
	pthread_mutex_unlock(&cma.lock);
	return 0;
}

int
rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
		size_t optlen)
{
	struct cma_id *c = to_id(id);
	int err = 0, v;

	if (optval == NULL)
		return ERR(EINVAL);
	/* The kernel's rdma_ucm: an unknown level or name is ENOSYS. */
	if (level != RDMA_OPTION_ID)
		return ERR(level == RDMA_OPTION_IB ? EOPNOTSUPP : ENOSYS);
	pthread_mutex_lock(&cma.lock);
	switch (optname) {
	case RDMA_OPTION_ID_TOS:
		if (optlen != sizeof(uint8_t)) {
			err = EINVAL;
			break;
		}
		c->tos = *(uint8_t *)optval;
		c->tos_set = 1;
		break;
	case RDMA_OPTION_ID_REUSEADDR:
		/* On in any state but listening, off only before a bind
		 * (rdma_set_reuseaddr).
		 */
		if (optlen != sizeof(int)) {
			err = EINVAL;
			break;
		}
		v = *(int *)optval != 0;
		if ((v && c->state != CS_LISTEN) ||
		    (c->state == CS_IDLE && !c->bound))
			c->reuseaddr = v;
		else
			err = EINVAL;
		break;
	case RDMA_OPTION_ID_AFONLY:
		/* Before the id resolves or listens (rdma_set_afonly). */
		if (optlen != sizeof(int) || c->state != CS_IDLE) {
			err = EINVAL;
			break;
		}
		c->afonly = *(int *)optval != 0;
		break;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		/* RC only (rdma_set_ack_timeout); 5 bits in the QP. */
		if (optlen != sizeof(uint8_t) || *(uint8_t *)optval > 31 ||
		    c->ud) {
			err = EINVAL;
			break;
		}
		c->local_ack_timeout = *(uint8_t *)optval;
		break;
	default:
		err = ENOSYS;
		break;
	}
	pthread_mutex_unlock(&cma.lock);
	return err ? ERR(err) : 0;
}

/* ---- multicast (UD): RoCE groups need no SA; the group's GID is its
 * IP address (IPv4-mapped for IPv4), joined by attaching the id's QP.
 */
static int
join(struct cma_id *c, struct sockaddr *addr, void *context, int sendonly)
{
	struct cma_event *e;
	struct cma_mc *m;
	union ibv_gid g;

	if (addr == NULL || cma_addr_len(addr) == 0 || c->dev == NULL ||
	    !c->ud)
		return EINVAL;
	cm_gid_of(addr, &g);
	if (!(addr->sa_family == AF_INET ? g.raw[12] >= 224 && g.raw[12] <= 239 :
	      g.raw[0] == 0xff))
		return EINVAL;
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return ENOMEM;
	memcpy(&m->addr, addr, cma_addr_len(addr));
	m->mgid = g;
	m->context = context;
	/* A send-only full member sends to the group and hears nothing of
	 * it: its QP is not attached (librdmacm's ucma_process_join).
	 */
	if (c->id.qp != NULL && !sendonly) {
		if (ibv_attach_mcast(c->id.qp, &g, 0) != 0) {
			int err = errno;

			free(m);
			return err;
		}
		m->attached = 1;
	}
	LIST_INSERT_HEAD(&c->mcs, m, link);
	e = cma_event_new(c, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	if (e == NULL)
		return 0;
	e->ev.param.ud.private_data = context;
	e->ev.param.ud.ah_attr.is_global = 1;
	e->ev.param.ud.ah_attr.port_num = 1;
	e->ev.param.ud.ah_attr.grh.dgid = g;
	e->ev.param.ud.ah_attr.grh.sgid_index = c->sgid_index;
	e->ev.param.ud.ah_attr.grh.hop_limit = 1;
	e->ev.param.ud.qp_num = 0xffffff;
	e->ev.param.ud.qkey = RDMA_UDP_QKEY;
	cma_event_post(c, e);
	return 0;
}

/* join, then (a synchronous id) its event. */
static int
join_wait(struct rdma_cm_id *id, struct sockaddr *addr, void *context,
	  int sendonly)
{
	int err;

	pthread_mutex_lock(&cma.lock);
	err = join(to_id(id), addr, context, sendonly);
	pthread_mutex_unlock(&cma.lock);
	return err ? ERR(err) : sync_wait(to_id(id));
}

int
rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr,
		    void *context)
{
	return join_wait(id, addr, context, 0);
}

/* librdmacm's checks, in its order: the flags are not optional. */
int
rdma_join_multicast_ex(struct rdma_cm_id *id,
		       struct rdma_cm_join_mc_attr_ex *attr, void *context)
{
	if (attr == NULL)
		return ERR(EINVAL);
	if (attr->comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED)
		return ERR(ENOTSUP);
	if (!(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) ||
	    !(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
	    attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
		return ERR(EINVAL);
	return join_wait(id, attr->addr, context, attr->join_flags ==
			 RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER);
}

int
rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cma_id *c = to_id(id);
	struct cma_mc *m;
	union ibv_gid g;

	if (addr == NULL || cma_addr_len(addr) == 0)
		return ERR(EINVAL);
	cm_gid_of(addr, &g);
	pthread_mutex_lock(&cma.lock);
	LIST_FOREACH(m, &c->mcs, link)
		if (memcmp(&m->mgid, &g, sizeof(g)) == 0)
			break;
	if (m != NULL) {
		LIST_REMOVE(m, link);
		if (m->attached && c->id.qp != NULL)
			ibv_detach_mcast(c->id.qp, &m->mgid, 0);
		free(m);
	}
	pthread_mutex_unlock(&cma.lock);
	return m != NULL ? 0 : ERR(EADDRNOTAVAIL);
}

/* ---- devices ----------------------------------------------------------- */

struct ibv_context **
rdma_get_devices(int *num_devices)
{
	struct ibv_context **list;
	int k, err;

	pthread_mutex_lock(&cma.lock);
	err = cm_start();
	list = err ? NULL : calloc((size_t)cma.ndev + 1, sizeof(*list));
	if (list != NULL)
		for (k = 0; k < cma.ndev; k++)
			list[k] = cma.dev[k].verbs;
	if (num_devices != NULL)
		*num_devices = list != NULL ? cma.ndev : 0;
	pthread_mutex_unlock(&cma.lock);
	if (list == NULL)
		errno = err ? err : ENOMEM;
	return list;
}

void
rdma_free_devices(struct ibv_context **list)
{
	free(list);
}

/* ---- the synchronous endpoint API (rdma_create_ep) --------------------- */

int
rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
	       struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cid;
	struct cma_id *c;
	int ret;

	if (id == NULL || res == NULL)
		return ERR(EINVAL);
	ret = create_id(NULL, &cid, NULL, (enum rdma_port_space)res->ai_port_space,
			(enum ibv_qp_type)res->ai_qp_type);
	if (ret)
		return ret;
	c = to_id(cid);
	if (res->ai_flags & RAI_PASSIVE) {
		ret = rdma_bind_addr(cid, res->ai_src_addr);
		if (ret)
			goto fail;
		if (qp_init_attr != NULL) {
			/* Kept for the requests rdma_get_request hands out;
			 * the type is the address's, as librdmacm sets it.
			 */
			c->ep_pd = pd;
			c->ep_attr = *qp_init_attr;
			c->ep_attr.qp_type = (enum ibv_qp_type)res->ai_qp_type;
			c->ep_have_attr = 1;
		}
		*id = cid;
		return 0;
	}
	ret = rdma_resolve_addr(cid, res->ai_src_addr, res->ai_dst_addr, 2000);
	if (!ret)
		ret = rdma_resolve_route(cid, 2000);
	if (!ret && qp_init_attr != NULL) {
		qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
		ret = rdma_create_qp(cid, pd, qp_init_attr);
	}
	if (ret)
		goto fail;
	*id = cid;
	return 0;

fail:
	ret = errno;
	rdma_destroy_id(cid);
	return ERR(ret);
}

void
rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (id->qp != NULL)
		rdma_destroy_qp(id);
	if (id->srq != NULL)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

int
rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct cma_id *l = to_id(listen), *c;
	struct rdma_cm_event *ev;
	struct ibv_qp_init_attr attr;
	int ret;

	if (id == NULL)
		return ERR(EINVAL);
	if (!l->sync)
		return ERR(EINVAL);
	/* As librdmacm's: the event of the last call goes; an event that is
	 * not a request fails the call and stays in listen->event.
	 */
	if (listen->event != NULL) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	ret = rdma_get_cm_event(listen->channel, &ev);
	if (ret)
		return ret;
	if (ev->event == RDMA_CM_EVENT_REJECTED)
		ret = ECONNREFUSED;
	else if (ev->status)
		ret = ev->status < 0 ? -ev->status : ev->status;
	else if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		ret = EINVAL;
	if (ret) {
		listen->event = ev;
		return ERR(ret);
	}
	c = to_id(ev->id);
	/* The request's id waits on its own channel from here on. */
	if (rdma_migrate_id(&c->id, NULL) != 0) {
		rdma_ack_cm_event(ev);
		return -1;
	}
	if (l->ep_have_attr) {
		attr = l->ep_attr;
		if (rdma_create_qp(&c->id, l->ep_pd, &attr) != 0) {
			ret = errno;
			rdma_ack_cm_event(ev);
			rdma_reject(&c->id, NULL, 0);
			rdma_destroy_id(&c->id);
			return ERR(ret);
		}
	}
	c->id.event = ev;
	*id = &c->id;
	return 0;
}
