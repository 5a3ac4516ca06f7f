/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * The RC transport over a lossy link (IBA ch. 9 reliability): the loopback
 * device with DPIB_FAULTS set (drop, duplicate, reorder, delay, corrupt at
 * a seeded rate) carries a mixed stream of SEND, RDMA WRITE, RDMA READ,
 * FETCH_ADD and ATOMIC WRITE over several QP pairs. Every WR must complete
 * exactly once, successfully and in posting order; every byte must arrive;
 * each atomic must take effect exactly once: the FETCH_ADDs and ATOMIC
 * WRITEs of a pair share one counter, so a duplicate executed again shows
 * in the value every later FETCH_ADD returns; no packet buffer may leak.
 *
 * Usage: test_faults [ROUNDS [two]]   (the faults come from DPIB_FAULTS;
 *        "two": two devices joined by memif instead of the loopback one)
 */
#include <arpa/inet.h>
#include <unistd.h>

#include "memif_pair.h"
#include "dpib.h"

#define NPAIRS		4
#define DEPTH		16	/* WRs in flight per QP */
#define SLOT		(24 * 1024)
#define SLOTS		DEPTH
#define REGION		(SLOTS * SLOT)	/* per QP: source, target */

struct qp_pair {
	struct ibv_qp *qp[2];
	struct ibv_cq *cq[2];
	uint64_t posted, done, recvs_posted, recvs_done;
	uint64_t faa;			/* FETCH_ADDs posted */
	uint64_t counter;		/* what the counter holds once all ran */
	uint64_t orig[SLOTS];		/* what each FETCH_ADD must return */
};

/*
 * The two ends: requesters on side 0, responders on side 1. One device
 * (the loopback) or two devices joined by memif in this process ("two").
 */
struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	union ibv_gid gid;
};

static struct ibv_device **list;
static struct side S[2];
static int ndev = 1;
static uint8_t *buf;
static size_t buflen;
static struct qp_pair pairs[NPAIRS];
static uint64_t *counters;		/* one 8-byte FAA target per pair */

static uint8_t *
src(int p)
{
	return buf + (size_t)p * 3 * REGION;
}

static uint8_t *
dst(int p)
{
	return src(p) + REGION;
}

static uint8_t *
rbuf(int p)
{
	return src(p) + 2 * REGION;
}

static const struct pair_opts opts = {
	.qp_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	.max_rd_atomic = 8, .min_rnr_timer = 1, .rnr_retry = 7,
	.timeout = 12,		/* 16.8 ms */
	.retry_cnt = 7,
};

static void
open_side(struct side *sd, struct ibv_device *dev)
{
	sd->ctx = open_when_active(dev);
	sd->pd = ibv_alloc_pd(sd->ctx);
	CHECK(sd->pd != NULL, "alloc_pd");
	CHECK(ibv_query_gid(sd->ctx, 1, 0, &sd->gid) == 0, "gid");
	sd->mr = ibv_reg_mr(sd->pd, buf, buflen, IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC);
	CHECK(sd->mr != NULL, "reg_mr");
}

static void
setup(void)
{
	int p, i;

	buflen = (size_t)NPAIRS * 3 * REGION + 4096;
	buf = aligned_alloc(4096, buflen);
	CHECK(buf != NULL, "alloc");
	memset(buf, 0, buflen);
	counters = (uint64_t *)(buf + (size_t)NPAIRS * 3 * REGION);
	list = ibv_get_device_list(NULL);
	CHECK(list != NULL && list[0] != NULL, "device");
	CHECK(ndev == 1 || list[1] != NULL, "two devices configured");
	open_side(&S[0], list[0]);
	if (ndev == 2)
		open_side(&S[1], list[1]);
	else
		S[1] = S[0];
	for (p = 0; p < NPAIRS; p++) {
		for (i = 0; i < 2; i++) {
			struct ibv_qp_init_attr ia = {
				.qp_type = IBV_QPT_RC,
				.cap = { .max_send_wr = DEPTH,
					 .max_recv_wr = DEPTH,
					 .max_send_sge = 1, .max_recv_sge = 1 },
				.sq_sig_all = 1,
			};

			pairs[p].cq[i] = ibv_create_cq(S[i].ctx, 4 * DEPTH,
						       NULL, NULL, 0);
			CHECK(pairs[p].cq[i] != NULL, "cq");
			ia.send_cq = ia.recv_cq = pairs[p].cq[i];
			pairs[p].qp[i] = ibv_create_qp(S[i].pd, &ia);
			CHECK(pairs[p].qp[i] != NULL, "qp");
		}
		qp_connect_to(pairs[p].qp[0], pairs[p].qp[1]->qp_num,
			      &S[1].gid, &opts, IBV_MTU_1024, 1000 * p,
			      7000 * p);
		qp_connect_to(pairs[p].qp[1], pairs[p].qp[0]->qp_num,
			      &S[0].gid, &opts, IBV_MTU_1024, 7000 * p,
			      1000 * p);
	}
}

#define KINDS		9	/* kind() repeats every KINDS WRs */

/* WR number n of a pair: its kind and size follow from n. */
static enum ibv_wr_opcode
kind(uint64_t n)
{
	static const enum ibv_wr_opcode k[] = {
		IBV_WR_RDMA_WRITE, IBV_WR_SEND, IBV_WR_RDMA_READ,
		IBV_WR_RDMA_WRITE, IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_SEND,
		IBV_WR_RDMA_READ, IBV_WR_ATOMIC_WRITE,
		IBV_WR_ATOMIC_FETCH_AND_ADD,
	};

	return k[n % KINDS];
}

/* The WR number of the k-th SEND of the stream (kind() repeats). */
static uint64_t
send_number(uint64_t k)
{
	static uint32_t pos[KINDS], per;
	uint32_t i;

	if (per == 0)
		for (i = 0; i < KINDS; i++)
			if (kind(i) == IBV_WR_SEND)
				pos[per++] = i;
	return k / per * KINDS + pos[k % per];
}

static uint32_t
size_of(uint64_t n)
{
	return 1 + (uint32_t)((n * 2654435761u) % (SLOT - 1));
}

static void
post_recv(int p)
{
	struct qp_pair *q = &pairs[p];
	uint32_t slot = q->recvs_posted % SLOTS;
	struct ibv_sge sge = { (uintptr_t)rbuf(p) + slot * SLOT, SLOT,
			       S[1].mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = q->recvs_posted, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	CHECK(ibv_post_recv(q->qp[1], &wr, &bad) == 0, "post_recv");
	q->recvs_posted++;
}

static void
post_one(int p)
{
	struct qp_pair *q = &pairs[p];
	uint64_t n = q->posted;
	uint32_t slot = n % SLOTS, len = size_of(n);
	struct ibv_sge sge = { (uintptr_t)src(p) + slot * SLOT, len,
			       S[0].mr->lkey };
	struct ibv_send_wr wr = { .wr_id = n, .sg_list = &sge, .num_sge = 1,
				  .opcode = kind(n) }, *bad;

	fill_pattern(src(p) + slot * SLOT, len, (uint32_t)(n + p * 977));
	switch (wr.opcode) {
	case IBV_WR_RDMA_READ:
		/* Read the peer's target slot back into our target slot. */
		fill_pattern(dst(p) + slot * SLOT, len, (uint32_t)(n ^ 0x55));
		sge.addr = (uintptr_t)src(p) + slot * SLOT;
		wr.wr.rdma.remote_addr = (uintptr_t)dst(p) + slot * SLOT;
		wr.wr.rdma.rkey = S[1].mr->rkey;
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		sge.length = 8;
		wr.wr.atomic.remote_addr = (uintptr_t)&counters[p];
		wr.wr.atomic.rkey = S[1].mr->rkey;
		wr.wr.atomic.compare_add = 1;
		q->faa++;
		q->orig[slot] = q->counter++;
		break;
	case IBV_WR_ATOMIC_WRITE:
		/* A value no FETCH_ADD count reaches, new for every n. */
		q->counter = (n + 1) << 32;
		memcpy(src(p) + slot * SLOT, &q->counter, 8);
		sge.length = 8;
		wr.wr.rdma.remote_addr = (uintptr_t)&counters[p];
		wr.wr.rdma.rkey = S[1].mr->rkey;
		break;
	case IBV_WR_SEND:
		break;
	default:
		wr.wr.rdma.remote_addr = (uintptr_t)dst(p) + slot * SLOT;
		wr.wr.rdma.rkey = S[1].mr->rkey;
	}
	CHECK(ibv_post_send(q->qp[0], &wr, &bad) == 0, "post %lu",
	      (unsigned long)n);
	q->posted++;
}

/* A completed WR n: its data arrived intact where it had to. */
static void
verify(int p, uint64_t n, const struct ibv_wc *wc)
{
	uint32_t slot = n % SLOTS, len = size_of(n);
	const uint8_t *want = src(p) + slot * SLOT;
	uint8_t exp[SLOT];

	switch (kind(n)) {
	case IBV_WR_RDMA_WRITE:
		CHECK(!memcmp(dst(p) + slot * SLOT, want, len),
		      "pair %d WRITE %lu: data", p, (unsigned long)n);
		break;
	case IBV_WR_RDMA_READ:
		fill_pattern(exp, len, (uint32_t)(n ^ 0x55));
		CHECK(!memcmp(want, exp, len), "pair %d READ %lu: data", p,
		      (unsigned long)n);
		CHECK(wc->byte_len == len, "READ byte_len");
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD: {
		uint64_t got;

		memcpy(&got, want, 8);
		CHECK(got == pairs[p].orig[slot], "pair %d FETCH_ADD %lu "
		      "returned %#lx, want %#lx (an atomic ran twice?)", p,
		      (unsigned long)n, (unsigned long)got,
		      (unsigned long)pairs[p].orig[slot]);
		CHECK(wc->opcode == IBV_WC_FETCH_ADD, "opcode %d", wc->opcode);
		break;
	}
	case IBV_WR_ATOMIC_WRITE:
		CHECK(wc->opcode == IBV_WC_ATOMIC_WRITE, "opcode %d",
		      wc->opcode);
		break;
	default:
		break;
	}
}

static void
reap(int p)
{
	struct qp_pair *q = &pairs[p];
	struct ibv_wc wc[8];
	int i, n;

	n = ibv_poll_cq(q->cq[0], 8, wc);
	for (i = 0; i < n; i++) {
		CHECK(wc[i].status == IBV_WC_SUCCESS,
		      "pair %d WR %lu: %s", p, (unsigned long)wc[i].wr_id,
		      ibv_wc_status_str(wc[i].status));
		CHECK(wc[i].wr_id == q->done, "pair %d: WR %lu completed, "
		      "expected %lu (order or duplicate)", p,
		      (unsigned long)wc[i].wr_id, (unsigned long)q->done);
		verify(p, q->done, &wc[i]);
		q->done++;
	}
	n = ibv_poll_cq(q->cq[1], 8, wc);
	for (i = 0; i < n; i++) {
		uint64_t k = q->recvs_done;
		uint64_t sn = send_number(k);
		uint32_t len;

		CHECK(wc[i].status == IBV_WC_SUCCESS && wc[i].wr_id == k,
		      "pair %d recv %lu: %s wr %lu", p, (unsigned long)k,
		      ibv_wc_status_str(wc[i].status),
		      (unsigned long)wc[i].wr_id);
		len = size_of(sn);
		CHECK(wc[i].byte_len == len, "pair %d recv %lu: %u bytes, "
		      "want %u", p, (unsigned long)k, wc[i].byte_len, len);
		{
			uint8_t exp[SLOT];

			fill_pattern(exp, len, (uint32_t)(sn + p * 977));
			CHECK(!memcmp(rbuf(p) + (k % SLOTS) * SLOT, exp, len),
			      "pair %d recv %lu: data", p, (unsigned long)k);
		}
		q->recvs_done++;
		post_recv(p);
	}
}

static void
mixed_stream_survives_faults(uint64_t rounds)
{
	double end = check_now() + 30;	/* no progress for this long: stuck */
	uint64_t total = 0, last = 0;
	int p, busy = 1;

	for (p = 0; p < NPAIRS; p++)
		while (pairs[p].recvs_posted < DEPTH)
			post_recv(p);
	while (busy) {
		busy = 0;
		for (p = 0; p < NPAIRS; p++) {
			struct qp_pair *q = &pairs[p];

			/* Do not reuse a slot still in flight. */
			while (q->posted < rounds && q->posted - q->done < DEPTH)
				post_one(p);
			reap(p);
			busy |= q->done < rounds;
			total += q->done;
		}
		if (total != last) {
			last = total;
			end = check_now() + 30;
		}
		total = 0;
		CHECK(check_now() < end, "stream stalled: nothing completed "
		      "for 30 s");
	}
	for (p = 0; p < NPAIRS; p++) {
		CHECK(counters[p] == pairs[p].counter, "pair %d: counter %#lx "
		      "after %lu FETCH_ADDs, want %#lx (not exactly once)", p,
		      (unsigned long)counters[p], (unsigned long)pairs[p].faa,
		      (unsigned long)pairs[p].counter);
	}
}

static int
mbufs_in_use(void)
{
	return dpib_mbufs_in_use(S[0].ctx) +
	       (ndev == 2 ? dpib_mbufs_in_use(S[1].ctx) : 0);
}

static void
no_mbuf_leak(int base)
{
	double end = check_now() + 10;
	int now;

	/* Duplicates and held frames drain within a few engine passes. */
	do {
		struct ibv_wc wc;

		ibv_poll_cq(pairs[0].cq[0], 1, &wc);
		now = mbufs_in_use();
	} while (now > base && check_now() < end);
	CHECK(now <= base, "%d packet buffers in use, %d before", now, base);
}

static void
print_counters(void)
{
	const char *const *names;
	uint64_t v[64], w[64] = { 0 };
	int n = dpib_counters(S[0].ctx, &names, v, 64), i;

	if (ndev == 2)
		dpib_counters(S[1].ctx, NULL, w, 64);
	for (i = 0; i < n && i < 64; i++)
		v[i] += w[i];

	for (i = 0; i < n && i < 64; i++)
		if (v[i] && (strncmp(names[i], "fault", 5) == 0 ||
			     strstr(names[i], "retrans") || strstr(names[i], "nak") ||
			     strstr(names[i], "dup") || strstr(names[i], "drop") ||
			     strstr(names[i], "seq")))
			printf("  %s %lu\n", names[i], (unsigned long)v[i]);
}

/*
 * Two devices joined by memif, the faults applied on both: requests cross
 * the link one way, responses the other.
 */
static void
two_devices(void)
{
	memif_pair_config("faults");
	ndev = 2;
}

int
main(int argc, char **argv)
{
	uint64_t rounds = argc > 1 ? strtoull(argv[1], NULL, 0) : 2000;
	int base;

	if (argc > 2 && strcmp(argv[2], "two") == 0)
		two_devices();
	setup();
	base = mbufs_in_use();
	printf("faults: %s, %d device(s), %d QP pairs x %lu WRs\n",
	       getenv("DPIB_FAULTS") ? getenv("DPIB_FAULTS") : "(none)",
	       ndev, NPAIRS, (unsigned long)rounds);
	check_current = "mixed_stream_survives_faults";
	mixed_stream_survives_faults(rounds);
	check_passed++;
	printf("ok %d - mixed_stream_survives_faults\n", check_passed);
	check_current = "no_mbuf_leak";
	no_mbuf_leak(base);
	check_passed++;
	printf("ok %d - no_mbuf_leak\n", check_passed);
	print_counters();
	CHECK_DONE();
}
