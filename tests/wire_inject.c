/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * RoCEv2 frames from an independent implementation (scapy, through
 * tests/wire_inject.py) into dpib's receive path with dpib_inject().
 *
 * The program creates its QPs and a registered buffer, writes a contract
 * (JSON: QPNs, Q_Key, path MTU, buffer address and rkey; the fields are
 * documented in wire_inject.py), runs the generator, injects the frames
 * one case at a time and then has the script dissect what dpib sent back
 * (DPIB_CAPTURE) with tshark and scapy.
 *
 * Valid frames must execute exactly: the receive completes with the right
 * length, the bytes land where they should and nowhere else. Broken frames
 * (IBA 9.6 header validation, C10-15 Q_Key, 9.7.5.2.4 R_Key) must each move
 * exactly one drop counter, complete nothing and change no byte. After every
 * case the whole buffer is compared with a shadow copy, and every counter
 * with its expected value; dpib's own answers come back through the
 * loopback port and are counted there as frames to an unknown QP (the
 * contract's peer QPs 0x99 and 0x9a do not exist here).
 *
 * A second RC QP (in RTS, so that it can bind a type 1 memory window) takes
 * the IBA 1.5 ATOMIC WRITE, memory window and SEND with Invalidate cases:
 * a duplicate ATOMIC WRITE is acknowledged again but not executed again
 * (C9-104), a misaligned one or one whose RETH says 4 bytes is an invalid
 * request, a SEND with Invalidate naming a bogus rkey is an invalid request
 * that completes the receive WQE in error, and an RDMA WRITE through a
 * window's rkey from before its rebind is a remote access error. Each NAK
 * puts the QP in Error; it is taken through Reset to RTS again (a new
 * connection at PSN 0).
 *
 * usage: test_wire_inject PYTHON wire_inject.py
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "verbs_util.h"
#include "pcap.h"
#include "dpib.h"

#define BUF_LEN		(64 * 1024)
#define UD_RX0		0		/* receive buffers, one per WQE */
#define UD_RX1		4096
#define RC_RX0		8192
#define RC_RX1		16384
#define RX_LEN		4096
#define MW_RX		20480		/* the window QP's receive buffer */
#define WRITE_OFF	32768		/* RDMA WRITE target */
#define AW_OFF		40960		/* ATOMIC WRITE target */
#define WIN_OFF		49152		/* a type 1 memory window */
#define WIN_LEN		4096
#define UD_QKEY		0x11111111u
#define PEER_QPN	0x77u		/* wire_inject.py: DETH source QP */
#define PEER_IMM	0xfeedf00du	/* wire_inject.py: UD immediate data */
#define RC_DEST_QPN	0x99u
#define MW_DEST_QPN	0x9au
#define RC_MTU		IBV_MTU_1024
#define MAX_FRAMES	32
#define MAX_COUNTERS	128
#define WAIT_SECS	5.0

struct frame {
	char name[32];
	uint32_t msg_len;
	uint32_t seed;
	const uint8_t *data;
	uint32_t len;
};

struct delta {
	const char *name;
	uint64_t n;
};

static struct ibv_device **list;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static struct ibv_cq *ud_cq, *rc_cq, *mw_cq;
static struct ibv_qp *ud_qp, *rc_qp, *init_qp, *mw_qp;
static struct ibv_mw *mw;
static uint32_t win_rkey_old, win_rkey_new;
static uint8_t *buf;
static uint8_t shadow[BUF_LEN];

static char dir[256];
static const char *python, *script;
static struct pcap_file pcap;
static struct frame frames[MAX_FRAMES];
static int nframes;

static const char *const *cnt_names;
static int ncnt;

/* Payload byte i of a message with seed s, as wire_inject.py makes it. */
static void
pattern(uint8_t *dst, uint32_t n, uint32_t seed)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		dst[i] = (uint8_t)(seed + 7 * i + (i >> 8));
}

static void
path(char *out, size_t len, const char *file)
{
	CHECK((size_t)snprintf(out, len, "%s/%s", dir, file) < len, "path");
}

/* Run the script; its exit status, 77 meaning "skip". */
static int
run_script(const char *mode, const char *a, const char *b, const char *c)
{
	char *argv[] = { (char *)python, (char *)script, (char *)mode,
			 (char *)a, (char *)b, (char *)c, NULL };
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0, "fork: %d", errno);
	if (pid == 0) {
		execv(python, argv);
		fprintf(stderr, "exec %s: %s\n", python, strerror(errno));
		_exit(127);
	}
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void
skip_if(int status, const char *what)
{
	if (status == 77)
		CHECK_SKIP("%s needs tshark and python3-scapy", what);
}

static struct ibv_qp *
make_qp(enum ibv_qp_type type, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = type,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	CHECK(qp != NULL, "create_qp type %d: errno %d", type, errno);
	return qp;
}

static void
to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = UD_QKEY,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE,
	};

	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | (qp->qp_type == IBV_QPT_UD ?
			    IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS)) == 0,
	      "QP %#x to INIT", qp->qp_num);
}

/* RC: INIT -> RTR at rq_psn 0, the peer @dest_qpn. */
static void
rc_to_rtr(struct ibv_qp *qp, uint32_t dest_qpn)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = RC_MTU;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = 1;
	/* The peer's frames come from the device's own address. */
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.hop_limit = 64;
	CHECK(ibv_query_gid(ctx, 1, 0, &a.ah_attr.grh.dgid) == 0, "GID 0");
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
			    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER) == 0, "QP %#x to RTR",
	      qp->qp_num);
}

/*
 * The window QP: Reset -> RTS, a new connection with both PSNs at 0. RTS
 * because a bind is a send queue operation; nothing else is ever posted.
 */
static void
mw_connect(void)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	CHECK(ibv_modify_qp(mw_qp, &a, IBV_QP_STATE) == 0, "to RESET");
	to_init(mw_qp);
	rc_to_rtr(mw_qp, MW_DEST_QPN);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	CHECK(ibv_modify_qp(mw_qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC) == 0,
	      "window QP to RTS");
}

/* Bind the type 1 window over WIN_OFF with ibv_bind_mw; its new rkey. */
static uint32_t
bind_window(void)
{
	struct ibv_mw_bind b = {
		.wr_id = 31, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr, .addr = (uintptr_t)buf + WIN_OFF,
			       .length = WIN_LEN,
			       .mw_access_flags = IBV_ACCESS_REMOTE_WRITE },
	};
	struct ibv_wc wc;

	CHECK(ibv_bind_mw(mw_qp, mw, &b) == 0, "ibv_bind_mw: errno %d", errno);
	CHECK(poll_one(mw_cq, &wc, WAIT_SECS), "no bind completion");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW &&
	      wc.wr_id == 31, "bind: %s opcode %d",
	      ibv_wc_status_str(wc.status), wc.opcode);
	return mw->rkey;
}

/* UD: Reset -> RTS. RC: Reset -> RTR, a responder with no requester. */
static void
setup_qps(void)
{
	struct ibv_qp_attr a;

	ud_cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	rc_cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	mw_cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	CHECK(ud_cq != NULL && rc_cq != NULL && mw_cq != NULL, "create_cq");
	ud_qp = make_qp(IBV_QPT_UD, ud_cq);
	rc_qp = make_qp(IBV_QPT_RC, rc_cq);
	init_qp = make_qp(IBV_QPT_RC, rc_cq);
	mw_qp = make_qp(IBV_QPT_RC, mw_cq);
	to_init(ud_qp);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	CHECK(ibv_modify_qp(ud_qp, &a, IBV_QP_STATE) == 0, "UD RTR");
	a.qp_state = IBV_QPS_RTS;
	CHECK(ibv_modify_qp(ud_qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0,
	      "UD RTS");
	to_init(rc_qp);
	rc_to_rtr(rc_qp, RC_DEST_QPN);
	to_init(init_qp);

	/* A window bound twice over the same bytes: only the key's tag
	 * tells the rkeys apart (ibv_bind_mw(3): a new tag per bind).
	 */
	mw_connect();
	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	CHECK(mw != NULL, "ibv_alloc_mw: errno %d", errno);
	win_rkey_old = bind_window();
	win_rkey_new = bind_window();
	CHECK(win_rkey_new != win_rkey_old, "rebind kept rkey %#x",
	      win_rkey_old);
}

static void
post_recv(struct ibv_qp *qp, uint32_t off, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)buf + off, RX_LEN, mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	CHECK(ibv_post_recv(qp, &wr, &bad) == 0, "post_recv");
}

static void
write_contract(const char *file)
{
	struct ibv_device_attr da;
	union ibv_gid gid;
	uint8_t *g = (uint8_t *)&da.node_guid;
	uint32_t free_qpn = init_qp->qp_num + 0x100;
	FILE *f = fopen(file, "w");

	CHECK(f != NULL, "%s: %s", file, strerror(errno));
	CHECK(ibv_query_device(ctx, &da) == 0, "query_device");
	CHECK(ibv_query_gid(ctx, 1, 0, &gid) == 0, "query_gid");
	/* The MAC from the node GUID, a modified EUI-64 of it. */
	fprintf(f, "{\n \"dev_mac\": \"%02x:%02x:%02x:%02x:%02x:%02x\",\n",
		g[0] ^ 0x02, g[1], g[2], g[5], g[6], g[7]);
	fprintf(f, " \"dev_ip\": \"%u.%u.%u.%u\",\n", gid.raw[12], gid.raw[13],
		gid.raw[14], gid.raw[15]);
	fprintf(f, " \"ud_qpn\": %u,\n \"ud_qkey\": %u,\n", ud_qp->qp_num,
		UD_QKEY);
	fprintf(f, " \"rc_qpn\": %u,\n \"rc_dest_qpn\": %u,\n", rc_qp->qp_num,
		RC_DEST_QPN);
	fprintf(f, " \"rc_mtu\": %u,\n", 128u << RC_MTU);
	fprintf(f, " \"init_qpn\": %u,\n \"free_qpn\": %u,\n", init_qp->qp_num,
		free_qpn);
	fprintf(f, " \"mr_addr\": %" PRIu64 ",\n \"mr_rkey\": %u,\n",
		(uint64_t)(uintptr_t)buf, mr->rkey);
	fprintf(f, " \"mw_qpn\": %u,\n \"mw_dest_qpn\": %u,\n", mw_qp->qp_num,
		MW_DEST_QPN);
	fprintf(f, " \"aw_off\": %u,\n \"win_off\": %u,\n", AW_OFF, WIN_OFF);
	fprintf(f, " \"win_rkey_old\": %u,\n \"win_rkey_new\": %u,\n",
		win_rkey_old, win_rkey_new);
	fprintf(f, " \"write_off\": %u\n}\n", WRITE_OFF);
	CHECK(fclose(f) == 0, "write %s", file);
}

/* FRAMES.txt names the records of FRAMES.pcap, in order. */
static void
load_frames(const char *pcap_file, const char *index_file)
{
	FILE *f = fopen(index_file, "r");
	const uint8_t *data;
	uint32_t len;

	CHECK(f != NULL, "%s: %s", index_file, strerror(errno));
	CHECK(pcap_open(&pcap, pcap_file) == 0, "open %s", pcap_file);
	CHECK(pcap.linktype == PCAP_LINKTYPE_ETHERNET, "link type %u",
	      pcap.linktype);
	while (nframes < MAX_FRAMES) {
		struct frame *fr = &frames[nframes];

		if (fscanf(f, "%31s %u %u", fr->name, &fr->msg_len,
			   &fr->seed) != 3)
			break;
		CHECK(pcap_next(&pcap, &data, &len) == 1, "%s not in %s",
		      fr->name, pcap_file);
		fr->data = data;
		fr->len = len;
		nframes++;
	}
	CHECK(feof(f), "%s: bad line after %d frames", index_file, nframes);
	CHECK(pcap_next(&pcap, &data, &len) == 0, "more frames than names");
	fclose(f);
}

static const struct frame *
frame(const char *name)
{
	int i;

	for (i = 0; i < nframes; i++)
		if (strcmp(frames[i].name, name) == 0)
			return &frames[i];
	CHECK(0, "the generator made no frame %s", name);
	return NULL;
}

static void
inject(const char *name)
{
	const struct frame *fr = frame(name);
	int ret = dpib_inject(ctx, fr->data, fr->len);

	CHECK(ret == 0, "dpib_inject %s: %d errno %d", name, ret, errno);
}

static void
counters(uint64_t *v)
{
	int n = dpib_counters(ctx, &cnt_names, v, MAX_COUNTERS);

	CHECK(n > 0 && n <= MAX_COUNTERS, "dpib_counters: %d", n);
	ncnt = n;
}

static int
counter_index(const char *name)
{
	int i;

	for (i = 0; i < ncnt; i++)
		if (strcmp(cnt_names[i], name) == 0)
			return i;
	CHECK(0, "no counter %s", name);
	return -1;
}

static uint64_t
wanted(const struct delta *want, const char *name)
{
	for (; want->name != NULL; want++)
		if (strcmp(want->name, name) == 0)
			return want->n;
	return 0;
}

/*
 * Wait (bounded) until the counters in @want have moved by their amounts
 * and then until nothing moves for 30 ms; then every counter (but the
 * engine's cycle counts) must have moved by exactly its amount in @want
 * (0 when absent). Every injected
 * frame and every frame dpib sends comes through the receive path.
 */
static void
expect_counters(const uint64_t *before, int injected, const struct delta *want)
{
	uint64_t now[MAX_COUNTERS], prev[MAX_COUNTERS];
	uint64_t tx;
	double end = check_now() + WAIT_SECS, quiet;
	const struct delta *w;
	int i, done = 0;

	while (!done && check_now() < end) {
		counters(now);
		done = 1;
		for (w = want; w->name != NULL; w++)
			if (now[counter_index(w->name)] -
			    before[counter_index(w->name)] < w->n)
				done = 0;
	}
	quiet = check_now() + 0.03;
	memcpy(prev, now, sizeof(prev));
	while (check_now() < quiet && check_now() < end + 1) {
		usleep(1000);
		counters(now);
		if (memcmp(now, prev, ncnt * sizeof(now[0])) != 0) {
			memcpy(prev, now, sizeof(prev));
			quiet = check_now() + 0.03;
		}
	}
	tx = now[counter_index("tx_packets")] -
	     before[counter_index("tx_packets")];
	for (i = 0; i < ncnt; i++) {
		uint64_t d = now[i] - before[i], exp = wanted(want, cnt_names[i]);

		if (strcmp(cnt_names[i], "rx_packets") == 0)
			exp = injected + tx;
		/* The engine's TSC per phase measures time, not events. */
		if (strncmp(cnt_names[i], "engine_cycles_", 14) == 0)
			continue;
		CHECK(d == exp, "counter %s moved by %" PRIu64 ", want %" PRIu64,
		      cnt_names[i], d, exp);
	}
}

static void
expect_no_completion(void)
{
	struct ibv_wc wc;

	CHECK(!poll_one(ud_cq, &wc, 0.02), "UD completion wr %" PRIu64 " %s",
	      wc.wr_id, ibv_wc_status_str(wc.status));
	CHECK(!poll_one(rc_cq, &wc, 0.02), "RC completion wr %" PRIu64 " %s",
	      wc.wr_id, ibv_wc_status_str(wc.status));
	CHECK(!poll_one(mw_cq, &wc, 0.02), "window QP completion wr %" PRIu64
	      " %s", wc.wr_id, ibv_wc_status_str(wc.status));
}

/* The buffer holds exactly what the shadow copy says. */
static void
expect_buffer(const char *what)
{
	uint32_t i;

	for (i = 0; i < BUF_LEN; i++)
		CHECK(buf[i] == shadow[i], "%s: buffer byte %u is %02x, want "
		      "%02x", what, i, buf[i], shadow[i]);
}

static void
expect_recv(struct ibv_cq *cq, struct ibv_qp *qp, uint64_t wr_id,
	    uint32_t byte_len, struct ibv_wc *out)
{
	struct ibv_wc wc;

	CHECK(poll_one(cq, &wc, WAIT_SECS), "no completion for wr %" PRIu64,
	      wr_id);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV,
	      "status %s opcode %d", ibv_wc_status_str(wc.status), wc.opcode);
	CHECK(wc.wr_id == wr_id && wc.qp_num == qp->qp_num,
	      "wr %" PRIu64 " on QP %#x, want %" PRIu64 " on %#x", wc.wr_id,
	      wc.qp_num, wr_id, qp->qp_num);
	CHECK(wc.byte_len == byte_len, "byte_len %u, want %u", wc.byte_len,
	      byte_len);
	*out = wc;
}

/* Drop cases: one counter, no completion, no byte changed. */
static void
expect_dropped(const char *name, const char *counter)
{
	uint64_t before[MAX_COUNTERS];
	struct delta want[] = { { counter, 1 }, { NULL, 0 } };

	counters(before);
	inject(name);
	expect_counters(before, 1, want);
	expect_no_completion();
	expect_buffer(name);
}

/* UD receive: 40-byte GRH area (20 zero bytes, then the IPv4 header as
 * received), then the payload; nothing past it.
 */
static void
expect_ud(const char *name, uint32_t off, uint64_t wr_id, int imm)
{
	const struct frame *fr = frame(name);
	uint64_t before[MAX_COUNTERS];
	struct delta none[] = { { NULL, 0 } };
	struct ibv_wc wc;

	counters(before);
	inject(name);
	expect_recv(ud_cq, ud_qp, wr_id, 40 + fr->msg_len, &wc);
	CHECK(wc.wc_flags & IBV_WC_GRH, "no IBV_WC_GRH");
	CHECK(wc.src_qp == PEER_QPN, "src_qp %#x, want the DETH's %#x",
	      wc.src_qp, PEER_QPN);
	CHECK(!!(wc.wc_flags & IBV_WC_WITH_IMM) == imm, "immediate flag");
	if (imm)
		CHECK(ntohl(wc.imm_data) == PEER_IMM, "imm %#x",
		      ntohl(wc.imm_data));
	memset(shadow + off, 0, 20);
	memcpy(shadow + off + 20, fr->data + 14, 20);
	pattern(shadow + off + 40, fr->msg_len, fr->seed);
	expect_buffer(name);
	expect_counters(before, 1, none);
	expect_no_completion();
}

/* An RC request with AckReq: one ACK to RC_DEST_QPN, which loops back. */
static const struct delta rc_acked[] = {
	{ "ack_sent", 1 }, { "tx_packets", 1 }, { "rx_drop_unknown_qpn", 1 },
	{ NULL, 0 }
};

static void
ud_send_delivers_grh_and_payload(void)
{
	expect_ud("ud_send", UD_RX0, 1, 0);
}

/* C10-15: a wrong Q_Key is dropped silently and keeps the receive WQE. */
static void
ud_wrong_qkey_dropped(void)
{
	expect_dropped("ud_bad_qkey", "rx_drop_bad_qkey");
}

static void
ud_send_imm_takes_the_next_wqe(void)
{
	expect_ud("ud_send_imm", UD_RX1, 2, 1);
}

static void
rc_send(const char **names, int n, uint32_t off, uint64_t wr_id)
{
	const struct frame *fr = frame(names[0]);
	uint64_t before[MAX_COUNTERS];
	struct ibv_wc wc;
	int i;

	counters(before);
	for (i = 0; i < n; i++)
		inject(names[i]);
	expect_recv(rc_cq, rc_qp, wr_id, fr->msg_len, &wc);
	CHECK(!(wc.wc_flags & IBV_WC_WITH_IMM), "immediate flag");
	pattern(shadow + off, fr->msg_len, fr->seed);
	expect_buffer(names[0]);
	expect_counters(before, n, rc_acked);
	expect_no_completion();
}

static void
rc_send_only(void)
{
	const char *names[] = { "rc_send_only" };

	rc_send(names, 1, RC_RX0, 11);
}

/* SEND FIRST carries exactly the path MTU; only LAST asks for an ACK. */
static void
rc_send_first_last(void)
{
	const char *names[] = { "rc_send_first", "rc_send_last" };

	rc_send(names, 2, RC_RX1, 12);
}

/* RDMA WRITE: the bytes land at the RETH address, no completion. */
static void
rc_write_only(void)
{
	const struct frame *fr = frame("rc_write_only");
	uint64_t before[MAX_COUNTERS];

	counters(before);
	inject("rc_write_only");
	expect_counters(before, 1, rc_acked);
	pattern(shadow + WRITE_OFF, fr->msg_len, fr->seed);
	expect_buffer("rc_write_only");
	expect_no_completion();
}

/* IBA 9.6: broken headers are dropped and counted, in validation order. */
static void
bad_icrc_dropped(void)
{
	expect_dropped("bad_icrc", "rx_drop_bad_icrc");
}

static void
truncated_headers_dropped(void)
{
	expect_dropped("truncated", "rx_drop_bad_length");
}

static void
bad_pkey_dropped(void)
{
	expect_dropped("bad_pkey", "rx_drop_bad_pkey");
}

static void
bad_tver_dropped(void)
{
	expect_dropped("bad_tver", "rx_drop_bad_version");
}

static void
reserved_opcode_dropped(void)
{
	expect_dropped("bad_opcode", "rx_drop_bad_opcode");
}

static void
unknown_qpn_dropped(void)
{
	expect_dropped("unknown_qpn", "rx_drop_unknown_qpn");
}

static void
qp_in_init_dropped(void)
{
	expect_dropped("qp_not_ready", "rx_drop_qp_state");
}

/*
 * 9.7.5.2.4: a WRITE with an invalid R_Key is NAKed (remote access error)
 * at the PSN every dropped frame before it had: none of them moved the
 * expected PSN. Nothing is written.
 */
static void
bad_rkey_naked(void)
{
	uint64_t before[MAX_COUNTERS];
	struct delta want[] = {
		{ "nak_sent", 1 }, { "tx_packets", 1 },
		{ "rx_drop_unknown_qpn", 1 }, { NULL, 0 }
	};

	counters(before);
	inject("bad_rkey");
	expect_counters(before, 1, want);
	expect_no_completion();
	expect_buffer("bad_rkey");
}

/* A fatal NAK: one NAK sent, nothing completes, no byte changes. */
static const struct delta rc_naked[] = {
	{ "nak_sent", 1 }, { "tx_packets", 1 }, { "rx_drop_unknown_qpn", 1 },
	{ NULL, 0 }
};

static void
expect_naked(const char *name)
{
	uint64_t before[MAX_COUNTERS];

	counters(before);
	inject(name);
	expect_counters(before, 1, rc_naked);
	expect_no_completion();
	expect_buffer(name);
}

/* IBA 1.5 ATOMIC WRITE: the 8 payload bytes land at the RETH address. */
static void
atomic_write_executes(void)
{
	uint64_t before[MAX_COUNTERS];

	counters(before);
	inject("aw_first");
	expect_counters(before, 1, rc_acked);
	pattern(shadow + AW_OFF, 8, frame("aw_first")->seed);
	expect_buffer("aw_first");
	expect_no_completion();
}

/*
 * C9-104: the same PSN again, with other data, is a duplicate: ACKed again
 * with its PSN (wire_inject.py check) but never executed a second time.
 */
static void
atomic_write_duplicate_not_executed(void)
{
	uint64_t before[MAX_COUNTERS];
	struct delta want[] = {
		{ "ack_sent", 1 }, { "tx_packets", 1 },
		{ "rx_drop_unknown_qpn", 1 }, { "rx_duplicate_request", 1 },
		{ NULL, 0 }
	};

	counters(before);
	inject("aw_duplicate");
	expect_counters(before, 1, want);
	expect_buffer("aw_duplicate");
	expect_no_completion();
}

/*
 * A rebind gives a type 1 window a new rkey (another tag, same index):
 * the new one writes, the old one is a remote access error (9.7.5.2.4)
 * although the window still covers the same bytes with the same rights.
 */
static void
window_old_rkey_refused(void)
{
	uint64_t before[MAX_COUNTERS];
	const struct frame *fr = frame("mw_write_new");

	counters(before);
	inject("mw_write_new");
	expect_counters(before, 1, rc_acked);
	pattern(shadow + WIN_OFF + 64, fr->msg_len, fr->seed);
	expect_buffer("mw_write_new");
	expect_naked("mw_write_old");
	mw_connect();
}

/* ATOMIC WRITE needs an 8-byte aligned address: NAK invalid request. */
static void
atomic_write_misaligned_invalid(void)
{
	expect_naked("aw_misaligned");
	mw_connect();
}

/* ATOMIC WRITE's RETH must say 8 bytes: NAK invalid request. */
static void
atomic_write_length_4_invalid(void)
{
	expect_naked("aw_len4");
	mw_connect();
}

/*
 * SEND with Invalidate naming an rkey that is no window of this QP: NAK
 * invalid request, and the receive WQE completes with REM_INV_REQ_ERR.
 * The receive buffer's contents are undefined after an error completion.
 */
static void
send_inv_bogus_rkey_invalid(void)
{
	uint64_t before[MAX_COUNTERS];
	struct ibv_wc wc;

	post_recv(mw_qp, MW_RX, 21);
	counters(before);
	inject("send_inv_bogus");
	CHECK(poll_one(mw_cq, &wc, WAIT_SECS), "no receive completion");
	CHECK(wc.status == IBV_WC_REM_INV_REQ_ERR && wc.wr_id == 21 &&
	      wc.qp_num == mw_qp->qp_num, "receive: %s wr %" PRIu64 " QP %#x",
	      ibv_wc_status_str(wc.status), wc.wr_id, wc.qp_num);
	expect_counters(before, 1, rc_naked);
	expect_no_completion();
	memcpy(shadow + MW_RX, buf + MW_RX, RX_LEN);
	expect_buffer("send_inv_bogus");
	mw_connect();
}

/* tshark and scapy read what dpib sent: the ACKs and the NAKs. */
static void
answers_dissected(void)
{
	char contract[300], tx[300];

	path(contract, sizeof(contract), "contract.json");
	path(tx, sizeof(tx), "dpib_tx.pcap");
	CHECK(run_script("check", contract, tx, NULL) == 0,
	      "wire_inject.py check failed");
}

static void
open_device(void)
{
	list = ibv_get_device_list(NULL);
	CHECK(list != NULL && list[0] != NULL, "no device");
	ctx = ibv_open_device(list[0]);
	CHECK(ctx != NULL, "open_device");
	pd = ibv_alloc_pd(ctx);
	buf = aligned_alloc(4096, BUF_LEN);
	CHECK(pd != NULL && buf != NULL, "pd, buffer");
	fill_pattern(buf, BUF_LEN, 99);
	memcpy(shadow, buf, BUF_LEN);
	mr = ibv_reg_mr(pd, buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
	CHECK(mr != NULL, "reg_mr: errno %d", errno);
}

static void
close_device(void)
{
	CHECK(ibv_dealloc_mw(mw) == 0, "dealloc_mw");
	CHECK(ibv_destroy_qp(ud_qp) == 0 && ibv_destroy_qp(rc_qp) == 0 &&
	      ibv_destroy_qp(init_qp) == 0 && ibv_destroy_qp(mw_qp) == 0,
	      "destroy_qp");
	CHECK(ibv_destroy_cq(ud_cq) == 0 && ibv_destroy_cq(rc_cq) == 0 &&
	      ibv_destroy_cq(mw_cq) == 0, "destroy_cq");
	CHECK(ibv_dereg_mr(mr) == 0 && ibv_dealloc_pd(pd) == 0, "mr, pd");
	CHECK(ibv_close_device(ctx) == 0, "close_device");
	ibv_free_device_list(list);
	free(buf);
}

static void
remove_dir(void)
{
	static const char *const files[] = {
		"contract.json", "frames.pcap", "frames.txt", "dpib_tx.pcap",
	};
	char p[300];
	unsigned int i;

	for (i = 0; i < DIM(files); i++) {
		path(p, sizeof(p), files[i]);
		unlink(p);
	}
	rmdir(dir);
}

int
main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	char contract[300], fpcap[300], findex[300], tx[300];

	if (argc != 3) {
		fprintf(stderr, "usage: %s PYTHON wire_inject.py\n", argv[0]);
		return 2;
	}
	python = argv[1];
	script = argv[2];
	snprintf(dir, sizeof(dir), "%s/dpib-inject-XXXXXX",
		 tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
	CHECK(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
	printf("# files in %s (left there on failure)\n", dir);
	path(contract, sizeof(contract), "contract.json");
	path(fpcap, sizeof(fpcap), "frames.pcap");
	path(findex, sizeof(findex), "frames.txt");
	path(tx, sizeof(tx), "dpib_tx.pcap");
	CHECK(setenv("DPIB_CAPTURE", tx, 1) == 0, "setenv");

	open_device();
	setup_qps();
	post_recv(ud_qp, UD_RX0, 1);
	post_recv(ud_qp, UD_RX1, 2);
	post_recv(rc_qp, RC_RX0, 11);
	post_recv(rc_qp, RC_RX1, 12);
	write_contract(contract);
	printf("# UD QP %#x, RC QP %#x (RTR), RC QP %#x (INIT), RC QP %#x "
	       "(RTS, window rkeys %#x then %#x)\n", ud_qp->qp_num,
	       rc_qp->qp_num, init_qp->qp_num, mw_qp->qp_num, win_rkey_old,
	       win_rkey_new);
	{
		int st = run_script("gen", contract, fpcap, findex);

		if (st == 77)
			remove_dir();
		skip_if(st, "frame generation");
		CHECK(st == 0, "wire_inject.py gen: exit %d", st);
	}
	load_frames(fpcap, findex);

	RUN(ud_send_delivers_grh_and_payload);
	RUN(ud_wrong_qkey_dropped);
	RUN(ud_send_imm_takes_the_next_wqe);
	RUN(rc_send_only);
	RUN(rc_send_first_last);
	RUN(rc_write_only);
	RUN(bad_icrc_dropped);
	RUN(truncated_headers_dropped);
	RUN(bad_pkey_dropped);
	RUN(bad_tver_dropped);
	RUN(reserved_opcode_dropped);
	RUN(unknown_qpn_dropped);
	RUN(qp_in_init_dropped);
	RUN(bad_rkey_naked);
	RUN(atomic_write_executes);
	RUN(atomic_write_duplicate_not_executed);
	RUN(window_old_rkey_refused);
	RUN(atomic_write_misaligned_invalid);
	RUN(atomic_write_length_4_invalid);
	RUN(send_inv_bogus_rkey_invalid);
	RUN(answers_dissected);

	close_device();
	pcap_close(&pcap);
	remove_dir();
	CHECK_DONE();
}
