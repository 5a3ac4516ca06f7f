/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * The IB communication manager (IBA chapter 12) on RoCEv2, as a verbs
 * consumer: each device's QP 1 carries the CM's MADs (IBA 13.4), a worker
 * thread takes them in and runs the timers. The messages and their
 * answers follow Linux's ib_cm on rxe and mlx5, so that a Linux rdma_cm
 * peer connects to dpib and dpib to it:
 *
 *   active                         passive
 *   REQ_SENT   -- REQ -->          (listener) CONNECT_REQUEST
 *              <-- REP --          REP_SENT   (rdma_accept)
 *   ESTABLISHED -- RTU -->         ESTABLISHED
 *   DREQ_SENT  -- DREQ -->         DREQ_RCVD  DISCONNECTED
 *   TIMEWAIT   <-- DREP --         TIMEWAIT   (rdma_disconnect)
 *
 * MADs are unreliable: the last message of a handshake is resent until
 * its answer comes (REQ until REP, REP until RTU, DREQ until DREP), at
 * the peer's CM response timeout, max_cm_retries times; a duplicate is
 * answered with what was sent for the original (REP again for a
 * duplicate REQ, RTU for a duplicate REP, DREP for a duplicate DREQ), or
 * with an MRA while the application has not yet answered a request.
 * Messages that match no connection in a state that takes them - a REP
 * for a REQ never sent, forged comm IDs - change nothing and are counted.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "dpib.h"
#include "cma_priv.h"

#define GSI_QKEY		0x80010000u
#define ADDR_POLL_NS		(10 * 1000 * 1000ull)

struct cma cma = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.acked = PTHREAD_COND_INITIALIZER,
	.ids = TAILQ_HEAD_INITIALIZER(cma.ids),
	.kick_fd = -1,
	.epfd = -1,
};

/* Received MADs the CM took no action on, by cause (for tests, logs). */
static uint64_t cm_dropped[4];
enum { DROP_HDR, DROP_MATCH, DROP_BODY, DROP_ATTR };

/*
 * dpib's addition to librdmacm (DPIB_RDMACM_0.1), for tests: MADs dropped
 * so far by cause - 0 a header not taken (class version, method, short),
 * 1 no connection in a state for it (forged or stale comm IDs, a REP for
 * a REQ never sent), 2 a malformed body, 3 an attribute not supported.
 */
uint64_t
dpib_cm_dropped(int why)
{
	uint64_t v;

	if (why < 0 || why > DROP_ATTR)
		return 0;
	pthread_mutex_lock(&cma.lock);
	v = cm_dropped[why];
	pthread_mutex_unlock(&cma.lock);
	return v;
}

static int cm_debug = -1;

#define CM_LOG(...) do { \
	if (cm_debug > 0) { \
		fprintf(stderr, "dpib cm: " __VA_ARGS__); \
		fputc('\n', stderr); \
	} \
} while (0)

uint64_t
cm_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* IBA's 5-bit time coding: 4.096 us * 2^t. */
static uint64_t
cm_time_ns(uint8_t t)
{
	return 4096ull << (t > 31 ? 31 : t);
}

/*
 * The CM response timeout dpib states in its REQs and REPs: 2^18 * 4.096
 * us, about 1.07 s, unless DPIB_CM_TIMEOUT (0-31) says otherwise. Linux
 * states 20 (4.3 s); a shorter one recovers a lost MAD sooner and the
 * peer still sees the value it must wait.
 */
static uint8_t
cm_response_timeout(void)
{
	static int t = -1;
	const char *s;

	if (t < 0) {
		s = getenv("DPIB_CM_TIMEOUT");
		t = s != NULL ? atoi(s) : 18;
		if (t < 0 || t > 31)
			t = 18;
	}
	return (uint8_t)t;
}

/*
 * Starting PSNs and the first comm ID are drawn at random, as Linux does:
 * a stale packet or MAD from an earlier connection then rarely matches.
 */
uint32_t
cm_random(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint32_t)cm_now() * 2654435761u;
	return v;
}

void
cm_kick(void)
{
	uint64_t one = 1;

	if (cma.kick_fd >= 0 && write(cma.kick_fd, &one, sizeof(one)) < 0)
		CM_LOG("kick: %s", strerror(errno));
}

void
cm_timer(struct cma_id *c, uint64_t deadline)
{
	c->deadline = deadline;
	if (deadline)
		cm_kick();
}

/* ---- addresses and devices ---------------------------------------- */

void
cm_gid_of(const struct sockaddr *sa, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (sa->sa_family == AF_INET) {
		gid->raw[10] = gid->raw[11] = 0xff;
		memcpy(&gid->raw[12],
		       &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		memcpy(gid->raw, &((const struct sockaddr_in6 *)sa)->sin6_addr,
		       16);
	}
}

static int
gid_is_v4(const union ibv_gid *g)
{
	static const uint8_t pfx[12] = { [10] = 0xff, [11] = 0xff };

	return memcmp(g->raw, pfx, sizeof(pfx)) == 0;
}

static int
gid_index(const struct cma_dev *d, const union ibv_gid *gid)
{
	int i;

	for (i = 0; i < d->ngid; i++)
		if (memcmp(&d->gid[i], gid, sizeof(*gid)) == 0)
			return i;
	return -1;
}

/* The device holding address @sa (its GID index in *gid_index). */
struct cma_dev *
cm_dev_by_addr(const struct sockaddr *sa, int *gidx)
{
	union ibv_gid gid;
	int k, i;

	cm_gid_of(sa, &gid);
	for (k = 0; k < cma.ndev; k++) {
		i = gid_index(&cma.dev[k], &gid);
		if (i >= 0) {
			*gidx = i;
			return &cma.dev[k];
		}
	}
	return NULL;
}

/*
 * The device to reach @dst from when no source is bound: the one holding
 * @dst (loopback), else the first with an address of @dst's family. dpib
 * devices have one subnet each and no routing table to consult.
 */
struct cma_dev *
cm_dev_for_dst(const struct sockaddr *dst, int *gidx)
{
	union ibv_gid gid;
	struct cma_dev *d = cm_dev_by_addr(dst, gidx);
	int k, i, v4;

	if (d != NULL)
		return d;
	cm_gid_of(dst, &gid);
	v4 = gid_is_v4(&gid);
	for (k = 0; k < cma.ndev; k++)
		for (i = 0; i < cma.dev[k].ngid; i++)
			if (gid_is_v4(&cma.dev[k].gid[i]) == v4) {
				*gidx = i;
				return &cma.dev[k];
			}
	return NULL;
}

static int
post_recv(struct cma_dev *d, uint32_t i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(d->rbuf + (size_t)i * CMA_RECV_LEN),
		.length = CMA_RECV_LEN, .lkey = d->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_recv(d->gsi, &wr, &bad);
}

static int
gsi_up(struct cma_dev *d)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qkey = GSI_QKEY,
	};

	if (ibv_modify_qp(d->gsi, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY) != 0)
		return errno;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(d->gsi, &a, IBV_QP_STATE) != 0)
		return errno;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(d->gsi, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) != 0)
		return errno;
	return 0;
}

static void
dev_query(struct cma_dev *d)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	int i, len = CMA_MAX_GID;

	d->guid = ibv_get_device_guid(d->verbs->device);
	d->mtu = IBV_MTU_1024;
	/* The REP states it as its target ACK delay (IBA 12.7.33). */
	if (ibv_query_device(d->verbs, &da) == 0)
		d->ack_delay = da.local_ca_ack_delay;
	if (ibv_query_port(d->verbs, 1, &pa) == 0) {
		d->mtu = pa.active_mtu;
		if (pa.gid_tbl_len < len)
			len = pa.gid_tbl_len;
	}
	/* Keep the table's indexes: a path names its source GID by index. */
	for (i = 0; i < len; i++) {
		if (ibv_query_gid(d->verbs, 1, i, &gid) != 0)
			break;
		d->gid[i] = gid;
		d->ngid = i + 1;
	}
}

static int
dev_open(struct cma_dev *d, struct ibv_device *ibdev)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = CMA_SEND_WR,
			 .max_recv_wr = CMA_RECV_WR, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = CM_MAD_LEN },
	};
	size_t len = (size_t)CMA_RECV_WR * CMA_RECV_LEN;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = d };
	uint32_t i;

	d->verbs = ibv_open_device(ibdev);
	if (d->verbs == NULL)
		return errno ? errno : ENODEV;
	dev_query(d);
	d->pd = ibv_alloc_pd(d->verbs);
	d->cc = ibv_create_comp_channel(d->verbs);
	if (d->pd == NULL || d->cc == NULL)
		return errno ? errno : ENOMEM;
	d->cq = ibv_create_cq(d->verbs, CMA_SEND_WR + CMA_RECV_WR, d, d->cc, 0);
	if (d->cq == NULL)
		return errno ? errno : ENOMEM;
	qa.send_cq = qa.recv_cq = d->cq;
	d->gsi = dpib_create_gsi_qp(d->pd, &qa);
	if (d->gsi == NULL)
		return errno ? errno : ENOMEM;
	d->rbuf = calloc(1, len);
	if (d->rbuf == NULL)
		return ENOMEM;
	d->mr = ibv_reg_mr(d->pd, d->rbuf, len, IBV_ACCESS_LOCAL_WRITE);
	if (d->mr == NULL)
		return errno ? errno : ENOMEM;
	if (gsi_up(d) != 0)
		return errno ? errno : EIO;
	for (i = 0; i < CMA_RECV_WR; i++)
		if (post_recv(d, i) != 0)
			return errno ? errno : ENOMEM;
	if (ibv_req_notify_cq(d->cq, 0) != 0)
		return errno ? errno : EIO;
	fcntl(d->cc->fd, F_SETFL, fcntl(d->cc->fd, F_GETFL) | O_NONBLOCK);
	if (epoll_ctl(cma.epfd, EPOLL_CTL_ADD, d->cc->fd, &ev) != 0)
		return errno;
	return 0;
}

/*
 * DPIB_CM_LOSE=REQ=1,RTU=2,...: this process's CM loses the first N
 * messages of each kind it sends, as a lossy link would (tests of the
 * retransmissions and of duplicate handling). Indexed by attribute ID.
 */
static int lose[CM_ATTR_APR + 1];

static void
lose_parse(void)
{
	const char *s = getenv("DPIB_CM_LOSE");
	char name[16];
	int n, used;
	uint16_t a;

	while (s != NULL && sscanf(s, "%15[A-Z_]=%d%n", name, &n, &used) == 2) {
		for (a = 0; a <= CM_ATTR_APR; a++)
			if (strcmp(cm_attr_name(a), name) == 0)
				lose[a] = n;
		s += used;
		if (*s != ',')
			break;
		s++;
	}
}

static void *worker(void *arg);
static void cm_fini(void);

/*
 * Open every dpib device and start the worker, once. Called with the lock
 * held: a device's first open may wait for its link (link_wait_ms).
 */
int
cm_start(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	struct ibv_device **list;
	int n, k, err;

	if (cma.ready)
		return 0;
	if (cm_debug < 0)
		cm_debug = getenv("DPIB_CM_DEBUG") != NULL;
	lose_parse();
	list = ibv_get_device_list(&n);
	if (list == NULL)
		return errno ? errno : ENODEV;
	if (n == 0) {
		ibv_free_device_list(list);
		return ENODEV;
	}
	cma.dev = calloc((size_t)n, sizeof(*cma.dev));
	cma.epfd = epoll_create1(EPOLL_CLOEXEC);
	cma.kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (cma.dev == NULL || cma.epfd < 0 || cma.kick_fd < 0 ||
	    epoll_ctl(cma.epfd, EPOLL_CTL_ADD, cma.kick_fd, &ev) != 0) {
		ibv_free_device_list(list);
		return ENOMEM;
	}
	for (k = 0; k < n; k++) {
		err = dev_open(&cma.dev[k], list[k]);
		if (err) {
			fprintf(stderr, "dpib cm: %s: QP 1: %s\n",
				ibv_get_device_name(list[k]), strerror(err));
			ibv_free_device_list(list);
			return err;
		}
		cma.ndev = k + 1;
	}
	ibv_free_device_list(list);
	cma.next_comm_id = cm_random();
	cma.next_port = (uint16_t)(32768 + (cm_now() / 1000) % 28000);
	err = pthread_create(&cma.worker, NULL, worker, NULL);
	if (err)
		return err;
	cma.ready = 1;
	cma.pid = getpid();
	atexit(cm_fini);
	return 0;
}

/* ---- sending ------------------------------------------------------ */

static void poll_dev(struct cma_dev *d);

static int
mad_send_ah(struct cma_dev *d, struct ibv_ah *ah, const uint8_t *mad)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mad, .length = CM_MAD_LEN };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;

	uint16_t attr = cm_mad_attr_id(mad);

	if (attr <= CM_ATTR_APR && lose[attr] > 0) {
		lose[attr]--;
		CM_LOG("lose %s", cm_attr_name(attr));
		return 0;
	}
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = 1;
	wr.wr.ud.remote_qkey = GSI_QKEY;
	if (d->sends >= CMA_SEND_WR / 2)
		poll_dev(d);	/* reclaim send completions */
	if (ibv_post_send(d->gsi, &wr, &bad) != 0)
		return errno ? errno : ENOBUFS;
	d->sends++;
	CM_LOG("send %s", cm_attr_name(cm_mad_attr_id(mad)));
	return 0;
}

static struct ibv_ah *
ah_to(struct cma_dev *d, const union ibv_gid *dgid, uint8_t sgid_index)
{
	struct ibv_ah_attr a = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = *dgid, .sgid_index = sgid_index,
			 .hop_limit = 64 },
	};

	return ibv_create_ah(d->pd, &a);
}

/* A MAD to a host no id talks to (a REJ, a DREP for a stranger). */
static void
mad_send_to(struct cma_dev *d, const union ibv_gid *dgid, const uint8_t *mad)
{
	int gidx = -1, i;
	struct ibv_ah *ah;

	for (i = 0; i < d->ngid && gidx < 0; i++)
		if (gid_is_v4(&d->gid[i]) == gid_is_v4(dgid))
			gidx = i;
	if (gidx < 0)
		return;
	ah = ah_to(d, dgid, (uint8_t)gidx);
	if (ah == NULL)
		return;
	(void)mad_send_ah(d, ah, mad);
	/* The WQE holds its own copy of the address vector. */
	ibv_destroy_ah(ah);
}

static int
id_ah(struct cma_id *c)
{
	if (c->ah == NULL)
		c->ah = ah_to(c->dev, &c->dgid, c->sgid_index);
	return c->ah != NULL ? 0 : (errno ? errno : ENOMEM);
}

/* Send the MAD in c->msg and resend it until answered. */
static int
send_retried(struct cma_id *c, uint64_t period, int retries)
{
	int err = id_ah(c);

	if (err)
		return err;
	c->msg_len = CM_MAD_LEN;
	c->period = period;
	c->tries_left = retries;
	err = mad_send_ah(c->dev, c->ah, c->msg);
	cm_timer(c, cm_now() + period);
	return err;
}

static int
send_once(struct cma_id *c, const uint8_t *mad)
{
	int err = id_ah(c);

	return err ? err : mad_send_ah(c->dev, c->ah, mad);
}

static void
stop_retry(struct cma_id *c)
{
	c->msg_len = 0;
	c->deadline = 0;
}

static uint32_t
new_comm_id(void)
{
	struct cma_id *o;
	uint32_t id;

again:
	id = cma.next_comm_id++;
	if (id == 0)
		goto again;
	TAILQ_FOREACH(o, &cma.ids, link)
		if (o->local_id == id)
			goto again;
	return id;
}

static uint64_t
new_tid(void)
{
	static uint64_t tid;

	if (tid == 0)
		tid = cm_now() << 16;
	return ++tid;
}

/*
 * RDMA-CM's header at the start of the REQ's private data (also the
 * SIDR_REQ's): version 0, IP version in the high nibble, the active
 * side's port, then its address and the passive side's, 16 bytes each
 * (IPv4 in the last 4).
 */
static void
cma_hdr_put(uint8_t *p, const struct rdma_cm_id *id)
{
	const struct sockaddr *s = &id->route.addr.src_addr;
	const struct sockaddr *d = &id->route.addr.dst_addr;

	memset(p, 0, CMA_HDR_LEN);
	p[0] = 0;
	if (s->sa_family == AF_INET) {
		p[1] = 4 << 4;
		memcpy(p + 2, &((const struct sockaddr_in *)s)->sin_port, 2);
		memcpy(p + 4 + 12, &((const struct sockaddr_in *)s)->sin_addr, 4);
		memcpy(p + 20 + 12, &((const struct sockaddr_in *)d)->sin_addr,
		       4);
	} else {
		p[1] = 6 << 4;
		memcpy(p + 2, &((const struct sockaddr_in6 *)s)->sin6_port, 2);
		memcpy(p + 4, &((const struct sockaddr_in6 *)s)->sin6_addr, 16);
		memcpy(p + 20, &((const struct sockaddr_in6 *)d)->sin6_addr,
		       16);
	}
}

/* The header's addresses; -1 when it is not one dpib reads. */
static int
cma_hdr_get(const uint8_t *p, uint16_t dport, struct sockaddr_storage *src,
	    struct sockaddr_storage *dst)
{
	memset(src, 0, sizeof(*src));
	memset(dst, 0, sizeof(*dst));
	if (p[0] != 0)
		return -1;
	if ((p[1] >> 4) == 4) {
		struct sockaddr_in *s = (void *)src, *d = (void *)dst;

		s->sin_family = d->sin_family = AF_INET;
		memcpy(&s->sin_port, p + 2, 2);
		memcpy(&s->sin_addr, p + 16, 4);
		memcpy(&d->sin_addr, p + 32, 4);
		d->sin_port = htons(dport);
		return 0;
	}
	if ((p[1] >> 4) == 6) {
		struct sockaddr_in6 *s = (void *)src, *d = (void *)dst;

		s->sin6_family = d->sin6_family = AF_INET6;
		memcpy(&s->sin6_port, p + 2, 2);
		memcpy(&s->sin6_addr, p + 4, 16);
		memcpy(&d->sin6_addr, p + 20, 16);
		d->sin6_port = htons(dport);
		return 0;
	}
	return -1;
}

static uint64_t
service_id(const struct cma_id *c)
{
	return ((uint64_t)c->id.ps << 16) |
	       (uint64_t)cma_port_of(&c->id.route.addr.dst_addr);
}

int
cm_send_req(struct cma_id *c, const struct rdma_conn_param *p)
{
	struct cm_req m = { 0 };
	uint8_t t = cm_response_timeout();

	c->local_id = new_comm_id();
	c->tid = new_tid();
	c->cm_timeout = t;	/* the passive side's, for DREQ retries */
	c->local_psn = cm_random() & 0xffffff;
	c->service_id = service_id(c);
	c->resp_res = p->responder_resources;
	c->init_depth = p->initiator_depth;
	c->retry_count = p->retry_count > 7 ? 7 : p->retry_count;
	c->rnr_retry = p->rnr_retry_count > 7 ? 7 : p->rnr_retry_count;
	c->flow_control = p->flow_control;
	m.local_comm_id = c->local_id;
	m.service_id = c->service_id;
	m.local_ca_guid = be64toh(c->dev->guid);
	m.local_qpn = c->id.qp != NULL ? c->id.qp->qp_num : p->qp_num;
	m.responder_resources = c->resp_res;
	m.initiator_depth = c->init_depth;
	m.remote_cm_response_timeout = t;
	m.transport_service_type = c->id.qp != NULL &&
		c->id.qp->qp_type == IBV_QPT_UC ? CM_TST_UC : CM_TST_RC;
	m.end_to_end_flow_control = !!p->flow_control;
	m.starting_psn = c->local_psn;
	m.local_cm_response_timeout = t;
	m.retry_count = c->retry_count;
	m.partition_key = 0xffff;
	m.path_mtu = c->mtu;
	m.rnr_retry_count = c->rnr_retry;
	m.max_cm_retries = CMA_MAX_CM_RETRIES;
	m.srq = c->id.qp != NULL ? c->id.qp->srq != NULL : !!p->srq;
	m.ece_vendor_id = c->local_ece.vendor_id;
	m.ece_options = c->local_ece.options;
	/* RoCE: no LIDs (permissive), the path is the GIDs */
	m.primary.local_lid = m.primary.remote_lid = 0xffff;
	memcpy(m.primary.local_gid, c->dev->gid[c->sgid_index].raw, 16);
	memcpy(m.primary.remote_gid, c->dgid.raw, 16);
	m.primary.flow_label = c->flow_label;
	m.primary.packet_rate = 0;
	m.primary.traffic_class = c->traffic_class;
	m.primary.hop_limit = c->hop_limit;
	m.primary.sl = 0;
	m.primary.local_ack_timeout = c->local_ack_timeout;
	cma_hdr_put(m.private_data, &c->id);
	if (p->private_data_len)
		memcpy(m.private_data + CMA_HDR_LEN, p->private_data,
		       p->private_data_len);
	cm_req_pack(&m, c->tid, c->msg);
	c->state = CS_REQ_SENT;
	return send_retried(c, cm_time_ns(t) * 2, CMA_MAX_CM_RETRIES);
}

int
cm_send_rep(struct cma_id *c, const struct rdma_conn_param *p)
{
	struct cm_rep m = { 0 };

	m.local_comm_id = c->local_id;
	m.remote_comm_id = c->remote_id;
	m.local_qpn = c->id.qp != NULL ? c->id.qp->qp_num : p->qp_num;
	m.starting_psn = c->local_psn;
	m.responder_resources = c->resp_res;
	m.initiator_depth = c->init_depth;
	m.target_ack_delay = c->dev->ack_delay;
	m.failover_accepted = 0;
	m.end_to_end_flow_control = !!p->flow_control;
	m.rnr_retry_count = p->rnr_retry_count > 7 ? 7 : p->rnr_retry_count;
	m.srq = c->id.qp != NULL ? c->id.qp->srq != NULL : !!p->srq;
	m.local_ca_guid = be64toh(c->dev->guid);
	/* ECE: the vendor ID the REQ came with, our own options (as
	 * librdmacm answers).
	 */
	m.ece_vendor_id = c->remote_ece.vendor_id;
	m.ece_options = c->local_ece.options;
	if (p->private_data_len)
		memcpy(m.private_data, p->private_data, p->private_data_len);
	cm_rep_pack(&m, c->tid, c->msg);
	c->state = CS_REP_SENT;
	/* The active side stated how long it takes to answer. */
	return send_retried(c, cm_time_ns(c->cm_timeout) * 2,
			    c->max_cm_retries);
}

int
cm_send_rtu(struct cma_id *c)
{
	struct cm_rtu m = {
		.local_comm_id = c->local_id, .remote_comm_id = c->remote_id,
	};

	cm_rtu_pack(&m, c->tid, c->rep_msg);
	c->rep_len = CM_MAD_LEN;
	return send_once(c, c->rep_msg);
}

int
cm_send_mra(struct cma_id *c)
{
	struct cm_mra m = {
		.local_comm_id = c->local_id, .remote_comm_id = c->remote_id,
		.message_mraed = CM_MRA_REQ,
		/* the application's answer may take a while: ~4.3 s more */
		.service_timeout = 20,
	};
	uint8_t mad[CM_MAD_LEN];

	cm_mra_pack(&m, c->tid, mad);
	return send_once(c, mad);
}

int
cm_send_rej(struct cma_id *c, uint16_t reason, const void *pdata,
	    uint8_t len)
{
	/* The message rejected, as ib_cm says it: a REQ we were asked, a
	 * REP we got; anything else (our own REQ withdrawn) is "other".
	 */
	struct cm_rej m = {
		.local_comm_id = c->local_id, .remote_comm_id = c->remote_id,
		.reason = reason,
		.message_rejected = c->state == CS_REQ_RCVD ? CM_REJ_REQ :
			c->state == CS_REP_RCVD ? CM_REJ_REP : CM_REJ_OTHER,
	};
	uint8_t mad[CM_MAD_LEN];

	/* A timeout REJ names our CA GUID (IBA Table 103): the peer may not
	 * know our comm ID yet and finds the connection by the pair.
	 */
	if (reason == CM_REJ_TIMEOUT) {
		memcpy(m.ari, &c->dev->guid, sizeof(c->dev->guid));
		m.ari_length = sizeof(c->dev->guid);
	}
	if (len)
		memcpy(m.private_data, pdata,
		       len > CM_REJ_PDATA ? CM_REJ_PDATA : len);
	cm_rej_pack(&m, c->tid, mad);
	stop_retry(c);
	return send_once(c, mad);
}

int
cm_send_dreq(struct cma_id *c)
{
	struct cm_dreq m = {
		.local_comm_id = c->local_id, .remote_comm_id = c->remote_id,
		.remote_qpn = c->remote_qpn,
	};

	cm_dreq_pack(&m, new_tid(), c->msg);
	c->state = CS_DREQ_SENT;
	return send_retried(c, cm_time_ns(c->cm_timeout) * 2,
			    c->max_cm_retries);
}

static void
enter_timewait(struct cma_id *c)
{
	uint64_t tw = cm_time_ns(c->local_ack_timeout) * 2;

	stop_retry(c);
	c->state = CS_TIMEWAIT;
	if (tw < CMA_TIMEWAIT_MS * 1000000ull)
		tw = CMA_TIMEWAIT_MS * 1000000ull;
	cm_timer(c, cm_now() + tw);
}

int
cm_send_drep(struct cma_id *c)
{
	struct cm_drep m = {
		.local_comm_id = c->local_id, .remote_comm_id = c->remote_id,
	};

	cm_drep_pack(&m, c->tid, c->rep_msg);
	c->rep_len = CM_MAD_LEN;
	enter_timewait(c);
	return send_once(c, c->rep_msg);
}

int
cm_send_sidr_req(struct cma_id *c, const struct rdma_conn_param *p)
{
	struct cm_sidr_req m = { 0 };
	uint8_t t = cm_response_timeout();

	c->local_id = new_comm_id();
	c->tid = new_tid();
	c->cm_timeout = t;
	c->service_id = service_id(c);
	m.request_id = c->local_id;
	m.partition_key = 0xffff;
	m.service_id = c->service_id;
	cma_hdr_put(m.private_data, &c->id);
	if (p != NULL && p->private_data_len)
		memcpy(m.private_data + CMA_HDR_LEN, p->private_data,
		       p->private_data_len);
	cm_sidr_req_pack(&m, c->tid, c->msg);
	c->state = CS_SIDR_REQ_SENT;
	return send_retried(c, cm_time_ns(t) * 2, CMA_MAX_CM_RETRIES);
}

int
cm_send_sidr_rep(struct cma_id *c, uint8_t status, const void *pdata,
		 uint8_t len)
{
	struct cm_sidr_rep m = {
		.request_id = c->remote_id, .status = status,
		.service_id = c->service_id,
	};
	uint8_t mad[CM_MAD_LEN];

	if (status == CM_SIDR_SUCCESS && c->id.qp != NULL) {
		m.qpn = c->id.qp->qp_num;
		m.qkey = RDMA_UDP_QKEY;
	}
	if (len)
		memcpy(m.private_data, pdata,
		       len > CM_SIDR_REP_PDATA ? CM_SIDR_REP_PDATA : len);
	cm_sidr_rep_pack(&m, c->tid, mad);
	c->state = status == CM_SIDR_SUCCESS ? CS_ESTABLISHED : CS_ERROR;
	return send_once(c, mad);
}

/* ---- QP transitions (ib_cm's attributes, rdma_init_qp_attr) -------- */

static uint8_t
min_u8(uint8_t a, uint8_t b)
{
	return a < b ? a : b;
}

int
cm_init_qp_attr(struct cma_id *c, struct ibv_qp_attr *a, int *mask)
{
	enum ibv_qp_state s = a->qp_state;

	memset(a, 0, sizeof(*a));
	a->qp_state = s;
	switch (s) {
	case IBV_QPS_INIT:
		a->pkey_index = 0;
		a->port_num = 1;
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (c->ud) {
			a->qkey = RDMA_UDP_QKEY;
			*mask |= IBV_QP_QKEY;
		} else {
			/* Remote access once connected (RTR): the peer's
			 * READs only with responder resources granted.
			 */
			a->qp_access_flags = c->state >= CS_REQ_SENT ?
				IBV_ACCESS_REMOTE_WRITE | (c->resp_res ?
				IBV_ACCESS_REMOTE_READ |
				IBV_ACCESS_REMOTE_ATOMIC : 0) : 0;
			*mask |= IBV_QP_ACCESS_FLAGS;
		}
		return 0;
	case IBV_QPS_RTR:
		*mask = IBV_QP_STATE;
		if (c->ud)
			return 0;
		if (c->state < CS_REQ_SENT || c->remote_qpn == 0)
			return EINVAL;
		a->path_mtu = c->mtu;
		a->dest_qp_num = c->remote_qpn;
		/* A starting PSN is where its receiver is to start sending
		 * (IBA 12.7.29): ours, in our REQ or REP, is what we expect.
		 */
		a->rq_psn = c->local_psn;
		a->max_dest_rd_atomic = c->resp_res;
		/* 0.64 ms, as perftest and ibv_rc_pingpong set it. Linux's
		 * ib_cm sets 0 (655 ms), which a software HCA that meets an
		 * empty receive queue now and then pays for in whole
		 * milliseconds of stall per RNR NAK.
		 */
		a->min_rnr_timer = 12;
		a->ah_attr.is_global = 1;
		a->ah_attr.port_num = 1;
		a->ah_attr.grh.dgid = c->dgid;
		a->ah_attr.grh.sgid_index = c->sgid_index;
		a->ah_attr.grh.hop_limit = c->hop_limit;
		a->ah_attr.grh.traffic_class = c->traffic_class;
		a->ah_attr.grh.flow_label = c->flow_label;
		a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE | (c->resp_res ?
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC : 0);
		*mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			 IBV_QP_MIN_RNR_TIMER | IBV_QP_ACCESS_FLAGS;
		if (c->id.qp != NULL && c->id.qp->qp_type == IBV_QPT_UC)
			*mask &= ~(IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER);
		return 0;
	case IBV_QPS_RTS:
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		a->sq_psn = c->ud ? c->local_psn : c->remote_psn;
		if (c->ud)
			return 0;
		a->timeout = c->local_ack_timeout;
		a->retry_cnt = c->retry_count;
		a->rnr_retry = c->rnr_retry;
		a->max_rd_atomic = min_u8(c->init_depth, c->peer_resp_res);
		*mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			 IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		if (c->id.qp != NULL && c->id.qp->qp_type == IBV_QPT_UC)
			*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		return 0;
	default:
		return EINVAL;
	}
}

static int
qp_to(struct cma_id *c, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = { .qp_state = s };
	int mask, err;

	err = cm_init_qp_attr(c, &a, &mask);
	if (err)
		return err;
	return ibv_modify_qp(c->id.qp, &a, mask) != 0 ? errno : 0;
}

/* Connected: the QP goes to RTR and RTS with what the handshake agreed
 * (an INIT to INIT first gives it the remote access now allowed).
 */
int
cm_qp_rtr_rts(struct cma_id *c)
{
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;
	int err = 0;

	if (c->id.qp == NULL)
		return 0;
	if (ibv_query_qp(c->id.qp, &qa, IBV_QP_STATE, &ia) == 0 &&
	    qa.qp_state == IBV_QPS_INIT)
		err = qp_to(c, IBV_QPS_INIT);
	if (!err)
		err = qp_to(c, IBV_QPS_RTR);
	if (!err)
		err = qp_to(c, IBV_QPS_RTS);
	return err;
}

int
cm_qp_error(struct cma_id *c)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	if (c->id.qp == NULL)
		return 0;
	return ibv_modify_qp(c->id.qp, &a, IBV_QP_STATE) != 0 ? errno : 0;
}

/* ---- receiving ---------------------------------------------------- */

static struct cma_id *
by_local_id(uint32_t id)
{
	struct cma_id *c;

	if (id == 0)
		return NULL;
	TAILQ_FOREACH(c, &cma.ids, link)
		if (c->local_id == id && !c->destroying)
			return c;
	return NULL;
}

static void
drop(int why, const char *what)
{
	cm_dropped[why]++;
	CM_LOG("dropped %s", what);
}

/* The event's private data: its own copy of the message's @len bytes
 * (IB messages have no length: the whole field, as Linux reports it).
 */
static void
event_pdata(struct cma_event *e, const uint8_t *p, uint8_t len, int ud)
{
	memcpy(e->pdata, p, len);
	if (ud) {
		e->ev.param.ud.private_data = e->pdata;
		e->ev.param.ud.private_data_len = len;
	} else {
		e->ev.param.conn.private_data = e->pdata;
		e->ev.param.conn.private_data_len = len;
	}
}

/* The peer's side of a REQ or REP as the event reports it: its resources
 * seen from here (its initiator depth is what we may answer, ...).
 */
static void
event_peer(struct cma_event *e, uint8_t resp_res, uint8_t init_depth,
	   uint8_t flow_control, uint8_t rnr_retry, uint8_t srq, uint32_t qpn)
{
	e->ev.param.conn.responder_resources = init_depth;
	e->ev.param.conn.initiator_depth = resp_res;
	e->ev.param.conn.flow_control = flow_control;
	e->ev.param.conn.rnr_retry_count = rnr_retry;
	e->ev.param.conn.srq = srq;
	e->ev.param.conn.qp_num = qpn;
}

static void
conn_event(struct cma_id *c, enum rdma_cm_event_type t, int status,
	   const uint8_t *pdata, uint8_t len)
{
	struct cma_event *e = cma_event_new(c, t, status);

	if (e == NULL)
		return;
	if (len)
		event_pdata(e, pdata, len, 0);
	e->ev.param.conn.qp_num = c->remote_qpn;
	cma_event_post(c, e);
}

static struct cma_id *
find_listener(struct cma_dev *d, int ps, uint16_t port,
	      const struct sockaddr *dst)
{
	struct cma_id *c;
	union ibv_gid want, have;

	cm_gid_of(dst, &want);
	TAILQ_FOREACH(c, &cma.ids, link) {
		if (c->state != CS_LISTEN || c->destroying ||
		    (int)c->id.ps != ps ||
		    cma_port_of(&c->id.route.addr.src_addr) != port)
			continue;
		if (c->dev != NULL && c->dev != d)
			continue;
		if (cma_addr_any(&c->id.route.addr.src_addr)) {
			if (c->afonly && c->id.route.addr.src_addr.sa_family !=
			    dst->sa_family)
				continue;
			return c;
		}
		cm_gid_of(&c->id.route.addr.src_addr, &have);
		if (memcmp(&want, &have, sizeof(want)) == 0)
			return c;
	}
	return NULL;
}

/* A REJ answering a REQ (or SIDR_REQ) that made no id. */
static void
reject_stranger(struct cma_dev *d, const union ibv_gid *src, uint64_t tid,
		uint32_t remote_id, uint16_t reason)
{
	struct cm_rej m = {
		.remote_comm_id = remote_id, .reason = reason,
		.message_rejected = CM_REJ_REQ,
	};
	uint8_t mad[CM_MAD_LEN];

	cm_rej_pack(&m, tid, mad);
	mad_send_to(d, src, mad);
}

/*
 * REQs for a port nobody listens on yet wait here a moment before their
 * REJ: programs such as perftest -R close one listener and open the next
 * on the same port while the peer, just told to go on, already connects
 * (Linux's slower address and route resolution usually lets the listen
 * win that race). A listen on the port takes them at once.
 */
#define ORPHAN_MAX	64
#define ORPHAN_NS	(50 * 1000 * 1000ull)

struct orphan {
	struct cma_dev *d;
	union ibv_gid src;
	uint64_t deadline;
	uint8_t mad[CM_MAD_LEN];
};

static struct orphan orphans[ORPHAN_MAX];
static int norphans;

static int
orphan_keep(struct cma_dev *d, const union ibv_gid *src, const uint8_t *mad)
{
	int i;

	for (i = 0; i < norphans; i++)	/* a resent REQ: already waiting */
		if (memcmp(orphans[i].mad + CM_MAD_HDR_LEN,
			   mad + CM_MAD_HDR_LEN, 4) == 0 &&
		    memcmp(&orphans[i].src, src, sizeof(*src)) == 0)
			return 1;
	if (norphans == ORPHAN_MAX)
		return 0;
	orphans[norphans].d = d;
	orphans[norphans].src = *src;
	orphans[norphans].deadline = cm_now() + ORPHAN_NS;
	memcpy(orphans[norphans].mad, mad, CM_MAD_LEN);
	norphans++;
	cm_kick();
	return 1;
}

static void
orphan_drop(int i)
{
	orphans[i] = orphans[--norphans];
}

static struct cma_id *
duplicate_req(const struct cm_req *m)
{
	struct cma_id *c;

	TAILQ_FOREACH(c, &cma.ids, link)
		if (c->remote_id == m->local_comm_id &&
		    c->remote_guid == m->local_ca_guid && c->local_id != 0 &&
		    !c->destroying && c->passive)
			return c;
	return NULL;
}

/*
 * The id a request makes under listener @l: bound to the device the
 * request came in on, its addresses from the RDMA-CM header (@sa the
 * peer's, @da ours), answering to @src from GID @gidx.
 */
static struct cma_id *
passive_id(struct cma_id *l, struct cma_dev *d, const union ibv_gid *src,
	   int gidx, const struct sockaddr_storage *sa,
	   const struct sockaddr_storage *da, enum ibv_qp_type qpt)
{
	struct cma_id *c = cma_id_new(l->chan, l->id.context, l->id.ps, qpt);

	if (c == NULL)
		return NULL;
	c->listener = l;
	c->passive = 1;
	c->counted = 1;
	l->pending++;
	c->dev = d;
	c->id.verbs = d->verbs;
	c->id.pd = d->pd;
	c->id.port_num = 1;
	c->bound = 1;
	memcpy(&c->id.route.addr.src_storage, da, sizeof(*da));
	memcpy(&c->id.route.addr.dst_storage, sa, sizeof(*sa));
	c->dgid = *src;
	c->sgid_index = (uint8_t)gidx;
	c->id.route.addr.addr.ibaddr.sgid = d->gid[gidx];
	c->id.route.addr.addr.ibaddr.dgid = *src;
	c->id.route.addr.addr.ibaddr.pkey = htobe16(0xffff);
	return c;
}

static void on_req_listened(struct cma_dev *d, const union ibv_gid *src,
			    const uint8_t *mad, int may_wait);

static void
on_req(struct cma_dev *d, const union ibv_gid *src, const uint8_t *mad)
{
	on_req_listened(d, src, mad, 1);
}

/* rdma_listen: the REQs waiting for a listener like this come in now. */
void
cm_listen_started(void)
{
	struct sockaddr_storage sa, da;
	struct cm_req m;
	struct orphan o;
	int i = 0;

	while (i < norphans) {
		o = orphans[i];
		cm_req_unpack(o.mad, &m);
		if (cma_hdr_get(m.private_data, (uint16_t)m.service_id,
				&sa, &da) != 0 ||
		    find_listener(o.d, (int)((m.service_id >> 16) & 0xffff),
				  (uint16_t)m.service_id, (void *)&da) == NULL) {
			i++;
			continue;
		}
		orphan_drop(i);
		on_req_listened(o.d, &o.src, o.mad, 0);
	}
}

/* Orphans whose wait is over get their REJ; returns the next deadline. */
static uint64_t
orphans_expire(uint64_t now)
{
	uint64_t next = UINT64_MAX;
	struct cm_req m;
	int i = 0;

	while (i < norphans) {
		if (orphans[i].deadline <= now) {
			cm_req_unpack(orphans[i].mad, &m);
			reject_stranger(orphans[i].d, &orphans[i].src,
					cm_mad_tid(orphans[i].mad),
					m.local_comm_id,
					CM_REJ_INVALID_SERVICE_ID);
			orphan_drop(i);
			continue;
		}
		if (orphans[i].deadline < next)
			next = orphans[i].deadline;
		i++;
	}
	return next;
}

/*
 * The listener a REQ is for, or NULL once it was answered otherwise: a
 * duplicate gets what the original got, a REQ for no service or for a
 * transport dpib has not gets its REJ, one for a port not listened on
 * yet may wait (@may_wait). Fills @m, the header's addresses and the
 * index of the GID it was sent to.
 */
static struct cma_id *
req_listener(struct cma_dev *d, const union ibv_gid *src, const uint8_t *mad,
	     int may_wait, struct cm_req *m, struct sockaddr_storage *sa,
	     struct sockaddr_storage *da, int *gidx)
{
	struct cma_id *l, *c;
	union ibv_gid lg;
	int ps;

	cm_req_unpack(mad, m);
	c = duplicate_req(m);
	if (c != NULL) {
		if (c->state == CS_REQ_RCVD)
			(void)cm_send_mra(c);
		else if (c->state == CS_REP_SENT)
			(void)send_once(c, c->msg);
		return NULL;
	}
	ps = (int)((m->service_id >> 16) & 0xffff);
	if ((m->service_id & ~RDMA_IB_IP_PORT_MASK) !=
	    ((uint64_t)ps << 16) || (ps != RDMA_PS_TCP && ps != RDMA_PS_IB) ||
	    cma_hdr_get(m->private_data, (uint16_t)m->service_id, sa, da) ||
	    sa->ss_family != da->ss_family) {
		reject_stranger(d, src, cm_mad_tid(mad), m->local_comm_id,
				CM_REJ_INVALID_SERVICE_ID);
		return NULL;
	}
	if (m->transport_service_type != CM_TST_RC &&
	    m->transport_service_type != CM_TST_UC) {
		reject_stranger(d, src, cm_mad_tid(mad), m->local_comm_id,
				CM_REJ_INVALID_TRANSPORT_TYPE);
		return NULL;
	}
	memcpy(lg.raw, m->primary.remote_gid, 16);
	*gidx = gid_index(d, &lg);
	l = find_listener(d, ps, (uint16_t)m->service_id, (void *)da);
	if (l == NULL && *gidx >= 0 && may_wait && orphan_keep(d, src, mad))
		return NULL;
	if (l == NULL || *gidx < 0) {
		reject_stranger(d, src, cm_mad_tid(mad), m->local_comm_id,
				CM_REJ_INVALID_SERVICE_ID);
		return NULL;
	}
	return l;
}

static void
on_req_listened(struct cma_dev *d, const union ibv_gid *src,
		const uint8_t *mad, int may_wait)
{
	struct sockaddr_storage sa, da;
	struct cma_id *l, *c;
	struct cm_req m;
	struct cma_event *e;
	int gidx = -1;

	l = req_listener(d, src, mad, may_wait, &m, &sa, &da, &gidx);
	if (l == NULL)
		return;
	if (l->pending >= l->backlog) {
		reject_stranger(d, src, cm_mad_tid(mad), m.local_comm_id,
				CM_REJ_CONSUMER_DEFINED);
		return;
	}
	c = passive_id(l, d, src, gidx, &sa, &da, IBV_QPT_RC);
	if (c == NULL) {
		reject_stranger(d, src, cm_mad_tid(mad), m.local_comm_id,
				CM_REJ_NO_RESOURCES);
		return;
	}
	c->state = CS_REQ_RCVD;
	c->local_id = new_comm_id();
	c->remote_id = m.local_comm_id;
	c->remote_guid = m.local_ca_guid;
	c->tid = cm_mad_tid(mad);
	c->service_id = m.service_id;
	c->remote_qpn = m.local_qpn;
	c->remote_psn = m.starting_psn;
	c->peer_resp_res = m.responder_resources;
	/* What the peer asks of us, rdma_accept's defaults */
	c->resp_res = m.initiator_depth;
	c->init_depth = m.responder_resources;
	c->retry_count = m.retry_count;
	c->rnr_retry = m.rnr_retry_count;
	c->flow_control = m.end_to_end_flow_control;
	c->srq = m.srq;
	c->mtu = m.path_mtu < d->mtu ? (enum ibv_mtu)m.path_mtu : d->mtu;
	c->local_ack_timeout = m.primary.local_ack_timeout;
	c->cm_timeout = m.local_cm_response_timeout;
	c->max_cm_retries = m.max_cm_retries;
	c->remote_ece.vendor_id = m.ece_vendor_id;
	c->remote_ece.options = m.ece_options;
	/* Answers go where the REQ came from; the path is the REQ's. */
	c->hop_limit = m.primary.hop_limit;
	c->traffic_class = m.primary.traffic_class;
	c->flow_label = m.primary.flow_label;
	e = cma_event_new(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (e == NULL)
		return;
	e->ev.listen_id = &l->id;
	event_pdata(e, m.private_data + CMA_HDR_LEN,
		    CM_REQ_PDATA - CMA_HDR_LEN, 0);
	event_peer(e, m.responder_resources, m.initiator_depth,
		   m.end_to_end_flow_control, m.rnr_retry_count, m.srq,
		   m.local_qpn);
	e->ev.param.conn.retry_count = m.retry_count;
	cma_event_post(c, e);
}

/* The active side refuses the REP it got (@err): a REJ, CONNECT_ERROR. */
static void
refuse_rep(struct cma_id *c, int err)
{
	c->state = CS_REP_RCVD;	/* the REP is what we refuse */
	(void)cm_send_rej(c, CM_REJ_CONSUMER_DEFINED, NULL, 0);
	c->state = CS_ERROR;
	cma_report(c, RDMA_CM_EVENT_CONNECT_ERROR, -err);
}

static void
on_rep(const uint8_t *mad)
{
	struct cm_rep m;
	struct cma_id *c;
	struct cma_event *e;
	int err;

	cm_rep_unpack(mad, &m);
	c = by_local_id(m.remote_comm_id);
	if (c == NULL) {
		drop(DROP_MATCH, "REP");
		return;
	}
	if (c->state == CS_ESTABLISHED && c->remote_id == m.local_comm_id) {
		if (c->rep_len)		/* our RTU was lost */
			(void)send_once(c, c->rep_msg);
		return;
	}
	if (c->state != CS_REQ_SENT) {
		drop(DROP_MATCH, "REP");
		return;
	}
	stop_retry(c);
	c->remote_id = m.local_comm_id;
	c->remote_guid = m.local_ca_guid;
	c->remote_qpn = m.local_qpn;
	c->remote_psn = m.starting_psn;
	c->peer_resp_res = m.responder_resources;
	/* How often this side retries after an RNR NAK is the passive
	 * side's to say: the REP's RNR Retry Count, as the REQ's was the
	 * passive side's (the Linux CM sets it so).
	 */
	c->rnr_retry = m.rnr_retry_count;
	c->remote_ece.vendor_id = m.ece_vendor_id;
	c->remote_ece.options = m.ece_options;
	/* A REP must echo the REQ's ECE vendor ID or carry none: another
	 * one is a broken handshake, which librdmacm refuses.
	 */
	if (m.ece_vendor_id != 0 &&
	    m.ece_vendor_id != c->local_ece.vendor_id) {
		refuse_rep(c, EINVAL);
		return;
	}
	if (c->id.qp == NULL) {
		c->state = CS_REP_RCVD;
		e = cma_event_new(c, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	} else {
		err = cm_qp_rtr_rts(c);
		if (err) {
			refuse_rep(c, err);
			return;
		}
		(void)cm_send_rtu(c);
		c->state = CS_ESTABLISHED;
		e = cma_event_new(c, RDMA_CM_EVENT_ESTABLISHED, 0);
	}
	if (e == NULL)
		return;
	event_pdata(e, m.private_data, CM_REP_PDATA, 0);
	event_peer(e, m.responder_resources, m.initiator_depth,
		   m.end_to_end_flow_control, m.rnr_retry_count, m.srq,
		   m.local_qpn);
	cma_event_post(c, e);
}

static void
on_rtu(const uint8_t *mad)
{
	struct cm_rtu m;
	struct cma_id *c;

	cm_rtu_unpack(mad, &m);
	c = by_local_id(m.remote_comm_id);
	if (c == NULL || c->remote_id != m.local_comm_id ||
	    c->state != CS_REP_SENT) {
		drop(DROP_MATCH, "RTU");
		return;
	}
	cm_established(c);
}

/* A request stops counting against its listener's backlog once it is
 * handed out (rdma_get_cm_event), withdrawn or gone.
 */
void
cm_release_pending(struct cma_id *c)
{
	if (c->counted && c->listener != NULL)
		c->listener->pending--;
	c->counted = 0;
}

/* The passive side's connection is up: an RTU, or (rdma_notify) the
 * first packet on the QP when the RTU was lost.
 */
void
cm_established(struct cma_id *c)
{
	stop_retry(c);
	c->state = CS_ESTABLISHED;
	conn_event(c, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
}

/*
 * The connection a REJ is about. A timeout REJ carries its sender's CA
 * GUID in the ARI, and the pair (GUID, comm ID) finds the connection even
 * when the sender never learnt our comm ID (a REQ withdrawn before the
 * REP); a REJ of our REQ has only our comm ID to go by, and is taken only
 * while we know no comm ID of the peer's; any other must name both ends.
 */
static struct cma_id *
rejected_id(const struct cm_rej *m)
{
	struct cma_id *c;
	uint64_t guid;

	if (m->reason == CM_REJ_TIMEOUT && m->ari_length >= sizeof(guid)) {
		memcpy(&guid, m->ari, sizeof(guid));
		guid = be64toh(guid);
		TAILQ_FOREACH(c, &cma.ids, link)
			if (c->remote_id == m->local_comm_id &&
			    c->remote_guid == guid && c->local_id != 0 &&
			    !c->destroying)
				return c;
	}
	c = by_local_id(m->remote_comm_id);
	/* Of our REQ: only while we know no comm ID of the peer's yet. */
	if (c != NULL && c->remote_id != (m->message_rejected == CM_REJ_REQ ?
					  0 : m->local_comm_id))
		return NULL;
	return c;
}

static void
on_rej(const uint8_t *mad)
{
	struct cm_rej m;
	struct cma_id *c;
	struct cma_event *e;

	if (cm_rej_unpack(mad, &m) != 0) {
		drop(DROP_BODY, "REJ");
		return;
	}
	c = rejected_id(&m);
	if (c == NULL || (c->state != CS_REQ_SENT && c->state != CS_REP_RCVD &&
			  c->state != CS_REQ_RCVD && c->state != CS_REP_SENT &&
			  c->state != CS_ESTABLISHED)) {
		drop(DROP_MATCH, "REJ");
		return;
	}
	stop_retry(c);
	(void)cm_qp_error(c);
	cm_release_pending(c);
	/* Established: the connection was the peer's (RTU lost) until now;
	 * it goes through time-wait as a disconnection would (ib_cm).
	 */
	if (c->state == CS_ESTABLISHED)
		enter_timewait(c);
	else
		c->state = CS_ERROR;
	e = cma_event_new(c, RDMA_CM_EVENT_REJECTED, m.reason);
	if (e == NULL)
		return;
	event_pdata(e, m.private_data, CM_REJ_PDATA, 0);
	cma_event_post(c, e);
}

static void
on_mra(const uint8_t *mad)
{
	struct cm_mra m;
	struct cma_id *c;

	cm_mra_unpack(mad, &m);
	c = by_local_id(m.remote_comm_id);
	if (c == NULL || c->msg_len == 0 ||
	    !((c->state == CS_REQ_SENT && m.message_mraed == CM_MRA_REQ) ||
	      (c->state == CS_REP_SENT && m.message_mraed == CM_MRA_REP))) {
		drop(DROP_MATCH, "MRA");
		return;
	}
	/* The peer needs longer: wait that much more before resending. */
	cm_timer(c, cm_now() + c->period + cm_time_ns(m.service_timeout));
}

static void
on_dreq(struct cma_dev *d, const union ibv_gid *src, const uint8_t *mad)
{
	struct cm_dreq m;
	struct cm_drep r;
	struct cma_id *c;
	uint8_t out[CM_MAD_LEN];

	cm_dreq_unpack(mad, &m);
	c = by_local_id(m.remote_comm_id);
	if (c == NULL || c->remote_id != m.local_comm_id) {
		/* IBA 12.9.7: an unknown connection still gets its DREP,
		 * so that the peer leaves DREQ_SENT at once.
		 */
		memset(&r, 0, sizeof(r));
		r.local_comm_id = m.remote_comm_id;
		r.remote_comm_id = m.local_comm_id;
		cm_drep_pack(&r, cm_mad_tid(mad), out);
		mad_send_to(d, src, out);
		drop(DROP_MATCH, "DREQ");
		return;
	}
	c->tid = cm_mad_tid(mad);
	switch (c->state) {
	case CS_REP_SENT:	/* the RTU was lost; the connection was up */
	case CS_ESTABLISHED:
		stop_retry(c);
		c->state = CS_DREQ_RCVD;
		conn_event(c, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
		break;
	case CS_DREQ_SENT:	/* both ends disconnect at once */
		(void)cm_send_drep(c);
		conn_event(c, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
		break;
	case CS_TIMEWAIT:
	case CS_DISCONNECTED:
		if (c->rep_len)
			(void)send_once(c, c->rep_msg);
		break;
	default:
		break;
	}
}

static void
on_drep(const uint8_t *mad)
{
	struct cm_drep m;
	struct cma_id *c;

	cm_drep_unpack(mad, &m);
	c = by_local_id(m.remote_comm_id);
	if (c == NULL || c->state != CS_DREQ_SENT ||
	    c->remote_id != m.local_comm_id) {
		drop(DROP_MATCH, "DREP");
		return;
	}
	enter_timewait(c);
	conn_event(c, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
}

static void
on_sidr_req(struct cma_dev *d, const union ibv_gid *src, const uint8_t *mad)
{
	struct sockaddr_storage sa, da;
	struct cm_sidr_req m;
	struct cm_sidr_rep r = { 0 };
	struct cma_id *l, *c;
	struct cma_event *e;
	uint8_t out[CM_MAD_LEN];
	int ps, gidx;

	cm_sidr_req_unpack(mad, &m);
	ps = (int)((m.service_id >> 16) & 0xffff);
	l = NULL;
	if ((m.service_id & ~RDMA_IB_IP_PORT_MASK) == ((uint64_t)ps << 16) &&
	    cma_hdr_get(m.private_data, (uint16_t)m.service_id, &sa, &da) == 0)
		l = find_listener(d, ps, (uint16_t)m.service_id, (void *)&da);
	gidx = -1;
	if (l != NULL) {
		union ibv_gid g;

		cm_gid_of((void *)&da, &g);
		gidx = gid_index(d, &g);
	}
	if (l == NULL || gidx < 0 ||
	    (c = passive_id(l, d, src, gidx, &sa, &da, IBV_QPT_UD)) == NULL) {
		r.request_id = m.request_id;
		r.status = CM_SIDR_UNSUPPORTED;
		r.service_id = m.service_id;
		cm_sidr_rep_pack(&r, cm_mad_tid(mad), out);
		mad_send_to(d, src, out);
		return;
	}
	c->state = CS_SIDR_REQ_RCVD;
	c->remote_id = m.request_id;
	c->tid = cm_mad_tid(mad);
	c->service_id = m.service_id;
	e = cma_event_new(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (e == NULL)
		return;
	e->ev.listen_id = &l->id;
	event_pdata(e, m.private_data + CMA_HDR_LEN,
		    CM_SIDR_REQ_PDATA - CMA_HDR_LEN, 1);
	cma_event_post(c, e);
}

static void
on_sidr_rep(const uint8_t *mad)
{
	struct cm_sidr_rep m;
	struct cma_id *c;
	struct cma_event *e;

	if (cm_sidr_rep_unpack(mad, &m) != 0) {
		drop(DROP_BODY, "SIDR_REP");
		return;
	}
	c = by_local_id(m.request_id);
	if (c == NULL || c->state != CS_SIDR_REQ_SENT) {
		drop(DROP_MATCH, "SIDR_REP");
		return;
	}
	stop_retry(c);
	if (m.status != CM_SIDR_SUCCESS) {
		c->state = CS_ERROR;
		e = cma_event_new(c, m.status == CM_SIDR_UNSUPPORTED ?
				  RDMA_CM_EVENT_UNREACHABLE :
				  RDMA_CM_EVENT_REJECTED, m.status == CM_SIDR_UNSUPPORTED ?
				  -ECONNREFUSED : m.status);
	} else {
		c->state = CS_ESTABLISHED;
		c->remote_qpn = m.qpn;
		c->remote_qkey = m.qkey;
		e = cma_event_new(c, RDMA_CM_EVENT_ESTABLISHED, 0);
	}
	if (e == NULL)
		return;
	event_pdata(e, m.private_data, CM_SIDR_REP_PDATA, 1);
	e->ev.param.ud.qp_num = m.qpn;
	e->ev.param.ud.qkey = m.qkey;
	e->ev.param.ud.ah_attr.is_global = 1;
	e->ev.param.ud.ah_attr.port_num = 1;
	e->ev.param.ud.ah_attr.grh.dgid = c->dgid;
	e->ev.param.ud.ah_attr.grh.sgid_index = c->sgid_index;
	e->ev.param.ud.ah_attr.grh.hop_limit = 64;
	cma_event_post(c, e);
}

/* The source GID of a received datagram, from its GRH area (dpib puts an
 * IPv4 header in the last 20 of the 40 bytes, RoCEv2 A17.4.5.2).
 */
static void
grh_source(const uint8_t *grh, union ibv_gid *g)
{
	memset(g, 0, sizeof(*g));
	if ((grh[0] >> 4) != 6 && (grh[20] >> 4) == 4) {
		g->raw[10] = g->raw[11] = 0xff;
		memcpy(&g->raw[12], grh + 20 + 12, 4);
	} else {
		memcpy(g->raw, grh + 8, 16);
	}
}

static void
on_mad(struct cma_dev *d, const uint8_t *buf, const struct ibv_wc *wc)
{
	const uint8_t *mad = buf + 40;
	struct cm_mad_hdr h;
	union ibv_gid src;

	if (wc->byte_len < 40 ||
	    cm_mad_hdr_unpack(mad, wc->byte_len - 40, &h) != 0) {
		drop(DROP_HDR, "MAD header");
		return;
	}
	grh_source(buf, &src);
	CM_LOG("recv %s", cm_attr_name(h.attr_id));
	switch (h.attr_id) {
	case CM_ATTR_REQ:
		on_req(d, &src, mad);
		break;
	case CM_ATTR_REP:
		on_rep(mad);
		break;
	case CM_ATTR_RTU:
		on_rtu(mad);
		break;
	case CM_ATTR_REJ:
		on_rej(mad);
		break;
	case CM_ATTR_MRA:
		on_mra(mad);
		break;
	case CM_ATTR_DREQ:
		on_dreq(d, &src, mad);
		break;
	case CM_ATTR_DREP:
		on_drep(mad);
		break;
	case CM_ATTR_SIDR_REQ:
		on_sidr_req(d, &src, mad);
		break;
	case CM_ATTR_SIDR_REP:
		on_sidr_rep(mad);
		break;
	default:	/* LAP, APR, ClassPortInfo: not supported */
		drop(DROP_ATTR, cm_attr_name(h.attr_id));
		break;
	}
}

static void
poll_dev(struct cma_dev *d)
{
	struct ibv_wc wc[16];
	int n, i;

	while ((n = ibv_poll_cq(d->cq, 16, wc)) > 0) {
		for (i = 0; i < n; i++) {
			if (wc[i].opcode & IBV_WC_RECV) {
				if (wc[i].status == IBV_WC_SUCCESS)
					on_mad(d, d->rbuf + wc[i].wr_id *
					       CMA_RECV_LEN, &wc[i]);
				(void)post_recv(d, (uint32_t)wc[i].wr_id);
			} else if (d->sends > 0) {
				d->sends--;
			}
		}
	}
}

static void
dev_event(struct cma_dev *d)
{
	struct ibv_cq *cq;
	void *ctx;
	int n = 0;

	while (ibv_get_cq_event(d->cc, &cq, &ctx) == 0)
		n++;
	if (n)
		ibv_ack_cq_events(d->cq, (unsigned int)n);
	(void)ibv_req_notify_cq(d->cq, 0);
	poll_dev(d);
}

/* ---- timers --------------------------------------------------------- */

int
cm_addr_poll(struct cma_id *c)
{
	uint8_t mac[6];
	union ibv_gid g;

	cm_gid_of(&c->id.route.addr.dst_addr, &g);
	/* A multicast group has no neighbour to ask: its MAC is derived
	 * from the address (RFC 1112, RFC 2464) by the device.
	 */
	if ((gid_is_v4(&g) ? (g.raw[12] & 0xf0) == 0xe0 : g.raw[0] == 0xff) ||
	    dpib_neigh_resolve(c->dev->verbs, &g, mac) == 0) {
		c->state = CS_ADDR_RESOLVED;
		c->deadline = 0;
		cma_report(c, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
		return 0;
	}
	if (errno == EAGAIN && cm_now() < c->addr_deadline) {
		cm_timer(c, cm_now() + ADDR_POLL_NS);
		return EAGAIN;
	}
	c->state = CS_IDLE;
	c->deadline = 0;
	cma_report(c, RDMA_CM_EVENT_ADDR_ERROR,
		   errno == EAGAIN ? -ETIMEDOUT : -EHOSTUNREACH);
	return errno;
}

static void
expire(struct cma_id *c)
{
	c->deadline = 0;
	if (c->state == CS_ADDR_QUERY) {
		(void)cm_addr_poll(c);
		return;
	}
	if (c->state == CS_TIMEWAIT) {
		c->state = CS_DISCONNECTED;
		cma_report(c, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
		return;
	}
	if (c->msg_len == 0)
		return;
	if (c->tries_left > 0) {
		c->tries_left--;
		CM_LOG("resend %s", cm_attr_name(cm_mad_attr_id(c->msg)));
		(void)mad_send_ah(c->dev, c->ah, c->msg);
		cm_timer(c, cm_now() + c->period);
		return;
	}
	stop_retry(c);
	switch (c->state) {
	case CS_REQ_SENT:
	case CS_REP_SENT:
	case CS_SIDR_REQ_SENT:
		(void)cm_qp_error(c);
		c->state = CS_ERROR;
		cma_report(c, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
		break;
	case CS_DREQ_SENT:
		enter_timewait(c);
		cma_report(c, RDMA_CM_EVENT_DISCONNECTED, -ETIMEDOUT);
		break;
	default:
		break;
	}
}

static int
run_timers(void)
{
	uint64_t now = cm_now(), next;
	struct cma_id *c, *t;
	int ms;

	next = orphans_expire(now);

	for (c = TAILQ_FIRST(&cma.ids); c != NULL; c = t) {
		t = TAILQ_NEXT(c, link);
		if (c->deadline == 0 || c->destroying)
			continue;
		if (c->deadline <= now)
			expire(c);
		if (c->deadline != 0 && c->deadline < next)
			next = c->deadline;
	}
	if (next == UINT64_MAX)
		return -1;
	now = cm_now();
	ms = next <= now ? 0 : (int)((next - now + 999999) / 1000000);
	return ms;
}

static void *
worker(void *arg)
{
	struct epoll_event ev[8];
	uint64_t v;
	int n, i, ms;

	(void)arg;
	pthread_setname_np(pthread_self(), "dpib-cm");
	pthread_mutex_lock(&cma.lock);
	for (;;) {
		ms = run_timers();
		pthread_mutex_unlock(&cma.lock);
		n = epoll_wait(cma.epfd, ev, 8, ms);
		pthread_mutex_lock(&cma.lock);
		if (cma.stopping)
			break;
		for (i = 0; i < n; i++) {
			if (ev[i].data.ptr == NULL) {
				if (read(cma.kick_fd, &v, sizeof(v)) < 0)
					(void)0;
				continue;
			}
			dev_event(ev[i].data.ptr);
		}
	}
	pthread_mutex_unlock(&cma.lock);
	return NULL;
}

/*
 * The process is exiting (an atexit handler registered after dpib's
 * own, so it runs while the devices still work): as
 * the kernel does for a process that dies with connections open, each
 * connection's peer is told - a DREQ for an established one, a REJ for a
 * request in progress - so that its application sees DISCONNECTED or
 * REJECTED now rather than QP errors and retries. Sent once each; the
 * worker stops first, so that nothing runs on a device being torn down.
 */
static void
cm_fini(void)
{
	struct cma_id *c;
	uint64_t end;
	int k, tries;

	/* A forked child inherits the handler, not the worker or the
	 * connections (they are its parent's).
	 */
	if (!cma.ready || getpid() != cma.pid)
		return;
	/* A thread that exit() left inside a CM call holds the lock. */
	for (tries = 0; pthread_mutex_trylock(&cma.lock) != 0; tries++) {
		if (tries == 100)
			return;
		usleep(1000);
	}
	cma.stopping = 1;
	TAILQ_FOREACH(c, &cma.ids, link)
		if (!c->destroying && c->dev != NULL)
			cm_id_detach(c);
	pthread_mutex_unlock(&cma.lock);
	cm_kick();
	pthread_join(cma.worker, NULL);
	/* Until the farewells left (what arrives meanwhile is dropped). */
	end = cm_now() + 100 * 1000 * 1000ull;
	for (k = 0; k < cma.ndev; k++) {
		struct ibv_wc wc[16];
		int n, i;

		while (cma.dev[k].sends > 0 && cm_now() < end) {
			n = ibv_poll_cq(cma.dev[k].cq, 16, wc);
			for (i = 0; i < n; i++)
				if (!(wc[i].opcode & IBV_WC_RECV))
					cma.dev[k].sends--;
		}
	}
}

/* An id leaves: what it owes the peer goes out (a DREP for a DREQ it was
 * told of, a REJ for a request it never answered).
 */
void
cm_id_detach(struct cma_id *c)
{
	switch (c->state) {
	case CS_REQ_RCVD:
		(void)cm_send_rej(c, CM_REJ_CONSUMER_DEFINED, NULL, 0);
		break;
	case CS_REQ_SENT:
	case CS_REP_SENT:
		(void)cm_send_rej(c, CM_REJ_TIMEOUT, NULL, 0);
		break;
	case CS_ESTABLISHED:
		(void)cm_send_dreq(c);
		break;
	case CS_DREQ_RCVD:
		(void)cm_send_drep(c);
		break;
	case CS_SIDR_REQ_RCVD:
		(void)cm_send_sidr_rep(c, CM_SIDR_REJECT, NULL, 0);
		break;
	default:
		break;
	}
	stop_retry(c);
	if (c->ah != NULL) {
		ibv_destroy_ah(c->ah);
		c->ah = NULL;
	}
}
