/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Completion timestamps on the loopback device: the clock
 * ibv_query_device_ex(3) reports against one measured here, raw and
 * wall-clock stamps (ibv_create_cq_ex(3)) against clock reads around the
 * traffic, the raw clock of ibv_query_rt_values_ex(3), and stamps kept
 * across ibv_resize_cq.
 */
#include <time.h>

#include "verbs_util.h"

#define TS		IBV_WC_EX_WITH_COMPLETION_TIMESTAMP
#define WALL		IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK
#define NWRITE		64
#define NSEND		16
#define DST_OFF		(512 * 1024)
#define MSG		64

static const struct pair_opts ts_opts = {
	.buflen = 1024 * 1024,
	.mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	.qp_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	.sq_sig_all = 1,
	.max_wr = 128,
	.max_sge = 1,
	.max_inline = 64,
	.max_rd_atomic = 1,
	.min_rnr_timer = 1,
	.rnr_retry = 7,
	.timeout = 14,
	.retry_cnt = 7,
};

static struct pair P;
static uint64_t pair_opened_ns;		/* CLOCK_REALTIME at open_pair */

/* What one completion reported. */
struct stamp {
	uint64_t wr_id;
	uint64_t raw;
	uint64_t wall;
};

static uint64_t
clock_ns(clockid_t id)
{
	struct timespec t;

	CHECK(clock_gettime(id, &t) == 0, "clock_gettime");
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The device's raw clock, as mlx5 reports it: all of it in tv_nsec. */
static uint64_t
raw_clock(struct ibv_context *ctx)
{
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
	int ret = ibv_query_rt_values_ex(ctx, &v);

	CHECK(ret == 0, "query_rt_values_ex: %d", ret);
	CHECK(v.comp_mask == IBV_VALUES_MASK_RAW_CLOCK, "comp_mask %#x",
	      v.comp_mask);
	CHECK(v.raw_clock.tv_sec == 0, "tv_sec %ld", (long)v.raw_clock.tv_sec);
	return (uint64_t)v.raw_clock.tv_nsec;
}

/* kHz, as ibv_query_device_ex reports the clock. */
static uint64_t
core_clock(struct ibv_context *ctx)
{
	struct ibv_device_attr_ex x;

	CHECK(ibv_query_device_ex(ctx, NULL, &x) == 0, "query_device_ex");
	return x.hca_core_clock;
}

/*
 * Wall-clock stamps are the TSC converted at DPDK's idea of its rate, which
 * may be rounded (to 10 MHz when DPDK measures it: 0.4 % at 2.5 GHz). The
 * CQ takes its reference when it is created, so allow that fraction of the
 * time since, and a microsecond for reading two clocks at once.
 */
static uint64_t
wall_slack(uint64_t now)
{
	return 1000 + (now - pair_opened_ns) / 200;
}

static void
open_pair(uint64_t wc_flags)
{
	pair_opened_ns = clock_ns(CLOCK_REALTIME);
	pair_open_ex(&P, &ts_opts, IBV_WC_STANDARD_FLAGS | wc_flags,
		     IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND);
	pair_connect(&P, &ts_opts);
}

static void
post(enum ibv_wr_opcode op, uint32_t i, uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)P.buf + (i % 1024) * MSG, .length = MSG,
		.lkey = P.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.wr.rdma = {
			.remote_addr = (uintptr_t)P.buf + DST_OFF +
				       (i % 1024) * MSG,
			.rkey = P.mr->rkey,
		},
	}, *bad;

	CHECK(ibv_post_send(P.qp[0], &wr, &bad) == 0, "post_send op %d", op);
}

static void
post_recv(uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)P.buf + DST_OFF, .length = MSG,
		.lkey = P.mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	CHECK(ibv_post_recv(P.qp[1], &wr, &bad) == 0, "post_recv");
}

/* @n completions of @cq through the extended iterator, with @flags' stamps. */
static void
ex_drain(struct ibv_cq_ex *cq, uint64_t flags, struct stamp *s, int n)
{
	struct ibv_poll_cq_attr attr = { .comp_mask = 0 };
	double deadline = check_now() + 10;
	int got = 0, ret;

	while (got < n) {
		ret = ibv_start_poll(cq, &attr);
		if (ret == ENOENT) {
			CHECK(check_now() < deadline, "%d of %d completions",
			      got, n);
			continue;
		}
		CHECK(ret == 0, "start_poll: %d", ret);
		do {
			CHECK(cq->status == IBV_WC_SUCCESS, "wr %lu: %s",
			      (unsigned long)cq->wr_id,
			      ibv_wc_status_str(cq->status));
			s[got].wr_id = cq->wr_id;
			if (flags & TS)
				s[got].raw = ibv_wc_read_completion_ts(cq);
			if (flags & WALL)
				s[got].wall =
					ibv_wc_read_completion_wallclock_ns(cq);
			got++;
		} while (got < n && ibv_next_poll(cq) == 0);
		ibv_end_poll(cq);
	}
}

/* Raw stamps inside [lo, hi] and non-decreasing in completion order. */
static void
raw_in(const struct stamp *s, int n, uint64_t lo, uint64_t hi,
       const char *what)
{
	int i;

	for (i = 0; i < n; i++) {
		CHECK(s[i].raw >= lo && s[i].raw <= hi,
		      "%s %d: stamp %llu outside [%llu, %llu]", what, i,
		      (unsigned long long)s[i].raw, (unsigned long long)lo,
		      (unsigned long long)hi);
		CHECK(i == 0 || s[i].raw >= s[i - 1].raw,
		      "%s %d: stamp %llu before %llu", what, i,
		      (unsigned long long)s[i].raw,
		      (unsigned long long)s[i - 1].raw);
	}
}

static void
wall_in(const struct stamp *s, int n, uint64_t lo, uint64_t hi,
	const char *what)
{
	uint64_t slack = wall_slack(hi);
	int i;

	for (i = 0; i < n; i++) {
		CHECK(s[i].wall + slack >= lo && s[i].wall <= hi + slack,
		      "%s %d: %llu ns outside [%llu, %llu] +- %llu", what, i,
		      (unsigned long long)s[i].wall, (unsigned long long)lo,
		      (unsigned long long)hi, (unsigned long long)slack);
		CHECK(i == 0 || s[i].wall >= s[i - 1].wall,
		      "%s %d: %llu ns before %llu", what, i,
		      (unsigned long long)s[i].wall,
		      (unsigned long long)s[i - 1].wall);
	}
}

/*
 * ibv_query_device_ex(3): hca_core_clock is the frequency of the clock the
 * stamps count, in kHz. Measured here: raw clock reads around a 50 ms sleep
 * against CLOCK_MONOTONIC, each read between two monotonic reads close
 * together so that a preemption cannot skew it.
 */
static void
sample(struct ibv_context *ctx, uint64_t *raw, uint64_t *mono)
{
	uint64_t a = 0, b = 0;
	int i;

	for (i = 0; i < 100; i++) {
		a = clock_ns(CLOCK_MONOTONIC);
		*raw = raw_clock(ctx);
		b = clock_ns(CLOCK_MONOTONIC);
		if (b - a < 20000)
			break;
	}
	*mono = a + (b - a) / 2;
}

static void
query_device_ex_reports_the_clock(void)
{
	struct timespec nap = { .tv_nsec = 50 * 1000 * 1000 };
	struct ibv_device_attr_ex x;
	struct ibv_device_attr a;
	uint64_t r0, r1, m0, m1;
	double khz;

	open_pair(0);
	CHECK(ibv_query_device(P.ctx, &a) == 0, "query_device");
	CHECK(ibv_query_device_ex(P.ctx, NULL, &x) == 0, "query_device_ex");
	CHECK(x.completion_timestamp_mask != 0, "no timestamp bits");
	CHECK(x.hca_core_clock != 0, "no clock");
	CHECK(x.device_cap_flags_ex & DPIB_DEVICE_ATOMIC_WRITE,
	      "no ATOMIC WRITE in %#llx",
	      (unsigned long long)x.device_cap_flags_ex);
	CHECK((x.device_cap_flags_ex & ~DPIB_DEVICE_ATOMIC_WRITE) ==
	      a.device_cap_flags, "cap flags %#llx, classic %#x",
	      (unsigned long long)x.device_cap_flags_ex, a.device_cap_flags);
	CHECK(x.pci_atomic_caps.fetch_add == 0 && x.pci_atomic_caps.swap == 0 &&
	      x.pci_atomic_caps.compare_swap == 0, "no PCIe atomics");
	CHECK(x.phys_port_cnt_ex == a.phys_port_cnt, "ports");

	sample(P.ctx, &r0, &m0);
	CHECK(clock_nanosleep(CLOCK_MONOTONIC, 0, &nap, NULL) == 0, "sleep");
	sample(P.ctx, &r1, &m1);
	CHECK(r1 > r0, "raw clock went from %llu to %llu",
	      (unsigned long long)r0, (unsigned long long)r1);
	khz = (double)(r1 - r0) / (double)(m1 - m0) * 1e6;
	CHECK(khz > x.hca_core_clock * 0.98 && khz < x.hca_core_clock * 1.02,
	      "measured %.0f kHz, reported %llu", khz,
	      (unsigned long long)x.hca_core_clock);
	pair_close(&P);
}

/*
 * Each completion is stamped when the engine pushes it: after the clock
 * read before posting, before the one after polling, in completion order
 * on each CQ, and a receive before the ACK that completes its SEND.
 */
static void
completion_ts_between_clock_reads(void)
{
	struct stamp s[NWRITE + NSEND], r[NSEND];
	uint64_t before, after;
	int i, n = 0, k = 0;

	open_pair(TS);
	for (i = 0; i < NSEND; i++)
		post_recv(2000 + i);
	before = raw_clock(P.ctx);
	for (i = 0; i < NWRITE; i++) {
		post(IBV_WR_RDMA_WRITE, i, i);
		if (i % (NWRITE / NSEND) == 0)
			post(IBV_WR_SEND, i, 1000 + k++);
	}
	ex_drain(P.cqx[0], TS, s, NWRITE + NSEND);
	ex_drain(P.cqx[1], TS, r, NSEND);
	after = raw_clock(P.ctx);
	raw_in(s, NWRITE + NSEND, before, after, "send CQ");
	raw_in(r, NSEND, before, after, "receive CQ");
	for (i = 0, k = 0; i < NWRITE + NSEND; i++) {
		if (s[i].wr_id < 1000) {
			CHECK(s[i].wr_id == (uint64_t)n, "WRITE order: %lu",
			      (unsigned long)s[i].wr_id);
			n++;
			continue;
		}
		CHECK(s[i].wr_id == 1000u + k && r[k].wr_id == 2000u + k,
		      "SEND %d order", k);
		CHECK(r[k].raw <= s[i].raw, "receive %d stamped %llu, after "
		      "its SEND completed at %llu", k,
		      (unsigned long long)r[k].raw,
		      (unsigned long long)s[i].raw);
		k++;
	}
	pair_close(&P);
}

/* Wall-clock stamps: CLOCK_REALTIME between the reads around the traffic. */
static void
wallclock_between_clock_reads(void)
{
	struct stamp s[NWRITE];
	uint64_t before, after;
	int i;

	open_pair(WALL);
	before = clock_ns(CLOCK_REALTIME);
	for (i = 0; i < NWRITE; i++)
		post(IBV_WR_RDMA_WRITE, i, i);
	ex_drain(P.cqx[0], WALL, s, NWRITE);
	after = clock_ns(CLOCK_REALTIME);
	wall_in(s, NWRITE, before, after, "WRITE");
	pair_close(&P);
}

/*
 * Both stamps of a completion are one clock read: wall-clock differences
 * are raw differences at hca_core_clock (within 1 us + 0.1 %), across a
 * 20 ms pause so that a rate error would show.
 */
static void
raw_and_wallclock_agree(void)
{
	struct timespec nap = { .tv_nsec = 20 * 1000 * 1000 };
	struct stamp s[NWRITE];
	uint64_t rb, ra, wb, wa, khz;
	double want, got;
	int i;

	open_pair(TS | WALL);
	khz = core_clock(P.ctx);
	wb = clock_ns(CLOCK_REALTIME);
	rb = raw_clock(P.ctx);
	for (i = 0; i < NWRITE / 2; i++)
		post(IBV_WR_RDMA_WRITE, i, i);
	ex_drain(P.cqx[0], TS | WALL, s, NWRITE / 2);
	CHECK(clock_nanosleep(CLOCK_MONOTONIC, 0, &nap, NULL) == 0, "sleep");
	for (; i < NWRITE; i++)
		post(IBV_WR_RDMA_WRITE, i, i);
	ex_drain(P.cqx[0], TS | WALL, s + NWRITE / 2, NWRITE / 2);
	ra = raw_clock(P.ctx);
	wa = clock_ns(CLOCK_REALTIME);
	raw_in(s, NWRITE, rb, ra, "raw");
	wall_in(s, NWRITE, wb, wa, "wall");
	for (i = 1; i < NWRITE; i++) {
		want = (double)(s[i].raw - s[0].raw) * 1e6 / (double)khz;
		got = (double)(s[i].wall - s[0].wall);
		CHECK(got >= want - 1000 - want * 0.001 &&
		      got <= want + 1000 + want * 0.001,
		      "completion %d: %.0f ns after the first by the wall "
		      "clock, %.0f by the raw clock", i, got, want);
	}
	CHECK(s[NWRITE - 1].wall - s[0].wall >= (uint64_t)nap.tv_nsec,
	      "the pause is missing from the stamps");
	pair_close(&P);
}

static int
rt_values_errno(uint32_t comp_mask, struct ibv_values_ex *v)
{
	v->comp_mask = comp_mask;
	v->raw_clock.tv_sec = 7;
	v->raw_clock.tv_nsec = 7;
	return ibv_query_rt_values_ex(P.ctx, v);
}

/*
 * Stamps are the only completion fields added: the others are still
 * refused (EOPNOTSUPP). ibv_query_rt_values_ex refuses a comp_mask bit it
 * does not know (EINVAL, as mlx5 does) and fills nothing not asked for.
 */
static void
unsupported_requests_refused(void)
{
	static const uint64_t no[] = {
		IBV_WC_EX_WITH_CVLAN, IBV_WC_EX_WITH_FLOW_TAG,
		IBV_WC_EX_WITH_TM_INFO, 1ull << 20,
	};
	struct ibv_values_ex v;
	unsigned int i;
	int err;

	open_pair(0);
	for (i = 0; i < DIM(no); i++) {
		err = create_cq_ex_errno(P.ctx, IBV_WC_STANDARD_FLAGS | no[i],
					 0, 0);
		CHECK(err == EOPNOTSUPP, "wc_flags %#llx: errno %d",
		      (unsigned long long)no[i], err);
		err = create_cq_ex_errno(P.ctx, TS | WALL | no[i], 0, 0);
		CHECK(err == EOPNOTSUPP, "stamps and %#llx: errno %d",
		      (unsigned long long)no[i], err);
	}
	CHECK(create_cq_ex_errno(P.ctx, TS, 0, 0) == 0, "raw stamps alone");
	CHECK(create_cq_ex_errno(P.ctx, WALL, 0, 0) == 0,
	      "wall-clock stamps alone");
	CHECK(create_cq_ex_errno(P.ctx, IBV_WC_STANDARD_FLAGS | TS | WALL, 0,
				 0) == 0, "every supported field");

	err = rt_values_errno(IBV_VALUES_MASK_RESERVED, &v);
	CHECK(err == EINVAL, "reserved bit: %d", err);
	err = rt_values_errno(IBV_VALUES_MASK_RAW_CLOCK | 1u << 31, &v);
	CHECK(err == EINVAL, "raw clock and bit 31: %d", err);
	CHECK(v.raw_clock.tv_sec == 7 && v.raw_clock.tv_nsec == 7,
	      "a refused query wrote the clock");
	err = ibv_query_rt_values_ex(P.ctx, NULL);
	CHECK(err == EINVAL, "NULL values: %d", err);
	err = rt_values_errno(0, &v);
	CHECK(err == 0 && v.comp_mask == 0, "empty query: %d, comp_mask %#x",
	      err, v.comp_mask);
	CHECK(v.raw_clock.tv_sec == 7 && v.raw_clock.tv_nsec == 7,
	      "the clock was written unasked");
	pair_close(&P);
}

/*
 * Let the engine push what is in flight without consuming anything:
 * ibv_poll_cq for 0 entries drives an inline engine, and a dedicated one
 * needs microseconds.
 */
static void
settle(struct ibv_cq *cq)
{
	double end = check_now() + 0.2;
	struct ibv_wc wc;

	while (check_now() < end)
		CHECK(ibv_poll_cq(cq, 0, &wc) == 0, "poll_cq for 0");
}

/*
 * ibv_resize_cq moves pending completions with their stamps: pushed before
 * the resizes, so still between the clock reads around the posts. Never
 * below the completions held (EINVAL). The classic and extended polls then
 * still share one ring.
 */
static void
resize_keeps_stamps(void)
{
	struct ibv_cq *cq;
	struct stamp s[5];
	struct ibv_wc wc;
	uint64_t before, after;
	int i, err;

	open_pair(TS);
	cq = P.cq[0];
	before = raw_clock(P.ctx);
	for (i = 0; i < 5; i++)
		post(IBV_WR_RDMA_WRITE, i, i);
	settle(cq);
	after = raw_clock(P.ctx);
	err = ibv_resize_cq(cq, 4096);
	CHECK(err == 0 && cq->cqe >= 4096, "resize up: %d, cqe %d", err,
	      cq->cqe);
	err = ibv_resize_cq(cq, 4);
	CHECK(err == EINVAL, "resize below 5 pending: %d", err);
	err = ibv_resize_cq(cq, 5);
	CHECK(err == 0 && cq->cqe >= 5 && cq->cqe < 4096,
	      "resize down: %d, cqe %d", err, cq->cqe);
	ex_drain(P.cqx[0], TS, s, 5);
	for (i = 0; i < 5; i++)
		CHECK(s[i].wr_id == (uint64_t)i, "order: %lu at %d",
		      (unsigned long)s[i].wr_id, i);
	raw_in(s, 5, before, after, "moved");
	CHECK(!poll_one(cq, &wc, 0.05), "a completion too many");

	/* One entry taken classically, the next read with its own stamp. */
	before = raw_clock(P.ctx);
	post(IBV_WR_RDMA_WRITE, 5, 5);
	post(IBV_WR_RDMA_WRITE, 6, 6);
	CHECK(poll_one(cq, &wc, 10), "classic poll");
	CHECK(wc.wr_id == 5 && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_RDMA_WRITE, "classic: wr %lu %s",
	      (unsigned long)wc.wr_id, ibv_wc_status_str(wc.status));
	ex_drain(P.cqx[0], TS, s, 1);
	after = raw_clock(P.ctx);
	CHECK(s[0].wr_id == 6, "after classic: wr %lu",
	      (unsigned long)s[0].wr_id);
	raw_in(s, 1, before, after, "after classic");
	pair_close(&P);
}

int
main(void)
{
	RUN(query_device_ex_reports_the_clock);
	RUN(completion_ts_between_clock_reads);
	RUN(wallclock_between_clock_reads);
	RUN(raw_and_wallclock_agree);
	RUN(unsupported_requests_refused);
	RUN(resize_keeps_stamps);
	CHECK_DONE();
}
