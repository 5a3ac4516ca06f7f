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
 *
 * Every wait is bounded: events are read only after poll() on the
 * channel's fd said one is there.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

#include "roce_frame.h"
#include "cm_msg.h"

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

/* An RDMA WRITE from the active QP into the passive side's memory. */
static void
write_over(uint32_t seed)
{
	uint8_t *src = C.buf + 2048, *dst = C.buf + 4096;
	struct ibv_sge s = { .addr = (uintptr_t)src, .length = 512,
			     .lkey = C.mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)dst,
			     .rkey = C.mr->rkey },
	}, *bad;

	fill_pattern(src, 512, seed);
	memset(dst, 0, 512);
	CHECK(ibv_post_send(C.act->qp, &wr, &bad) == 0, "post WRITE");
	wc_ok(C.acq, IBV_WC_RDMA_WRITE, 0, "WRITE");
	CHECK(memcmp(src, dst, 512) == 0, "WRITE: bytes differ");
}

/* An RDMA READ by the active QP of the passive side's memory. */
static void
read_over(uint32_t seed)
{
	uint8_t *src = C.buf + 4096, *dst = C.buf + 2048;
	struct ibv_sge s = { .addr = (uintptr_t)dst, .length = 512,
			     .lkey = C.mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)src,
			     .rkey = C.mr->rkey },
	}, *bad;

	fill_pattern(src, 512, seed);
	memset(dst, 0, 512);
	CHECK(ibv_post_send(C.act->qp, &wr, &bad) == 0, "post READ");
	wc_ok(C.acq, IBV_WC_RDMA_READ, 0, "READ");
	CHECK(memcmp(src, dst, 512) == 0, "READ: bytes differ");
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

	channels_open();
	listen_on(PORT + 1);
	active_resolved(PORT + 1);
	memory_open(C.act->verbs);
	qp_on(C.act, C.acq);
	CHECK(rdma_connect(C.act, &p) == 0, "rdma_connect: errno %d", errno);
	ev = expect(C.pch, RDMA_CM_EVENT_CONNECT_REQUEST, NULL, EV_WAIT);
	C.pas = ev->id;
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
	RUN(destroyed_id_takes_its_events);
}

int
main(int argc, char **argv)
{
	const char *scenario = argc > 1 ? argv[1] : "connect";

	if (strcmp(scenario, "forged") == 0) {
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
	} else {
		fprintf(stderr, "usage: %s connect|lost|reject|unreachable|"
			"forged\n", argv[0]);
		return 2;
	}
	CHECK_DONE();
}
