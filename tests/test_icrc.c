/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * The ICRC on the embedded loopback device. Its frames never leave the
 * process's memory (net_ring hands the very mbufs back), so by default it
 * sends them without an ICRC and takes its own frames unchecked
 * (telemetry's /dpib/info says "icrc": "off ..."); with DPIB_ICRC=on
 * (icrc = on) it seals and checks every frame as on a wire ("on"). Either
 * way a frame from anywhere else - dpib_inject's, as a peer's would be -
 * is checked: a UD SEND with a corrupt ICRC is dropped and counted, the
 * same SEND intact is received. Then RC traffic of every frame shape
 * (64 B copies, 64 KiB zero-copy chains, READ responses, ACKs) lands
 * whole, which with "on" also proves the sealing.
 *
 * Usage: test_icrc (the expectation follows DPIB_ICRC)
 */
#include <arpa/inet.h>

#include "roce_frame.h"
#include "telemetry.h"

#define QKEY	0x11111111u

static struct pair P;

static const struct pair_opts opts = {
	.buflen = 4 << 20,
	.mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ,
	.qp_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ,
	.sq_sig_all = 1,
	.max_wr = 64,
	.max_sge = 1,
	.max_rd_atomic = 16,
	.min_rnr_timer = 1,
	.rnr_retry = 7,
	.timeout = 14,
	.retry_cnt = 7,
};

static int want_on;

/* What telemetry says about the device's ICRC. */
static void
telemetry_says(void)
{
	const char *r;
	char q[64];
	int fd = tel_connect();

	snprintf(q, sizeof(q), "/dpib/info,%s",
		 ibv_get_device_name(P.ctx->device));
	r = tel_query(fd, q);
	CHECK(strstr(r, want_on ? "\"icrc\":\"on\"" : "\"icrc\":\"off") !=
	      NULL, "info (DPIB_ICRC=%s): %s", want_on ? "on" : "unset", r);
	close(fd);
	CHECK(dpib_icrc(P.ctx) == want_on, "dpib_icrc %d", dpib_icrc(P.ctx));
}

static struct ibv_qp *
ud_qp(struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 1, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(P.pd, &ia);

	CHECK(qp != NULL, "create UD QP: errno %d", errno);
	ud_to_rts(qp, QKEY);
	return qp;
}

/* A forged UD SEND: dropped with a corrupt ICRC, received intact. */
static void
foreign_frames_checked(void)
{
	struct ibv_cq *cq = ibv_create_cq(P.ctx, 8, NULL, NULL, 0);
	struct ibv_qp *qp;
	uint8_t f[256], deth[8], pay[64], *rb = P.buf + 8192;
	struct ibv_sge sge = { .addr = (uintptr_t)rb, .length = 40 + 64,
			       .lkey = P.mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	struct ibv_wc wc;
	uint32_t n, v;
	uint64_t bad_icrc;
	int i;

	CHECK(cq != NULL, "create_cq");
	qp = ud_qp(cq);
	CHECK(ibv_post_recv(qp, &wr, &bad) == 0, "post_recv");
	v = htonl(QKEY);
	memcpy(deth, &v, 4);
	v = htonl(0x000123);		/* the sender's QPN */
	memcpy(deth + 4, &v, 4);
	for (i = 0; i < 64; i++)
		pay[i] = (uint8_t)(0xa0 + i);
	memset(rb, 0, 40 + 64);

	n = frame(f, htonl(INADDR_LOOPBACK), IB_UD_SEND_ONLY, qp->qp_num, 0,
		  deth, 8, pay, 64);
	f[n - 2] ^= 0x40;		/* one bit of the ICRC */
	bad_icrc = counter(&P, "rx_drop_bad_icrc");
	inject_sync(&P, f, n);
	CHECK(counter(&P, "rx_drop_bad_icrc") == bad_icrc + 1,
	      "corrupt ICRC not counted (%lu -> %lu)", (unsigned long)bad_icrc,
	      (unsigned long)counter(&P, "rx_drop_bad_icrc"));
	CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "a SEND with a corrupt ICRC was "
	      "received");
	for (i = 0; i < 40 + 64; i++)
		CHECK(rb[i] == 0, "byte %d of the receive buffer written", i);

	f[n - 2] ^= 0x40;		/* whole again */
	inject_sync(&P, f, n);
	CHECK(poll_one(cq, &wc, WAIT) && wc.status == IBV_WC_SUCCESS &&
	      wc.wr_id == 7 && wc.byte_len == 40 + 64, "intact SEND: status "
	      "%d byte_len %u", wc.status, wc.byte_len);
	CHECK(memcmp(rb + 40, pay, 64) == 0, "payload");
	CHECK(counter(&P, "rx_drop_bad_icrc") == bad_icrc + 1, "counted again");
	CHECK(ibv_destroy_qp(qp) == 0 && ibv_destroy_cq(cq) == 0, "destroy");
}

/* One RC op of @len from the first half of the buffer to the second. */
static void
rc_op(enum ibv_wr_opcode op, uint32_t len, uint32_t seed)
{
	uint8_t *lo = P.buf, *hi = P.buf + P.len / 2;
	struct ibv_sge sge = { .addr = (uintptr_t)(op == IBV_WR_RDMA_READ ?
						   hi : lo),
			       .length = len, .lkey = P.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = seed, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.wr.rdma = { .remote_addr = (uintptr_t)(op == IBV_WR_RDMA_READ ?
							lo : hi),
			     .rkey = P.mr->rkey },
	};
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	fill_pattern(lo, len, seed);
	memset(hi, 0, len);
	CHECK(ibv_post_send(P.qp[0], &wr, &bad) == 0, "post %d", op);
	CHECK(poll_one(P.cq[0], &wc, WAIT) && wc.status == IBV_WC_SUCCESS,
	      "op %d of %u bytes: status %d", op, len, wc.status);
	CHECK(memcmp(lo, hi, len) == 0, "op %d of %u bytes: data differ", op,
	      len);
}

static void
own_frames_land(void)
{
	static const uint32_t len[] = { 8, 64, 1000, 4096, 4097, 65536,
					1 << 20 };
	uint64_t bad_icrc = counter(&P, "rx_drop_bad_icrc");
	uint64_t zc = counter(&P, "tx_zero_copy_packets");
	unsigned int i;

	pair_connect(&P, &opts);
	for (i = 0; i < RTE_DIM(len); i++) {
		rc_op(IBV_WR_RDMA_WRITE, len[i], i);
		rc_op(IBV_WR_RDMA_READ, len[i], 100 + i);
	}
	CHECK(counter(&P, "tx_zero_copy_packets") > zc, "no zero-copy frame");
	CHECK(counter(&P, "rx_drop_bad_icrc") == bad_icrc,
	      "own frames dropped for their ICRC: %lu",
	      (unsigned long)(counter(&P, "rx_drop_bad_icrc") - bad_icrc));
}

int
main(void)
{
	const char *e = getenv("DPIB_ICRC");

	want_on = e != NULL && strcmp(e, "on") == 0;
	pair_open(&P, &opts);
	RUN(telemetry_says);
	RUN(foreign_frames_checked);
	RUN(own_frames_land);
	pair_close(&P);
	CHECK_DONE();
}
