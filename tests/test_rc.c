/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * RC operations on the loopback device: SEND, SEND_WITH_IMM, RDMA WRITE,
 * WRITE_WITH_IMM and READ from 1 byte to 1 MiB (segmented at the path MTU),
 * multiple SGEs, unsignaled WRs, and the first error paths. Every byte of
 * the destination is checked, and the bytes around it must stay untouched.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#include "verbs_util.h"

#define MAX_MSG		(1u << 20)
#define GUARD		4096
#define SRC_OFF		0
#define DST_OFF		(MAX_MSG + GUARD)
#define BUF_LEN		(2 * (MAX_MSG + GUARD))

static const uint32_t sizes[] = {
	1, 2, 3, 7, 64, 255, 1023, 1024, 1025, 4095, 4096, 4097, 8192,
	12289, 65536, 65537, 262144, MAX_MSG - 1, MAX_MSG,
};

static const struct pair_opts rc_opts = {
	.buflen = BUF_LEN,
	.mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	.qp_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	.sq_sig_all = 1,
	.max_wr = 64,
	.max_sge = 4,
	.max_inline = 128,
	.max_rd_atomic = 8,
	.min_rnr_timer = 1,
	.rnr_retry = 7,
	.timeout = 14,
	.retry_cnt = 7,
};

static struct pair P;

static void
prepare(uint32_t len, uint32_t seed)
{
	fill_pattern(P.buf + SRC_OFF, len, seed);
	memset(P.buf + DST_OFF - GUARD, 0xa5, MAX_MSG + 2 * GUARD);
}

/* The destination holds the source; the guard bytes around it are intact. */
static void
verify(uint32_t len, const char *what)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		CHECK(P.buf[DST_OFF + i] == P.buf[SRC_OFF + i],
		      "%s len %u: byte %u is %02x, want %02x", what, len, i,
		      P.buf[DST_OFF + i], P.buf[SRC_OFF + i]);
	for (i = 0; i < GUARD; i++) {
		CHECK(P.buf[DST_OFF - GUARD + i] == 0xa5, "%s: guard before", what);
		CHECK(P.buf[DST_OFF + len + i] == 0xa5,
		      "%s len %u: byte %u past the end written", what, len, i);
	}
}

static void
post_send_one(int qpi, enum ibv_wr_opcode op, uint64_t laddr, uint32_t len,
	      uint64_t raddr, uint32_t imm, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = laddr, .length = len, .lkey = P.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.imm_data = htonl(imm),
		.wr.rdma = { .remote_addr = raddr, .rkey = P.mr->rkey },
	}, *bad;
	int ret = ibv_post_send(P.qp[qpi], &wr, &bad);

	CHECK(ret == 0, "post_send op %d len %u: %d", op, len, ret);
}

static void
post_recv_one(int qpi, uint64_t addr, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = P.mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	CHECK(ibv_post_recv(P.qp[qpi], &wr, &bad) == 0, "post_recv");
}

static void
expect_wc(int cqi, uint64_t wr_id, enum ibv_wc_status status,
	  enum ibv_wc_opcode opcode, struct ibv_wc *out)
{
	struct ibv_wc wc;

	CHECK(poll_one(P.cq[cqi], &wc, 10), "no completion for wr %lu",
	      (unsigned long)wr_id);
	CHECK(wc.status == status, "wr %lu: status %s, want %s",
	      (unsigned long)wc.wr_id, ibv_wc_status_str(wc.status),
	      ibv_wc_status_str(status));
	CHECK(wc.wr_id == wr_id, "wr_id %lu want %lu", (unsigned long)wc.wr_id,
	      (unsigned long)wr_id);
	if (status == IBV_WC_SUCCESS)
		CHECK(wc.opcode == opcode, "opcode %d want %d", wc.opcode, opcode);
	if (out != NULL)
		*out = wc;
}

/* The first of @n 64-byte chunks of @dst that differs from @src's. */
static uint32_t
first_unlanded(const uint8_t *dst, const uint8_t *src, uint32_t n)
{
	return (uint32_t)(landed(dst, src, (size_t)n * 64) / 64);
}

static void
rdma_write_every_size(void)
{
	unsigned int i;

	for (i = 0; i < DIM(sizes); i++) {
		prepare(sizes[i], i);
		post_send_one(0, IBV_WR_RDMA_WRITE,
			      (uintptr_t)P.buf + SRC_OFF, sizes[i],
			      (uintptr_t)P.buf + DST_OFF, 0, i);
		expect_wc(0, i, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, NULL);
		verify(sizes[i], "WRITE");
	}
}

static void
rdma_read_every_size(void)
{
	struct ibv_wc wc;
	unsigned int i;

	for (i = 0; i < DIM(sizes); i++) {
		prepare(sizes[i], i + 100);
		/* READ pulls the peer's source into our destination. */
		post_send_one(0, IBV_WR_RDMA_READ, (uintptr_t)P.buf + DST_OFF,
			      sizes[i], (uintptr_t)P.buf + SRC_OFF, 0, i);
		expect_wc(0, i, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, &wc);
		CHECK(wc.byte_len == sizes[i], "READ byte_len %u", wc.byte_len);
		verify(sizes[i], "READ");
	}
}

static void
send_every_size(void)
{
	struct ibv_wc wc;
	unsigned int i;

	for (i = 0; i < DIM(sizes); i++) {
		prepare(sizes[i], i + 200);
		post_recv_one(1, (uintptr_t)P.buf + DST_OFF, MAX_MSG, 1000 + i);
		post_send_one(0, i & 1 ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
			      (uintptr_t)P.buf + SRC_OFF, sizes[i], 0, 0xab00 + i, i);
		expect_wc(0, i, IBV_WC_SUCCESS, IBV_WC_SEND, NULL);
		expect_wc(1, 1000 + i, IBV_WC_SUCCESS, IBV_WC_RECV, &wc);
		CHECK(wc.byte_len == sizes[i], "SEND byte_len %u want %u",
		      wc.byte_len, sizes[i]);
		CHECK(!!(wc.wc_flags & IBV_WC_WITH_IMM) == (i & 1), "imm flag");
		if (i & 1)
			CHECK(ntohl(wc.imm_data) == 0xab00 + i, "imm %x",
			      ntohl(wc.imm_data));
		CHECK(wc.qp_num == P.qp[1]->qp_num, "qp_num");
		CHECK(wc.src_qp == P.qp[0]->qp_num, "src_qp");
		verify(sizes[i], "SEND");
	}
}

static void
write_with_imm(void)
{
	struct ibv_wc wc;
	unsigned int i;

	for (i = 0; i < DIM(sizes); i += 3) {
		prepare(sizes[i], i + 300);
		/* The receive WQE's buffer is unused by WRITE_WITH_IMM. */
		post_recv_one(1, (uintptr_t)P.buf + SRC_OFF, 0, 2000 + i);
		post_send_one(0, IBV_WR_RDMA_WRITE_WITH_IMM,
			      (uintptr_t)P.buf + SRC_OFF, sizes[i],
			      (uintptr_t)P.buf + DST_OFF, 0xc0de0000 + i, i);
		expect_wc(0, i, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, NULL);
		expect_wc(1, 2000 + i, IBV_WC_SUCCESS,
			  IBV_WC_RECV_RDMA_WITH_IMM, &wc);
		CHECK(wc.wc_flags & IBV_WC_WITH_IMM, "no imm flag");
		CHECK(ntohl(wc.imm_data) == 0xc0de0000 + i, "imm");
		CHECK(wc.byte_len == sizes[i], "byte_len %u", wc.byte_len);
		verify(sizes[i], "WRITE_WITH_IMM");
	}
}

/* Three gather SGEs on the sender, four scatter SGEs on the receiver. */
static void
multi_sge_send(void)
{
	uint32_t len = 3 * 5000 + 17, cut[4] = { 1, 4999, 6000, 0 };
	struct ibv_sge s[3], r[4];
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_recv_wr rwr = { 0 }, *rbad;
	struct ibv_wc wc;
	uint32_t off = 0, i;

	prepare(len, 7);
	cut[3] = len - cut[0] - cut[1] - cut[2];
	for (i = 0; i < 4; i++) {
		r[i].addr = (uintptr_t)P.buf + DST_OFF + off;
		r[i].length = cut[i];
		r[i].lkey = P.mr->lkey;
		off += cut[i];
	}
	for (i = 0; i < 3; i++) {
		s[i].addr = (uintptr_t)P.buf + SRC_OFF + i * 5000;
		s[i].length = i == 2 ? len - 10000 : 5000;
		s[i].lkey = P.mr->lkey;
	}
	rwr.wr_id = 77;
	rwr.sg_list = r;
	rwr.num_sge = 4;
	CHECK(ibv_post_recv(P.qp[1], &rwr, &rbad) == 0, "post_recv");
	wr.wr_id = 78;
	wr.sg_list = s;
	wr.num_sge = 3;
	wr.opcode = IBV_WR_SEND;
	CHECK(ibv_post_send(P.qp[0], &wr, &bad) == 0, "post_send");
	expect_wc(0, 78, IBV_WC_SUCCESS, IBV_WC_SEND, NULL);
	expect_wc(1, 77, IBV_WC_SUCCESS, IBV_WC_RECV, &wc);
	CHECK(wc.byte_len == len, "byte_len");
	verify(len, "multi-SGE SEND");
}

/* Multi-SGE WRITE and READ, the SGEs of different lengths. */
static void
multi_sge_write_read(void)
{
	uint32_t lens[4] = { 3, 4093, 4100, 9000 }, total = 0, i;
	struct ibv_sge s[4];
	struct ibv_send_wr wr = { 0 }, *bad;

	for (i = 0; i < 4; i++) {
		s[i].addr = (uintptr_t)P.buf + SRC_OFF + total;
		s[i].length = lens[i];
		s[i].lkey = P.mr->lkey;
		total += lens[i];
	}
	prepare(total, 9);
	wr.wr_id = 5;
	wr.sg_list = s;
	wr.num_sge = 4;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)P.buf + DST_OFF;
	wr.wr.rdma.rkey = P.mr->rkey;
	CHECK(ibv_post_send(P.qp[0], &wr, &bad) == 0, "post WRITE");
	expect_wc(0, 5, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, NULL);
	verify(total, "multi-SGE WRITE");

	/* READ scatters the peer's bytes into four local SGEs. */
	prepare(total, 10);
	total = 0;
	for (i = 0; i < 4; i++) {
		s[i].addr = (uintptr_t)P.buf + DST_OFF + total;
		total += lens[i];
	}
	wr.wr_id = 6;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = (uintptr_t)P.buf + SRC_OFF;
	CHECK(ibv_post_send(P.qp[0], &wr, &bad) == 0, "post READ");
	expect_wc(0, 6, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, NULL);
	verify(total, "multi-SGE READ");
}

/* Many WRs in flight at once, all of them completing in posting order. */
static void
pipelined_writes_in_order(void)
{
	const uint32_t n = 48, len = 3000;
	struct ibv_wc wc;
	uint32_t i;

	prepare(n * len, 11);
	for (i = 0; i < n; i++)
		post_send_one(0, i % 3 == 2 ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE,
			      (uintptr_t)P.buf + (i % 3 == 2 ? DST_OFF : SRC_OFF) +
			      i * len, len,
			      (uintptr_t)P.buf + (i % 3 == 2 ? SRC_OFF : DST_OFF) +
			      i * len, 0, 500 + i);
	for (i = 0; i < n; i++) {
		CHECK(poll_one(P.cq[0], &wc, 10), "completion %u", i);
		CHECK(wc.status == IBV_WC_SUCCESS, "status %s",
		      ibv_wc_status_str(wc.status));
		CHECK(wc.wr_id == 500 + i, "order: got %lu at %u",
		      (unsigned long)wc.wr_id, i);
	}
	verify(n * len, "pipelined");
}

/* Unsignaled WRs complete silently; the signaled one reports. */
static void
unsignaled_completions(void)
{
	struct pair_opts o = rc_opts;
	struct ibv_sge sge;
	struct ibv_send_wr wr[8], *bad;
	struct ibv_wc wc;
	struct pair save = P;
	int i;

	o.sq_sig_all = 0;
	o.buflen = 65536;
	pair_open(&P, &o);
	pair_connect(&P, &o);
	sge.addr = (uintptr_t)P.buf;
	sge.length = 256;
	sge.lkey = P.mr->lkey;
	for (i = 0; i < 8; i++) {
		memset(&wr[i], 0, sizeof(wr[i]));
		wr[i].wr_id = i;
		wr[i].sg_list = &sge;
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_RDMA_WRITE;
		wr[i].wr.rdma.remote_addr = (uintptr_t)P.buf + 32768;
		wr[i].wr.rdma.rkey = P.mr->rkey;
		wr[i].next = i < 7 ? &wr[i + 1] : NULL;
	}
	wr[7].send_flags = IBV_SEND_SIGNALED;
	CHECK(ibv_post_send(P.qp[0], wr, &bad) == 0, "post list");
	CHECK(poll_one(P.cq[0], &wc, 10), "signaled completion");
	CHECK(wc.wr_id == 7 && wc.status == IBV_WC_SUCCESS, "wr %lu",
	      (unsigned long)wc.wr_id);
	CHECK(!poll_one(P.cq[0], &wc, 0.05), "an unsignaled WR completed");
	pair_close(&P);
	P = save;
}

static void
inline_send(void)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_wc wc;

	prepare(100, 12);
	post_recv_one(1, (uintptr_t)P.buf + DST_OFF, 4096, 31);
	sge.addr = (uintptr_t)P.buf + SRC_OFF;
	sge.length = 100;
	sge.lkey = 0xdeadbeef;	/* not checked for inline data */
	wr.wr_id = 32;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_INLINE;
	CHECK(ibv_post_send(P.qp[0], &wr, &bad) == 0, "post inline");
	/* The data was copied at post time. */
	memset(P.buf + SRC_OFF, 0, 100);
	expect_wc(0, 32, IBV_WC_SUCCESS, IBV_WC_SEND, NULL);
	expect_wc(1, 31, IBV_WC_SUCCESS, IBV_WC_RECV, &wc);
	fill_pattern(P.buf + SRC_OFF, 100, 12);
	verify(100, "inline SEND");
}

static void
atomics(void)
{
	uint64_t *target = (uint64_t *)(P.buf + DST_OFF);
	uint64_t *result = (uint64_t *)(P.buf + SRC_OFF);
	struct ibv_sge sge = { (uintptr_t)result, 8, P.mr->lkey };
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_wc wc;

	*target = 1000;
	wr.wr_id = 41;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.remote_addr = (uintptr_t)target;
	wr.wr.atomic.rkey = P.mr->rkey;
	wr.wr.atomic.compare_add = 5;
	CHECK(ibv_post_send(P.qp[0], &wr, &bad) == 0, "post FAA");
	expect_wc(0, 41, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, &wc);
	CHECK(*result == 1000 && *target == 1005, "FAA %lu %lu",
	      (unsigned long)*result, (unsigned long)*target);

	wr.wr_id = 42;
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 1005;
	wr.wr.atomic.swap = 77;
	CHECK(ibv_post_send(P.qp[0], &wr, &bad) == 0, "post CAS");
	expect_wc(0, 42, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, NULL);
	CHECK(*result == 1005 && *target == 77, "CAS hit");

	wr.wr_id = 43;
	wr.wr.atomic.compare_add = 1;	/* mismatch: no swap */
	wr.wr.atomic.swap = 99;
	CHECK(ibv_post_send(P.qp[0], &wr, &bad) == 0, "post CAS");
	expect_wc(0, 43, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, NULL);
	CHECK(*result == 77 && *target == 77, "CAS miss");

	/* ibv_post_send(3): atomics need an 8-byte aligned remote address. */
	wr.wr.atomic.remote_addr = (uintptr_t)target + 4;
	CHECK(ibv_post_send(P.qp[0], &wr, &bad) == EINVAL && bad == &wr,
	      "misaligned atomic accepted");
}

/* A SEND with no receive posted is RNR-NAKed and retried until one is. */
static void
rnr_then_success(void)
{
	struct ibv_wc wc;
	double t0;

	prepare(2000, 13);
	post_send_one(0, IBV_WR_SEND, (uintptr_t)P.buf + SRC_OFF, 2000, 0, 0, 51);
	t0 = check_now();
	while (check_now() - t0 < 0.02)
		CHECK(ibv_poll_cq(P.cq[0], 1, &wc) == 0, "completed without a receive");
	post_recv_one(1, (uintptr_t)P.buf + DST_OFF, 4096, 52);
	expect_wc(0, 51, IBV_WC_SUCCESS, IBV_WC_SEND, NULL);
	expect_wc(1, 52, IBV_WC_SUCCESS, IBV_WC_RECV, &wc);
	verify(2000, "SEND after RNR");
}

/*
 * READ, SEND and atomics back to back in one list: responses must leave
 * the responder in PSN order (IBA 9.7.5.1) and every WR completes in order.
 */
static void
mixed_read_send_atomic_in_order(void)
{
	enum ibv_wr_opcode ops[] = {
		IBV_WR_RDMA_READ, IBV_WR_SEND, IBV_WR_ATOMIC_FETCH_AND_ADD,
		IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_SEND,
		IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ, IBV_WR_ATOMIC_FETCH_AND_ADD,
		IBV_WR_SEND,
	};
	const uint32_t n = DIM(ops), rlen = 10000;
	uint64_t *counter = (uint64_t *)(P.buf + DST_OFF + MAX_MSG - 64);
	uint64_t *res = (uint64_t *)(P.buf + SRC_OFF + MAX_MSG - 64);
	struct ibv_send_wr wr[DIM(ops)], *bad;
	struct ibv_sge sge[DIM(ops)];
	struct ibv_wc wc;
	uint32_t i, sends = 0, reads = 0, atoms = 0;

	prepare(rlen, 15);
	memset(P.buf + DST_OFF, 0, 3 * rlen);
	*counter = 0;
	for (i = 0; i < n; i++) {
		memset(&wr[i], 0, sizeof(wr[i]));
		wr[i].wr_id = 700 + i;
		wr[i].opcode = ops[i];
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
		sge[i].lkey = P.mr->lkey;
		if (ops[i] == IBV_WR_RDMA_READ) {
			/* Three READs of the same source into three places. */
			sge[i].addr = (uintptr_t)P.buf + DST_OFF + reads++ * rlen;
			sge[i].length = rlen;
			wr[i].wr.rdma.remote_addr = (uintptr_t)P.buf + SRC_OFF;
			wr[i].wr.rdma.rkey = P.mr->rkey;
		} else if (ops[i] == IBV_WR_ATOMIC_FETCH_AND_ADD ||
			   ops[i] == IBV_WR_ATOMIC_CMP_AND_SWP) {
			sge[i].addr = (uintptr_t)(res + atoms++);
			sge[i].length = 8;
			wr[i].wr.atomic.remote_addr = (uintptr_t)counter;
			wr[i].wr.atomic.rkey = P.mr->rkey;
			wr[i].wr.atomic.compare_add = 1;
			wr[i].wr.atomic.swap = 100;
		} else {
			sge[i].addr = (uintptr_t)P.buf + SRC_OFF;
			sge[i].length = 100;
			wr[i].wr.rdma.remote_addr = (uintptr_t)P.buf + DST_OFF +
						    3 * rlen;
			wr[i].wr.rdma.rkey = P.mr->rkey;
			if (ops[i] == IBV_WR_SEND) {
				post_recv_one(1, (uintptr_t)P.buf + DST_OFF +
					      4 * rlen, 4096, 800 + i);
				sends++;
			}
		}
	}
	CHECK(ibv_post_send(P.qp[0], wr, &bad) == 0, "post list");
	for (i = 0; i < n; i++) {
		CHECK(poll_one(P.cq[0], &wc, 10), "completion %u", i);
		CHECK(wc.wr_id == 700 + i && wc.status == IBV_WC_SUCCESS,
		      "wr %lu %s at %u", (unsigned long)wc.wr_id,
		      ibv_wc_status_str(wc.status), i);
	}
	for (i = 0; i < sends; i++)
		CHECK(poll_one(P.cq[1], &wc, 10) && wc.status == IBV_WC_SUCCESS,
		      "receive %u", i);
	for (i = 0; i < 3 * rlen; i++)
		CHECK(P.buf[DST_OFF + i] == P.buf[SRC_OFF + i % rlen],
		      "READ byte %u", i);
	/* FAA +1 (0 -> 1), CAS 1 -> 100, FAA +1 (100 -> 101). */
	CHECK(*counter == 101, "atomics applied %lu", (unsigned long)*counter);
	CHECK(res[0] == 0 && res[1] == 1 && res[2] == 100,
	      "original values %lu %lu %lu", (unsigned long)res[0],
	      (unsigned long)res[1], (unsigned long)res[2]);
}

/*
 * Doorbells across idle periods: one WR at a time with gaps from nothing to
 * a few milliseconds, so the QP leaves the engine's active list and the
 * adaptive engine falls asleep between posts. A lost doorbell is a WR that
 * never completes.
 */
static void
doorbell_after_idle(void)
{
	struct ibv_wc wc;
	uint32_t i, seed = 12345;

	prepare(64, 14);
	for (i = 0; i < 3000; i++) {
		double gap;

		seed = seed * 1103515245 + 12345;
		gap = (seed >> 16) % 4 == 0 ? 0 :
		      (seed >> 16) % 4 == 1 ? 2e-6 :
		      (seed >> 16) % 4 == 2 ? 50e-6 : (i % 100 == 0 ? 4e-3 : 0);
		if (gap > 0) {
			double t = check_now() + gap;

			while (check_now() < t)
				;
		}
		post_send_one(0, IBV_WR_RDMA_WRITE, (uintptr_t)P.buf + SRC_OFF, 64,
			      (uintptr_t)P.buf + DST_OFF, 0, i);
		CHECK(poll_one(P.cq[0], &wc, 5), "WR %u never completed", i);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == i, "WR %u", i);
	}
	verify(64, "WRITE after idle");
}

/*
 * Keep @n WRITEs of 64 bytes flowing on qp[@qpi] (at most 32 outstanding,
 * every one signaled), to @dst; all complete successfully within 5 s each.
 */
static void
stream_writes(int qpi, uint64_t dst, uint32_t n)
{
	uint32_t posted = 0, done = 0;
	struct ibv_wc wc[16];
	double end = check_now() + 5;
	int k, j;

	while (done < n) {
		while (posted < n && posted - done < 32)
			post_send_one(qpi, IBV_WR_RDMA_WRITE,
				      (uintptr_t)P.buf + SRC_OFF, 64, dst, 0,
				      1000000 + posted++);
		k = ibv_poll_cq(P.cq[qpi], 16, wc);
		CHECK(k >= 0, "poll_cq %d", k);
		for (j = 0; j < k; j++)
			CHECK(wc[j].status == IBV_WC_SUCCESS, "stream wr %lu: %s",
			      (unsigned long)wc[j].wr_id,
			      ibv_wc_status_str(wc[j].status));
		done += (uint32_t)k;
		if (k > 0)
			end = check_now() + 5;
		CHECK(check_now() < end, "qp[%d]: %u of %u WRITEs completed",
		      qpi, done, n);
	}
}

/*
 * Hot QPs (engine lcore modes): a streaming QP's posts skip the fence and
 * the doorbell until the engine cools it - idle ENG_HOT_IDLE_US (1 ms),
 * looked at once a ms while the loop is busy, or before the loop sleeps -
 * with one membarrier. A post that races with either is never lost:
 * qp[0] streams (hot), then stays idle for 0.5-1.6 ms while qp[1] keeps
 * the loop awake, then posts one WRITE, which must complete; every 8th
 * round it waits 5 ms instead, long enough for the loop to sleep.
 * Cooling comes with heavy fences in lcore modes (where membarrier works)
 * and never in inline mode.
 */
static void
hot_qp_posts_across_cooling(void)
{
	const char *mode = getenv("DPIB_ENGINE_MODE");
	int inline_mode = mode != NULL && strcmp(mode, "inline") == 0;
	long q = syscall(SYS_membarrier, 0 /* MEMBARRIER_CMD_QUERY */, 0, 0);
	int asym = !inline_mode && q > 0 && (q & 8 /* PRIVATE_EXPEDITED */);
	uint64_t f0 = dev_counter(P.ctx, "engine_heavy_fences"), fences;
	uint64_t h0 = dev_counter(P.ctx, "engine_hot_qps"), hot;
	uint32_t r, seed = 4242;
	double gap, t;

	prepare(64, 15);
	for (r = 0; r < 40; r++) {
		stream_writes(0, (uintptr_t)P.buf + DST_OFF, 400);
		seed = seed * 1103515245u + 12345u;
		gap = r % 8 == 7 ? 5e-3 : 0.5e-3 + (seed >> 16) % 1100 * 1e-6;
		if (r % 8 == 7) {
			usleep(5000);
		} else {
			for (t = check_now() + gap; check_now() < t; )
				stream_writes(1, (uintptr_t)P.buf + DST_OFF +
					      65536, 16);
		}
		post_send_one(0, IBV_WR_RDMA_WRITE, (uintptr_t)P.buf + SRC_OFF,
			      64, (uintptr_t)P.buf + DST_OFF, 0, r);
		expect_wc(0, r, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, NULL);
	}
	verify(64, "WRITE after cooling");
	fences = dev_counter(P.ctx, "engine_heavy_fences") - f0;
	hot = dev_counter(P.ctx, "engine_hot_qps") - h0;
	printf("# %lu times hot, %lu heavy fences (%s mode, membarrier %s)\n",
	       (unsigned long)hot, (unsigned long)fences,
	       mode ? mode : "default", asym ? "used" : "not used");
	/* A QP turns hot only after 32 visits that found new WRs before it
	 * parks: a posting thread that loses its CPU for long (two engines
	 * beside it on 2 CPUs) may never make it hot. Once it was, the
	 * loop's next sleep (the 5 ms waits) cools it.
	 */
	if (hot > 0)
		CHECK(fences > 0, "hot %lu times, never cooled in %s mode",
		      (unsigned long)hot, mode ? mode : "default");
	if (!asym)
		CHECK(hot == 0 && fences == 0, "%lu hot, %lu heavy fences "
		      "without membarrier or in inline mode",
		      (unsigned long)hot, (unsigned long)fences);
}

/* sq_shared_by_two_threads' second poster. */
struct poster {
	atomic_uint *main_posted;
	atomic_int *room;	/* completions the CQ can still take */
	uint32_t n;
	int err;
};

/* A slot of the CQ for one more WR: the SQ's slot returns when its
 * completion is written, not polled (as rxe does), so posts running ahead
 * of the polls would overrun the CQ.
 */
static int
take_room(atomic_int *room)
{
	if (atomic_fetch_sub(room, 1) > 0)
		return 1;
	atomic_fetch_add(room, 1);
	return 0;
}

static int
try_post(uint64_t wr_id, uint32_t dst_off)
{
	struct ibv_sge sge = { .addr = (uintptr_t)P.buf + SRC_OFF, .length = 64,
			       .lkey = P.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = { .remote_addr = (uintptr_t)P.buf + DST_OFF + dst_off,
			     .rkey = P.mr->rkey },
	}, *bad;

	return ibv_post_send(P.qp[0], &wr, &bad);
}

static void *
second_poster(void *arg)
{
	struct poster *p = arg;
	double end = check_now() + 10;
	uint32_t i = 0;
	int err;

	while (atomic_load(p->main_posted) < 500 && check_now() < end)
		;
	while (i < p->n && check_now() < end) {
		if (!take_room(p->room))
			continue;
		err = try_post((1ull << 32) | i, 8192 + 64 * (i % 64));
		if (err == 0)
			i++;
		else
			atomic_fetch_add(p->room, 1);
		if (err != 0 && err != ENOMEM)
			p->err = err;
	}
	if (i < p->n && p->err == 0)
		p->err = ETIMEDOUT;
	return NULL;
}

/*
 * Two threads post to one SQ at once. The SQ's lock is biased to the first
 * thread that posts (here the main thread, which posted to qp[0] before):
 * the second thread's first post revokes the bias (membarrier) while the
 * owner is posting without the lock. Every WR completes once, in each
 * thread's own order.
 */
static void
sq_shared_by_two_threads(void)
{
	atomic_uint posted = 0;
	atomic_int room = 64;	/* the CQ holds 2 x 64 (PAIR_CQE) */
	struct poster p = { .main_posted = &posted, .room = &room, .n = 2000 };
	uint32_t next[2] = { 0, 0 }, got = 0, n = 2000;
	struct ibv_wc wc[16];
	double end = check_now() + 20;
	pthread_t t;
	int k, j, err;

	prepare(64, 16);
	CHECK(pthread_create(&t, NULL, second_poster, &p) == 0, "thread");
	while (got < 2 * n && check_now() < end) {
		if (atomic_load(&posted) < n && take_room(&room)) {
			err = try_post(atomic_load(&posted), 64 * (got % 64));
			CHECK(err == 0 || err == ENOMEM, "post_send %d", err);
			if (err == 0)
				atomic_fetch_add(&posted, 1);
			else
				atomic_fetch_add(&room, 1);
		}
		k = ibv_poll_cq(P.cq[0], 16, wc);
		CHECK(k >= 0, "poll_cq %d", k);
		for (j = 0; j < k; j++) {
			int from = (int)(wc[j].wr_id >> 32);

			CHECK(wc[j].status == IBV_WC_SUCCESS, "wr %#lx: %s",
			      (unsigned long)wc[j].wr_id,
			      ibv_wc_status_str(wc[j].status));
			CHECK((uint32_t)wc[j].wr_id == next[from],
			      "thread %d's WR %u completed, want %u", from,
			      (uint32_t)wc[j].wr_id, next[from]);
			next[from]++;
		}
		got += (uint32_t)k;
		atomic_fetch_add(&room, k);
	}
	CHECK(pthread_join(t, NULL) == 0, "join");
	CHECK(p.err == 0, "second thread: post_send %d", p.err);
	CHECK(got == 2 * n && next[0] == n && next[1] == n,
	      "%u of %u completions (%u and %u)", got, 2 * n, next[0],
	      next[1]);
}

/* Frames sent: to the port, or back to the device itself inside dpib (a
 * device reached through its own address on a real port: self_loop.sh).
 */
static uint64_t
frames_sent(void)
{
	return dev_counter(P.ctx, "tx_packets") +
	       dev_counter(P.ctx, "tx_loopback_packets");
}

/*
 * Posted WRs go out and land without the program polling for them: an
 * application that posts and then waits on something else (a flag in its
 * memory, a socket) is served by its posts (inline mode: each post's own
 * transmit pass) and by the engine (an lcore, or the inline loop taking
 * over). A stream of them too: inline posts on a QP with WRs on the wire
 * leave their frames to the next flush, and with no next call the loop
 * must send them. Their completions are there when it does poll.
 */
#define STREAM_WRS	12

static void
posted_writes_land_without_a_poll(void)
{
	uint64_t tx0 = frames_sent(), sent;
	double end;
	uint32_t i, k;

	for (i = 0; i < STREAM_WRS * 64; i++)
		P.buf[SRC_OFF + i] = (uint8_t)(0x40 + i % 191);
	memset(P.buf + DST_OFF, 0, STREAM_WRS * 64);
	for (k = 0; k < STREAM_WRS; k++)
		post_send_one(0, IBV_WR_RDMA_WRITE,
			      (uintptr_t)P.buf + SRC_OFF + k * 64, 64,
			      (uintptr_t)P.buf + DST_OFF + k * 64, 0, 70 + k);
	end = check_now() + 2;
	while (first_unlanded(P.buf + DST_OFF, P.buf + SRC_OFF, STREAM_WRS) <
	       STREAM_WRS && check_now() < end)
		usleep(10);
	/* The counters are the engines' own, read without stopping them: an
	 * engine may count a frame a moment after its data landed.
	 */
	while (frames_sent() < tx0 + STREAM_WRS && check_now() < end)
		usleep(10);
	sent = frames_sent() - tx0;
	CHECK(sent >= STREAM_WRS, "%lu of %u WRITEs left without a poll",
	      (unsigned long)sent, STREAM_WRS);
	for (k = 0; k < STREAM_WRS; k++)
		CHECK(memcmp(P.buf + DST_OFF + k * 64, P.buf + SRC_OFF + k * 64,
			     64) == 0,
		      "WRITE %u of %u did not land within 2 s without a poll",
		      k + 1, STREAM_WRS);
	for (k = 0; k < STREAM_WRS; k++)
		expect_wc(0, 70 + k, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, NULL);
}

/* The threads of this process, by the IDs /proc gives them: up to @max. */
static int
task_ids(pid_t *ids, int max)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *d;
	int n = 0;

	CHECK(dir != NULL, "/proc/self/task");
	while (n < max && (d = readdir(dir)) != NULL)
		if (d->d_name[0] != '.')
			ids[n++] = (pid_t)atoi(d->d_name);
	closedir(dir);
	return n;
}

/* The first line of thread @tid's /proc file @name; 0: the thread ended. */
static int
task_line(pid_t tid, const char *name, char *line, int len)
{
	char path[64];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/proc/self/task/%d/%s", (int)tid, name);
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	ok = fgets(line, len, f) != NULL;
	fclose(f);
	return ok;
}

/* Field @field (1-based, >= 3) of thread @tid's stat line; -1: gone. */
static long
task_stat(pid_t tid, int field)
{
	char line[1024], *p;
	int k;

	if (!task_line(tid, "stat", line, sizeof(line)) ||
	    (p = strrchr(line, ')')) == NULL)
		return -1;
	/* Field 3 follows the ')' (the name may hold spaces). */
	for (k = 2; k < field && p != NULL; k++)
		p = strchr(p + 1, ' ');
	return p != NULL ? atol(p + 1) : -1;
}

/* Threads of this process whose scheduling policy is SCHED_FIFO. */
static int
fifo_threads(void)
{
	pid_t ids[256];
	int n = task_ids(ids, 256), i, fifo = 0;

	for (i = 0; i < n; i++)
		fifo += task_stat(ids[i], 41) == SCHED_FIFO;
	return fifo;
}

/* May a thread of this process make itself SCHED_FIFO (root, a rlimit)? */
struct fifo_probe {
	int ok;
	pid_t tid;
};

static void *
try_fifo(void *arg)
{
	struct fifo_probe *p = arg;
	struct sched_param sp = { .sched_priority = 1 };

	p->tid = (pid_t)syscall(SYS_gettid);
	p->ok = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
	return NULL;
}

/* ... and its probe thread gone from /proc, where fifo_threads looks. */
static int
fifo_allowed(void)
{
	struct fifo_probe p = { 0 };
	char path[64];
	double end;
	pthread_t t;

	CHECK(pthread_create(&t, NULL, try_fifo, &p) == 0, "pthread_create");
	pthread_join(t, NULL);
	snprintf(path, sizeof(path), "/proc/self/task/%d", (int)p.tid);
	end = check_now() + 2;
	while (access(path, F_OK) == 0 && check_now() < end)
		usleep(100);
	CHECK(access(path, F_OK) != 0, "the probe thread %d stays", p.tid);
	return p.ok;
}

/*
 * Inline mode: a program that posts and then spins on its memory for what
 * comes back has the loop take the frames in, and with loop_priority =
 * realtime (DPIB_LOOP_PRIORITY, which the inline runs of this test set)
 * that loop runs SCHED_FIFO, so that, woken, it gets a CPU the spinning
 * programs hold. Otherwise, and in the other modes, no thread is.
 */
static void
inline_loop_goes_realtime(void)
{
	const char *mode = getenv("DPIB_ENGINE_MODE");
	const char *prio = getenv("DPIB_LOOP_PRIORITY");
	int inline_mode = mode != NULL && strcmp(mode, "inline") == 0;
	int rt = prio != NULL && strcmp(prio, "realtime") == 0;
	double end;
	uint32_t k;
	int want, got, n;

	want = inline_mode && rt && fifo_allowed();
	got = 0;
	for (k = 0; k < 8 || (got < want && k < 200); k++) {
		fill_pattern(P.buf + SRC_OFF, 256, 900 + k);
		memset(P.buf + DST_OFF, 0, 256);
		post_send_one(0, IBV_WR_RDMA_WRITE, (uintptr_t)P.buf + SRC_OFF,
			      256, (uintptr_t)P.buf + DST_OFF, 0, 90 + k);
		end = check_now() + 2;
		while (first_unlanded(P.buf + DST_OFF, P.buf + SRC_OFF, 4) < 4 &&
		       check_now() < end)
			;	/* no call: the loop must take it in */
		CHECK(first_unlanded(P.buf + DST_OFF, P.buf + SRC_OFF, 4) == 4,
		      "WRITE %u did not land within 2 s without a call", k);
		/* After each one: on loaded CPUs the loop may come round
		 * only once the program's calls are ENG_ACTIVE_US old, and
		 * then it stays (or turns) normal for that WRITE (0 after the
		 * eighth, 1 run in 7 beside other suites; with two CPU hogs
		 * 0 in all 8, 1 run in 15): up to 200 while it has not been.
		 */
		n = fifo_threads();
		if (n > got)
			got = n;
		expect_wc(0, 90 + k, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, NULL);
	}
	/* Without the privilege the loop stays a normal thread. */
	CHECK(got == want, "%s mode: at most %d SCHED_FIFO threads while "
	      "the loop took WRITEs in for a spinning program, want %d",
	      mode ? mode : "default", got, want);
}

/* The engine loop's thread (EAL names lcore threads rte-worker-N), 0: none. */
static pid_t
loop_tid(void)
{
	pid_t ids[256];
	int n = task_ids(ids, 256), i;
	char comm[64];

	for (i = 0; i < n; i++)
		if (task_line(ids[i], "comm", comm, sizeof(comm)) &&
		    strncmp(comm, "rte-worker-", 11) == 0)
			return ids[i];
	return 0;
}

struct hog {
	int cpu;
	volatile int stop;
};

static void *
hog_run(void *arg)
{
	struct hog *h = arg;
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(h->cpu, &one);
	pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
	while (!h->stop)
		;
	return NULL;
}

/*
 * Inline mode: a loop that serves traffic on a CPU that another busy
 * thread holds, while another CPU it may use idles, moves there
 * (ib_place.c; engine_loop_cpu_moves). The test pins the loop beside a
 * spinning thread - the kernel then cannot move it, only the loop itself
 * can - and has it take WRITEs in while the program sleeps on another
 * CPU. The other modes' engines are pinned lcores: no moves. Rounds for
 * up to PLACE_SECS: the loop's windows grow after moves (ib_place.c), and
 * on a VM whose other vCPU the host takes for a while a fixed 4000
 * rounds (about 1.5 s) once ran out under CI.
 */
#define PLACE_SECS	8.0

static void
inline_loop_leaves_a_shared_cpu(void)
{
	const char *mode = getenv("DPIB_ENGINE_MODE");
	int inline_mode = mode != NULL && strcmp(mode, "inline") == 0;
	cpu_set_t mine, one;
	struct hog h = { .cpu = -1 };
	uint64_t moves0;
	double t0;
	pthread_t hog;
	int cpu, app = -1, left = 0;
	uint32_t r, k;
	pid_t tid;

	moves0 = dev_counter(P.ctx, "engine_loop_cpu_moves");
	CHECK(sched_getaffinity(0, sizeof(mine), &mine) == 0, "getaffinity");
	tid = loop_tid();
	if (!inline_mode || tid == 0 || CPU_COUNT(&mine) < 2) {
		CHECK(!inline_mode || CPU_COUNT(&mine) < 2,
		      "inline mode: no engine loop thread");
		CHECK(dev_counter(P.ctx, "engine_loop_cpu_moves") == 0,
		      "%s mode: the engine moved", mode ? mode : "default");
		return;
	}
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &mine))
			continue;
		if (h.cpu < 0)
			h.cpu = cpu;
		else if (app < 0)
			app = cpu;
	}
	CHECK(pthread_create(&hog, NULL, hog_run, &h) == 0, "pthread_create");
	CPU_ZERO(&one);
	CPU_SET(h.cpu, &one);
	CHECK(sched_setaffinity(tid, sizeof(one), &one) == 0, "pin the loop");
	CPU_ZERO(&one);
	CPU_SET(app, &one);
	CHECK(sched_setaffinity(0, sizeof(one), &one) == 0, "pin the test");
	t0 = check_now();
	for (r = 0; check_now() - t0 < PLACE_SECS && !left; r++) {
		for (k = 0; k < 8; k++)
			post_send_one(0, IBV_WR_RDMA_WRITE,
				      (uintptr_t)P.buf + SRC_OFF, 64,
				      (uintptr_t)P.buf + DST_OFF, 0, 5000 + k);
		usleep(300);	/* the loop takes them in */
		for (k = 0; k < 8; k++)
			expect_wc(0, 5000 + k, IBV_WC_SUCCESS,
				  IBV_WC_RDMA_WRITE, NULL);
		left = dev_counter(P.ctx, "engine_loop_cpu_moves") > moves0 &&
		       task_stat(tid, 39) != h.cpu;	/* its last CPU */
	}
	h.stop = 1;
	pthread_join(hog, NULL);
	sched_setaffinity(0, sizeof(mine), &mine);
	sched_setaffinity(tid, sizeof(mine), &mine);
	CHECK(left, "after %u rounds the loop still shares CPU %d with a "
	      "spinning thread (moves %lu)", r, h.cpu, (unsigned long)
	      (dev_counter(P.ctx, "engine_loop_cpu_moves") - moves0));
}

/*
 * UC completes on send, and in inline mode a post that follows 4 or more
 * since the last poll is a stream's: its frame waits for a later flush. A
 * program that posts such a stream and then waits outside verbs still has
 * every frame sent (the loop flushes them), in order, each WRITE landing;
 * its completions follow at its next polls.
 */
#define UC_STREAM	32

static void
uc_stream_lands_without_a_call(void)
{
	struct pair_opts o = rc_opts;
	uint8_t *src, *dst;
	struct pair p;
	struct ibv_wc wc;
	uint32_t r, k;
	double end;

	pair_open(&p, &o);
	pair_make_uc(&p, &o, 1);
	src = p.buf + SRC_OFF;
	dst = p.buf + DST_OFF;
	for (r = 0; r < 4; r++) {
		fill_pattern(src, UC_STREAM * 64, 700 + r);
		memset(dst, 0, UC_STREAM * 64);
		for (k = 0; k < UC_STREAM; k++) {
			struct ibv_sge sge = { (uintptr_t)src + k * 64, 64,
					       p.mr->lkey };
			struct ibv_send_wr wr = {
				.wr_id = k, .sg_list = &sge, .num_sge = 1,
				.opcode = IBV_WR_RDMA_WRITE,
				.wr.rdma = { (uintptr_t)dst + k * 64,
					     p.mr->rkey },
			}, *bad;

			CHECK(ibv_post_send(p.qp[0], &wr, &bad) == 0,
			      "post %u", k);
		}
		end = check_now() + 2;
		while ((k = first_unlanded(dst, src, UC_STREAM)) < UC_STREAM &&
		       check_now() < end)
			;	/* no call: the loop must send what waits */
		CHECK(k == UC_STREAM, "round %u: UC WRITE %u of %u did not "
		      "land within 2 s without a call", r, k, UC_STREAM);
		for (k = 0; k < UC_STREAM; k++) {
			CHECK(poll_one(p.cq[0], &wc, 5), "no completion %u", k);
			CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == k,
			      "completion %u: wr %lu status %s", k,
			      (unsigned long)wc.wr_id,
			      ibv_wc_status_str(wc.status));
		}
	}
	pair_close(&p);
}

/*
 * A program that destroys its QP as soon as its last receive completed
 * (ibv_rc_pingpong's client) still acknowledges that last SEND: the peer's
 * WQE completes with success, not with "transport retry counter exceeded"
 * once its retries find no QP. The SENDs come one per post and poll, so the
 * responder sees a stream and may hold its ACK past the pass that took the
 * last one; the QP's destruction must send it. Short timeout, one retry:
 * a lost ACK fails a round in about 10 ms.
 */
#define LAST_ACK_ROUNDS	60
#define LAST_ACK_SENDS	8

static void
last_ack_leaves_with_a_destroyed_qp(void)
{
	struct pair_opts o = rc_opts;
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
	struct ibv_wc wc;
	uint32_t r, k, got;
	int i;

	o.timeout = 10;		/* 4 ms */
	o.retry_cnt = 1;
	for (i = 0; i < 2; i++) {
		cq[i] = ibv_create_cq(P.ctx, 64, NULL, NULL, 0);
		CHECK(cq[i] != NULL, "create_cq");
	}
	for (r = 0; r < LAST_ACK_ROUNDS; r++) {
		for (i = 0; i < 2; i++) {
			struct ibv_qp_init_attr ia = {
				.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
				.cap = pair_cap(&o),
				.send_cq = cq[i], .recv_cq = cq[i],
			};

			qp[i] = ibv_create_qp(P.pd, &ia);
			CHECK(qp[i] != NULL, "create_qp errno %d", errno);
		}
		qp_connect(qp[0], qp[1]->qp_num, &o, P.mtu, 100, 200);
		qp_connect(qp[1], qp[0]->qp_num, &o, P.mtu, 200, 100);
		for (k = 0; k < LAST_ACK_SENDS; k++) {
			struct ibv_sge sge = { (uintptr_t)P.buf + DST_OFF + k * 64,
					       64, P.mr->lkey };
			struct ibv_recv_wr wr = { .wr_id = k, .sg_list = &sge,
						  .num_sge = 1 }, *bad;

			CHECK(ibv_post_recv(qp[1], &wr, &bad) == 0, "post_recv");
		}
		got = 0;
		for (k = 0; k < LAST_ACK_SENDS; k++) {
			struct ibv_sge sge = { (uintptr_t)P.buf + SRC_OFF, 64,
					       P.mr->lkey };
			struct ibv_send_wr wr = { .wr_id = k, .sg_list = &sge,
						  .num_sge = 1,
						  .opcode = IBV_WR_SEND }, *bad;

			CHECK(ibv_post_send(qp[0], &wr, &bad) == 0, "post_send");
			got += ibv_poll_cq(cq[1], 1, &wc) == 1;
		}
		while (got < LAST_ACK_SENDS) {
			CHECK(poll_one(cq[1], &wc, 2), "round %u: %u of %u SENDs "
			      "received", r, got, LAST_ACK_SENDS);
			CHECK(wc.status == IBV_WC_SUCCESS, "receive: %s",
			      ibv_wc_status_str(wc.status));
			got++;
		}
		CHECK(ibv_destroy_qp(qp[1]) == 0, "destroy the receiver");
		for (k = 0; k < LAST_ACK_SENDS; k++) {
			CHECK(poll_one(cq[0], &wc, 2), "round %u: SEND %u never "
			      "completed", r, k);
			CHECK(wc.status == IBV_WC_SUCCESS, "round %u: SEND %lu "
			      "to a QP destroyed after receiving it: %s", r,
			      (unsigned long)wc.wr_id,
			      ibv_wc_status_str(wc.status));
		}
		CHECK(ibv_destroy_qp(qp[0]) == 0, "destroy the sender");
	}
	for (i = 0; i < 2; i++)
		CHECK(ibv_destroy_cq(cq[i]) == 0, "destroy_cq");
}

/* C10-96: no sends before RTS; the WR list is rejected at its head. */
static void
post_send_before_rts(void)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = P.cq[0], .recv_cq = P.cq[0], .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_sge sge = { (uintptr_t)P.buf, 8, P.mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND }, *bad = NULL;
	struct ibv_qp *qp = ibv_create_qp(P.pd, &ia);

	CHECK(qp != NULL, "create_qp");
	CHECK(ibv_post_send(qp, &wr, &bad) == EINVAL && bad == &wr, "Reset");
	CHECK(ibv_destroy_qp(qp) == 0, "destroy");
}

/* A list fails at the first bad WR; the ones before it are posted. */
static void
bad_wr_stops_the_list(void)
{
	struct ibv_sge sge = { (uintptr_t)P.buf + SRC_OFF, 16, P.mr->lkey };
	struct ibv_send_wr wr[3], *bad = NULL;
	int i;

	for (i = 0; i < 3; i++) {
		memset(&wr[i], 0, sizeof(wr[i]));
		wr[i].wr_id = 60 + i;
		wr[i].sg_list = &sge;
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_RDMA_WRITE;
		wr[i].wr.rdma.remote_addr = (uintptr_t)P.buf + DST_OFF;
		wr[i].wr.rdma.rkey = P.mr->rkey;
		wr[i].next = i < 2 ? &wr[i + 1] : NULL;
	}
	wr[1].num_sge = 5;	/* more than max_send_sge */
	CHECK(ibv_post_send(P.qp[0], wr, &bad) == EINVAL, "accepted");
	CHECK(bad == &wr[1], "bad_wr does not point at the failing WR");
	expect_wc(0, 60, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, NULL);
	{
		struct ibv_wc wc;

		CHECK(!poll_one(P.cq[0], &wc, 0.05), "a WR after bad_wr ran");
	}
}

/* An unknown rkey: NAK remote access error, requester QP to Error, the
 * WRs behind it flushed (C10-91, 9.7.5.2.4).
 */
static void
bad_rkey_remote_access_error(void)
{
	struct pair_opts o = rc_opts;
	struct pair save = P;
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;

	o.buflen = 65536;
	pair_open(&P, &o);
	pair_connect(&P, &o);
	post_send_one(0, IBV_WR_RDMA_WRITE, (uintptr_t)P.buf, 64,
		      (uintptr_t)P.buf + 4096, 0, 70);
	{
		struct ibv_sge sge = { (uintptr_t)P.buf, 64, P.mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 71, .sg_list = &sge,
			.num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			.wr.rdma = { (uintptr_t)P.buf + 4096, P.mr->rkey + 1 } },
			*bad;

		CHECK(ibv_post_send(P.qp[0], &wr, &bad) == 0, "post");
	}
	post_send_one(0, IBV_WR_RDMA_WRITE, (uintptr_t)P.buf, 64,
		      (uintptr_t)P.buf + 4096, 0, 72);
	expect_wc(0, 70, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, NULL);
	expect_wc(0, 71, IBV_WC_REM_ACCESS_ERR, 0, NULL);
	expect_wc(0, 72, IBV_WC_WR_FLUSH_ERR, 0, NULL);
	CHECK(ibv_query_qp(P.qp[0], &attr, IBV_QP_STATE, &init) == 0, "query");
	CHECK(attr.qp_state == IBV_QPS_ERR, "requester state %d", attr.qp_state);
	pair_close(&P);
	P = save;
}

/* Out-of-bounds WRITE and a READ without REMOTE_READ rights are refused. */
static void
bounds_and_rights(void)
{
	struct pair_opts o = rc_opts;
	struct pair save = P;
	struct ibv_mr *ro;

	o.buflen = 65536;
	pair_open(&P, &o);
	pair_connect(&P, &o);
	memset(P.buf, 0x11, 65536);
	/* One byte past the end of the MR. */
	post_send_one(0, IBV_WR_RDMA_WRITE, (uintptr_t)P.buf, 64,
		      (uintptr_t)P.buf + 65536 - 63, 0, 80);
	expect_wc(0, 80, IBV_WC_REM_ACCESS_ERR, 0, NULL);
	pair_close(&P);

	pair_open(&P, &o);
	pair_connect(&P, &o);
	/* A second MR with local write only: READ through its rkey fails. */
	ro = ibv_reg_mr(P.pd, P.buf + 32768, 4096, IBV_ACCESS_LOCAL_WRITE);
	CHECK(ro != NULL, "reg");
	{
		struct ibv_sge sge = { (uintptr_t)P.buf, 64, P.mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 81, .sg_list = &sge,
			.num_sge = 1, .opcode = IBV_WR_RDMA_READ,
			.wr.rdma = { (uintptr_t)P.buf + 32768, ro->rkey } },
			*bad;

		CHECK(ibv_post_send(P.qp[0], &wr, &bad) == 0, "post");
	}
	expect_wc(0, 81, IBV_WC_REM_ACCESS_ERR, 0, NULL);
	CHECK(ibv_dereg_mr(ro) == 0, "dereg");
	pair_close(&P);
	P = save;
}

/* A deregistered key never works again, locally or remotely. */
static void
stale_lkey_local_protection_error(void)
{
	struct pair_opts o = rc_opts;
	struct pair save = P;
	struct ibv_mr *tmp;
	uint32_t key;

	o.buflen = 65536;
	pair_open(&P, &o);
	pair_connect(&P, &o);
	tmp = ibv_reg_mr(P.pd, P.buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	CHECK(tmp != NULL, "reg");
	key = tmp->lkey;
	CHECK(ibv_dereg_mr(tmp) == 0, "dereg");
	{
		struct ibv_sge sge = { (uintptr_t)P.buf, 64, key };
		struct ibv_send_wr wr = { .wr_id = 90, .sg_list = &sge,
			.num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			.wr.rdma = { (uintptr_t)P.buf + 8192, P.mr->rkey } },
			*bad;

		CHECK(ibv_post_send(P.qp[0], &wr, &bad) == 0, "post");
	}
	expect_wc(0, 90, IBV_WC_LOC_PROT_ERR, 0, NULL);
	pair_close(&P);
	P = save;
}

/* A SEND longer than the receive buffer: local length error at the
 * responder, NAK invalid request at the requester.
 */
static void
recv_too_small(void)
{
	struct pair_opts o = rc_opts;
	struct pair save = P;

	o.buflen = 65536;
	pair_open(&P, &o);
	pair_connect(&P, &o);
	post_recv_one(1, (uintptr_t)P.buf + 32768, 100, 95);
	post_send_one(0, IBV_WR_SEND, (uintptr_t)P.buf, 101, 0, 0, 96);
	expect_wc(1, 95, IBV_WC_LOC_LEN_ERR, 0, NULL);
	expect_wc(0, 96, IBV_WC_REM_INV_REQ_ERR, 0, NULL);
	pair_close(&P);
	P = save;
}

int
main(void)
{
	pair_open(&P, &rc_opts);
	pair_connect(&P, &rc_opts);
	RUN(rdma_write_every_size);
	RUN(rdma_read_every_size);
	RUN(send_every_size);
	RUN(write_with_imm);
	RUN(multi_sge_send);
	RUN(multi_sge_write_read);
	RUN(pipelined_writes_in_order);
	RUN(mixed_read_send_atomic_in_order);
	RUN(inline_send);
	RUN(atomics);
	/* Before any NAK: a QP that saw a loss resends early (ib_cc), and
	 * wire_dissect counts a resend without a NAK as a PSN error.
	 */
	RUN(hot_qp_posts_across_cooling);
	RUN(sq_shared_by_two_threads);
	RUN(rnr_then_success);
	RUN(doorbell_after_idle);
	RUN(posted_writes_land_without_a_poll);
	RUN(inline_loop_goes_realtime);
	RUN(inline_loop_leaves_a_shared_cpu);
	RUN(last_ack_leaves_with_a_destroyed_qp);
	RUN(post_send_before_rts);
	RUN(bad_wr_stops_the_list);
	RUN(unsignaled_completions);
	RUN(bad_rkey_remote_access_error);
	RUN(bounds_and_rights);
	RUN(stale_lkey_local_protection_error);
	RUN(recv_too_small);
	pair_close(&P);
	RUN(uc_stream_lands_without_a_call);
	CHECK_DONE();
}
