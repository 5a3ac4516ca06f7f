/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * librdmacm on the loopback device (issue 20). One process is both CM
 * peers: a listener on 127.0.0.1 and an active id connecting to it, their
 * MADs leaving QP 1 and looping back. Each scenario (argv[1]) runs with
 * its own environment (tests/meson.build):
 *
 *   connect      the handshake, private data, resources, addresses, a
 *                SEND and an RDMA WRITE, disconnect, time-wait, destroy
 *   lost         the same with the first REQ, REP, RTU and DREQ lost
 *                (DPIB_CM_LOSE): every event still comes exactly once
 *   reject       no listener (REJ reason 8), rdma_reject (28, private
 *                data), a request destroyed unanswered (28)
 *   unreachable  every REQ lost: UNREACHABLE, not a hang; addresses that
 *                do not resolve: ADDR_ERROR within the timeout
 *   forged       crafted MADs through dpib_inject() against an
 *                established connection: each is counted where it is
 *                dropped, gives no event and leaves the connection up
 *   inflight     500 connections each withdrawn with the REQ out, left
 *                unanswered, destroyed established: no heap, mbuf or fd
 *                left behind, no event for a destroyed id
 *   mra          a slow passive application: MRAs keep the active side
 *                waiting past its REQ's retries, then one connection
 *   notify       every RTU lost: rdma_notify on the first receive
 *                establishes the passive side before its REP gives up
 *   nonblock     O_NONBLOCK event channels: EAGAIN, epoll readiness,
 *                rdma_migrate_id moving waiting events
 *   sync         ids without a channel (rdma_create_ep), a server thread:
 *                rdma_get_request, rdma_migrate_id, and calls that return
 *                with their event, rdma_disconnect's too
 *   rxe          a Linux rxe peer's MADs from a capture, both ways (the
 *                device at 10.77.0.2, tests/conf/rxe_peer.conf): what
 *                dpib answers, field by field against what rxe answered
 *
 * Every wait is bounded: events are read only after poll() on the
 * channel's fd said one is there.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/time.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>
#include <rte_malloc.h>

#include "roce_frame.h"
#include "cm_msg.h"
#include "usage.h"

/* librdmacm's dpib addition (DPIB_RDMACM_0.1): MADs its CM dropped, by
 * cause.
 */
uint64_t dpib_cm_dropped(int why);
enum { DROP_HDR, DROP_MATCH, DROP_BODY, DROP_ATTR };

#define EV_WAIT		5.0	/* s: the longest any event may take */
#define QUIET_MS	300	/* silence that says "no further event" */
#define PDATA_LEN	20
#define PORT		7471	/* the listener's */
#define PORT_NONE	7499	/* nobody listens there */
#define ACT_RESP_RES	4	/* the active side's, told apart from ... */
#define ACT_INIT_DEPTH	2	/* ... its initiator depth (connect) */
#define GSI_QKEY	0x80010000u
#define UD_SEND_ONLY	0x64
#define BUF_LEN		8192
#define MSG_LEN		64

/* One connection, both of its ends in this process. */
struct conn {
	struct rdma_event_channel *ach;	/* the active id's */
	struct rdma_event_channel *pch;	/* the listener's and its requests' */
	struct rdma_cm_id *listen, *act, *pas;
	struct ibv_pd *pd;
	struct ibv_cq *acq;		/* the active QP's; the passive's are
					 * the library's (rdma_create_qp) */
	struct ibv_mr *mr;
	uint8_t *buf;
	uint8_t req_pdata[PDATA_LEN], rep_pdata[PDATA_LEN];
	uint8_t resp, init;		/* the active side asks these */
	uint32_t act_comm_id, pas_comm_id;	/* forged: from the capture */
};

static struct conn C;
/* lost, forged: the active side asks 1/1, so that their rules are
 * checked whatever the resources' swap (connect checks it) does.
 */
static int equal_resources;
static char capture[64];

/* ---- events ------------------------------------------------------------ */

/* The next event on @ch within @secs, or NULL. */
static struct rdma_cm_event *
next_event(struct rdma_event_channel *ch, double secs)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int n;

	n = poll(&p, 1, (int)(secs * 1000));
	CHECK(n >= 0, "poll: errno %d", errno);
	if (n == 0)
		return NULL;
	CHECK(rdma_get_cm_event(ch, &ev) == 0,
	      "fd readable, yet rdma_get_cm_event failed: errno %d", errno);
	return ev;
}

/* The next event on @ch is @type (for @id when not NULL). */
static struct rdma_cm_event *
expect(struct rdma_event_channel *ch, enum rdma_cm_event_type type,
       struct rdma_cm_id *id, double secs)
{
	struct rdma_cm_event *ev = next_event(ch, secs);

	CHECK(ev != NULL, "no %s within %.1f s", rdma_event_str(type), secs);
	CHECK(ev->event == type, "%s (status %d), want %s",
	      rdma_event_str(ev->event), ev->status, rdma_event_str(type));
	CHECK(id == NULL || ev->id == id, "%s for another id",
	      rdma_event_str(type));
	return ev;
}

static void
ack(struct rdma_cm_event *ev)
{
	CHECK(rdma_ack_cm_event(ev) == 0, "ack: errno %d", errno);
}

/* rdma_cm(7): the fd polls readable while an event waits, only then. */
static void
quiet(struct rdma_event_channel *ch, int ms)
{
	struct rdma_cm_event *ev = next_event(ch, ms / 1000.0);

	CHECK(ev == NULL, "unexpected %s (status %d)",
	      rdma_event_str(ev->event), ev->status);
}

static void
quiet_both(int ms)
{
	quiet(C.ach, ms);
	quiet(C.pch, ms);
}

/* ---- addresses ----------------------------------------------------------- */

static struct sockaddr_in
loopback(uint16_t port)
{
	struct sockaddr_in s = { .sin_family = AF_INET,
				 .sin_port = htons(port) };

	s.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return s;
}

static void
is_loopback(const struct sockaddr *sa, uint16_t port, const char *what)
{
	const struct sockaddr_in *s = (const struct sockaddr_in *)sa;

	CHECK(sa->sa_family == AF_INET, "%s: family %d", what, sa->sa_family);
	CHECK(s->sin_addr.s_addr == htonl(INADDR_LOOPBACK), "%s: %s", what,
	      inet_ntoa(s->sin_addr));
	CHECK(port == 0 || ntohs(s->sin_port) == port, "%s: port %u, want %u",
	      what, ntohs(s->sin_port), port);
}

/* ---- setting up ---------------------------------------------------------- */

static void
channels_open(void)
{
	C.ach = rdma_create_event_channel();
	C.pch = rdma_create_event_channel();
	CHECK(C.ach != NULL && C.pch != NULL, "channels: errno %d", errno);
}

/* A listener on 127.0.0.1:@port (its id's context: &C). */
static void
listen_on(uint16_t port)
{
	struct sockaddr_in s = loopback(port);

	CHECK(rdma_create_id(C.pch, &C.listen, &C, RDMA_PS_TCP) == 0,
	      "listener id: errno %d", errno);
	CHECK(rdma_bind_addr(C.listen, (struct sockaddr *)&s) == 0,
	      "bind 127.0.0.1:%u: errno %d", port, errno);
	CHECK(C.listen->verbs != NULL, "bound to an address, not a device");
	CHECK(rdma_listen(C.listen, 4) == 0, "listen: errno %d", errno);
}

/* rdma_resolve_addr and rdma_resolve_route on a new active id. */
static void
active_resolved(uint16_t port)
{
	struct sockaddr_in d = loopback(port);
	struct rdma_cm_event *ev;

	CHECK(rdma_create_id(C.ach, &C.act, NULL, RDMA_PS_TCP) == 0,
	      "active id: errno %d", errno);
	CHECK(rdma_resolve_addr(C.act, NULL, (struct sockaddr *)&d, 2000) == 0,
	      "resolve_addr: errno %d", errno);
	ev = expect(C.ach, RDMA_CM_EVENT_ADDR_RESOLVED, C.act, EV_WAIT);
	CHECK(ev->status == 0, "status %d", ev->status);
	ack(ev);
	CHECK(C.act->verbs != NULL, "resolved, yet no device");
	CHECK(rdma_resolve_route(C.act, 2000) == 0, "resolve_route: errno %d",
	      errno);
	ev = expect(C.ach, RDMA_CM_EVENT_ROUTE_RESOLVED, C.act, EV_WAIT);
	CHECK(ev->status == 0, "status %d", ev->status);
	ack(ev);
}

/* The memory both QPs work on, in one PD of the CM's device context. */
static void
memory_open(struct ibv_context *ctx)
{
	C.pd = ibv_alloc_pd(ctx);
	CHECK(C.pd != NULL, "alloc_pd");
	C.buf = aligned_alloc(4096, BUF_LEN);
	CHECK(C.buf != NULL, "buffer");
	memset(C.buf, 0, BUF_LEN);
	C.mr = ibv_reg_mr(C.pd, C.buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK(C.mr != NULL, "reg_mr: errno %d", errno);
	C.acq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	CHECK(C.acq != NULL, "create_cq: errno %d", errno);
}

/* An RC QP on @id: our CQ when @cq, else the library's. */
static void
qp_on(struct rdma_cm_id *id, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	CHECK(rdma_create_qp(id, C.pd, &ia) == 0, "rdma_create_qp: errno %d",
	      errno);
	CHECK(id->qp != NULL && id->qp->qp_type == IBV_QPT_RC, "id->qp");
	CHECK(id->qp->send_cq != NULL && id->qp->recv_cq != NULL, "CQs");
	CHECK(cq == NULL || id->qp->send_cq == cq, "not the CQ given");
}

/* The active side asks: 20 bytes of private data, responder resources
 * and initiator depth told apart so that their swap shows.
 */
static void
connect_active(void)
{
	struct rdma_conn_param p = {
		.private_data = C.req_pdata, .private_data_len = PDATA_LEN,
		.responder_resources = C.resp, .initiator_depth = C.init,
		.retry_count = 7, .rnr_retry_count = 7,
	};

	fill_pattern(C.req_pdata, PDATA_LEN, 1);
	CHECK(rdma_connect(C.act, &p) == 0, "rdma_connect: errno %d", errno);
}

/* ---- traffic ------------------------------------------------------------- */

static void
wc_ok(struct ibv_cq *cq, enum ibv_wc_opcode op, uint32_t len, const char *what)
{
	struct ibv_wc wc;

	CHECK(poll_one(cq, &wc, WAIT), "%s: no completion", what);
	CHECK(wc.status == IBV_WC_SUCCESS, "%s: %s", what,
	      ibv_wc_status_str(wc.status));
	CHECK(wc.opcode == op, "%s: opcode %d", what, wc.opcode);
	CHECK(op != IBV_WC_RECV || wc.byte_len == len, "%s: %u bytes", what,
	      wc.byte_len);
}

/* A SEND of MSG_LEN bytes from @from to @to, checked byte for byte. */
static void
send_over(struct rdma_cm_id *from, struct rdma_cm_id *to, uint32_t seed)
{
	uint8_t *src = C.buf, *dst = C.buf + 1024;
	struct ibv_sge s = { .addr = (uintptr_t)src, .length = MSG_LEN,
			     .lkey = C.mr->lkey };
	struct ibv_sge r = { .addr = (uintptr_t)dst, .length = 1024,
			     .lkey = C.mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &s, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_recv_wr rw = { .sg_list = &r, .num_sge = 1 }, *rbad;

	fill_pattern(src, MSG_LEN, seed);
	memset(dst, 0, 1024);
	CHECK(ibv_post_recv(to->qp, &rw, &rbad) == 0, "post_recv");
	CHECK(ibv_post_send(from->qp, &wr, &bad) == 0, "post_send");
	wc_ok(from->qp->send_cq, IBV_WC_SEND, 0, "SEND");
	wc_ok(to->qp->recv_cq, IBV_WC_RECV, MSG_LEN, "RECV");
	CHECK(memcmp(src, dst, MSG_LEN) == 0, "SEND: bytes differ");
}

/*
 * An RDMA WRITE (or READ) by the active QP into (or of) the passive
 * side's memory: 512 bytes of pattern @seed arrive intact.
 */
static void
rdma_over(enum ibv_wr_opcode op, uint32_t seed)
{
	int rd = op == IBV_WR_RDMA_READ;
	uint8_t *local = C.buf + 2048, *remote = C.buf + 4096;
	uint8_t *src = rd ? remote : local, *dst = rd ? local : remote;
	struct ibv_sge s = { .addr = (uintptr_t)local, .length = 512,
			     .lkey = C.mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &s, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)remote,
			     .rkey = C.mr->rkey },
	}, *bad;
	const char *what = rd ? "READ" : "WRITE";

	fill_pattern(src, 512, seed);
	memset(dst, 0, 512);
	CHECK(ibv_post_send(C.act->qp, &wr, &bad) == 0, "post %s", what);
	wc_ok(C.acq, rd ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE, 0, what);
	CHECK(memcmp(src, dst, 512) == 0, "%s: bytes differ", what);
}

static void
write_over(uint32_t seed)
{
	rdma_over(IBV_WR_RDMA_WRITE, seed);
}

static void
read_over(uint32_t seed)
{
	rdma_over(IBV_WR_RDMA_READ, seed);
}

/* ---- the scenario steps ---------------------------------------------- */

/* rdma_bind_addr/rdma_listen, rdma_resolve_addr/route: one event each. */
static void
listen_and_resolve(void)
{
	C.resp = equal_resources ? 1 : ACT_RESP_RES;
	C.init = equal_resources ? 1 : ACT_INIT_DEPTH;
	channels_open();
	listen_on(PORT);
	CHECK(rdma_get_src_port(C.listen) == htons(PORT), "listener's port");
	active_resolved(PORT);
	CHECK(C.act->verbs == C.listen->verbs, "one device, one context");
	memory_open(C.act->verbs);
	qp_on(C.act, C.acq);
	quiet_both(0);
}

/*
 * The request carries the REQ's private data after RDMA-CM's header
 * (56 bytes for RDMA_PS_TCP) and the peer's resources as seen from here:
 * its initiator depth is what we must answer, and the other way round
 * (ib_cm's cm_format_req_event).
 */
static void
connect_request_carries_pdata_and_swapped_resources(void)
{
	struct rdma_cm_event *ev;

	connect_active();
	ev = expect(C.pch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL, EV_WAIT);
	CHECK(ev->status == 0, "status %d", ev->status);
	CHECK(ev->listen_id == C.listen, "listen_id");
	C.pas = ev->id;
	CHECK(C.pas != NULL && C.pas != C.listen, "a new id for the request");
	CHECK(C.pas->context == &C, "the listener's context");
	CHECK(C.pas->verbs == C.listen->verbs, "the listener's device");
	CHECK(C.pas->channel == C.pch, "the listener's channel");
	CHECK(ev->param.conn.private_data != NULL &&
	      ev->param.conn.private_data_len >= PDATA_LEN,
	      "private data: %u bytes", ev->param.conn.private_data_len);
	CHECK(ev->param.conn.private_data_len == 92 - 36,
	      "RDMA_PS_TCP: 56 bytes after the CM header, got %u",
	      ev->param.conn.private_data_len);
	CHECK(memcmp(ev->param.conn.private_data, C.req_pdata, PDATA_LEN) == 0,
	      "private data differs");
	CHECK(ev->param.conn.responder_resources == C.init &&
	      ev->param.conn.initiator_depth == C.resp,
	      "resources %u/%u, want the peer's swapped %u/%u",
	      ev->param.conn.responder_resources,
	      ev->param.conn.initiator_depth, C.init, C.resp);
	CHECK(ev->param.conn.qp_num == C.act->qp->qp_num, "qp_num %u, want %u",
	      ev->param.conn.qp_num, C.act->qp->qp_num);
	ack(ev);
	quiet(C.ach, 0);
}

/*
 * rdma_accept with private data: ESTABLISHED once on each side; the
 * active side's carries the REP's private data and the REP's resources
 * as seen from there (ib_cm's cm_format_rep_event swaps them too).
 */
static void
established_once_each_side(void)
{
	struct rdma_conn_param p = {
		.private_data = C.rep_pdata, .private_data_len = PDATA_LEN,
		/* grant what the request event says the peer needs */
		.responder_resources = C.init, .initiator_depth = C.resp,
		.rnr_retry_count = 7,
	};
	struct rdma_cm_event *ev;
	const uint8_t *pd;

	qp_on(C.pas, NULL);
	fill_pattern(C.rep_pdata, PDATA_LEN, 2);
	CHECK(rdma_accept(C.pas, &p) == 0, "rdma_accept: errno %d", errno);
	ev = expect(C.ach, RDMA_CM_EVENT_ESTABLISHED, C.act, EV_WAIT);
	CHECK(ev->status == 0, "status %d", ev->status);
	pd = ev->param.conn.private_data;
	CHECK(pd != NULL && ev->param.conn.private_data_len >= PDATA_LEN,
	      "REP private data: %u bytes", ev->param.conn.private_data_len);
	CHECK(memcmp(pd, C.rep_pdata, PDATA_LEN) == 0, "REP private data");
	CHECK(ev->param.conn.qp_num == C.pas->qp->qp_num, "qp_num %u",
	      ev->param.conn.qp_num);
	CHECK(ev->param.conn.responder_resources == C.resp &&
	      ev->param.conn.initiator_depth == C.init,
	      "resources %u/%u, want the REP's swapped %u/%u",
	      ev->param.conn.responder_resources,
	      ev->param.conn.initiator_depth, C.resp, C.init);
	ack(ev);
	ev = expect(C.pch, RDMA_CM_EVENT_ESTABLISHED, C.pas, EV_WAIT);
	CHECK(ev->status == 0, "status %d", ev->status);
	ack(ev);
	/* Resent REQs, REPs and RTUs (lost scenario) bring no second one. */
	quiet_both(QUIET_MS);
}

/* Each id's addresses and ports are its end's and its peer's. */
static void
addresses_of_both_ends(void)
{
	uint16_t aport = ntohs(rdma_get_src_port(C.act));

	CHECK(aport != 0, "the active id got no port");
	CHECK(rdma_get_dst_port(C.act) == htons(PORT), "active dst port %u",
	      ntohs(rdma_get_dst_port(C.act)));
	CHECK(rdma_get_src_port(C.pas) == htons(PORT), "passive src port %u",
	      ntohs(rdma_get_src_port(C.pas)));
	CHECK(rdma_get_dst_port(C.pas) == htons(aport), "passive dst port %u",
	      ntohs(rdma_get_dst_port(C.pas)));
	is_loopback(rdma_get_local_addr(C.act), aport, "active local");
	is_loopback(rdma_get_peer_addr(C.act), PORT, "active peer");
	is_loopback(rdma_get_local_addr(C.pas), PORT, "passive local");
	is_loopback(rdma_get_peer_addr(C.pas), aport, "passive peer");
	is_loopback(rdma_get_local_addr(C.listen), PORT, "listener");
}

/* The QPs are connected to each other: SENDs both ways, a WRITE. */
static void
send_and_write_over_connection(void)
{
	send_over(C.act, C.pas, 3);
	send_over(C.pas, C.act, 4);
	write_over(5);
	quiet_both(0);
}

/*
 * rdma_disconnect on the active side: DISCONNECTED on the passive side
 * (DREQ); its rdma_disconnect answers (DREP) and the active side's comes.
 * Lost scenario: the first DREQ is lost; the resend comes at the CM
 * response timeout the active side stated in its REQ (DPIB_CM_TIMEOUT=12,
 * 2 x 16.8 ms), well within a second.
 */
static void
disconnect_once_each_side(void)
{
	struct rdma_cm_event *ev;
	double t0 = check_now(), took;

	CHECK(rdma_disconnect(C.act) == 0, "disconnect: errno %d", errno);
	ev = expect(C.pch, RDMA_CM_EVENT_DISCONNECTED, C.pas, EV_WAIT);
	took = check_now() - t0;
	CHECK(ev->status == 0, "status %d", ev->status);
	ack(ev);
	printf("# passive DISCONNECTED after %.0f ms\n", took * 1000);
	CHECK(took < 1.0, "DREQ answered after %.2f s: resent at the wrong "
	      "timeout", took);
	CHECK(rdma_disconnect(C.pas) == 0, "passive disconnect: errno %d",
	      errno);
	ev = expect(C.ach, RDMA_CM_EVENT_DISCONNECTED, C.act, EV_WAIT);
	CHECK(ev->status == 0, "status %d", ev->status);
	ack(ev);
	quiet_both(50);
}

/*
 * Both ends call rdma_disconnect before either's DREQ arrives: each DREQ
 * meets a DREQ_SENT end, which answers it, and each end's DREP then finds
 * the other answered already. Each id still gets one DISCONNECTED: the
 * kernel's rdma_cm reports the connection's end once (cma_ib_handler's
 * CONNECT -> DISCONNECT exchange), whichever message ends it.
 */
static void
disconnect_both_at_once(void)
{
	struct rdma_cm_event *ev;

	CHECK(rdma_disconnect(C.act) == 0, "disconnect: errno %d", errno);
	CHECK(rdma_disconnect(C.pas) == 0, "passive disconnect: errno %d",
	      errno);
	ev = expect(C.ach, RDMA_CM_EVENT_DISCONNECTED, C.act, EV_WAIT);
	CHECK(ev->status == 0, "status %d", ev->status);
	ack(ev);
	ev = expect(C.pch, RDMA_CM_EVENT_DISCONNECTED, C.pas, EV_WAIT);
	CHECK(ev->status == 0, "status %d", ev->status);
	ack(ev);
	quiet_both(50);
}

/* Both ends leave time-wait once (dpib after about 200 ms). */
static void
timewait_exit_once_each_side(void)
{
	struct rdma_cm_event *ev;

	ev = expect(C.ach, RDMA_CM_EVENT_TIMEWAIT_EXIT, C.act, EV_WAIT);
	ack(ev);
	ev = expect(C.pch, RDMA_CM_EVENT_TIMEWAIT_EXIT, C.pas, EV_WAIT);
	ack(ev);
	quiet_both(QUIET_MS);
}

static void
memory_close(void)
{
	CHECK(ibv_dereg_mr(C.mr) == 0, "dereg_mr");
	CHECK(ibv_destroy_cq(C.acq) == 0, "destroy_cq");
	CHECK(ibv_dealloc_pd(C.pd) == 0, "dealloc_pd");
	free(C.buf);
}

/* Destroying QPs and ids brings no event; then the channels go. */
static void
destroy_brings_no_event(void)
{
	rdma_destroy_qp(C.act);
	rdma_destroy_qp(C.pas);
	CHECK(C.act->qp == NULL && C.pas->qp == NULL, "id->qp left");
	CHECK(rdma_destroy_id(C.pas) == 0, "destroy passive id");
	CHECK(rdma_destroy_id(C.act) == 0, "destroy active id");
	CHECK(rdma_destroy_id(C.listen) == 0, "destroy listener");
	quiet_both(QUIET_MS);
	memory_close();
	rdma_destroy_event_channel(C.ach);
	rdma_destroy_event_channel(C.pch);
	memset(&C, 0, sizeof(C));
}

/*
 * Both channels, a listener on 127.0.0.1:@port, an active id with a QP
 * that connects with @p (NULL: librdmacm's defaults): the listener's
 * CONNECT_REQUEST, not yet acknowledged (C.pas its id).
 */
static struct rdma_cm_event *
requested(uint16_t port, struct rdma_conn_param *p)
{
	struct rdma_cm_event *ev;

	channels_open();
	listen_on(port);
	active_resolved(port);
	memory_open(C.act->verbs);
	qp_on(C.act, C.acq);
	CHECK(rdma_connect(C.act, p) == 0, "rdma_connect: errno %d", errno);
	ev = expect(C.pch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL, EV_WAIT);
	C.pas = ev->id;
	return ev;
}

/*
 * rdma_accept(id, NULL) grants what the request asked for (librdmacm:
 * the CONNECT_REQUEST event's values, capped by the device): responder
 * resources for the READs the peer will issue, and the other way round.
 * A peer that only READs (no responder resources of its own) gets them.
 */
static void
accept_defaults_grant_what_was_asked(void)
{
	struct rdma_conn_param p = {
		.responder_resources = 0, .initiator_depth = ACT_INIT_DEPTH,
		.retry_count = 7, .rnr_retry_count = 7,
	};
	struct rdma_cm_event *ev;
	uint8_t resp, init;

	ev = requested(PORT + 1, &p);
	CHECK(ev->param.conn.responder_resources == ACT_INIT_DEPTH &&
	      ev->param.conn.initiator_depth == 0, "request: %u/%u",
	      ev->param.conn.responder_resources,
	      ev->param.conn.initiator_depth);
	ack(ev);
	qp_on(C.pas, NULL);
	CHECK(rdma_accept(C.pas, NULL) == 0, "rdma_accept: errno %d", errno);
	ev = expect(C.ach, RDMA_CM_EVENT_ESTABLISHED, C.act, EV_WAIT);
	resp = ev->param.conn.responder_resources;
	init = ev->param.conn.initiator_depth;
	ack(ev);
	ev = expect(C.pch, RDMA_CM_EVENT_ESTABLISHED, C.pas, EV_WAIT);
	ack(ev);
	read_over(7);
	CHECK(init == ACT_INIT_DEPTH && resp == 0,
	      "the REP granted %u/%u, want %u/0", resp, init, ACT_INIT_DEPTH);
	disconnect_once_each_side();
	timewait_exit_once_each_side();
	destroy_brings_no_event();
}

/*
 * librdmacm's conventions (an audit against rdma-core 44):
 *  - an id with a device has a PD (id->pd, the device's) before any QP:
 *    rdma_reg_msgs() registers there;
 *  - rdma_connect(id, NULL) asks for the device's READ/atomic limits both
 *    ways and every retry (7, 7);
 *  - the active side's RNR retry count is the one the REP gives;
 *  - a destroyed channel takes no more events: a DREQ for one of its ids
 *    neither reaches it nor aborts the process (it did: the eventfd was
 *    closed and its write aborted).
 */
static void
connect_defaults_as_librdmacm(void)
{
	struct rdma_conn_param p = { .retry_count = 7, .rnr_retry_count = 3 };
	struct ibv_device_attr da;
	struct ibv_qp_init_attr qi;
	struct rdma_cm_event *ev;
	struct ibv_qp_attr qa;

	ev = requested(PORT + 2, NULL);
	CHECK(C.listen->pd != NULL && C.listen->pd->context == C.listen->verbs,
	      "a bound id has no PD");
	CHECK(C.act->pd != NULL, "a resolved id has no PD");
	CHECK(ibv_query_device(C.act->verbs, &da) == 0, "query_device");
	CHECK(C.pas->pd != NULL, "a requested id has no PD");
	CHECK(ev->param.conn.responder_resources == da.max_qp_init_rd_atom &&
	      ev->param.conn.initiator_depth == da.max_qp_rd_atom &&
	      ev->param.conn.rnr_retry_count == 7,
	      "connect(NULL) asked %u/%u, rnr %u", ev->param.conn.initiator_depth,
	      ev->param.conn.responder_resources,
	      ev->param.conn.rnr_retry_count);
	p.responder_resources = ev->param.conn.responder_resources;
	p.initiator_depth = ev->param.conn.initiator_depth;
	ack(ev);
	qp_on(C.pas, NULL);
	CHECK(rdma_accept(C.pas, &p) == 0, "rdma_accept: errno %d", errno);
	ack(expect(C.ach, RDMA_CM_EVENT_ESTABLISHED, C.act, EV_WAIT));
	ack(expect(C.pch, RDMA_CM_EVENT_ESTABLISHED, C.pas, EV_WAIT));
	CHECK(ibv_query_qp(C.act->qp, &qa, IBV_QP_RNR_RETRY |
			   IBV_QP_MAX_QP_RD_ATOMIC, &qi) == 0, "query_qp");
	CHECK(qa.rnr_retry == 3 && qa.max_rd_atomic > 0,
	      "active QP: rnr_retry %u (the REP said 3), max_rd_atomic %u",
	      qa.rnr_retry, qa.max_rd_atomic);
	read_over(9);
	/* The passive side's channel goes, its ids stay: it disconnects,
	 * the active side answers, and the passive side's DISCONNECTED and
	 * TIMEWAIT_EXIT have no channel to go to.
	 */
	rdma_destroy_event_channel(C.pch);
	CHECK(rdma_disconnect(C.pas) == 0, "disconnect: errno %d", errno);
	ev = expect(C.ach, RDMA_CM_EVENT_DISCONNECTED, C.act, EV_WAIT);
	ack(ev);
	CHECK(rdma_disconnect(C.act) == 0, "answer: errno %d", errno);
	ev = expect(C.ach, RDMA_CM_EVENT_TIMEWAIT_EXIT, C.act, EV_WAIT);
	ack(ev);
	usleep(300000);		/* the passive side's time-wait ends too */
	rdma_destroy_qp(C.act);
	rdma_destroy_qp(C.pas);
	CHECK(rdma_destroy_id(C.pas) == 0 && rdma_destroy_id(C.act) == 0 &&
	      rdma_destroy_id(C.listen) == 0, "destroy ids");
	memory_close();
	rdma_destroy_event_channel(C.ach);
	memset(&C, 0, sizeof(C));
}

/*
 * ECE (enhanced connection establishment) as librdmacm carries it over the
 * Linux CM:
 *  - rdma_set_local_ece refuses a zero vendor ID, a comp_mask and an id
 *    with a QP (EINVAL); what it set goes out in the REQ, and the
 *    request's id reads it with rdma_get_remote_ece;
 *  - rdma_reject_ece rejects with IBA reason 35 (vendor option not
 *    supported);
 *  - the REP echoes the REQ's vendor ID with the passive side's own
 *    options, which the active side reads from CONNECT_RESPONSE on;
 *  - rdma_create_qp drops the id's ECE: a dpib QP has none, as an rxe
 *    QP has none.
 * The ids have no QPs (the REQ and REP name @qpn), as ECE needs: once an
 * id has a QP its ECE is the QP's.
 */
static void
ece_as_librdmacm(void)
{
	struct ibv_ece e = { .vendor_id = 0x02c9, .options = 0x1234 }, bad, r;
	struct rdma_conn_param p = { .retry_count = 7, .rnr_retry_count = 7,
				     .qp_num = 0x123 };
	struct rdma_cm_event *ev;

	channels_open();
	listen_on(PORT + 3);
	active_resolved(PORT + 3);
	bad = e;
	bad.vendor_id = 0;
	CHECK(rdma_set_local_ece(C.act, &bad) != 0 && errno == EINVAL,
	      "vendor ID 0 taken");
	bad = e;
	bad.comp_mask = 1;
	CHECK(rdma_set_local_ece(C.act, &bad) != 0 && errno == EINVAL,
	      "comp_mask taken");
	CHECK(rdma_set_local_ece(C.act, &e) == 0, "set_local_ece: errno %d",
	      errno);
	CHECK(rdma_connect(C.act, &p) == 0, "rdma_connect: errno %d", errno);
	ev = expect(C.pch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL, EV_WAIT);
	C.pas = ev->id;
	memset(&r, 0xa5, sizeof(r));
	CHECK(rdma_get_remote_ece(C.pas, &r) == 0 && r.vendor_id == 0x02c9 &&
	      r.options == 0x1234 && r.comp_mask == 0,
	      "the request's ECE: vendor 0x%x options 0x%x", r.vendor_id,
	      r.options);
	ack(ev);
	CHECK(rdma_reject_ece(C.pas, NULL, 0) == 0, "reject_ece: errno %d",
	      errno);
	ev = expect(C.ach, RDMA_CM_EVENT_REJECTED, C.act, EV_WAIT);
	CHECK(ev->status == 35, "status %d, want 35", ev->status);
	ack(ev);
	CHECK(rdma_destroy_id(C.pas) == 0 && rdma_destroy_id(C.act) == 0,
	      "destroy");

	/* Accepted: the REP carries the vendor ID back, our options. */
	active_resolved(PORT + 3);
	CHECK(rdma_set_local_ece(C.act, &e) == 0, "set_local_ece: errno %d",
	      errno);
	CHECK(rdma_connect(C.act, &p) == 0, "rdma_connect: errno %d", errno);
	ev = expect(C.pch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL, EV_WAIT);
	C.pas = ev->id;
	ack(ev);
	e.options = 0x77;
	CHECK(rdma_set_local_ece(C.pas, &e) == 0, "passive set_local_ece");
	p.qp_num = 0x456;
	CHECK(rdma_accept(C.pas, &p) == 0, "rdma_accept: errno %d", errno);
	ev = expect(C.ach, RDMA_CM_EVENT_CONNECT_RESPONSE, C.act, EV_WAIT);
	ack(ev);
	CHECK(rdma_get_remote_ece(C.act, &r) == 0 && r.vendor_id == 0x02c9 &&
	      r.options == 0x77, "the reply's ECE: vendor 0x%x options 0x%x",
	      r.vendor_id, r.options);
	CHECK(rdma_establish(C.act) == 0, "rdma_establish: errno %d", errno);
	ack(expect(C.pch, RDMA_CM_EVENT_ESTABLISHED, C.pas, EV_WAIT));
	CHECK(rdma_disconnect(C.act) == 0, "disconnect: errno %d", errno);
	ack(expect(C.pch, RDMA_CM_EVENT_DISCONNECTED, C.pas, EV_WAIT));
	CHECK(rdma_disconnect(C.pas) == 0, "answer: errno %d", errno);
	ack(expect(C.ach, RDMA_CM_EVENT_DISCONNECTED, C.act, EV_WAIT));
	ack(expect(C.ach, RDMA_CM_EVENT_TIMEWAIT_EXIT, C.act, EV_WAIT));
	ack(expect(C.pch, RDMA_CM_EVENT_TIMEWAIT_EXIT, C.pas, EV_WAIT));
	CHECK(rdma_destroy_id(C.pas) == 0 && rdma_destroy_id(C.act) == 0,
	      "destroy");

	/* A QP takes the id's ECE away; with one the calls refuse. */
	active_resolved(PORT + 3);
	CHECK(rdma_set_local_ece(C.act, &e) == 0, "set_local_ece: errno %d",
	      errno);
	memory_open(C.act->verbs);
	qp_on(C.act, C.acq);
	CHECK(rdma_set_local_ece(C.act, &e) != 0 && errno == EINVAL,
	      "set_local_ece with a QP");
	CHECK(rdma_get_remote_ece(C.act, &r) != 0 && errno == EINVAL,
	      "get_remote_ece with a QP");
	p.qp_num = 0;
	CHECK(rdma_connect(C.act, &p) == 0, "rdma_connect: errno %d", errno);
	ev = expect(C.pch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL, EV_WAIT);
	C.pas = ev->id;
	CHECK(rdma_get_remote_ece(C.pas, &r) == 0 && r.vendor_id == 0 &&
	      r.options == 0, "ECE after rdma_create_qp: vendor 0x%x "
	      "options 0x%x", r.vendor_id, r.options);
	ack(ev);
	CHECK(rdma_reject(C.pas, NULL, 0) == 0, "reject: errno %d", errno);
	ack(expect(C.ach, RDMA_CM_EVENT_REJECTED, C.act, EV_WAIT));
	rdma_destroy_qp(C.act);
	CHECK(rdma_destroy_id(C.pas) == 0 && rdma_destroy_id(C.act) == 0 &&
	      rdma_destroy_id(C.listen) == 0, "destroy ids");
	memory_close();
	rdma_destroy_event_channel(C.ach);
	rdma_destroy_event_channel(C.pch);
	memset(&C, 0, sizeof(C));
}

/*
 * The listen backlog counts requests not yet handed out, as the kernel's
 * rdma_ucm does (rdma_get_cm_event gives the place back): with a backlog
 * of 1, a second request while the first waits in the channel is rejected
 * (reason 28), and once the first is taken, unanswered, a third finds
 * room. (dpib counted requests until they were answered: a server that
 * takes requests and answers them later turned peers away.)
 */
static void
backlog_counts_requests_not_taken(void)
{
	struct sockaddr_in s = loopback(PORT + 4);
	struct rdma_conn_param p = { .retry_count = 7, .rnr_retry_count = 7,
				     .qp_num = 0x321 };
	struct rdma_cm_id *act[3], *req[2];
	struct rdma_cm_event *ev;
	int i;

	channels_open();
	CHECK(rdma_create_id(C.pch, &C.listen, &C, RDMA_PS_TCP) == 0 &&
	      rdma_bind_addr(C.listen, (struct sockaddr *)&s) == 0 &&
	      rdma_listen(C.listen, 1) == 0, "listener: errno %d", errno);
	for (i = 0; i < 3; i++) {
		active_resolved(PORT + 4);
		act[i] = C.act;
	}
	CHECK(rdma_connect(act[0], &p) == 0, "connect 0: errno %d", errno);
	quiet(C.ach, QUIET_MS);		/* its request waits, not taken */
	CHECK(rdma_connect(act[1], &p) == 0, "connect 1: errno %d", errno);
	ev = expect(C.ach, RDMA_CM_EVENT_REJECTED, act[1], EV_WAIT);
	CHECK(ev->status == CM_REJ_CONSUMER_DEFINED,
	      "past the backlog: status %d, want 28", ev->status);
	ack(ev);
	ev = expect(C.pch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL, EV_WAIT);
	req[0] = ev->id;
	ack(ev);
	CHECK(rdma_connect(act[2], &p) == 0, "connect 2: errno %d", errno);
	ev = expect(C.pch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL, EV_WAIT);
	req[1] = ev->id;
	ack(ev);
	for (i = 0; i < 2; i++)
		CHECK(rdma_reject(req[i], NULL, 0) == 0, "reject %d", i);
	for (i = 0; i < 2; i++)
		ack(expect(C.ach, RDMA_CM_EVENT_REJECTED, act[2 * i], EV_WAIT));
	quiet_both(QUIET_MS);
	for (i = 0; i < 2; i++)
		CHECK(rdma_destroy_id(req[i]) == 0, "destroy request %d", i);
	for (i = 0; i < 3; i++)
		CHECK(rdma_destroy_id(act[i]) == 0, "destroy %d", i);
	CHECK(rdma_destroy_id(C.listen) == 0, "destroy listener");
	rdma_destroy_event_channel(C.ach);
	rdma_destroy_event_channel(C.pch);
	memset(&C, 0, sizeof(C));
}

/*
 * rdma_bind_addr's errors as librdmacm and the kernel give them: no
 * address or one of an unknown family EINVAL (librdmacm's own check); a
 * port taken at the same address EADDRINUSE, where either address is the
 * wildcard EADDRNOTAVAIL (cma_check_port); an address of no device
 * EADDRNOTAVAIL.
 */
static void
bind_errors_as_the_kernel(void)
{
	struct sockaddr_in s = loopback(PORT + 5), any = s, far = s;
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	struct rdma_cm_id *a, *b;

	channels_open();
	CHECK(rdma_create_id(C.pch, &a, NULL, RDMA_PS_TCP) == 0 &&
	      rdma_create_id(C.pch, &b, NULL, RDMA_PS_TCP) == 0, "ids");
	errno = 0;
	CHECK(rdma_bind_addr(a, NULL) == -1 && errno == EINVAL,
	      "no address: errno %d", errno);
	errno = 0;
	CHECK(rdma_bind_addr(a, (struct sockaddr *)&un) == -1 &&
	      errno == EINVAL, "AF_UNIX: errno %d", errno);
	far.sin_addr.s_addr = htonl(0xc0000263);	/* 192.0.2.99 */
	errno = 0;
	CHECK(rdma_bind_addr(a, (struct sockaddr *)&far) == -1 &&
	      errno == EADDRNOTAVAIL, "no device's address: errno %d", errno);
	CHECK(rdma_bind_addr(a, (struct sockaddr *)&s) == 0, "bind: errno %d",
	      errno);
	errno = 0;
	CHECK(rdma_bind_addr(b, (struct sockaddr *)&s) == -1 &&
	      errno == EADDRINUSE, "the same address and port: errno %d",
	      errno);
	any.sin_addr.s_addr = htonl(INADDR_ANY);
	errno = 0;
	CHECK(rdma_bind_addr(b, (struct sockaddr *)&any) == -1 &&
	      errno == EADDRNOTAVAIL, "the wildcard on that port: errno %d",
	      errno);
	CHECK(rdma_destroy_id(a) == 0 && rdma_destroy_id(b) == 0, "destroy");
	rdma_destroy_event_channel(C.ach);
	rdma_destroy_event_channel(C.pch);
	memset(&C, 0, sizeof(C));
}

/* rdma_set_option(@id, @level, @name, @val, @len) fails with @want. */
static void
option_refused(struct rdma_cm_id *id, int level, int name, void *val,
	       size_t len, int want, const char *what)
{
	errno = 0;
	CHECK(rdma_set_option(id, level, name, val, len) == -1 &&
	      errno == want, "%s: errno %d, want %d", what, errno, want);
}

/*
 * rdma_set_option as the kernel's rdma_ucm takes it: an unknown level or
 * name ENOSYS; a wrong length EINVAL; REUSEADDR on in any state but
 * listening and off only before a bind; AFONLY only before the id
 * resolves or listens; ACK_TIMEOUT on RC ids only.
 */
static void
set_option_as_the_kernel(void)
{
	struct sockaddr_in s = loopback(PORT + 6);
	struct rdma_cm_id *id, *ud;
	int on = 1, off = 0;
	uint8_t tos = 0x20, tmo = 14;

	channels_open();
	CHECK(rdma_create_id(C.pch, &id, NULL, RDMA_PS_TCP) == 0 &&
	      rdma_create_id(C.pch, &ud, NULL, RDMA_PS_UDP) == 0, "ids");
	option_refused(id, 99, RDMA_OPTION_ID_TOS, &tos, 1, ENOSYS, "level 99");
	option_refused(id, RDMA_OPTION_ID, 99, &tos, 1, ENOSYS, "name 99");
	option_refused(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &on,
		       sizeof(on), EINVAL, "TOS as an int");
	CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos,
			      1) == 0, "TOS: errno %d", errno);
	option_refused(ud, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &tmo, 1,
		       EINVAL, "ACK timeout of a UDP id");
	CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
			      &tmo, 1) == 0, "ACK timeout: errno %d", errno);
	CHECK(rdma_bind_addr(id, (struct sockaddr *)&s) == 0, "bind: errno %d",
	      errno);
	option_refused(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &off,
		       sizeof(off), EINVAL, "REUSEADDR off once bound");
	CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR,
			      &on, sizeof(on)) == 0, "REUSEADDR on once bound: "
	      "errno %d", errno);
	CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &on,
			      sizeof(on)) == 0, "AFONLY once bound: errno %d",
	      errno);
	CHECK(rdma_listen(id, 1) == 0, "listen: errno %d", errno);
	option_refused(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &on,
		       sizeof(on), EINVAL, "REUSEADDR on a listener");
	option_refused(id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &on,
		       sizeof(on), EINVAL, "AFONLY on a listener");
	CHECK(rdma_destroy_id(id) == 0 && rdma_destroy_id(ud) == 0, "destroy");
	rdma_destroy_event_channel(C.ach);
	rdma_destroy_event_channel(C.pch);
	memset(&C, 0, sizeof(C));
}

/* 239.1.2.@n:7470 as a sockaddr, and its multicast GID. */
static struct sockaddr_in
group(int n, union ibv_gid *gid)
{
	struct sockaddr_in g = { .sin_family = AF_INET,
				 .sin_port = htons(7470) };

	g.sin_addr.s_addr = htonl(0xef010200u | (uint32_t)n);
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = gid->raw[11] = 0xff;
	memcpy(&gid->raw[12], &g.sin_addr, 4);
	return g;
}

/*
 * rdma_join_multicast_ex as librdmacm checks it: reserved comp_mask bits
 * ENOTSUP, no address or no join flags EINVAL. A send-only full member's
 * QP is not attached to the group (it sends and hears nothing of it), a
 * full member's is.
 */
static void
join_multicast_ex_as_librdmacm(void)
{
	struct sockaddr_in s = loopback(PORT + 7);
	struct rdma_cm_join_mc_attr_ex a = { 0 };
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct sockaddr_in g1, g2;
	union ibv_gid m1, m2;
	struct rdma_cm_id *id;

	g1 = group(1, &m1);
	g2 = group(2, &m2);
	channels_open();
	CHECK(rdma_create_id(C.pch, &id, NULL, RDMA_PS_UDP) == 0 &&
	      rdma_bind_addr(id, (struct sockaddr *)&s) == 0, "UDP id: errno %d",
	      errno);
	memory_open(id->verbs);
	ia.send_cq = ia.recv_cq = C.acq;
	CHECK(rdma_create_qp(id, C.pd, &ia) == 0, "UD QP: errno %d", errno);
	a.addr = (struct sockaddr *)&g1;
	a.comp_mask = RDMA_CM_JOIN_MC_ATTR_RESERVED;
	errno = 0;
	CHECK(rdma_join_multicast_ex(id, &a, NULL) == -1 && errno == ENOTSUP,
	      "reserved comp_mask: errno %d", errno);
	a.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS;
	errno = 0;
	CHECK(rdma_join_multicast_ex(id, &a, NULL) == -1 && errno == EINVAL,
	      "no join flags: errno %d", errno);
	a.comp_mask = RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	a.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
	errno = 0;
	CHECK(rdma_join_multicast_ex(id, &a, NULL) == -1 && errno == EINVAL,
	      "no address: errno %d", errno);
	a.comp_mask |= RDMA_CM_JOIN_MC_ATTR_ADDRESS;
	a.join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	CHECK(rdma_join_multicast_ex(id, &a, &C) == 0, "send-only join: "
	      "errno %d", errno);
	ack(expect(C.pch, RDMA_CM_EVENT_MULTICAST_JOIN, id, EV_WAIT));
	a.addr = (struct sockaddr *)&g2;
	a.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
	CHECK(rdma_join_multicast_ex(id, &a, &C) == 0, "full join: errno %d",
	      errno);
	ack(expect(C.pch, RDMA_CM_EVENT_MULTICAST_JOIN, id, EV_WAIT));
	CHECK(ibv_detach_mcast(id->qp, &m1, 0) != 0,
	      "the send-only member's QP was attached");
	CHECK(ibv_detach_mcast(id->qp, &m2, 0) == 0 &&
	      ibv_attach_mcast(id->qp, &m2, 0) == 0,
	      "the full member's QP was not attached");
	CHECK(rdma_leave_multicast(id, (struct sockaddr *)&g1) == 0 &&
	      rdma_leave_multicast(id, (struct sockaddr *)&g2) == 0, "leave");
	rdma_destroy_qp(id);
	CHECK(rdma_destroy_id(id) == 0, "destroy");
	memory_close();
	rdma_destroy_event_channel(C.ach);
	rdma_destroy_event_channel(C.pch);
	memset(&C, 0, sizeof(C));
}

/* An event thread that takes the next event and holds it 300 ms. */
static struct {
	struct rdma_event_channel *ch;
	volatile int took, acked;
} holder;

static void *
hold_event(void *arg)
{
	struct rdma_cm_event *ev;

	(void)arg;
	CHECK(rdma_get_cm_event(holder.ch, &ev) == 0, "get_cm_event");
	holder.took = 1;
	usleep(300000);
	holder.acked = 1;
	rdma_ack_cm_event(ev);
	return NULL;
}

/*
 * rdma_destroy_id returns once the events it handed out for the id are
 * acknowledged, as librdmacm's does: a main thread destroying the id
 * whose DISCONNECTED an event thread still handles (rping) waits for the
 * ack instead of freeing the id under it. A thread that destroys an id
 * whose event it holds itself would wait for ever there; dpib goes on
 * after 2 s.
 */
static void
destroy_waits_for_acks(void)
{
	struct sockaddr_in d = loopback(PORT);
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	pthread_t t;
	double t0, took;

	ack(requested(PORT + 3, NULL));
	qp_on(C.pas, NULL);
	CHECK(rdma_accept(C.pas, NULL) == 0, "rdma_accept: errno %d", errno);
	ack(expect(C.ach, RDMA_CM_EVENT_ESTABLISHED, C.act, EV_WAIT));
	ack(expect(C.pch, RDMA_CM_EVENT_ESTABLISHED, C.pas, EV_WAIT));
	read_over(11);	/* cm_dissect: a request between RTU and DREQ */
	holder.ch = C.pch;
	holder.took = holder.acked = 0;
	CHECK(pthread_create(&t, NULL, hold_event, NULL) == 0, "thread");
	CHECK(rdma_disconnect(C.act) == 0, "disconnect: errno %d", errno);
	t0 = check_now();
	while (!holder.took && check_now() < t0 + 5)
		usleep(1000);
	CHECK(holder.took, "no DISCONNECTED for the event thread");
	rdma_destroy_qp(C.pas);
	t0 = check_now();
	CHECK(rdma_destroy_id(C.pas) == 0, "destroy passive id");
	took = check_now() - t0;
	CHECK(holder.acked, "destroy returned %.3f s in, before the event "
	      "thread acknowledged the id's event", took);
	pthread_join(t, NULL);
	/* Its own unacknowledged event: bounded (a channel of its own: the
	 * active side's DISCONNECTED may still come on C.ach).
	 */
	ch = rdma_create_event_channel();
	CHECK(ch != NULL && rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0,
	      "id");
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000) == 0,
	      "resolve_addr: errno %d", errno);
	ev = expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, id, EV_WAIT);
	t0 = check_now();
	CHECK(rdma_destroy_id(id) == 0, "destroy with its event held");
	took = check_now() - t0;
	CHECK(took > 1.5 && took < 5, "destroy with its own event held took "
	      "%.2f s, want about 2", took);
	ack(ev);
	rdma_destroy_event_channel(ch);
	rdma_destroy_qp(C.act);
	CHECK(rdma_destroy_id(C.act) == 0 && rdma_destroy_id(C.listen) == 0,
	      "destroy ids");
	memory_close();
	rdma_destroy_event_channel(C.ach);
	rdma_destroy_event_channel(C.pch);
	memset(&C, 0, sizeof(C));
}

/*
 * An event not yet taken dies with its id (the kernel's ucma frees them
 * in rdma_destroy_id): the channel's fd no longer polls readable, and
 * rdma_get_cm_event would not find it.
 */
static void
destroyed_id_takes_its_events(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in d = loopback(PORT);
	struct pollfd p;
	struct rdma_cm_id *id;

	CHECK(ch != NULL, "channel");
	CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0, "id");
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000) == 0,
	      "resolve_addr: errno %d", errno);
	p = (struct pollfd){ .fd = ch->fd, .events = POLLIN };
	CHECK(poll(&p, 1, (int)(EV_WAIT * 1000)) == 1, "no event");
	CHECK(rdma_destroy_id(id) == 0, "destroy");
	/* Not blocking, should the library still count the event. */
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	CHECK(poll(&p, 1, 0) == 0, "fd readable with no event to take");
	rdma_destroy_event_channel(ch);
}

/*
 * rping 44's event thread, handling the last event while its main thread
 * destroys the channel, calls rdma_get_cm_event on it once more. That
 * call must not read the freed channel (a crash when the process exits,
 * seen under MALLOC_PERTURB_): it sleeps, as a blocked read on a closed
 * rdma_cm fd returns no event, and the process ends around it.
 */
static int late_returned;

static void *
late_waiter(void *arg)
{
	struct rdma_cm_event *ev;

	rdma_get_cm_event(arg, &ev);
	__atomic_store_n(&late_returned, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void
get_event_on_destroyed_channel_sleeps(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in d = loopback(PORT);
	struct rdma_cm_id *id;
	pthread_t t;

	CHECK(ch != NULL, "channel");
	CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0, "id");
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000) == 0,
	      "resolve_addr: errno %d", errno);
	usleep(100 * 1000);	/* its event queued */
	CHECK(rdma_destroy_id(id) == 0, "destroy id");
	rdma_destroy_event_channel(ch);
	/* Whatever malloc does with freed memory now, it has done. */
	free(malloc(96));
	free(malloc(128));
	CHECK(pthread_create(&t, NULL, late_waiter, ch) == 0, "thread");
	pthread_detach(t);
	usleep(200 * 1000);
	CHECK(!__atomic_load_n(&late_returned, __ATOMIC_ACQUIRE),
	      "rdma_get_cm_event returned on a destroyed channel");
}

/* ---- reject ------------------------------------------------------------ */

/* IBA 12.6.7 Table 103: a REQ for a service nobody offers gets a REJ
 * with reason 8 (invalid service ID), as Linux's ib_cm sends it.
 */
static void
rejected_without_listener(void)
{
	struct rdma_cm_event *ev;

	channels_open();
	active_resolved(PORT_NONE);
	memory_open(C.act->verbs);
	qp_on(C.act, C.acq);
	connect_active();
	ev = expect(C.ach, RDMA_CM_EVENT_REJECTED, C.act, EV_WAIT);
	CHECK(ev->status == CM_REJ_INVALID_SERVICE_ID, "status %d, want 8",
	      ev->status);
	ack(ev);
	quiet_both(QUIET_MS);
	rdma_destroy_qp(C.act);
	CHECK(rdma_destroy_id(C.act) == 0, "destroy");
	C.act = NULL;
}

/* A request answered by rdma_reject: REJ reason 28 (consumer defined)
 * with its private data; no event on the passive side.
 */
static void
rejected_by_rdma_reject_with_pdata(void)
{
	struct rdma_cm_event *ev;

	listen_on(PORT);
	active_resolved(PORT);
	qp_on(C.act, C.acq);
	connect_active();
	ev = expect(C.pch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL, EV_WAIT);
	C.pas = ev->id;
	ack(ev);
	CHECK(rdma_reject(C.pas, "no", 2) == 0, "rdma_reject: errno %d", errno);
	ev = expect(C.ach, RDMA_CM_EVENT_REJECTED, C.act, EV_WAIT);
	CHECK(ev->status == CM_REJ_CONSUMER_DEFINED, "status %d, want 28",
	      ev->status);
	CHECK(ev->param.conn.private_data != NULL &&
	      ev->param.conn.private_data_len >= 2, "private data: %u bytes",
	      ev->param.conn.private_data_len);
	CHECK(memcmp(ev->param.conn.private_data, "no", 2) == 0,
	      "private data \"%.2s\"",
	      (const char *)ev->param.conn.private_data);
	ack(ev);
	quiet_both(QUIET_MS);
	CHECK(rdma_accept(C.pas, NULL) != 0, "accepted after rejecting");
	CHECK(rdma_destroy_id(C.pas) == 0, "destroy request");
	rdma_destroy_qp(C.act);
	CHECK(rdma_destroy_id(C.act) == 0, "destroy");
	quiet_both(QUIET_MS);
}

/* A request id destroyed unanswered rejects (28), as ib_cm_destroy_id. */
static void
rejected_by_destroying_request(void)
{
	struct rdma_cm_event *ev;

	active_resolved(PORT);
	qp_on(C.act, C.acq);
	connect_active();
	ev = expect(C.pch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL, EV_WAIT);
	C.pas = ev->id;
	ack(ev);
	CHECK(rdma_destroy_id(C.pas) == 0, "destroy request");
	ev = expect(C.ach, RDMA_CM_EVENT_REJECTED, C.act, EV_WAIT);
	CHECK(ev->status == CM_REJ_CONSUMER_DEFINED, "status %d, want 28",
	      ev->status);
	ack(ev);
	quiet_both(QUIET_MS);
	rdma_destroy_qp(C.act);
	CHECK(rdma_destroy_id(C.act) == 0, "destroy");
	CHECK(rdma_destroy_id(C.listen) == 0, "destroy listener");
	memory_close();
	rdma_destroy_event_channel(C.ach);
	rdma_destroy_event_channel(C.pch);
	memset(&C, 0, sizeof(C));
}

/* ---- unreachable ------------------------------------------------------- */

/*
 * Every REQ lost (DPIB_CM_LOSE=REQ=1000, DPIB_CM_TIMEOUT=10: a resend
 * every 8.4 ms, 15 of them): UNREACHABLE with -ETIMEDOUT, in well under
 * a second, and nothing reached the listener.
 */
static void
unreachable_when_every_req_is_lost(void)
{
	struct rdma_cm_event *ev;
	double t0;

	channels_open();
	listen_on(PORT);
	active_resolved(PORT);
	memory_open(C.act->verbs);
	qp_on(C.act, C.acq);
	t0 = check_now();
	connect_active();
	ev = expect(C.ach, RDMA_CM_EVENT_UNREACHABLE, C.act, EV_WAIT);
	printf("# UNREACHABLE after %.0f ms\n", (check_now() - t0) * 1000);
	CHECK(ev->status == -ETIMEDOUT, "status %d, want -ETIMEDOUT",
	      ev->status);
	ack(ev);
	quiet_both(QUIET_MS);
	rdma_destroy_qp(C.act);
	CHECK(rdma_destroy_id(C.act) == 0, "destroy");
	CHECK(rdma_destroy_id(C.listen) == 0, "destroy listener");
	memory_close();
}

/* rdma_resolve_addr to @ip: ADDR_ERROR (not a hang) within @ms + 1 s. */
static void
addr_error(const char *ip, int ms)
{
	struct sockaddr_in d = loopback(PORT);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	double t0 = check_now(), took;

	CHECK(inet_pton(AF_INET, ip, &d.sin_addr) == 1, "%s", ip);
	CHECK(rdma_create_id(C.ach, &id, NULL, RDMA_PS_TCP) == 0, "id");
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, ms) == 0,
	      "resolve_addr %s: errno %d", ip, errno);
	ev = expect(C.ach, RDMA_CM_EVENT_ADDR_ERROR, id, ms / 1000.0 + 1.0);
	took = check_now() - t0;
	printf("# %s: ADDR_ERROR %d after %.0f ms\n", ip, ev->status,
	       took * 1000);
	CHECK(ev->status < 0, "status %d", ev->status);
	ack(ev);
	quiet(C.ach, QUIET_MS);
	CHECK(rdma_destroy_id(id) == 0, "destroy");
}

/* Another loopback address: no ARP answers for 127/8 but our own. */
static void
addr_error_for_other_loopback_address(void)
{
	addr_error("127.0.0.9", 1000);
}

/* A host ARP asks for and nobody answers: the error at the timeout
 * (-ETIMEDOUT) or when the neighbour gives up (-EHOSTUNREACH).
 */
static void
addr_error_for_silent_host(void)
{
	addr_error("192.0.2.9", 300);
	rdma_destroy_event_channel(C.ach);
	rdma_destroy_event_channel(C.pch);
	memset(&C, 0, sizeof(C));
}

/* ---- forged ---------------------------------------------------------- */

/* A UD SEND ONLY to QP 1 from 127.0.0.1's QP 1 carrying @mad. */
static uint32_t
mad_frame(uint8_t *f, const uint8_t *mad, uint32_t len, uint32_t qkey)
{
	static uint32_t psn = 1000;
	uint8_t deth[8];
	uint32_t v = htonl(qkey);

	memcpy(deth, &v, 4);
	v = htonl(1);
	memcpy(deth + 4, &v, 4);
	return frame(f, htonl(INADDR_LOOPBACK), UD_SEND_ONLY, 1, psn++, deth,
		     sizeof(deth), mad, len);
}

/* The comm IDs of the connection: its last REQ and REP in the capture. */
static void
comm_ids_from_capture(void)
{
	struct pcap_file pf;
	const uint8_t *d;
	uint32_t len;
	struct cm_req req;
	struct cm_rep rep;
	int have_req = 0, have_rep = 0;

	CHECK(pcap_open(&pf, capture) == 0, "open %s", capture);
	while (pcap_next(&pf, &d, &len) == 1) {
		const uint8_t *udp = d + 14 + 20, *bth = udp + 8;
		const uint8_t *mad = bth + 12 + 8;

		if (len < 14 + 20 + 8 + 12 + 8 + CM_MAD_LEN || d[12] != 0x08 ||
		    d[13] != 0 || d[14 + 9] != IPPROTO_UDP ||
		    (udp[2] << 8 | udp[3]) != 4791 || bth[0] != UD_SEND_ONLY ||
		    (bth[5] << 16 | bth[6] << 8 | bth[7]) != 1 ||
		    mad[1] != CM_MGMT_CLASS)
			continue;
		if (cm_mad_attr_id(mad) == CM_ATTR_REQ) {
			cm_req_unpack(mad, &req);
			have_req = 1;
		} else if (cm_mad_attr_id(mad) == CM_ATTR_REP) {
			cm_rep_unpack(mad, &rep);
			have_rep = 1;
		}
	}
	pcap_close(&pf);
	CHECK(have_req && have_rep, "capture: REQ %d, REP %d", have_req,
	      have_rep);
	CHECK(rep.remote_comm_id == req.local_comm_id, "REP answers the REQ");
	C.act_comm_id = req.local_comm_id;
	C.pas_comm_id = rep.local_comm_id;
	CHECK(C.act_comm_id != 0 && C.pas_comm_id != 0 &&
	      C.act_comm_id != C.pas_comm_id, "comm IDs %#x %#x",
	      C.act_comm_id, C.pas_comm_id);
}

static uint64_t
cm_drops(void)
{
	return dpib_cm_dropped(DROP_HDR) + dpib_cm_dropped(DROP_MATCH) +
	       dpib_cm_dropped(DROP_BODY) + dpib_cm_dropped(DROP_ATTR);
}

/*
 * Inject @mad (@len bytes, Q_Key @qkey) and see it dropped: by the HCA
 * (device counter @hca, the CM never sees it) or by the CM (cause @why,
 * @n MADs: what it answers may come back to it). Then no event on either
 * side and the connection still carries a SEND.
 */
static void
forge_n(const uint8_t *mad, uint32_t len, uint32_t qkey, const char *hca,
	int why, uint64_t n)
{
	struct pair p = { .ctx = C.act->verbs, .cq = { C.acq, C.acq } };
	uint64_t dev0 = hca != NULL ? dev_counter(p.ctx, hca) : 0;
	uint64_t cm0 = cm_drops(), why0 = why >= 0 ? dpib_cm_dropped(why) : 0;
	double end = check_now() + WAIT;
	uint8_t f[1024];

	inject_sync(&p, f, mad_frame(f, mad, len, qkey));
	if (hca != NULL) {
		CHECK(dev_counter(p.ctx, hca) == dev0 + 1, "%s: %" PRIu64
		      " -> %" PRIu64, hca, dev0, dev_counter(p.ctx, hca));
		quiet_both(50);
		CHECK(cm_drops() == cm0, "the CM saw a MAD the HCA dropped");
	} else {
		while (dpib_cm_dropped(why) < why0 + n && check_now() < end)
			usleep(1000);
		CHECK(dpib_cm_dropped(why) >= why0 + n, "dpib_cm_dropped(%d): "
		      "%" PRIu64 " -> %" PRIu64 ", want +%" PRIu64, why, why0,
		      dpib_cm_dropped(why), n);
		quiet_both(50);
	}
	send_over(C.act, C.pas, (uint32_t)cm_drops());
}

static void
forge(const uint8_t *mad, uint32_t len, uint32_t qkey, const char *hca,
      int why)
{
	forge_n(mad, len, qkey, hca, why, 1);
}

/* An RTU of the connection (IDs as the active side sends it), packed. */
static void
rtu_mad(uint8_t *mad, uint32_t local, uint32_t remote)
{
	struct cm_rtu m = { .local_comm_id = local, .remote_comm_id = remote };

	cm_rtu_pack(&m, 0x1234, mad);
}

static void
dreq_mad(uint8_t *mad, uint32_t local, uint32_t remote)
{
	struct cm_dreq m = { .local_comm_id = local, .remote_comm_id = remote };

	cm_dreq_pack(&m, 0x1235, mad);
}

static void
rep_mad(uint8_t *mad, uint32_t local, uint32_t remote)
{
	struct cm_rep m = { .local_comm_id = local, .remote_comm_id = remote,
			    .local_qpn = 0x99, .starting_psn = 7 };

	cm_rep_pack(&m, 0x1236, mad);
}

/* An ESTABLISHED connection as in "connect", its comm IDs learned. */
static void
forged_setup(void)
{
	listen_and_resolve();
	connect_request_carries_pdata_and_swapped_resources();
	established_once_each_side();
	comm_ids_from_capture();
}

/* IBA 13.4.2: a MAD is 256 bytes; a shorter one is the HCA's to drop. */
static void
forged_truncated_mad_dropped_by_hca(void)
{
	uint8_t mad[CM_MAD_LEN];

	dreq_mad(mad, C.pas_comm_id, C.act_comm_id);
	forge(mad, 100, GSI_QKEY, "rx_drop_gsi_bad_mad", -1);
}

/* QP 1 has an agent for the CM class alone (Performance class here). */
static void
forged_other_class_dropped_by_hca(void)
{
	uint8_t mad[CM_MAD_LEN];

	dreq_mad(mad, C.pas_comm_id, C.act_comm_id);
	mad[1] = 0x04;
	forge(mad, CM_MAD_LEN, GSI_QKEY, "rx_drop_gsi_unknown_class", -1);
}

/* C10-15: a datagram with another Q_Key is dropped, though it carries a
 * DREQ with the connection's own IDs.
 */
static void
forged_bad_qkey_dropped_by_hca(void)
{
	uint8_t mad[CM_MAD_LEN];

	dreq_mad(mad, C.pas_comm_id, C.act_comm_id);
	forge(mad, CM_MAD_LEN, GSI_QKEY + 1, "rx_drop_bad_qkey", -1);
}

/* A CM MAD of class version 1 or of method Get: the CM's header check
 * drops it, though it is a DREQ with the connection's own IDs.
 */
static void
forged_header_dropped_by_cm(void)
{
	uint8_t mad[CM_MAD_LEN];

	dreq_mad(mad, C.pas_comm_id, C.act_comm_id);
	mad[2] = 1;
	forge(mad, CM_MAD_LEN, GSI_QKEY, NULL, DROP_HDR);
	dreq_mad(mad, C.pas_comm_id, C.act_comm_id);
	mad[3] = 0x01;
	forge(mad, CM_MAD_LEN, GSI_QKEY, NULL, DROP_HDR);
}

/* A REP for a REQ never sent: to no id, to the passive id (it sent no
 * REQ), to the active id from another connection.
 */
static void
forged_rep_for_no_req(void)
{
	uint8_t mad[CM_MAD_LEN];

	rep_mad(mad, 0x5eed, C.act_comm_id ^ 0x5a5a5a5a);
	forge(mad, CM_MAD_LEN, GSI_QKEY, NULL, DROP_MATCH);
	rep_mad(mad, 0x5eed, C.pas_comm_id);
	forge(mad, CM_MAD_LEN, GSI_QKEY, NULL, DROP_MATCH);
	rep_mad(mad, C.pas_comm_id ^ 0x5a5a5a5a, C.act_comm_id);
	forge(mad, CM_MAD_LEN, GSI_QKEY, NULL, DROP_MATCH);
}

/*
 * DREQ, REJ, RTU, DREP and MRA naming our id (its local comm ID right)
 * but coming from another connection (the remote comm ID wrong): IBA
 * 12.9.7, the connection is not the sender's to end or change.
 */
static void
forged_wrong_remote_comm_id(void)
{
	uint32_t bad_pas = C.pas_comm_id ^ 0x5a5a5a5a;
	uint32_t bad_act = C.act_comm_id ^ 0x5a5a5a5a;
	uint8_t mad[CM_MAD_LEN];
	struct cm_rej rej = { .local_comm_id = bad_pas,
			      .remote_comm_id = C.act_comm_id,
			      .reason = CM_REJ_CONSUMER_DEFINED };
	struct cm_drep drep = { .local_comm_id = bad_pas,
				.remote_comm_id = C.act_comm_id };
	struct cm_mra mra = { .local_comm_id = bad_act,
			      .remote_comm_id = C.pas_comm_id,
			      .message_mraed = CM_MRA_REP,
			      .service_timeout = 20 };

	/* IBA 12.9.7: an unknown DREQ still gets its DREP, which comes back
	 * here to an id that does not exist either.
	 */
	dreq_mad(mad, bad_pas, C.act_comm_id);
	forge_n(mad, CM_MAD_LEN, GSI_QKEY, NULL, DROP_MATCH, 2);
	dreq_mad(mad, bad_act, C.pas_comm_id);
	forge_n(mad, CM_MAD_LEN, GSI_QKEY, NULL, DROP_MATCH, 2);
	cm_rej_pack(&rej, 0x1237, mad);
	forge(mad, CM_MAD_LEN, GSI_QKEY, NULL, DROP_MATCH);
	rej.local_comm_id = bad_act;
	rej.remote_comm_id = C.pas_comm_id;
	cm_rej_pack(&rej, 0x1238, mad);
	forge(mad, CM_MAD_LEN, GSI_QKEY, NULL, DROP_MATCH);
	rtu_mad(mad, bad_act, C.pas_comm_id);
	forge(mad, CM_MAD_LEN, GSI_QKEY, NULL, DROP_MATCH);
	cm_drep_pack(&drep, 0x1239, mad);
	forge(mad, CM_MAD_LEN, GSI_QKEY, NULL, DROP_MATCH);
	cm_mra_pack(&mra, 0x123a, mad);
	forge(mad, CM_MAD_LEN, GSI_QKEY, NULL, DROP_MATCH);
}

/* LAP (path migration) is not supported: counted, nothing changes. */
static void
forged_lap_unsupported(void)
{
	uint8_t mad[CM_MAD_LEN];

	rtu_mad(mad, C.act_comm_id, C.pas_comm_id);
	mad[16] = CM_ATTR_LAP >> 8;
	mad[17] = CM_ATTR_LAP & 0xff;
	forge(mad, CM_MAD_LEN, GSI_QKEY, NULL, DROP_ATTR);
}

/* After all that, the connection still ends as it should. */
static void
forged_connection_still_ends_cleanly(void)
{
	write_over(6);
	disconnect_once_each_side();
	timewait_exit_once_each_side();
	destroy_brings_no_event();
}

/* ---- rxe ----------------------------------------------------------------- */

/*
 * Linux's rdma_cm as the peer (DPIB_CONF=tests/conf/rxe_peer.conf: the
 * device is 10.77.0.2 at IB MTU 1024). The peer's MADs are those of a real
 * rxe connection, $DPIB_SHARED/vectors/rxe/rdma_cm.pcap, in which
 * 10.77.0.3 connects to 10.77.0.2: injected as captured, or with only what
 * names the connection patched (comm IDs, TID, QPN, then the IPv4 checksum
 * and the ICRC). What dpib sends is read off its capture and held against
 * what rxe sent in its place, field by field (IBA 12.6).
 */
#define RXE_ME		"10.77.0.2"
#define RXE_PEER	"10.77.0.3"
#define RXE_PORT	7174		/* the REQ's service ID 0x1061c06 */
#define RXE_PEER_PORT	0xa9ae		/* its REQ's RDMA-CM header */
#define RXE_PEER_QPN	0x4b		/* both rxe QPs were 0x4b */
#define RXE_REQ_ID	0xea321458u	/* 10.77.0.3's comm ID */
#define RXE_REP_ID	0x8aef1e7cu	/* 10.77.0.2's */
#define BTH_OFF		(14 + 20 + 8)		/* Ethernet, IPv4, UDP */
#define MAD_OFF		(BTH_OFF + 12 + 8)	/* BTH, DETH */
#define MAD_DATA	(MAD_OFF + CM_MAD_HDR_LEN)
#define CM_IP_HDR_LEN	36	/* RDMA-CM's header in a REQ's private data */
#define FRAME_MAX	512

static const uint8_t rxe_peer_mac[6] = { 0x52, 0x54, 0x00, 0x77, 0x00, 0x03 };

/* A frame of the vector or of dpib's capture */
struct eth_frame {
	uint8_t f[FRAME_MAX];
	uint32_t len;
};

/*
 * How a connected QP numbers its packets. Linux's ib_cm gives each side's
 * send queue the starting PSN its peer stated and states in its own
 * message the PSN it expects (ib_send_cm_req: rq_psn = the REQ's;
 * cm_req_handler: sq_psn = the REQ's; ib_send_cm_rep: rq_psn = the REP's;
 * cm_rep_handler: sq_psn = the REP's): in the capture 10.77.0.3, the
 * active side, sends from the REP's PSN 0x3893b0 (frame 4) and 10.77.0.2
 * from the REQ's 0x618b54 (frame 6).
 */
struct psn_use {
	uint32_t want_sq, want_rq;	/* Linux's: the peer's stated, ours */
	uint32_t sq_psn, rq_psn;	/* the QP's once connected */
	uint32_t sent_psn;		/* our first SEND's */
	int received;			/* rxe's SEND from want_rq arrived */
	int acked;			/* ours completed at rxe's ACK */
};

static struct {
	struct eth_frame req, rep, rtu, dreq, drep;	/* rxe's, as captured */
	struct eth_frame send, ack;	/* rxe's frames 4 (SEND) and 9 (ACK) */
	struct eth_frame our_req, our_rep;	/* dpib's, for the tables */
	struct psn_use pas, act;	/* dpib's passive and active QPs */
	int req_bad, rep_bad;		/* fields differing where they agree */
	uint64_t drops;			/* dpib_cm_dropped before the run */
	uint32_t act_id;		/* dpib's comm ID as the active side */
	uint64_t act_tid;		/* its REQ's TID */
	uint8_t ack_delay;		/* the device's local_ca_ack_delay */
} R;

static uint32_t
be32_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

static uint32_t
be24_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | p[1] << 8 | p[2];
}

static void
be24_put(uint8_t *p, uint32_t v)
{
	p[0] = v >> 16;
	p[1] = v >> 8;
	p[2] = v;
}

static void
be32_put(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static void
tid_put(uint8_t *mad, uint64_t tid)
{
	be32_put(mad + 8, (uint32_t)(tid >> 32));
	be32_put(mad + 12, (uint32_t)tid);
}

/* The attribute ID of the CM MAD in @f, or 0 when it carries none. */
static uint16_t
cm_attr_of(const uint8_t *f, uint32_t len)
{
	const uint8_t *ip = f + 14, *udp = ip + 20, *bth = f + BTH_OFF;

	if (len < MAD_OFF + CM_MAD_LEN + 4 || f[12] != 0x08 || f[13] != 0 ||
	    ip[9] != IPPROTO_UDP || (udp[2] << 8 | udp[3]) != 4791 ||
	    bth[0] != UD_SEND_ONLY || (bth[5] << 16 | bth[6] << 8 | bth[7]) != 1 ||
	    f[MAD_OFF + 1] != CM_MGMT_CLASS)
		return 0;
	return cm_mad_attr_id(f + MAD_OFF);
}

/* 1 when @f carries the ICRC (IBA A17.4.5.2) ib_icrc computes. */
static int
icrc_ok(const uint8_t *f)
{
	const uint8_t *ip = f + 14;
	uint32_t iplen = (uint32_t)(ip[2] << 8 | ip[3]), stored;

	memcpy(&stored, ip + iplen - 4, 4);
	return rte_le_to_cpu_32(stored) == ib_icrc(ip, iplen - 4);
}

/* After a patch: the IPv4 header checksum and the ICRC again. */
static void
frame_seal(struct eth_frame *m)
{
	uint8_t *ip = m->f + 14;
	uint32_t iplen = (uint32_t)(ip[2] << 8 | ip[3]), sum = 0, crc, i;

	ip[10] = ip[11] = 0;
	for (i = 0; i < 20; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	ip[10] = (uint8_t)(~sum >> 8);
	ip[11] = (uint8_t)~sum;
	crc = rte_cpu_to_le_32(ib_icrc(ip, iplen - 4));
	memcpy(ip + iplen - 4, &crc, 4);
	CHECK(icrc_ok(m->f), "sealed frame's ICRC");
}

/* A frame 10.77.0.2 sent, as though 10.77.0.3 had sent it to 10.77.0.2:
 * dpib stands where 10.77.0.2 stood, so its peer answers from there.
 */
static void
frame_reverse(struct eth_frame *m)
{
	uint8_t t[6], *ip = m->f + 14;

	memcpy(t, m->f, 6);
	memcpy(m->f, m->f + 6, 6);
	memcpy(m->f + 6, t, 6);
	memcpy(t, ip + 12, 4);
	memcpy(ip + 12, ip + 16, 4);
	memcpy(ip + 16, t, 4);
}

/* The first frame of the vector carrying a MAD of @attr, and its number. */
static uint32_t
vector_mad(const char *path, uint16_t attr, struct eth_frame *m)
{
	struct pcap_file pf;
	const uint8_t *d;
	uint32_t len, n = 0;
	int ret;

	ret = pcap_open(&pf, path);
	CHECK(ret == 0, "%s: %s", path, strerror(-ret));
	CHECK(pf.linktype == PCAP_LINKTYPE_ETHERNET, "linktype %u", pf.linktype);
	while ((ret = pcap_next(&pf, &d, &len)) == 1) {
		n++;
		if (cm_attr_of(d, len) != attr)
			continue;
		CHECK(len <= FRAME_MAX, "frame %u: %u bytes", n, len);
		memcpy(m->f, d, len);
		m->len = len;
		pcap_close(&pf);
		return n;
	}
	CHECK(ret == 0, "%s: cut short", path);
	pcap_close(&pf);
	CHECK(0, "%s: no %s", path, cm_attr_name(attr));
	return 0;
}

/* Frame @n (from 1) of the vector. */
static void
vector_frame(const char *path, uint32_t n, struct eth_frame *m)
{
	struct pcap_file pf;
	const uint8_t *d;
	uint32_t len, i;

	CHECK(pcap_open(&pf, path) == 0, "%s", path);
	for (i = 0; i < n; i++)
		CHECK(pcap_next(&pf, &d, &len) == 1, "%s: no frame %u", path, n);
	CHECK(len <= FRAME_MAX, "frame %u: %u bytes", n, len);
	memcpy(m->f, d, len);
	m->len = len;
	pcap_close(&pf);
}

/*
 * The first MAD of @attr dpib sent (its capture), waited for. Each kind
 * leaves in one direction only in this scenario: the first is the one.
 */
static void
sent_mad(uint16_t attr, struct eth_frame *m)
{
	double end = check_now() + EV_WAIT;
	struct pcap_file pf;
	const uint8_t *d;
	uint32_t len;

	for (;;) {
		CHECK(pcap_open(&pf, capture) == 0, "open %s", capture);
		while (pcap_next(&pf, &d, &len) == 1) {
			if (cm_attr_of(d, len) != attr)
				continue;
			memcpy(m->f, d, len);
			m->len = len;
			pcap_close(&pf);
			return;
		}
		pcap_close(&pf);
		CHECK(check_now() < end, "dpib sent no %s within %.0f s",
		      cm_attr_name(attr), EV_WAIT);
		usleep(10000);
	}
}

/*
 * dpib's MAD went out as rxe's (@theirs, the same message) did: to the
 * peer's MAC and address from 10.77.0.2, UDP 4791, DF, TTL 64, not
 * ECN-capable; BTH SEND ONLY, P_Key 0xFFFF, QP 1; DETH Q_Key
 * 0x80010000 from QP 1 (IBA 13.5.1); a 256-byte MAD whose common header
 * (IBA 13.4.2) is rxe's but for the transaction ID; a correct ICRC.
 */
static void
envelope_as_rxe(const struct eth_frame *ours, const struct eth_frame *theirs)
{
	const uint8_t *ip = ours->f + 14, *udp = ip + 20, *bth = udp + 8;
	const uint8_t *tip = theirs->f + 14, *tbth = tip + 28;
	struct sockaddr_in me = { 0 }, peer = { 0 };

	inet_pton(AF_INET, RXE_ME, &me.sin_addr);
	inet_pton(AF_INET, RXE_PEER, &peer.sin_addr);
	CHECK(memcmp(ours->f, rxe_peer_mac, 6) == 0,
	      "destination MAC %02x:%02x:%02x:%02x:%02x:%02x, not the peer's",
	      ours->f[0], ours->f[1], ours->f[2], ours->f[3], ours->f[4],
	      ours->f[5]);
	CHECK(memcmp(ip + 12, &me.sin_addr, 4) == 0 &&
	      memcmp(ip + 16, &peer.sin_addr, 4) == 0,
	      "not from " RXE_ME " to " RXE_PEER);
	CHECK(ours->len == theirs->len, "%u bytes, rxe's %u", ours->len,
	      theirs->len);
	CHECK(ip[1] == tip[1] && ip[6] == tip[6] && ip[8] == tip[8],
	      "IPv4 TOS %#x flags %#x TTL %u, rxe's %#x %#x %u", ip[1], ip[6],
	      ip[8], tip[1], tip[6], tip[8]);
	CHECK((udp[2] << 8 | udp[3]) == 4791, "UDP port");
	CHECK(memcmp(bth, tbth, 8) == 0 && (bth[8] & 0x7f) == 0,
	      "BTH %02x %02x %02x%02x %02x%02x%02x%02x, rxe's "
	      "%02x %02x %02x%02x %02x%02x%02x%02x", bth[0], bth[1], bth[2],
	      bth[3], bth[4], bth[5], bth[6], bth[7], tbth[0], tbth[1],
	      tbth[2], tbth[3], tbth[4], tbth[5], tbth[6], tbth[7]);
	/* rxe sets AckReq on every last packet, UD too; no UD responder
	 * acknowledges, whatever the bit says: either is right.
	 */
	if ((bth[8] ^ tbth[8]) & 0x80)
		printf("# %s: BTH AckReq %u, rxe's %u\n",
		       cm_attr_name(cm_mad_attr_id(ours->f + MAD_OFF)),
		       bth[8] >> 7, tbth[8] >> 7);
	CHECK(be32_at(bth + 12) == GSI_QKEY && be32_at(bth + 16) == 1,
	      "DETH Q_Key %#x source QP %#x", be32_at(bth + 12),
	      be32_at(bth + 16));
	CHECK(memcmp(ours->f + MAD_OFF, theirs->f + MAD_OFF, 8) == 0 &&
	      memcmp(ours->f + MAD_OFF + 16, theirs->f + MAD_OFF + 16, 8) == 0,
	      "MAD common header differs from rxe's");
	CHECK(icrc_ok(ours->f), "ICRC");
}

/*
 * @ours and @theirs, two MADs of one kind, are the same bytes - reserved
 * fields, private data and all - but for the transaction ID unless
 * @same_tid, and the @n bytes at MAD data offset @off.
 */
static void
mad_same_but(const struct eth_frame *ours, const struct eth_frame *theirs,
	     int same_tid, uint32_t off, uint32_t n)
{
	uint8_t a[CM_MAD_LEN], b[CM_MAD_LEN];
	uint32_t i;

	memcpy(a, ours->f + MAD_OFF, CM_MAD_LEN);
	memcpy(b, theirs->f + MAD_OFF, CM_MAD_LEN);
	if (!same_tid) {
		memset(a + 8, 0, 8);
		memset(b + 8, 0, 8);
	}
	memset(a + CM_MAD_HDR_LEN + off, 0, n);
	memset(b + CM_MAD_HDR_LEN + off, 0, n);
	for (i = 0; i < CM_MAD_LEN && a[i] == b[i]; i++)
		;
	CHECK(i == CM_MAD_LEN, "%s: byte %u of the MAD is %#x, rxe's %#x",
	      cm_attr_name(cm_mad_attr_id(a)), i, a[i], b[i]);
}

static struct sockaddr_in
ipv4(const char *ip, uint16_t port)
{
	struct sockaddr_in s = { .sin_family = AF_INET,
				 .sin_port = htons(port) };

	CHECK(inet_pton(AF_INET, ip, &s.sin_addr) == 1, "%s", ip);
	return s;
}

static void
is_addr(const struct sockaddr *sa, const char *ip, uint16_t port,
	const char *what)
{
	const struct sockaddr_in *s = (const struct sockaddr_in *)sa;
	char buf[INET_ADDRSTRLEN] = "?";

	CHECK(sa->sa_family == AF_INET, "%s: family %d", what, sa->sa_family);
	inet_ntop(AF_INET, &s->sin_addr, buf, sizeof(buf));
	CHECK(strcmp(buf, ip) == 0 && ntohs(s->sin_port) == port,
	      "%s: %s:%u, want %s:%u", what, buf, ntohs(s->sin_port), ip, port);
}

static void
qp_query(struct ibv_qp *qp, struct ibv_qp_attr *a)
{
	struct ibv_qp_init_attr ia;

	CHECK(ibv_query_qp(qp, a, IBV_QP_STATE | IBV_QP_PATH_MTU |
			   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_SQ_PSN |
			   IBV_QP_MAX_DEST_RD_ATOMIC |
			   IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_RETRY_CNT |
			   IBV_QP_RNR_RETRY, &ia) == 0,
	      "query_qp: errno %d", errno);
}

static void
inject(const struct eth_frame *m)
{
	struct pair p = { .ctx = C.listen->verbs, .cq = { C.acq, C.acq } };

	inject_sync(&p, m->f, m->len);
}

/*
 * The vector is what README.md says: frames 1-3 REQ, REP, RTU, then DREQ
 * and DREP; our codec reads rxe's REQ as IBA Table 99 lays it out; rxe's
 * REP answers the REQ with its TID (ib_cm: a response keeps the
 * request's TID); and ib_icrc computes the ICRC rxe put in each frame, so
 * patched frames carry the one rxe would.
 */
static void
rxe_vectors_as_linux_sent_them(void)
{
	const char *dir = getenv("DPIB_SHARED");
	char path[4096];
	struct cm_req q;
	struct cm_rep p;
	struct cm_dreq dq;

	CHECK(dir != NULL, "DPIB_SHARED is not set (meson test sets it)");
	snprintf(path, sizeof(path), "%s/vectors/rxe/rdma_cm.pcap", dir);
	CHECK(vector_mad(path, CM_ATTR_REQ, &R.req) == 1, "REQ not frame 1");
	CHECK(vector_mad(path, CM_ATTR_REP, &R.rep) == 2, "REP not frame 2");
	CHECK(vector_mad(path, CM_ATTR_RTU, &R.rtu) == 3, "RTU not frame 3");
	vector_mad(path, CM_ATTR_DREQ, &R.dreq);
	vector_mad(path, CM_ATTR_DREP, &R.drep);
	vector_frame(path, 4, &R.send);
	vector_frame(path, 9, &R.ack);
	CHECK(R.send.f[BTH_OFF] == 0x04 && R.send.len == 74 &&
	      R.ack.f[BTH_OFF] == IB_RC_ACKNOWLEDGE,
	      "frames 4 and 9: SEND ONLY of 16 bytes, ACKNOWLEDGE");
	CHECK(icrc_ok(R.req.f) && icrc_ok(R.rep.f) && icrc_ok(R.rtu.f) &&
	      icrc_ok(R.dreq.f) && icrc_ok(R.drep.f),
	      "ib_icrc disagrees with rxe's ICRC");
	cm_req_unpack(R.req.f + MAD_OFF, &q);
	CHECK(q.local_comm_id == RXE_REQ_ID && q.local_qpn == RXE_PEER_QPN &&
	      q.service_id == ((uint64_t)RDMA_PS_TCP << 16 | RXE_PORT) &&
	      q.path_mtu == IBV_MTU_1024 && q.starting_psn == 0x618b54,
	      "REQ: comm ID %#x QPN %#x service %#" PRIx64 " MTU %u PSN %#x",
	      q.local_comm_id, q.local_qpn, q.service_id, q.path_mtu,
	      q.starting_psn);
	/* Linux's RoCE flow label: source port * 31 + destination port */
	CHECK(q.primary.flow_label == ((RXE_PEER_PORT * 31u + RXE_PORT) &
				       0xfffff) &&
	      q.primary.local_ack_timeout == 19 && q.primary.hop_limit == 64,
	      "REQ path: flow label %#x ACK timeout %u hop limit %u",
	      q.primary.flow_label, q.primary.local_ack_timeout,
	      q.primary.hop_limit);
	cm_rep_unpack(R.rep.f + MAD_OFF, &p);
	CHECK(p.local_comm_id == RXE_REP_ID && p.remote_comm_id == RXE_REQ_ID,
	      "REP: comm IDs %#x %#x", p.local_comm_id, p.remote_comm_id);
	CHECK(cm_mad_tid(R.rep.f + MAD_OFF) == cm_mad_tid(R.req.f + MAD_OFF),
	      "rxe's REP TID %#" PRIx64 ", its REQ's %#" PRIx64,
	      cm_mad_tid(R.rep.f + MAD_OFF), cm_mad_tid(R.req.f + MAD_OFF));
	/* frame 4: the active side's first SEND; frame 9 ACKs the passive
	 * side's second request (a READ from the REQ's PSN, then a SEND)
	 */
	CHECK(be24_at(R.send.f + BTH_OFF + 9) == p.starting_psn &&
	      be24_at(R.ack.f + BTH_OFF + 9) == q.starting_psn + 1,
	      "rxe's active side sends from the REP's PSN %#x (frame 4: %#x), "
	      "its passive side from the REQ's %#x (frame 9 ACKs %#x)",
	      p.starting_psn, be24_at(R.send.f + BTH_OFF + 9),
	      q.starting_psn, be24_at(R.ack.f + BTH_OFF + 9));
	cm_dreq_unpack(R.dreq.f + MAD_OFF, &dq);
	CHECK(dq.local_comm_id == RXE_REQ_ID && dq.remote_comm_id == RXE_REP_ID
	      && dq.remote_qpn == RXE_PEER_QPN, "DREQ from the active side");
	printf("# rxe: REQ/REP/RTU TID %#" PRIx64 ", DREQ/DREP %#" PRIx64 "\n",
	       cm_mad_tid(R.req.f + MAD_OFF), cm_mad_tid(R.dreq.f + MAD_OFF));
}

/*
 * A listener on 10.77.0.2:7174; an ARP request from 10.77.0.3 for
 * 10.77.0.2 makes the device learn the peer (a request for our address
 * adds its sender, RFC 826) and answer it.
 */
static void
rxe_peer_learned_from_its_arp_request(void)
{
	struct sockaddr_in s = ipv4(RXE_ME, RXE_PORT);
	uint8_t arp[60] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	union ibv_gid g = { .raw = { [10] = 0xff, [11] = 0xff } };
	struct pair p;
	uint8_t mac[6];
	uint64_t replies;
	double end;

	R.drops = cm_drops();
	channels_open();
	CHECK(rdma_create_id(C.pch, &C.listen, &C, RDMA_PS_TCP) == 0,
	      "listener id: errno %d", errno);
	CHECK(rdma_bind_addr(C.listen, (struct sockaddr *)&s) == 0,
	      "bind " RXE_ME ":%u: errno %d (DPIB_CONF rxe_peer.conf?)",
	      RXE_PORT, errno);
	CHECK(rdma_listen(C.listen, 4) == 0, "listen: errno %d", errno);
	memory_open(C.listen->verbs);
	p = (struct pair){ .ctx = C.listen->verbs, .cq = { C.acq, C.acq } };
	memcpy(arp + 6, rxe_peer_mac, 6);
	arp[12] = 0x08;
	arp[13] = 0x06;
	arp[15] = 1;			/* Ethernet */
	arp[16] = 0x08;			/* IPv4 */
	arp[18] = 6;
	arp[19] = 4;
	arp[21] = 1;			/* request */
	memcpy(arp + 22, rxe_peer_mac, 6);
	inet_pton(AF_INET, RXE_PEER, arp + 28);
	inet_pton(AF_INET, RXE_ME, arp + 38);
	replies = dev_counter(p.ctx, "arp_reply_sent");
	inject_sync(&p, arp, sizeof(arp));
	inet_pton(AF_INET, RXE_PEER, &g.raw[12]);
	end = check_now() + EV_WAIT;
	while (dpib_neigh_resolve(p.ctx, &g, mac) != 0) {
		CHECK(errno == EAGAIN && check_now() < end,
		      RXE_PEER " not learned: errno %d", errno);
		usleep(10000);
	}
	CHECK(memcmp(mac, rxe_peer_mac, 6) == 0, "learned the wrong MAC");
	CHECK(dev_counter(p.ctx, "arp_reply_sent") == replies + 1,
	      "the request was not answered");
}

/*
 * rxe's REQ, as captured: CONNECT_REQUEST on a new id carrying what the
 * REQ says (ib_cm's cm_format_req_event, rdma_cm's cma_req_handler): the
 * peer's address and port from RDMA-CM's header, ours and the service's
 * port, the peer's resources seen from here (its initiator depth is the
 * responder resources asked of us, and the other way round), its QPN,
 * retry counts, and the REQ's private data after the 36-byte header.
 */
static void
rxe_req_gives_connect_request_with_its_fields(void)
{
	struct rdma_cm_event *ev;
	struct cm_req q;

	cm_req_unpack(R.req.f + MAD_OFF, &q);
	inject(&R.req);
	ev = expect(C.pch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL, EV_WAIT);
	CHECK(ev->status == 0, "status %d", ev->status);
	CHECK(ev->listen_id == C.listen, "listen_id");
	C.pas = ev->id;
	CHECK(C.pas != NULL && C.pas != C.listen, "a new id for the request");
	is_addr(rdma_get_peer_addr(C.pas), RXE_PEER, RXE_PEER_PORT, "peer");
	is_addr(rdma_get_local_addr(C.pas), RXE_ME, RXE_PORT, "local");
	CHECK(rdma_get_src_port(C.pas) == htons(RXE_PORT) &&
	      rdma_get_dst_port(C.pas) == htons(RXE_PEER_PORT), "ports");
	CHECK(ev->param.conn.responder_resources == q.initiator_depth &&
	      ev->param.conn.initiator_depth == q.responder_resources,
	      "resources %u/%u, want the REQ's swapped %u/%u",
	      ev->param.conn.responder_resources,
	      ev->param.conn.initiator_depth, q.initiator_depth,
	      q.responder_resources);
	CHECK(ev->param.conn.qp_num == RXE_PEER_QPN, "qp_num %#x",
	      ev->param.conn.qp_num);
	CHECK(ev->param.conn.retry_count == q.retry_count &&
	      ev->param.conn.rnr_retry_count == q.rnr_retry_count,
	      "retry %u rnr %u, REQ %u %u", ev->param.conn.retry_count,
	      ev->param.conn.rnr_retry_count, q.retry_count, q.rnr_retry_count);
	CHECK(ev->param.conn.flow_control == q.end_to_end_flow_control &&
	      ev->param.conn.srq == q.srq, "flow control %u srq %u",
	      ev->param.conn.flow_control, ev->param.conn.srq);
	CHECK(ev->param.conn.private_data != NULL &&
	      ev->param.conn.private_data_len == CM_REQ_PDATA - CM_IP_HDR_LEN,
	      "private data: %u bytes", ev->param.conn.private_data_len);
	CHECK(memcmp(ev->param.conn.private_data, q.private_data + CM_IP_HDR_LEN,
		     CM_REQ_PDATA - CM_IP_HDR_LEN) == 0, "private data differs");
	ack(ev);
}

/* One line of a dpib/rxe table; 1 for a difference that should not be. */
static int
row(const char *field, uint64_t ours, uint64_t theirs, int may_differ)
{
	int same = ours == theirs;

	printf("# | %-34s | %#18" PRIx64 " | %#18" PRIx64 " | %s |\n", field,
	       ours, theirs, same ? "same" : may_differ ?
	       "differs (allowed)" : "DIFFERS");
	return !same && !may_differ;
}

static int
row_gid(const char *field, const uint8_t *ours, const uint8_t *theirs)
{
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
	int same = memcmp(ours, theirs, 16) == 0;

	inet_ntop(AF_INET6, ours, a, sizeof(a));
	inet_ntop(AF_INET6, theirs, b, sizeof(b));
	printf("# | %-34s | %18s | %18s | %s |\n", field, a, b,
	       same ? "same" : "DIFFERS");
	return !same;
}

static int
rows_mad_hdr(const uint8_t *ours, const uint8_t *theirs, int tid_differs)
{
	struct cm_mad_hdr a, b;
	int bad = 0;

	CHECK(cm_mad_hdr_unpack(ours, CM_MAD_LEN, &a) == 0, "dpib's header");
	CHECK(cm_mad_hdr_unpack(theirs, CM_MAD_LEN, &b) == 0, "rxe's header");
	bad += row("base version", a.base_version, b.base_version, 0);
	bad += row("management class", a.mgmt_class, b.mgmt_class, 0);
	bad += row("class version", a.class_version, b.class_version, 0);
	bad += row("method", a.method, b.method, 0);
	bad += row("status", a.status, b.status, 0);
	bad += row("class specific", a.class_specific, b.class_specific, 0);
	bad += row("transaction ID", a.tid, b.tid, tid_differs);
	bad += row("attribute ID", a.attr_id, b.attr_id, 0);
	bad += row("attribute modifier", a.attr_mod, b.attr_mod, 0);
	return bad;
}

static int
rows_path(const char *alt, const struct cm_req_path *a,
	  const struct cm_req_path *b, int primary)
{
	char n[64];
	int bad = 0;

#define PATH_ROW(f, d) (snprintf(n, sizeof(n), "%s " #f, alt), \
			bad += row(n, a->f, b->f, d))
	PATH_ROW(local_lid, 0);
	PATH_ROW(remote_lid, 0);
	if (primary) {
		/* the two REQs went opposite ways */
		bad += row_gid("primary local GID / rxe's remote",
			       a->local_gid, b->remote_gid);
		bad += row_gid("primary remote GID / rxe's local",
			       a->remote_gid, b->local_gid);
	} else {
		bad += row_gid("alternate local GID", a->local_gid,
			       b->local_gid);
		bad += row_gid("alternate remote GID", a->remote_gid,
			       b->remote_gid);
	}
	PATH_ROW(flow_label, primary);
	PATH_ROW(packet_rate, primary);
	PATH_ROW(traffic_class, 0);
	PATH_ROW(hop_limit, 0);
	PATH_ROW(sl, 0);
	PATH_ROW(subnet_local, 0);
	PATH_ROW(local_ack_timeout, primary);
#undef PATH_ROW
	return bad;
}

/*
 * dpib's REQ (to 10.77.0.3) and rxe's (frame 1, to 10.77.0.2), field by
 * field of IBA Table 99; the number that differ where they should agree.
 */
static int
req_table(void)
{
	const uint8_t *a = R.our_req.f + MAD_OFF, *b = R.req.f + MAD_OFF;
	struct cm_req q, r;
	int bad = 0;

	cm_req_unpack(a, &q);
	cm_req_unpack(b, &r);
	printf("# | REQ field                          |               dpib |"
	       "                rxe |\n");
	bad += rows_mad_hdr(a, b, 1);
#define REQ_ROW(f, d) (bad += row(#f, q.f, r.f, d))
	REQ_ROW(local_comm_id, 1);
	REQ_ROW(service_id, 0);
	REQ_ROW(local_ca_guid, 1);
	REQ_ROW(local_qkey, 0);
	REQ_ROW(local_qpn, 1);
	REQ_ROW(responder_resources, 0);
	REQ_ROW(local_eecn, 0);
	REQ_ROW(initiator_depth, 0);
	REQ_ROW(remote_eecn, 0);
	REQ_ROW(remote_cm_response_timeout, 1);
	REQ_ROW(transport_service_type, 0);
	REQ_ROW(end_to_end_flow_control, 0);
	REQ_ROW(starting_psn, 1);
	REQ_ROW(local_cm_response_timeout, 1);
	REQ_ROW(retry_count, 0);
	REQ_ROW(partition_key, 0);
	REQ_ROW(path_mtu, 0);
	REQ_ROW(rdc_exists, 0);
	REQ_ROW(rnr_retry_count, 0);
	REQ_ROW(max_cm_retries, 0);
	REQ_ROW(srq, 0);
	REQ_ROW(extended_transport_type, 0);
#undef REQ_ROW
	bad += rows_path("primary", &q.primary, &r.primary, 1);
	bad += rows_path("alternate", &q.alternate, &r.alternate, 0);
	/* RDMA-CM's header: version, IP version, port, both addresses */
	bad += row("pdata: CM version", q.private_data[0], r.private_data[0],
		   0);
	bad += row("pdata: IP version", q.private_data[1] >> 4,
		   r.private_data[1] >> 4, 0);
	bad += row("pdata: source port",
		   (uint64_t)(q.private_data[2] << 8 | q.private_data[3]),
		   (uint64_t)(r.private_data[2] << 8 | r.private_data[3]), 1);
	bad += row("pdata: source IP / rxe's dest",
		   be32_at(q.private_data + 16), be32_at(r.private_data + 32),
		   0);
	bad += row("pdata: dest IP / rxe's source",
		   be32_at(q.private_data + 32), be32_at(r.private_data + 16),
		   0);
	bad += row("pdata: consumer bytes equal",
		   memcmp(q.private_data + CM_IP_HDR_LEN,
			  r.private_data + CM_IP_HDR_LEN,
			  CM_REQ_PDATA - CM_IP_HDR_LEN) == 0, 1, 0);
	return bad;
}

/*
 * dpib's REP and rxe's, both answering frame 1, field by field of IBA
 * Table 104; the number that differ where they should agree. The target
 * ACK delay is each CA's own (rxe's local_ca_ack_delay is 15): it is
 * judged against dpib's device in rxe_rep_fields_as_rxe.
 */
static int
rep_table(void)
{
	const uint8_t *a = R.our_rep.f + MAD_OFF, *b = R.rep.f + MAD_OFF;
	struct cm_rep q, r;
	int bad = 0;

	cm_rep_unpack(a, &q);
	cm_rep_unpack(b, &r);
	printf("# | REP field                          |               dpib |"
	       "                rxe |\n");
	bad += rows_mad_hdr(a, b, 0);
#define REP_ROW(f, d) (bad += row(#f, q.f, r.f, d))
	REP_ROW(local_comm_id, 1);
	REP_ROW(remote_comm_id, 0);
	REP_ROW(local_qkey, 0);
	REP_ROW(local_qpn, 1);
	REP_ROW(local_eecn, 0);
	REP_ROW(starting_psn, 1);
	REP_ROW(responder_resources, 0);
	REP_ROW(initiator_depth, 0);
	REP_ROW(target_ack_delay, 1);
	REP_ROW(failover_accepted, 0);
	REP_ROW(end_to_end_flow_control, 0);
	REP_ROW(rnr_retry_count, 0);
	REP_ROW(srq, 0);
	REP_ROW(local_ca_guid, 1);
#undef REP_ROW
	bad += row("private data equal", memcmp(q.private_data,
		   r.private_data, CM_REP_PDATA) == 0, 1, 0);
	printf("# REP target ACK delay: dpib %u (its device's "
	       "local_ca_ack_delay %u), rxe %u (rxe's is 15)\n",
	       q.target_ack_delay, R.ack_delay, r.target_ack_delay);
	return bad;
}


/*
 * rdma_accept with librdmacm's defaults (as the capture's server): the
 * REP answers the REQ - remote comm ID the REQ's local one, the REQ's TID,
 * our QP - and the QP is connected as the REQ asked: to QPN 0x4b at path
 * MTU 1024, with its retry counts and resources. Its PSNs are judged at
 * the end (struct psn_use), the REP's fields too (the table here).
 */
static void
rxe_accept_sends_rep_answering_req(void)
{
	struct ibv_device_attr da;
	struct ibv_qp_attr a;
	struct cm_req q;
	struct cm_rep p;

	cm_req_unpack(R.req.f + MAD_OFF, &q);
	CHECK(ibv_query_device(C.pas->verbs, &da) == 0, "query_device");
	R.ack_delay = da.local_ca_ack_delay;
	qp_on(C.pas, NULL);
	CHECK(rdma_accept(C.pas, NULL) == 0, "rdma_accept: errno %d", errno);
	sent_mad(CM_ATTR_REP, &R.our_rep);
	envelope_as_rxe(&R.our_rep, &R.rep);
	cm_rep_unpack(R.our_rep.f + MAD_OFF, &p);
	CHECK(p.remote_comm_id == RXE_REQ_ID, "remote comm ID %#x",
	      p.remote_comm_id);
	CHECK(p.local_comm_id != 0 && p.local_comm_id != RXE_REQ_ID,
	      "local comm ID %#x", p.local_comm_id);
	CHECK(cm_mad_tid(R.our_rep.f + MAD_OFF) ==
	      cm_mad_tid(R.req.f + MAD_OFF), "TID %#" PRIx64 ", the REQ's %#"
	      PRIx64, cm_mad_tid(R.our_rep.f + MAD_OFF),
	      cm_mad_tid(R.req.f + MAD_OFF));
	CHECK(p.local_qpn == C.pas->qp->qp_num, "QPN %#x, ours %#x",
	      p.local_qpn, C.pas->qp->qp_num);
	qp_query(C.pas->qp, &a);
	CHECK(a.qp_state == IBV_QPS_RTS, "QP state %d", a.qp_state);
	CHECK(a.dest_qp_num == RXE_PEER_QPN && a.path_mtu == IBV_MTU_1024,
	      "QP to %#x MTU %d", a.dest_qp_num, a.path_mtu);
	R.pas = (struct psn_use){ .want_sq = q.starting_psn,
				  .want_rq = p.starting_psn,
				  .sq_psn = a.sq_psn, .rq_psn = a.rq_psn };
	CHECK(a.retry_cnt == q.retry_count && a.rnr_retry == q.rnr_retry_count,
	      "QP retry %u rnr %u, the REQ's %u %u", a.retry_cnt, a.rnr_retry,
	      q.retry_count, q.rnr_retry_count);
	CHECK(a.max_dest_rd_atomic == p.responder_resources &&
	      a.max_rd_atomic == p.initiator_depth, "QP rd_atomic %u/%u",
	      a.max_dest_rd_atomic, a.max_rd_atomic);
	R.rep_bad = rep_table();
	quiet(C.pch, 0);
}

/* The number of RC SEND ONLY frames to the peer's QP in dpib's capture;
 * the PSN of the @nth (from 1) in *@psn.
 */
static int
sends_to_peer(int nth, uint32_t *psn)
{
	struct pcap_file pf;
	const uint8_t *d;
	uint32_t len;
	int n = 0;

	CHECK(pcap_open(&pf, capture) == 0, "open %s", capture);
	while (pcap_next(&pf, &d, &len) == 1) {
		const uint8_t *bth = d + BTH_OFF;

		if (len < BTH_OFF + 12 + 4 || d[12] != 0x08 ||
		    d[13] != 0 || d[14 + 9] != IPPROTO_UDP || bth[0] != 0x04 ||
		    be24_at(bth + 5) != RXE_PEER_QPN)
			continue;
		if (++n == nth)
			*psn = be24_at(bth + 9);
	}
	pcap_close(&pf);
	return n;
}

/* A completion on @cq within @secs, or 0. */
static int
completes(struct ibv_cq *cq, double secs, struct ibv_wc *wc)
{
	double end = check_now() + secs;
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0 && check_now() < end)
		usleep(1000);
	CHECK(n >= 0, "poll_cq");
	return n;
}

/*
 * A SEND each way on @id's connected QP, as the Linux peer makes them:
 * rxe's first SEND (frame 4, 16 bytes) sent from u->want_rq, the PSN
 * Linux's side starts from; then ours of 16 bytes, which rxe's ACK
 * (frame 9, MSN 1) acknowledges at the PSN it left with. What happens
 * goes into @u, judged in rxe_each_side_sends_from_the_psn_its_peer_stated.
 */
static void
send_exchange(struct rdma_cm_id *id, struct psn_use *u)
{
	struct ibv_sge r = { .addr = (uintptr_t)C.buf, .length = 1024,
			     .lkey = C.mr->lkey };
	struct ibv_sge s = { .addr = (uintptr_t)C.buf + 2048, .length = 16,
			     .lkey = C.mr->lkey };
	struct ibv_recv_wr rw = { .sg_list = &r, .num_sge = 1 }, *rbad;
	struct ibv_send_wr sw = { .sg_list = &s, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *sbad;
	uint8_t *bth;
	struct eth_frame m = R.send;
	struct ibv_wc wc;
	double end;
	int n0;

	CHECK(ibv_post_recv(id->qp, &rw, &rbad) == 0, "post_recv");
	bth = m.f + BTH_OFF;
	be24_put(bth + 5, id->qp->qp_num);
	be24_put(bth + 9, u->want_rq);
	frame_seal(&m);
	inject(&m);
	u->received = completes(id->qp->recv_cq, 1.0, &wc) == 1 &&
		      wc.status == IBV_WC_SUCCESS && wc.byte_len == 16 &&
		      memcmp(C.buf, bth + 12, 16) == 0;
	n0 = sends_to_peer(0, NULL);
	fill_pattern(C.buf + 2048, 16, 9);
	CHECK(ibv_post_send(id->qp, &sw, &sbad) == 0, "post_send");
	end = check_now() + EV_WAIT;
	while (sends_to_peer(n0 + 1, &u->sent_psn) <= n0) {
		CHECK(check_now() < end, "our SEND did not leave");
		usleep(10000);
	}
	m = R.ack;
	bth = m.f + BTH_OFF;
	be24_put(bth + 5, id->qp->qp_num);
	be24_put(bth + 9, u->sent_psn);
	be24_put(bth + 13, 1);		/* AETH MSN */
	frame_seal(&m);
	inject(&m);
	u->acked = completes(id->qp->send_cq, 1.0, &wc) == 1 &&
		   wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND;
	printf("# QP %#x: sq_psn %#x rq_psn %#x (Linux's: %#x %#x); rxe's "
	       "SEND from %#x %s; ours left from %#x, %s\n", id->qp->qp_num,
	       u->sq_psn, u->rq_psn, u->want_sq, u->want_rq, u->want_rq,
	       u->received ? "received" : "NOT received", u->sent_psn,
	       u->acked ? "acknowledged" : "NOT completed");
}

/* Established as passive side: a SEND each way (judged at the end). */
static void
rxe_passive_exchanges_a_send(void)
{
	send_exchange(C.pas, &R.pas);
	quiet(C.pch, 0);
}

/* rxe's RTU with our comm ID for its remote one: ESTABLISHED. */
static void
rxe_rtu_establishes_passive(void)
{
	struct eth_frame m = R.rtu;
	struct rdma_cm_event *ev;
	struct cm_rep p;

	cm_rep_unpack(R.our_rep.f + MAD_OFF, &p);
	be32_put(m.f + MAD_DATA + 4, p.local_comm_id);
	frame_seal(&m);
	inject(&m);
	ev = expect(C.pch, RDMA_CM_EVENT_ESTABLISHED, C.pas, EV_WAIT);
	CHECK(ev->status == 0, "status %d", ev->status);
	CHECK(ev->param.conn.qp_num == RXE_PEER_QPN, "qp_num %#x",
	      ev->param.conn.qp_num);
	ack(ev);
	quiet(C.pch, QUIET_MS);
}

/*
 * rxe's DREQ (its remote comm ID and QPN ours): DISCONNECTED; then
 * rdma_disconnect sends the DREP, which is rxe's DREP (frame 29) byte
 * for byte but for our comm ID: the DREQ's TID, its comm IDs swapped.
 */
static void
rxe_dreq_disconnects_and_drep_answers(void)
{
	struct eth_frame m = R.dreq, drep;
	struct rdma_cm_event *ev;
	struct cm_drep d;
	struct cm_rep p;

	cm_rep_unpack(R.our_rep.f + MAD_OFF, &p);
	be32_put(m.f + MAD_DATA + 4, p.local_comm_id);
	m.f[MAD_DATA + 8] = (uint8_t)(C.pas->qp->qp_num >> 16);
	m.f[MAD_DATA + 9] = (uint8_t)(C.pas->qp->qp_num >> 8);
	m.f[MAD_DATA + 10] = (uint8_t)C.pas->qp->qp_num;
	frame_seal(&m);
	inject(&m);
	ev = expect(C.pch, RDMA_CM_EVENT_DISCONNECTED, C.pas, EV_WAIT);
	CHECK(ev->status == 0, "status %d", ev->status);
	ack(ev);
	CHECK(rdma_disconnect(C.pas) == 0, "disconnect: errno %d", errno);
	sent_mad(CM_ATTR_DREP, &drep);
	envelope_as_rxe(&drep, &R.drep);
	cm_drep_unpack(drep.f + MAD_OFF, &d);
	CHECK(d.local_comm_id == p.local_comm_id &&
	      d.remote_comm_id == RXE_REQ_ID, "DREP comm IDs %#x %#x",
	      d.local_comm_id, d.remote_comm_id);
	CHECK(cm_mad_tid(drep.f + MAD_OFF) == cm_mad_tid(m.f + MAD_OFF),
	      "DREP TID %#" PRIx64 ", the DREQ's %#" PRIx64,
	      cm_mad_tid(drep.f + MAD_OFF), cm_mad_tid(m.f + MAD_OFF));
	mad_same_but(&drep, &R.drep, 1, 0, 4);
	quiet(C.pch, 50);
}

/*
 * The other way: dpib at 10.77.0.2 connects to 10.77.0.3:7174 with what
 * rxe's client asked (its REQ's resources and retry counts). Its REQ goes
 * to the peer, asks for the service rxe's REQ asked for, from our QP.
 */
static void
rxe_connect_sends_req_to_peer(void)
{
	struct sockaddr_in d = ipv4(RXE_PEER, RXE_PORT);
	struct rdma_conn_param cp = { 0 };
	struct rdma_cm_event *ev;
	struct ibv_qp_attr a;
	struct cm_req q, r;

	cm_req_unpack(R.req.f + MAD_OFF, &r);
	CHECK(rdma_create_id(C.ach, &C.act, NULL, RDMA_PS_TCP) == 0,
	      "active id: errno %d", errno);
	CHECK(rdma_resolve_addr(C.act, NULL, (struct sockaddr *)&d, 2000) == 0,
	      "resolve_addr: errno %d", errno);
	ev = expect(C.ach, RDMA_CM_EVENT_ADDR_RESOLVED, C.act, EV_WAIT);
	CHECK(ev->status == 0, "status %d", ev->status);
	ack(ev);
	CHECK(rdma_resolve_route(C.act, 2000) == 0, "resolve_route: errno %d",
	      errno);
	ev = expect(C.ach, RDMA_CM_EVENT_ROUTE_RESOLVED, C.act, EV_WAIT);
	ack(ev);
	CHECK(C.act->verbs == C.listen->verbs, "another device");
	is_addr(rdma_get_local_addr(C.act), RXE_ME,
		ntohs(rdma_get_src_port(C.act)), "active local");
	qp_on(C.act, C.acq);
	cp.responder_resources = r.responder_resources;
	cp.initiator_depth = r.initiator_depth;
	cp.retry_count = r.retry_count;
	cp.rnr_retry_count = r.rnr_retry_count;
	CHECK(rdma_connect(C.act, &cp) == 0, "rdma_connect: errno %d", errno);
	sent_mad(CM_ATTR_REQ, &R.our_req);
	cm_req_unpack(R.our_req.f + MAD_OFF, &q);
	R.act_id = q.local_comm_id;
	R.act_tid = cm_mad_tid(R.our_req.f + MAD_OFF);
	/* rxe's REQ went the other way: its envelope is mirrored */
	CHECK(memcmp(R.our_req.f, rxe_peer_mac, 6) == 0, "destination MAC");
	CHECK(be32_at(R.our_req.f + 14 + 16) == be32_at(R.req.f + 14 + 12) &&
	      be32_at(R.our_req.f + 14 + 12) == be32_at(R.req.f + 14 + 16),
	      "not from " RXE_ME " to " RXE_PEER);
	CHECK(q.local_qpn == C.act->qp->qp_num, "QPN %#x, ours %#x",
	      q.local_qpn, C.act->qp->qp_num);
	CHECK(q.service_id == r.service_id, "service ID %#" PRIx64,
	      q.service_id);
	CHECK(be32_at(q.private_data) == (0x40u << 16 |
					  ntohs(rdma_get_src_port(C.act))),
	      "RDMA-CM header %08x, port %u", be32_at(q.private_data),
	      ntohs(rdma_get_src_port(C.act)));
	qp_query(C.act->qp, &a);
	CHECK(a.qp_state == IBV_QPS_INIT, "QP state %d before the REP",
	      a.qp_state);
	R.req_bad = req_table();
	quiet(C.ach, 0);
}

/*
 * rxe's REP (from 10.77.0.3 now), answering our REQ: its remote comm ID
 * our local one, our REQ's TID. ESTABLISHED with what the REP says (QPN
 * 0x4b, resources seen from here, its 196 bytes of private data); the QP
 * connected to it (its PSNs judged at the end); then the RTU, which is rxe's RTU (frame 3) byte for
 * byte but for the comm IDs and the TID: ours, rxe's REP's, our REQ's.
 */
static void
rxe_rep_establishes_active_and_rtu_answers(void)
{
	struct eth_frame m = R.rep, rtu;
	struct rdma_cm_event *ev;
	struct ibv_qp_attr a;
	struct cm_rep p;
	struct cm_req q;
	struct cm_rtu t;

	cm_rep_unpack(R.rep.f + MAD_OFF, &p);
	cm_req_unpack(R.our_req.f + MAD_OFF, &q);
	frame_reverse(&m);
	be32_put(m.f + MAD_DATA + 4, R.act_id);
	tid_put(m.f + MAD_OFF, R.act_tid);
	frame_seal(&m);
	inject(&m);
	ev = expect(C.ach, RDMA_CM_EVENT_ESTABLISHED, C.act, EV_WAIT);
	CHECK(ev->status == 0, "status %d", ev->status);
	CHECK(ev->param.conn.qp_num == RXE_PEER_QPN, "qp_num %#x",
	      ev->param.conn.qp_num);
	CHECK(ev->param.conn.responder_resources == p.initiator_depth &&
	      ev->param.conn.initiator_depth == p.responder_resources,
	      "resources %u/%u, want the REP's swapped",
	      ev->param.conn.responder_resources,
	      ev->param.conn.initiator_depth);
	CHECK(ev->param.conn.rnr_retry_count == p.rnr_retry_count,
	      "rnr %u", ev->param.conn.rnr_retry_count);
	CHECK(ev->param.conn.private_data_len == CM_REP_PDATA &&
	      memcmp(ev->param.conn.private_data, p.private_data,
		     CM_REP_PDATA) == 0, "REP private data: %u bytes",
	      ev->param.conn.private_data_len);
	ack(ev);
	qp_query(C.act->qp, &a);
	CHECK(a.qp_state == IBV_QPS_RTS, "QP state %d", a.qp_state);
	CHECK(a.dest_qp_num == RXE_PEER_QPN && a.path_mtu == IBV_MTU_1024,
	      "QP to %#x MTU %d", a.dest_qp_num, a.path_mtu);
	R.act = (struct psn_use){ .want_sq = p.starting_psn,
				  .want_rq = q.starting_psn,
				  .sq_psn = a.sq_psn, .rq_psn = a.rq_psn };
	CHECK(a.rnr_retry == p.rnr_retry_count, "QP rnr %u, the REP's %u",
	      a.rnr_retry, p.rnr_retry_count);
	sent_mad(CM_ATTR_RTU, &rtu);
	envelope_as_rxe(&rtu, &R.rtu);
	cm_rtu_unpack(rtu.f + MAD_OFF, &t);
	CHECK(t.local_comm_id == R.act_id && t.remote_comm_id == RXE_REP_ID,
	      "RTU comm IDs %#x %#x", t.local_comm_id, t.remote_comm_id);
	CHECK(cm_mad_tid(rtu.f + MAD_OFF) == R.act_tid,
	      "RTU TID %#" PRIx64 ", our REQ's %#" PRIx64,
	      cm_mad_tid(rtu.f + MAD_OFF), R.act_tid);
	mad_same_but(&rtu, &R.rtu, 0, 0, 8);
	quiet(C.ach, QUIET_MS);
}

/* Established as active side: a SEND each way (judged at the end). */
static void
rxe_active_exchanges_a_send(void)
{
	send_exchange(C.act, &R.act);
	quiet(C.ach, 0);
}

/*
 * rdma_disconnect: the DREQ names the connection (our comm ID, rxe's
 * REP's) and the peer's QPN (IBA 12.6.10), and is rxe's DREQ (frame 28,
 * also sent by the active side) but for the comm IDs and TID. rxe's
 * DREP answering it (comm IDs and TID ours): DISCONNECTED, then
 * TIMEWAIT_EXIT.
 */
static void
rxe_disconnect_sends_dreq_and_drep_ends_it(void)
{
	struct eth_frame dreq, m = R.drep;
	struct rdma_cm_event *ev;
	struct cm_dreq d;

	CHECK(rdma_disconnect(C.act) == 0, "disconnect: errno %d", errno);
	sent_mad(CM_ATTR_DREQ, &dreq);
	envelope_as_rxe(&dreq, &R.dreq);
	cm_dreq_unpack(dreq.f + MAD_OFF, &d);
	CHECK(d.local_comm_id == R.act_id && d.remote_comm_id == RXE_REP_ID &&
	      d.remote_qpn == RXE_PEER_QPN, "DREQ %#x %#x QPN %#x",
	      d.local_comm_id, d.remote_comm_id, d.remote_qpn);
	mad_same_but(&dreq, &R.dreq, 0, 0, 8);
	frame_reverse(&m);
	be32_put(m.f + MAD_DATA + 4, R.act_id);
	tid_put(m.f + MAD_OFF, cm_mad_tid(dreq.f + MAD_OFF));
	frame_seal(&m);
	inject(&m);
	ev = expect(C.ach, RDMA_CM_EVENT_DISCONNECTED, C.act, EV_WAIT);
	CHECK(ev->status == 0, "status %d (the DREP not taken?)", ev->status);
	ack(ev);
	ev = expect(C.ach, RDMA_CM_EVENT_TIMEWAIT_EXIT, C.act, EV_WAIT);
	ack(ev);
}

/*
 * The passive id leaves time-wait too (after twice the REQ's local ACK
 * timeout: 2 x 2.1 s); nothing the peer sent was dropped by the CM; then
 * everything goes without an event.
 */
static void
rxe_timewait_exit_and_nothing_dropped(void)
{
	struct rdma_cm_event *ev;

	ev = expect(C.pch, RDMA_CM_EVENT_TIMEWAIT_EXIT, C.pas, 10.0);
	ack(ev);
	CHECK(cm_drops() == R.drops, "the CM dropped %" PRIu64 " MADs",
	      cm_drops() - R.drops);
	destroy_brings_no_event();
}

/*
 * dpib's REQ against rxe's (frame 1) with the same parameters asked
 * (table above): every field of IBA Table 99 agrees but those that name
 * this connection (comm ID, GUID, QPN, PSN, TID, port) and those each CM
 * chooses (CM response timeouts, local ACK timeout, flow label, packet
 * rate).
 */
static void
rxe_req_fields_as_rxe(void)
{
	CHECK(R.req_bad == 0, "%d REQ fields differ from rxe's where they "
	      "should agree (DIFFERS in the table)", R.req_bad);
}

/*
 * Each side sends from the starting PSN its peer stated and expects the
 * one it stated itself, as Linux's ib_cm sets the QPs (struct psn_use):
 * or a Linux peer's first packet and ours are both out of sequence.
 */
static void
rxe_each_side_sends_from_the_psn_its_peer_stated(void)
{
	const struct psn_use *u[2] = { &R.pas, &R.act };
	static const char *const side[2] = { "passive", "active" };
	int i;

	for (i = 0; i < 2; i++) {
		CHECK(u[i]->sq_psn == u[i]->want_sq &&
		      u[i]->rq_psn == u[i]->want_rq,
		      "%s QP: sq_psn %#x rq_psn %#x, want the peer's %s's %#x "
		      "and our %s's %#x", side[i], u[i]->sq_psn, u[i]->rq_psn,
		      i ? "REP" : "REQ", u[i]->want_sq, i ? "REQ" : "REP",
		      u[i]->want_rq);
		CHECK(u[i]->received, "%s: rxe's SEND from %#x (the PSN our "
		      "%s stated) not received", side[i], u[i]->want_rq,
		      i ? "REQ" : "REP");
		CHECK(u[i]->sent_psn == u[i]->want_sq, "%s: our SEND left "
		      "from %#x, not from the %s's %#x", side[i],
		      u[i]->sent_psn, i ? "REP" : "REQ", u[i]->want_sq);
		CHECK(u[i]->acked, "%s: our SEND not completed by rxe's ACK",
		      side[i]);
	}
}

/*
 * dpib's REP against rxe's, both answering frame 1 (table above): every
 * field of IBA Table 104 agrees but comm ID, QPN, PSN and GUID; the
 * target ACK delay is the CA's own, the local_ca_ack_delay dpib's device
 * reports (ib_cm's cm_format_rep states the device's; rxe's REP its 15).
 */
static void
rxe_rep_fields_as_rxe(void)
{
	struct cm_rep q;

	cm_rep_unpack(R.our_rep.f + MAD_OFF, &q);
	CHECK(R.rep_bad == 0, "%d REP fields differ from rxe's where they "
	      "should agree (DIFFERS in the table)", R.rep_bad);
	CHECK(q.target_ack_delay == R.ack_delay, "REP target ACK delay %u, "
	      "yet the device's local_ca_ack_delay is %u", q.target_ack_delay,
	      R.ack_delay);
}

/* ---- inflight ------------------------------------------------------------ */

/*
 * Destroying an id with a connection in flight leaks nothing: after 500
 * connections of each kind destroyed mid-way, the process's heap
 * (mallinfo2) and DPDK's (rte_malloc: QPs, CQs, address handles), the
 * device's packet buffers and the file descriptors are back to what they
 * were after one warm-up round, and a connection still works. Every event
 * is checked against the ids alive when it comes: an event not yet taken
 * dies with its id (the kernel's ucma frees them in rdma_destroy_id), so
 * none may name an id already destroyed. The application tells its
 * requests apart by the active side's port.
 */
#define INFLIGHT_CYCLES	500
#define LIVE_MAX	8
#define HEAP_SLACK	(64 * 1024)	/* bytes the heap may have grown */
#define MBUF_SLACK	4		/* packet buffers, either way */
#define DRAIN_S		10.0
#define CM_RESEND_S	2.0	/* dpib's first resend: 2 x 1.07 s */
#define EVBIT(t)	(1u << RDMA_CM_EVENT_##t)
#define ACTIVE_EVENTS	(EVBIT(ADDR_RESOLVED) | EVBIT(ROUTE_RESOLVED) | \
			 EVBIT(ESTABLISHED) | EVBIT(REJECTED) | \
			 EVBIT(DISCONNECTED) | EVBIT(TIMEWAIT_EXIT))
#define REQUEST_EVENTS	(EVBIT(CONNECT_REQUEST) | EVBIT(ESTABLISHED) | \
			 EVBIT(REJECTED) | EVBIT(DISCONNECTED) | \
			 EVBIT(TIMEWAIT_EXIT))

/* An id alive, the events it may get and those it got (each once). */
struct live {
	struct rdma_cm_id *id;
	uint32_t allowed, seen;
	int status[RDMA_CM_EVENT_TIMEWAIT_EXIT + 1];
	int untaken;			/* a request the application has not
					 * looked at yet */
};

static struct live live[LIVE_MAX];
static int nlive;
/* Requests for an active id already gone (a REQ that came twice), and
 * cycles that took a CM resend (2.1 s) to finish: on the lossless
 * loopback, each is a MAD that waited for nothing.
 */
static int stale_requests, slow_cycles;

struct usage {
	size_t heap;			/* malloc's bytes in use */
	size_t dpdk;			/* rte_malloc's: QPs, CQs, AHs */
	int mbufs;
	int fds;
};

static struct usage baseline;

static struct live *
live_find(const struct rdma_cm_id *id)
{
	int i;

	for (i = 0; i < nlive; i++)
		if (live[i].id == id)
			return &live[i];
	return NULL;
}

static struct live *
live_add(struct rdma_cm_id *id, uint32_t allowed)
{
	CHECK(nlive < LIVE_MAX, "more than %d ids alive", LIVE_MAX);
	CHECK(live_find(id) == NULL, "a new id with the address of one "
	      "alive");
	live[nlive] = (struct live){ .id = id, .allowed = allowed };
	return &live[nlive++];
}

/* The application destroys @id, its QP first (rdma_destroy_id(3)). */
static void
live_destroy(struct rdma_cm_id *id)
{
	struct live *l = live_find(id);

	CHECK(l != NULL, "destroying an id not alive");
	if (id->qp != NULL)
		rdma_destroy_qp(id);
	CHECK(rdma_destroy_id(id) == 0, "destroy: errno %d", errno);
	*l = live[--nlive];
}

/*
 * An event taken from @ch: for an id alive (a CONNECT_REQUEST's is new),
 * of a kind that id may get, not twice, on the id's own channel.
 */
static void
live_event(struct rdma_event_channel *ch, struct rdma_cm_event *ev)
{
	enum rdma_cm_event_type t = ev->event;
	struct live *l;

	if (t == RDMA_CM_EVENT_CONNECT_REQUEST) {
		CHECK(ev->listen_id == C.listen, "request for another listener");
		l = live_add(ev->id, REQUEST_EVENTS);
		l->untaken = 1;
	} else {
		l = live_find(ev->id);
		CHECK(l != NULL, "%s (status %d) for an id destroyed before",
		      rdma_event_str(t), ev->status);
	}
	CHECK((unsigned int)t < 32 && (l->allowed & (1u << t)),
	      "%s (status %d) for an id that cannot get it",
	      rdma_event_str(t), ev->status);
	CHECK(!(l->seen & (1u << t)), "a second %s (status %d) for one id",
	      rdma_event_str(t), ev->status);
	CHECK(ev->id->channel == ch, "%s on another channel than its id's",
	      rdma_event_str(t));
	l->seen |= 1u << t;
	l->status[t] = ev->status;
	ack(ev);
}

/* The events waiting on either channel within @ms; how many. */
static int
pump(int ms)
{
	struct rdma_event_channel *ch[2] = { C.ach, C.pch };
	struct pollfd p[2] = { { .fd = C.ach->fd, .events = POLLIN },
			       { .fd = C.pch->fd, .events = POLLIN } };
	struct rdma_cm_event *ev;
	int i, n, got = 0;

	n = poll(p, 2, ms);
	CHECK(n >= 0, "poll: errno %d", errno);
	for (i = 0; i < 2; i++) {
		if (!(p[i].revents & POLLIN))
			continue;
		CHECK(rdma_get_cm_event(ch[i], &ev) == 0, "fd readable, yet "
		      "rdma_get_cm_event failed: errno %d", errno);
		live_event(ch[i], ev);
		got++;
	}
	return got;
}

/* Events until @id has had @type (within EV_WAIT); that event's status. */
static int
wait_event(struct rdma_cm_id *id, enum rdma_cm_event_type type)
{
	double end = check_now() + EV_WAIT;
	struct live *l;

	for (;;) {
		l = live_find(id);
		CHECK(l != NULL, "waiting for %s on an id not alive",
		      rdma_event_str(type));
		if (l->seen & (1u << type))
			return l->status[type];
		CHECK(check_now() < end, "no %s within %.1f s (got %#x)",
		      rdma_event_str(type), EV_WAIT, l->seen);
		pump(10);
	}
}

/*
 * The request from port @port (network order) of an active id, or NULL;
 * the application destroys requests from other ports (0: from any), whose
 * active ids are gone.
 */
static struct rdma_cm_id *
take_request(__be16 port)
{
	struct rdma_cm_id *id;
	int i;

	for (i = 0; i < nlive; i++) {
		if (!live[i].untaken)
			continue;
		id = live[i].id;
		if (port != 0 && rdma_get_dst_port(id) == port) {
			live[i].untaken = 0;
			return id;
		}
		stale_requests++;
		live_destroy(id);
		i = -1;			/* the array changed */
	}
	return NULL;
}

/* The request from @port (within EV_WAIT). */
static struct rdma_cm_id *
wait_request(__be16 port)
{
	double end = check_now() + EV_WAIT;
	struct rdma_cm_id *id;

	while ((id = take_request(port)) == NULL) {
		CHECK(check_now() < end, "no CONNECT_REQUEST within %.1f s",
		      EV_WAIT);
		pump(10);
	}
	return id;
}

/* Events until both channels stay quiet for QUIET_MS. */
static void
drain(void)
{
	double end = check_now() + DRAIN_S;

	do {
		while (pump(QUIET_MS) > 0)
			CHECK(check_now() < end, "events for %.0f s", DRAIN_S);
	} while (take_request(0) != NULL);
}

/* A new active id, resolved, with a QP (the library's CQs), connecting. */
static struct rdma_cm_id *
inflight_connect(void)
{
	struct sockaddr_in d = loopback(PORT);
	struct rdma_conn_param p = {
		.responder_resources = 1, .initiator_depth = 1,
		.retry_count = 7, .rnr_retry_count = 7,
	};
	struct rdma_cm_id *id;

	CHECK(rdma_create_id(C.ach, &id, NULL, RDMA_PS_TCP) == 0,
	      "active id: errno %d", errno);
	live_add(id, ACTIVE_EVENTS);
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000) == 0,
	      "resolve_addr: errno %d", errno);
	CHECK(wait_event(id, RDMA_CM_EVENT_ADDR_RESOLVED) == 0,
	      "ADDR_RESOLVED: status");
	CHECK(rdma_resolve_route(id, 2000) == 0, "resolve_route: errno %d",
	      errno);
	CHECK(wait_event(id, RDMA_CM_EVENT_ROUTE_RESOLVED) == 0,
	      "ROUTE_RESOLVED: status");
	qp_on(id, NULL);
	CHECK(rdma_connect(id, &p) == 0, "rdma_connect: errno %d", errno);
	return id;
}

/*
 * (a) The active side gives up with its REQ on the wire: QP and id go at
 * once (a REJ, reason timeout, follows the REQ). The listener still gets
 * the request; its application destroys the request's id.
 */
static void
cycle_withdrawn(int i)
{
	struct rdma_cm_id *act = inflight_connect();
	__be16 port = rdma_get_src_port(act);

	(void)i;
	live_destroy(act);
	live_destroy(wait_request(port));
}

/* (b) The listener's application destroys the request unanswered: the
 * active side is REJECTED, consumer defined (28).
 */
static void
cycle_unanswered(int i)
{
	struct rdma_cm_id *act = inflight_connect();
	int st;

	(void)i;
	live_destroy(wait_request(rdma_get_src_port(act)));
	st = wait_event(act, RDMA_CM_EVENT_REJECTED);
	CHECK(st == CM_REJ_CONSUMER_DEFINED, "REJECTED status %d, want 28",
	      st);
	live_destroy(act);
}

/*
 * (c) Accepted and established, then both ends destroyed without
 * rdma_disconnect: the first destroy sends a DREQ. Cycle by cycle the
 * active or the passive end goes first, and the other one either waits
 * for its DISCONNECTED or goes at once (the DISCONNECTED then dies with
 * it, and the DREQ finds no connection: a DREP still answers it).
 */
static void
cycle_established(int i)
{
	struct rdma_cm_id *act = inflight_connect(), *pas, *first, *second;

	pas = wait_request(rdma_get_src_port(act));
	first = i & 1 ? pas : act;
	second = i & 1 ? act : pas;
	qp_on(pas, NULL);
	CHECK(rdma_accept(pas, NULL) == 0, "rdma_accept: errno %d", errno);
	CHECK(wait_event(act, RDMA_CM_EVENT_ESTABLISHED) == 0, "status");
	CHECK(wait_event(pas, RDMA_CM_EVENT_ESTABLISHED) == 0, "status");
	live_destroy(first);
	if (i & 2)
		CHECK(wait_event(second, RDMA_CM_EVENT_DISCONNECTED) == 0,
		      "DISCONNECTED status");
	live_destroy(second);
}

static struct usage
usage_now(void)
{
	struct usage u = {
		.heap = mallinfo2().uordblks,
		.dpdk = dpdk_heap(),
		.mbufs = dpib_mbufs_in_use(C.listen->verbs),
		.fds = fd_count(),
	};

	return u;
}

/* One round of each kind, its events drained: the baseline. */
static void
inflight_setup(void)
{
	int i;

	channels_open();
	listen_on(PORT);
	memory_open(C.listen->verbs);
	live_add(C.listen, 0);
	cycle_withdrawn(0);
	cycle_unanswered(0);
	for (i = 0; i < 4; i++)
		cycle_established(i);
	drain();
	baseline = usage_now();
	printf("# baseline: heap %zu bytes, DPDK heap %zu bytes, %d mbufs, "
	       "%d fds\n", baseline.heap, baseline.dpdk, baseline.mbufs,
	       baseline.fds);
}

static void
cycles(void (*cycle)(int), const char *what)
{
	double t0 = check_now(), t;
	int i;

	for (i = 0; i < INFLIGHT_CYCLES; i++) {
		t = check_now();
		cycle(i);
		t = check_now() - t;
		if (t >= CM_RESEND_S) {
			printf("# %s: cycle %d took %.2f s\n", what, i, t);
			slow_cycles++;
		}
	}
	drain();
	CHECK(nlive == 1, "%d ids alive besides the listener", nlive - 1);
	printf("# %d %s in %.2f s\n", INFLIGHT_CYCLES, what,
	       check_now() - t0);
}

static void
inflight_requests_withdrawn(void)
{
	cycles(cycle_withdrawn, "requests withdrawn");
}

static void
inflight_requests_destroyed_unanswered(void)
{
	cycles(cycle_unanswered, "requests destroyed unanswered");
}

static void
inflight_connections_destroyed(void)
{
	cycles(cycle_established, "connections destroyed");
}

/* Destroying an id with a connection in flight leaks nothing. */
static void
inflight_leaks_nothing(void)
{
	struct usage u;

	drain();
	u = usage_now();
	printf("# after 3 x %d cycles: heap %+ld bytes, DPDK heap %+ld bytes, "
	       "mbufs %+d, fds %+d\n", INFLIGHT_CYCLES,
	       (long)u.heap - (long)baseline.heap,
	       (long)u.dpdk - (long)baseline.dpdk, u.mbufs - baseline.mbufs,
	       u.fds - baseline.fds);
	CHECK(u.heap < baseline.heap + HEAP_SLACK, "heap %zu -> %zu bytes",
	      baseline.heap, u.heap);
	CHECK(u.dpdk < baseline.dpdk + HEAP_SLACK, "DPDK heap %zu -> %zu "
	      "bytes", baseline.dpdk, u.dpdk);
	CHECK(u.mbufs <= baseline.mbufs + MBUF_SLACK &&
	      u.mbufs >= baseline.mbufs - MBUF_SLACK, "mbufs %d -> %d",
	      baseline.mbufs, u.mbufs);
	CHECK(u.fds == baseline.fds, "fds %d -> %d", baseline.fds, u.fds);
}

/*
 * On the loopback nothing is lost: every MAD is answered in a few
 * milliseconds, never by a resend (which would also bring the REQ a
 * second time, after its request was gone).
 */
static void
inflight_no_mad_waited_for_a_resend(void)
{
	printf("# %d cycles took a resend, %d requests came twice\n",
	       slow_cycles, stale_requests);
	CHECK(slow_cycles == 0 && stale_requests == 0, "a MAD sat unseen "
	      "until the next one came (a lost completion event on QP 1?)");
}

/* After all that a connection works: a SEND, disconnect, time-wait. */
static void
inflight_connection_still_works(void)
{
	struct rdma_cm_id *act = inflight_connect(), *pas;

	pas = wait_request(rdma_get_src_port(act));
	qp_on(pas, NULL);
	CHECK(rdma_accept(pas, NULL) == 0, "rdma_accept: errno %d", errno);
	CHECK(wait_event(act, RDMA_CM_EVENT_ESTABLISHED) == 0, "status");
	CHECK(wait_event(pas, RDMA_CM_EVENT_ESTABLISHED) == 0, "status");
	send_over(act, pas, 11);
	send_over(pas, act, 12);
	CHECK(rdma_disconnect(act) == 0, "disconnect: errno %d", errno);
	CHECK(wait_event(pas, RDMA_CM_EVENT_DISCONNECTED) == 0, "status");
	CHECK(rdma_disconnect(pas) == 0, "disconnect: errno %d", errno);
	CHECK(wait_event(act, RDMA_CM_EVENT_DISCONNECTED) == 0, "status");
	CHECK(wait_event(act, RDMA_CM_EVENT_TIMEWAIT_EXIT) == 0, "status");
	CHECK(wait_event(pas, RDMA_CM_EVENT_TIMEWAIT_EXIT) == 0, "status");
	live_destroy(act);
	live_destroy(pas);
	drain();
}

/*
 * An active id destroyed with its REQ out sends a REJ, reason 4
 * (timeout), naming its comm ID as Local Comm ID (its Remote is 0: no REP
 * told it the passive one), as ib_cm_destroy_id does in REQ_SENT. The
 * passive CM finds the request by that ID and its sender (ib_cm's
 * cm_acquire_rejected_id), so the request's id gets REJECTED, status 4,
 * and can no longer be accepted. Five times, more than the listener's
 * backlog (4): a request its peer withdrew holds no place in it.
 */
static void
inflight_withdrawn_request_is_rejected(void)
{
	struct rdma_cm_id *act, *pas;
	int i, st;

	for (i = 0; i < 5; i++) {
		act = inflight_connect();
		pas = wait_request(rdma_get_src_port(act));
		live_destroy(act);
		st = wait_event(pas, RDMA_CM_EVENT_REJECTED);
		CHECK(st == CM_REJ_TIMEOUT, "REJECTED status %d, want 4", st);
		errno = 0;
		CHECK(rdma_accept(pas, NULL) == -1 && errno == EINVAL,
		      "accepting a withdrawn request: errno %d", errno);
		live_destroy(pas);
	}
	drain();
	inflight_connection_still_works();
}

static void
inflight_teardown(void)
{
	live_destroy(C.listen);
	drain();
	CHECK(nlive == 0, "%d ids alive", nlive);
	memory_close();
	rdma_destroy_event_channel(C.ach);
	rdma_destroy_event_channel(C.pch);
	memset(&C, 0, sizeof(C));
}

/* ---- CM MADs in this process's capture ----------------------------------- */

static void capture_remove(void);

/* DPIB_CAPTURE before the device opens: every frame it sends. */
static void
capture_start(void)
{
	snprintf(capture, sizeof(capture), "/tmp/dpib-rdmacm-%d.pcap",
		 (int)getpid());
	CHECK(setenv("DPIB_CAPTURE", capture, 1) == 0, "setenv");
	atexit(capture_remove);
}

/* What the CM sent: MADs by attribute, the first REQ's comm ID, ... */
struct sent {
	int n[CM_ATTR_APR + 1];
	uint32_t req_id;		/* the first REQ's Local Comm ID */
	int req_ids;			/* REQs with another comm ID */
	int mra_req;			/* MRAs of a REQ, for req_id */
	uint8_t mra_timeout;
	double after;			/* CLOCK_REALTIME, s */
	int rep_after;			/* REPs sent after that */
};

static double
wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void
sent_one(struct sent *s, const uint8_t *mad, double t)
{
	uint16_t a = cm_mad_attr_id(mad);
	struct cm_req req;
	struct cm_mra mra;

	if (a > CM_ATTR_APR)
		return;
	s->n[a]++;
	if (a == CM_ATTR_REQ) {
		cm_req_unpack(mad, &req);
		if (s->n[a] == 1)
			s->req_id = req.local_comm_id;
		s->req_ids += req.local_comm_id != s->req_id;
	} else if (a == CM_ATTR_MRA) {
		cm_mra_unpack(mad, &mra);
		if (mra.message_mraed == CM_MRA_REQ &&
		    mra.remote_comm_id == s->req_id) {
			s->mra_req++;
			s->mra_timeout = mra.service_timeout;
		}
	} else if (a == CM_ATTR_REP && s->after > 0 && t > s->after) {
		s->rep_after++;
	}
}

/* The CM MADs of the capture (frames to UDP 4791, QP 1, class CM). */
static void
sent_read(struct sent *s)
{
	struct pcap_file pf;
	const uint8_t *d;
	uint32_t len;

	CHECK(pcap_open(&pf, capture) == 0, "open %s", capture);
	while (pcap_next(&pf, &d, &len) == 1) {
		const uint8_t *rec = d - PCAP_REC_HDR_LEN;
		const uint8_t *udp = d + 14 + 20, *bth = udp + 8;
		const uint8_t *mad = bth + 12 + 8;

		if (len < 14 + 20 + 8 + 12 + 8 + CM_MAD_LEN || d[12] != 0x08 ||
		    d[13] != 0 || d[14 + 9] != IPPROTO_UDP ||
		    (udp[2] << 8 | udp[3]) != 4791 || bth[0] != UD_SEND_ONLY ||
		    (bth[5] << 16 | bth[6] << 8 | bth[7]) != 1 ||
		    mad[1] != CM_MGMT_CLASS)
			continue;
		sent_one(s, mad, pcap_u32(&pf, rec) +
			 pcap_u32(&pf, rec + 4) * 1e-6);
	}
	pcap_close(&pf);
}

/* ---- mra ----------------------------------------------------------------- */

/*
 * The passive application is slow (DPIB_CM_TIMEOUT=10: the REQ resent
 * every 8.4 ms, 15 times, would run out after ~130 ms). Its CM answers
 * the resent REQs with an MRA (IBA 12.6.6) whose service timeout makes
 * the active side wait rather than give up; rdma_accept 500 ms later
 * still connects, once on each side.
 */
#define SLOW_ACCEPT_MS	500

static void
mra_slow_accept_still_connects(void)
{
	struct rdma_conn_param p = {
		.responder_resources = C.init, .initiator_depth = C.resp,
		.rnr_retry_count = 7,
	};
	struct rdma_cm_event *ev;
	double t0 = check_now(), t_acc;

	connect_active();
	ev = expect(C.pch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL, EV_WAIT);
	C.pas = ev->id;
	ack(ev);
	/* The application's 500 ms: no UNREACHABLE meanwhile, and the
	 * resent REQs are no new requests.
	 */
	quiet(C.ach, SLOW_ACCEPT_MS);
	quiet(C.pch, 0);
	qp_on(C.pas, NULL);
	t_acc = check_now();
	CHECK(rdma_accept(C.pas, &p) == 0, "rdma_accept: errno %d", errno);
	ev = expect(C.ach, RDMA_CM_EVENT_ESTABLISHED, C.act, EV_WAIT);
	CHECK(ev->status == 0, "status %d", ev->status);
	ack(ev);
	printf("# accepted after %.0f ms, active ESTABLISHED %.1f ms later\n",
	       (t_acc - t0) * 1000, (check_now() - t_acc) * 1000);
	ev = expect(C.pch, RDMA_CM_EVENT_ESTABLISHED, C.pas, EV_WAIT);
	CHECK(ev->status == 0, "status %d", ev->status);
	ack(ev);
	quiet_both(QUIET_MS);
}

/* In the capture: the REQ resent (one connection), MRAs of it sent. */
static void
mra_answers_resent_req(void)
{
	struct sent s = { 0 };

	sent_read(&s);
	printf("# sent: %d REQ, %d MRA (of the REQ: %d, service timeout %u),"
	       " %d REP, %d RTU\n", s.n[CM_ATTR_REQ], s.n[CM_ATTR_MRA],
	       s.mra_req, s.mra_timeout, s.n[CM_ATTR_REP], s.n[CM_ATTR_RTU]);
	CHECK(s.n[CM_ATTR_REQ] >= 2, "%d REQ sent: never resent",
	      s.n[CM_ATTR_REQ]);
	CHECK(s.req_ids == 0, "REQs of %d other connections", s.req_ids);
	CHECK(s.mra_req >= 1, "no MRA of the REQ (%d MRAs)",
	      s.n[CM_ATTR_MRA]);
	CHECK(s.n[CM_ATTR_REJ] == 0, "%d REJ sent", s.n[CM_ATTR_REJ]);
	CHECK(s.n[CM_ATTR_REP] >= 1 && s.n[CM_ATTR_RTU] >= 1,
	      "%d REP, %d RTU", s.n[CM_ATTR_REP], s.n[CM_ATTR_RTU]);
}

/* ---- notify -------------------------------------------------------------- */

/*
 * Every RTU lost (DPIB_CM_LOSE=RTU=1000; DPIB_CM_TIMEOUT=14, the REP
 * resent every 134 ms, 15 times): the active side is established, the
 * passive one waits for an RTU that never comes. Its application sees
 * the first receive complete and calls rdma_notify(IBV_EVENT_COMM_EST)
 * (IBA 12.6.9: the first packet on the QP stands for the RTU): it is
 * ESTABLISHED once, before its REP's retries run out, and never
 * UNREACHABLE after.
 */
#define NOTIFY_REP_PERIOD	(2 * 4.096e-6 * (1 << 14))
#define NOTIFY_GIVE_UP		(16 * NOTIFY_REP_PERIOD)

static double accepted_at;
static double notify_at_wall;		/* CLOCK_REALTIME, the capture's:
					 * no REP may leave after it */

/* rdma_notify on an id with no connection to establish: EINVAL. */
static void
notify_einval(struct rdma_cm_id *id, const char *what)
{
	errno = 0;
	CHECK(rdma_notify(id, IBV_EVENT_COMM_EST) == -1 && errno == EINVAL,
	      "rdma_notify on %s: errno %d, want EINVAL", what, errno);
}

static void
notify_without_connection_is_einval(void)
{
	notify_einval(C.listen, "a listener");
	notify_einval(C.act, "an id with its route resolved");
}

static void
notify_rtu_lost_passive_waits(void)
{
	struct rdma_conn_param p = {
		.responder_resources = C.init, .initiator_depth = C.resp,
		.rnr_retry_count = 7,
	};
	struct rdma_cm_event *ev;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;

	connect_active();
	ev = expect(C.pch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL, EV_WAIT);
	C.pas = ev->id;
	ack(ev);
	notify_einval(C.pas, "a request not yet accepted");
	notify_einval(C.act, "an id with its REQ out");
	qp_on(C.pas, NULL);
	accepted_at = check_now();
	CHECK(rdma_accept(C.pas, &p) == 0, "rdma_accept: errno %d", errno);
	CHECK(ibv_query_qp(C.pas->qp, &a, IBV_QP_STATE, &ia) == 0 &&
	      a.qp_state == IBV_QPS_RTS, "passive QP not RTS after accept");
	ev = expect(C.ach, RDMA_CM_EVENT_ESTABLISHED, C.act, EV_WAIT);
	CHECK(ev->status == 0, "status %d", ev->status);
	ack(ev);
	/* Two REP resends at least, each RTU lost: no ESTABLISHED. */
	quiet(C.pch, QUIET_MS);
}

static void
notify_first_receive_establishes_passive(void)
{
	struct rdma_cm_event *ev;
	double took;

	send_over(C.act, C.pas, 8);
	CHECK(rdma_notify(C.pas, IBV_EVENT_COMM_EST) == 0,
	      "rdma_notify: errno %d", errno);
	notify_at_wall = wall_now();
	ev = expect(C.pch, RDMA_CM_EVENT_ESTABLISHED, C.pas, EV_WAIT);
	took = check_now() - accepted_at;
	CHECK(ev->status == 0, "status %d", ev->status);
	ack(ev);
	printf("# passive ESTABLISHED %.0f ms after accept (gives up at "
	       "%.0f ms)\n", took * 1000, NOTIFY_GIVE_UP * 1000);
	CHECK(took < NOTIFY_GIVE_UP, "established after the REP's retries");
	/* Established already: EISCONN, as the kernel's ib_cm_notify
	 * says, and no second event; a LID change is nothing on RoCE; an
	 * event the CM does not take is EINVAL.
	 */
	CHECK(rdma_notify(C.pas, IBV_EVENT_COMM_EST) == -1 && errno == EISCONN,
	      "rdma_notify again: errno %d, want EISCONN", errno);
	CHECK(rdma_notify(C.act, IBV_EVENT_COMM_EST) == -1 && errno == EISCONN,
	      "rdma_notify on the active side: errno %d, want EISCONN",
	      errno);
	CHECK(rdma_notify(C.act, IBV_EVENT_LID_CHANGE) == 0,
	      "LID change: errno %d", errno);
	CHECK(rdma_notify(C.act, IBV_EVENT_QP_FATAL) == -1 && errno == EINVAL,
	      "QP fatal: errno %d, want EINVAL", errno);
	quiet_both(0);
}

/* Past the time the REP's retries would have run out: no UNREACHABLE,
 * no REP sent since; the REP was resent and no RTU ever left.
 */
static void
notify_no_unreachable_later(void)
{
	double left = accepted_at + NOTIFY_GIVE_UP + 0.3 - check_now();
	/* A REP the worker resent just before rdma_notify may leave a
	 * little later; one not stopped would come every 134 ms.
	 */
	struct sent s = { .after = notify_at_wall + 0.1 };

	quiet_both(left > 0 ? (int)(left * 1000) : 0);
	send_over(C.pas, C.act, 9);
	sent_read(&s);
	printf("# sent: %d REP (%d after notify), %d RTU\n", s.n[CM_ATTR_REP],
	       s.rep_after, s.n[CM_ATTR_RTU]);
	CHECK(s.n[CM_ATTR_REP] >= 2, "the REP was never resent");
	CHECK(s.n[CM_ATTR_RTU] == 0, "%d RTU left: DPIB_CM_LOSE=RTU=1000?",
	      s.n[CM_ATTR_RTU]);
	CHECK(s.rep_after == 0, "%d REPs resent after rdma_notify",
	      s.rep_after);
}

/* ---- nonblock ------------------------------------------------------------ */

/*
 * An event channel's fd set O_NONBLOCK with fcntl, as event loops set
 * it: rdma_get_cm_event fails with EAGAIN rather than wait, as on the
 * kernel's rdma_cm fd; the fd polls readable - in epoll too - exactly
 * while events wait; and rdma_migrate_id takes an id's waiting events to
 * its new channel.
 */
struct nb {
	struct rdma_event_channel *ch[2];
	int ep[2];			/* an epoll set for each channel */
	struct rdma_cm_id *id[5];
};

static struct nb NB;

static void
nonblock_set(struct rdma_event_channel *ch, int on)
{
	int fl = fcntl(ch->fd, F_GETFL);

	CHECK(fl >= 0, "F_GETFL: errno %d", errno);
	CHECK(fcntl(ch->fd, F_SETFL, on ? fl | O_NONBLOCK :
		    fl & ~O_NONBLOCK) == 0, "F_SETFL: errno %d", errno);
}

/* 1 when epoll reports @ch's fd readable within @ms, else 0. */
static int
epoll_in(int k, int ms)
{
	struct epoll_event e;
	int n = epoll_wait(NB.ep[k], &e, 1, ms);

	CHECK(n >= 0, "epoll_wait: errno %d", errno);
	CHECK(n == 0 || (e.events & EPOLLIN), "epoll: events %#x", e.events);
	return n;
}

static void
nb_empty(int k, const char *what)
{
	struct rdma_cm_event *ev = NULL;
	double t0 = check_now();

	CHECK(epoll_in(k, 0) == 0, "%s: EPOLLIN with no event waiting", what);
	errno = 0;
	CHECK(rdma_get_cm_event(NB.ch[k], &ev) == -1 && errno == EAGAIN,
	      "%s: empty channel gave errno %d, want EAGAIN", what, errno);
	CHECK(check_now() - t0 < 0.1, "%s: EAGAIN after %.2f s", what,
	      check_now() - t0);
}

/* The next event on channel @k is @type for @id (taken at once). */
static void
nb_take(int k, enum rdma_cm_event_type type, struct rdma_cm_id *id)
{
	struct rdma_cm_event *ev;

	CHECK(epoll_in(k, 0) == 1, "no EPOLLIN, yet %s waits",
	      rdma_event_str(type));
	CHECK(rdma_get_cm_event(NB.ch[k], &ev) == 0,
	      "%s waiting, yet errno %d", rdma_event_str(type), errno);
	CHECK(ev->event == type && ev->id == id, "%s (for id %p), want %s "
	      "(for %p)", rdma_event_str(ev->event), (void *)ev->id,
	      rdma_event_str(type), (void *)id);
	CHECK(ev->status == 0, "status %d", ev->status);
	ack(ev);
}

static struct rdma_cm_id *
nb_id(int k)
{
	struct rdma_cm_id *id;

	CHECK(rdma_create_id(NB.ch[k], &id, NULL, RDMA_PS_TCP) == 0,
	      "id: errno %d", errno);
	return id;
}

static void
nb_resolve_addr(struct rdma_cm_id *id)
{
	struct sockaddr_in d = loopback(PORT);

	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000) == 0,
	      "resolve_addr: errno %d", errno);
}

static void
nonblock_empty_channel_eagain(void)
{
	struct epoll_event e = { .events = EPOLLIN };
	int k;

	for (k = 0; k < 2; k++) {
		NB.ch[k] = rdma_create_event_channel();
		CHECK(NB.ch[k] != NULL, "channel: errno %d", errno);
		NB.ep[k] = epoll_create1(EPOLL_CLOEXEC);
		CHECK(NB.ep[k] >= 0, "epoll_create1: errno %d", errno);
		CHECK(epoll_ctl(NB.ep[k], EPOLL_CTL_ADD, NB.ch[k]->fd, &e) == 0,
		      "epoll_ctl: errno %d", errno);
	}
	nonblock_set(NB.ch[0], 1);
	nb_empty(0, "new channel");
	nb_empty(0, "new channel, again");
}

/* Two ids' events: EPOLLIN while one is left, none once both taken. */
static void
nonblock_epollin_exactly_while_events_wait(void)
{
	int i;

	for (i = 0; i < 2; i++) {
		NB.id[i] = nb_id(0);
		nb_resolve_addr(NB.id[i]);
		CHECK(epoll_in(0, (int)(EV_WAIT * 1000)) == 1,
		      "no ADDR_RESOLVED within %.1f s", EV_WAIT);
		nb_take(0, RDMA_CM_EVENT_ADDR_RESOLVED, NB.id[i]);
		nb_empty(0, "ADDR_RESOLVED taken");
	}
	/* rdma_resolve_route reports before it returns (no SA on RoCE). */
	CHECK(rdma_resolve_route(NB.id[0], 2000) == 0, "resolve_route");
	CHECK(rdma_resolve_route(NB.id[1], 2000) == 0, "resolve_route");
	nb_take(0, RDMA_CM_EVENT_ROUTE_RESOLVED, NB.id[0]);
	nb_take(0, RDMA_CM_EVENT_ROUTE_RESOLVED, NB.id[1]);
	nb_empty(0, "both ROUTE_RESOLVED taken");
}

/* O_NONBLOCK cleared again: an event waiting is returned at once. */
static void
nonblock_cleared_blocking_get_returns_waiting_event(void)
{
	struct rdma_cm_event *ev;
	double t0;

	NB.id[2] = nb_id(0);
	nb_resolve_addr(NB.id[2]);
	CHECK(epoll_in(0, (int)(EV_WAIT * 1000)) == 1, "no ADDR_RESOLVED");
	nonblock_set(NB.ch[0], 0);
	t0 = check_now();
	CHECK(rdma_get_cm_event(NB.ch[0], &ev) == 0, "errno %d", errno);
	CHECK(ev->event == RDMA_CM_EVENT_ADDR_RESOLVED && ev->id == NB.id[2],
	      "%s", rdma_event_str(ev->event));
	ack(ev);
	CHECK(check_now() - t0 < 0.1, "took %.2f s", check_now() - t0);
	nonblock_set(NB.ch[0], 1);
	nb_empty(0, "blocking again, then not");
}

/*
 * rdma_migrate_id: the id's waiting events, in order, go with it, the
 * other ids' stay; each fd's readiness follows its count. The new
 * channel blocks (no O_NONBLOCK): events waiting come at once.
 */
static void
nonblock_migrate_moves_waiting_events(void)
{
	struct rdma_cm_id *a, *b = NB.id[2];

	a = NB.id[3] = nb_id(0);
	nb_resolve_addr(a);
	CHECK(epoll_in(0, (int)(EV_WAIT * 1000)) == 1, "no ADDR_RESOLVED");
	CHECK(rdma_resolve_route(a, 2000) == 0, "resolve_route");
	CHECK(rdma_resolve_route(b, 2000) == 0, "resolve_route");
	/* channel 0: a's ADDR_RESOLVED and ROUTE_RESOLVED, b's ROUTE */
	CHECK(rdma_migrate_id(a, NB.ch[1]) == 0, "migrate: errno %d", errno);
	CHECK(a->channel == NB.ch[1], "id->channel not the new one");
	nb_take(1, RDMA_CM_EVENT_ADDR_RESOLVED, a);
	nb_take(1, RDMA_CM_EVENT_ROUTE_RESOLVED, a);
	nonblock_set(NB.ch[1], 1);
	nb_empty(1, "a's events taken from its new channel");
	nb_take(0, RDMA_CM_EVENT_ROUTE_RESOLVED, b);
	nb_empty(0, "b's event taken from the old channel");
}

/* An id with the only event waiting migrates: the old fd goes quiet,
 * the new one polls readable, and the id's next events come there.
 */
static void
nonblock_migrate_only_waiting_event(void)
{
	struct rdma_cm_id *c = NB.id[4] = nb_id(0);

	nb_resolve_addr(c);
	CHECK(epoll_in(0, (int)(EV_WAIT * 1000)) == 1, "no ADDR_RESOLVED");
	CHECK(rdma_migrate_id(c, NB.ch[1]) == 0, "migrate: errno %d", errno);
	nb_empty(0, "the only waiting event migrated away");
	nb_take(1, RDMA_CM_EVENT_ADDR_RESOLVED, c);
	nb_empty(1, "taken");
	CHECK(rdma_resolve_route(c, 2000) == 0, "resolve_route");
	nb_empty(0, "old channel after the migration");
	nb_take(1, RDMA_CM_EVENT_ROUTE_RESOLVED, c);
	nb_empty(1, "all taken");
}

/*
 * A connection driven by one epoll set on both channels, both
 * O_NONBLOCK, as an event loop drives it: every EPOLLIN has an event to
 * take, the loop takes them until EAGAIN, and each event comes once.
 */
#define NB_ACTIVE	(EVBIT(ADDR_RESOLVED) | EVBIT(ROUTE_RESOLVED) | \
			 EVBIT(ESTABLISHED) | EVBIT(DISCONNECTED) | \
			 EVBIT(TIMEWAIT_EXIT))
#define NB_PASSIVE	(EVBIT(CONNECT_REQUEST) | EVBIT(ESTABLISHED) | \
			 EVBIT(DISCONNECTED) | EVBIT(TIMEWAIT_EXIT))

/* The loop's answer to one event of the active (@k 0) or passive side. */
static void
nb_handle(int k, struct rdma_cm_event *ev, uint32_t *seen)
{
	struct rdma_conn_param p = {
		.responder_resources = 1, .initiator_depth = 1,
		.rnr_retry_count = 7,
	};
	enum rdma_cm_event_type t = ev->event;

	CHECK(ev->status == 0, "%s: status %d", rdma_event_str(t),
	      ev->status);
	CHECK((unsigned int)t < 32 && ((k ? NB_PASSIVE : NB_ACTIVE) &
	      (1u << t)), "%s on the %s side", rdma_event_str(t),
	      k ? "passive" : "active");
	CHECK(!(seen[k] & (1u << t)), "a second %s", rdma_event_str(t));
	seen[k] |= 1u << t;
	if (t == RDMA_CM_EVENT_CONNECT_REQUEST)
		C.pas = ev->id;
	CHECK(ev->id == (k ? C.pas : C.act), "%s for another id",
	      rdma_event_str(t));
	ack(ev);
	if (t == RDMA_CM_EVENT_ADDR_RESOLVED) {
		CHECK(rdma_resolve_route(C.act, 2000) == 0, "resolve_route");
	} else if (t == RDMA_CM_EVENT_ROUTE_RESOLVED) {
		qp_on(C.act, C.acq);
		connect_active();
	} else if (t == RDMA_CM_EVENT_CONNECT_REQUEST) {
		qp_on(C.pas, NULL);
		CHECK(rdma_accept(C.pas, &p) == 0, "accept: errno %d", errno);
	} else if (t == RDMA_CM_EVENT_ESTABLISHED && k == 0) {
		send_over(C.act, C.pas, 21);
		CHECK(rdma_disconnect(C.act) == 0, "disconnect");
	} else if (t == RDMA_CM_EVENT_DISCONNECTED && k == 1) {
		CHECK(rdma_disconnect(C.pas) == 0, "disconnect");
	}
}

static void
nonblock_connection_driven_by_epoll(void)
{
	struct sockaddr_in d = loopback(PORT);
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	struct epoll_event e[2];
	uint32_t seen[2] = { 0, 0 };
	double end;
	int ep, n, i, k, got;

	channels_open();
	ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0, "epoll_create1: errno %d", errno);
	for (k = 0; k < 2; k++) {
		struct epoll_event ee = { .events = EPOLLIN, .data.u32 = k };

		ch = k ? C.pch : C.ach;
		nonblock_set(ch, 1);
		CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, ch->fd, &ee) == 0,
		      "epoll_ctl: errno %d", errno);
	}
	listen_on(PORT);
	memory_open(C.listen->verbs);
	C.resp = C.init = 1;
	CHECK(rdma_create_id(C.ach, &C.act, NULL, RDMA_PS_TCP) == 0, "id");
	CHECK(rdma_resolve_addr(C.act, NULL, (struct sockaddr *)&d, 2000) == 0,
	      "resolve_addr: errno %d", errno);
	end = check_now() + 10;
	while (seen[0] != NB_ACTIVE || seen[1] != NB_PASSIVE) {
		CHECK(check_now() < end, "after 10 s: active %#x, passive %#x",
		      seen[0], seen[1]);
		n = epoll_wait(ep, e, 2, 100);
		CHECK(n >= 0, "epoll_wait: errno %d", errno);
		for (i = 0; i < n; i++) {
			k = (int)e[i].data.u32;
			ch = k ? C.pch : C.ach;
			for (got = 0; rdma_get_cm_event(ch, &ev) == 0; got++)
				nb_handle(k, ev, seen);
			CHECK(errno == EAGAIN, "rdma_get_cm_event: errno %d",
			      errno);
			CHECK(got > 0, "EPOLLIN with no event to take");
		}
	}
	close(ep);
	quiet_both(QUIET_MS);
	destroy_brings_no_event();
}

static void
nonblock_teardown_ids(void)
{
	int i;

	for (i = 0; i < 5; i++)
		if (NB.id[i] != NULL)
			CHECK(rdma_destroy_id(NB.id[i]) == 0, "destroy");
	nb_empty(0, "ids destroyed");
	nb_empty(1, "ids destroyed");
	for (i = 0; i < 2; i++) {
		close(NB.ep[i]);
		rdma_destroy_event_channel(NB.ch[i]);
	}
	memset(&NB, 0, sizeof(NB));
}

/* ---- main -------------------------------------------------------------- */

static void
capture_remove(void)
{
	unlink(capture);
}

static void
run_connect(int full)
{
	RUN(listen_and_resolve);
	RUN(connect_request_carries_pdata_and_swapped_resources);
	RUN(established_once_each_side);
	RUN(addresses_of_both_ends);
	RUN(send_and_write_over_connection);
	RUN(disconnect_once_each_side);
	RUN(timewait_exit_once_each_side);
	RUN(destroy_brings_no_event);
	if (!full)
		return;
	RUN(accept_defaults_grant_what_was_asked);
	RUN(connect_defaults_as_librdmacm);
	RUN(destroy_waits_for_acks);
	RUN(destroyed_id_takes_its_events);
	RUN(get_event_on_destroyed_channel_sleeps);
}

/*
 * A blocking rdma_get_cm_event is a read of the kernel's rdma_cm fd: a
 * signal whose handler lacks SA_RESTART ends it with EINTR, one with
 * SA_RESTART does not. A thread resolves an address on the channel's id
 * (its ADDR_RESOLVED is the event): at 300 ms after a SA_RESTART alarm of
 * 50 ms, at 1.5 s (the wait's watchdog) after the other.
 */
static volatile sig_atomic_t cm_alarms;

static void
cm_on_alarm(int sig)
{
	(void)sig;
	cm_alarms++;
}

struct resolve_later {
	struct rdma_cm_id *id;
	int ms;
};

static void *
resolve_later(void *arg)
{
	struct resolve_later *r = arg;
	struct sockaddr_in d = loopback(PORT);

	usleep((useconds_t)r->ms * 1000);
	CHECK(rdma_resolve_addr(r->id, NULL, (struct sockaddr *)&d, 2000) == 0,
	      "resolve_addr: errno %d", errno);
	return NULL;
}

static void
get_event_interrupted_as_read(void)
{
	struct itimerval it = { .it_value = { .tv_usec = 50000 } };
	struct sigaction sa = { .sa_handler = cm_on_alarm }, old;
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev = NULL;
	struct resolve_later r;
	sig_atomic_t before;
	double t0, took;
	pthread_t t;
	int restart, ret, err;

	for (restart = 0; restart < 2; restart++) {
		ch = rdma_create_event_channel();
		CHECK(ch != NULL, "create_event_channel");
		CHECK(rdma_create_id(ch, &r.id, NULL, RDMA_PS_TCP) == 0, "id");
		r.ms = restart ? 300 : 1500;
		sa.sa_flags = restart ? SA_RESTART : 0;
		sigemptyset(&sa.sa_mask);
		CHECK(sigaction(SIGALRM, &sa, &old) == 0, "sigaction");
		CHECK(pthread_create(&t, NULL, resolve_later, &r) == 0,
		      "thread");
		before = cm_alarms;
		CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0, "setitimer");
		t0 = check_now();
		errno = 0;
		ret = rdma_get_cm_event(ch, &ev);
		err = errno;
		took = check_now() - t0;
		CHECK(cm_alarms == before + 1, "the alarm did not come");
		if (!restart) {
			CHECK(ret == -1 && err == EINTR && took < 1.0,
			      "no SA_RESTART: returned %d (errno %d) after "
			      "%.3f s, want EINTR at the alarm", ret, err, took);
			CHECK(pthread_join(t, NULL) == 0, "join");
			ev = expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, r.id,
				    EV_WAIT);
		} else {
			CHECK(ret == 0 && took > 0.2,
			      "SA_RESTART: returned %d (errno %d) after %.3f "
			      "s, want the event at 0.3 s", ret, err, took);
			CHECK(ev->event == RDMA_CM_EVENT_ADDR_RESOLVED,
			      "%s", rdma_event_str(ev->event));
			CHECK(pthread_join(t, NULL) == 0, "join");
		}
		ack(ev);
		CHECK(sigaction(SIGALRM, &old, NULL) == 0, "sigaction back");
		CHECK(rdma_destroy_id(r.id) == 0, "destroy id");
		rdma_destroy_event_channel(ch);
	}
}

/* ---- synchronous ids ----------------------------------------------------- */

/*
 * Ids without a channel (rdma_create_ep's, as rdma-core's rdma_server and
 * rdma_client use them): each call waits for its own event and leaves it
 * in id->event. A server thread and this one, a connection between them.
 */
#define SYNC_PORT	7481

static struct {
	struct rdma_cm_id *listen, *id;
	int accepted;		/* the server's rdma_accept returned 0 */
	int disconnected;	/* ... and its rdma_disconnect, with the event */
	int req_event;		/* rdma_get_request left the request's event */
	int migrate_null;	/* rdma_migrate_id(sync id, NULL): its errno */
} S;

static struct rdma_addrinfo *
sync_addr(int passive)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP,
				       .ai_flags = passive ? RAI_PASSIVE : 0 };
	struct rdma_addrinfo *res = NULL;
	char port[8];

	snprintf(port, sizeof(port), "%d", SYNC_PORT);
	CHECK(rdma_getaddrinfo("127.0.0.1", port, &hints, &res) == 0,
	      "rdma_getaddrinfo: errno %d", errno);
	return res;
}

static struct ibv_qp_init_attr
sync_qp_attr(void)
{
	struct ibv_qp_init_attr a = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
	};

	return a;
}

/* Wait (bounded) until @ch has an event, without taking it. */
static int
sync_readable(struct rdma_event_channel *ch, int ms)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1;
}

static void *
sync_server(void *arg)
{
	struct ibv_qp_init_attr a = sync_qp_attr();
	struct rdma_addrinfo *res = sync_addr(1);
	struct rdma_cm_id *id;

	(void)arg;
	if (rdma_create_ep(&S.listen, res, NULL, &a) != 0 ||
	    rdma_listen(S.listen, 1) != 0 ||
	    rdma_get_request(S.listen, &id) != 0) {
		rdma_freeaddrinfo(res);
		return NULL;
	}
	rdma_freeaddrinfo(res);
	S.id = id;
	S.req_event = id->event != NULL &&
		      id->event->event == RDMA_CM_EVENT_CONNECT_REQUEST &&
		      id->qp != NULL;
	errno = 0;
	S.migrate_null = rdma_migrate_id(id, NULL) == 0 ? 0 : errno;
	if (rdma_accept(id, NULL) != 0)
		return NULL;
	__atomic_store_n(&S.accepted, 1, __ATOMIC_RELEASE);
	/* The client's DREQ queues DISCONNECTED on this id's own channel;
	 * rdma_disconnect then answers it (DREP) and returns with it.
	 */
	if (!sync_readable(id->channel, (int)(EV_WAIT * 1000)))
		return NULL;
	if (rdma_disconnect(id) != 0)
		return NULL;
	S.disconnected = id->event != NULL &&
			 id->event->event == RDMA_CM_EVENT_DISCONNECTED &&
			 id->event->status == 0;
	return NULL;
}

/*
 * rdma_get_request hands out the request's id with its QP and its event;
 * rdma_migrate_id refuses to leave a synchronous id without a channel;
 * rdma_connect and rdma_accept return established; rdma_disconnect
 * returns once the connection has ended, with DISCONNECTED in id->event
 * (it returned at once, the event left unread), on both sides.
 */
static void
sync_ids_as_librdmacm(void)
{
	struct ibv_qp_init_attr a = sync_qp_attr();
	struct rdma_addrinfo *res;
	struct rdma_cm_id *id;
	pthread_t t;
	double t0;

	CHECK(pthread_create(&t, NULL, sync_server, NULL) == 0, "thread");
	for (t0 = check_now(); S.listen == NULL && check_now() - t0 < EV_WAIT;)
		usleep(1000);
	usleep(20000);		/* its rdma_listen */
	res = sync_addr(0);
	CHECK(rdma_create_ep(&id, res, NULL, &a) == 0,
	      "rdma_create_ep: errno %d", errno);
	rdma_freeaddrinfo(res);
	CHECK(rdma_connect(id, NULL) == 0, "rdma_connect: errno %d", errno);
	CHECK(id->event != NULL &&
	      id->event->event == RDMA_CM_EVENT_ESTABLISHED,
	      "rdma_connect returned without ESTABLISHED in id->event");
	for (t0 = check_now(); !__atomic_load_n(&S.accepted, __ATOMIC_ACQUIRE) &&
	     check_now() - t0 < EV_WAIT;)
		usleep(1000);
	CHECK(S.accepted, "the server's rdma_accept did not return 0");
	CHECK(S.req_event, "rdma_get_request: no CONNECT_REQUEST in id->event "
	      "or no QP");
	CHECK(S.migrate_null == EINVAL, "rdma_migrate_id(sync id, NULL): "
	      "errno %d, want EINVAL", S.migrate_null);
	CHECK(rdma_disconnect(id) == 0, "rdma_disconnect: errno %d", errno);
	CHECK(id->event != NULL &&
	      id->event->event == RDMA_CM_EVENT_DISCONNECTED,
	      "rdma_disconnect returned before the connection ended (%s)",
	      id->event != NULL ? rdma_event_str(id->event->event) : "none");
	CHECK(id->event->status == 0, "DISCONNECTED status %d",
	      id->event->status);
	CHECK(pthread_join(t, NULL) == 0, "join");
	CHECK(S.disconnected, "the server's rdma_disconnect: no DISCONNECTED "
	      "in id->event");
	/* A second rdma_disconnect has no event to wait for. */
	t0 = check_now();
	CHECK(rdma_disconnect(id) == 0, "second disconnect: errno %d", errno);
	CHECK(check_now() - t0 < 1.0, "second disconnect waited %.1f s",
	      check_now() - t0);
	rdma_destroy_ep(id);
	rdma_destroy_ep(S.id);
	rdma_destroy_ep(S.listen);
}

int
main(int argc, char **argv)
{
	const char *scenario = argc > 1 ? argv[1] : "connect";

	if (strcmp(scenario, "forged") == 0 || strcmp(scenario, "rxe") == 0) {
		snprintf(capture, sizeof(capture), "/tmp/dpib-rdmacm-%d.pcap",
			 (int)getpid());
		setenv("DPIB_CAPTURE", capture, 1);
		atexit(capture_remove);
	}
	equal_resources = strcmp(scenario, "lost") == 0 ||
			  strcmp(scenario, "forged") == 0;
	if (strcmp(scenario, "connect") == 0) {
		run_connect(1);
	} else if (strcmp(scenario, "lost") == 0) {
		run_connect(0);
	} else if (strcmp(scenario, "reject") == 0) {
		RUN(rejected_without_listener);
		RUN(rejected_by_rdma_reject_with_pdata);
		RUN(rejected_by_destroying_request);
		RUN(ece_as_librdmacm);
		RUN(backlog_counts_requests_not_taken);
		RUN(bind_errors_as_the_kernel);
		RUN(set_option_as_the_kernel);
		RUN(join_multicast_ex_as_librdmacm);
	} else if (strcmp(scenario, "unreachable") == 0) {
		RUN(unreachable_when_every_req_is_lost);
		RUN(addr_error_for_other_loopback_address);
		RUN(addr_error_for_silent_host);
	} else if (strcmp(scenario, "forged") == 0) {
		RUN(forged_setup);
		RUN(forged_truncated_mad_dropped_by_hca);
		RUN(forged_other_class_dropped_by_hca);
		RUN(forged_bad_qkey_dropped_by_hca);
		RUN(forged_header_dropped_by_cm);
		RUN(forged_rep_for_no_req);
		RUN(forged_wrong_remote_comm_id);
		RUN(forged_lap_unsupported);
		RUN(forged_connection_still_ends_cleanly);
	} else if (strcmp(scenario, "rxe") == 0) {
		RUN(rxe_vectors_as_linux_sent_them);
		RUN(rxe_peer_learned_from_its_arp_request);
		RUN(rxe_req_gives_connect_request_with_its_fields);
		RUN(rxe_accept_sends_rep_answering_req);
		RUN(rxe_rtu_establishes_passive);
		RUN(rxe_passive_exchanges_a_send);
		RUN(rxe_dreq_disconnects_and_drep_answers);
		RUN(rxe_connect_sends_req_to_peer);
		RUN(rxe_rep_establishes_active_and_rtu_answers);
		RUN(rxe_active_exchanges_a_send);
		RUN(rxe_disconnect_sends_dreq_and_drep_ends_it);
		RUN(rxe_timewait_exit_and_nothing_dropped);
		RUN(rxe_req_fields_as_rxe);
		RUN(rxe_each_side_sends_from_the_psn_its_peer_stated);
		RUN(rxe_rep_fields_as_rxe);
	} else if (strcmp(scenario, "inflight") == 0) {
		RUN(inflight_setup);
		RUN(inflight_requests_withdrawn);
		RUN(inflight_requests_destroyed_unanswered);
		RUN(inflight_connections_destroyed);
		RUN(inflight_leaks_nothing);
		RUN(inflight_no_mad_waited_for_a_resend);
		RUN(inflight_connection_still_works);
		RUN(inflight_withdrawn_request_is_rejected);
		RUN(inflight_teardown);
	} else if (strcmp(scenario, "mra") == 0) {
		capture_start();
		RUN(listen_and_resolve);
		RUN(mra_slow_accept_still_connects);
		RUN(mra_answers_resent_req);
		RUN(send_and_write_over_connection);
		RUN(disconnect_once_each_side);
		RUN(timewait_exit_once_each_side);
		RUN(destroy_brings_no_event);
	} else if (strcmp(scenario, "notify") == 0) {
		capture_start();
		RUN(listen_and_resolve);
		RUN(notify_without_connection_is_einval);
		RUN(notify_rtu_lost_passive_waits);
		RUN(notify_first_receive_establishes_passive);
		RUN(notify_no_unreachable_later);
		RUN(disconnect_both_at_once);
		RUN(timewait_exit_once_each_side);
		RUN(destroy_brings_no_event);
	} else if (strcmp(scenario, "sync") == 0) {
		RUN(sync_ids_as_librdmacm);
	} else if (strcmp(scenario, "nonblock") == 0) {
		RUN(nonblock_empty_channel_eagain);
		RUN(nonblock_epollin_exactly_while_events_wait);
		RUN(nonblock_cleared_blocking_get_returns_waiting_event);
		RUN(nonblock_migrate_moves_waiting_events);
		RUN(nonblock_migrate_only_waiting_event);
		RUN(nonblock_teardown_ids);
		RUN(nonblock_connection_driven_by_epoll);
		RUN(get_event_interrupted_as_read);
	} else {
		fprintf(stderr, "usage: %s connect|lost|reject|unreachable|"
			"forged|rxe|inflight|mra|notify|nonblock|sync\n", argv[0]);
		return 2;
	}
	CHECK_DONE();
}
