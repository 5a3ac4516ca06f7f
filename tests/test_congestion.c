/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Two hosts behind a slow switch port (issue 14): two devices joined by
 * memif in this process, each sending through the fault hook's bottleneck
 * (DPIB_FAULTS rate_mbps=R,queue=Q[,drop=p]: R Mbit/s out of a queue of Q
 * frames with tail drop). perftest-style streams must complete without
 * RETRY_EXC_ERR and reach a share of the bottleneck rate:
 *  - 64 KiB RDMA WRITE and SEND with 128 outstanding, 64 KiB READ with 16;
 *  - four QPs writing at once get rates within 25 % of each other.
 * With "ecn" the port also marks CE (DPIB_FAULTS ecn_kmin=...): DCQCN must
 * then keep its queue short of full (no tail drop at all), with marks,
 * CNPs and rate cuts seen; "write" runs the WRITE stream alone (for a
 * capture the CNPs are dissected from, cnp_dissect.sh). With "none" the
 * devices are configured cc = none: their frames are not ECN-capable, so
 * the same port marks nothing and no CNP is sent (the window alone copes).
 *
 * usage: test_congestion MIN_SHARE [MIN_READ_SHARE [ecn|none [write]]]
 *   (0.8 at 0 % loss, 0.5 at 1 %; READ has its own bar: a READ whose
 *   response is lost is asked for again whole, so at 1 % loss it reaches
 *   about half the port, 47-56 % measured, and the suite asks 40 % of it)
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rte_common.h>

#include "memif_pair.h"
#include "telemetry.h"

#define MSG		65536
#define NQP		4
#define DEPTH		128
#define RD_DEPTH	16
#define STREAM_BYTES	(24u << 20)	/* per stream */
#define WAIT		60.0

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	union ibv_gid gid;
};

/* Each side's QPs: timeout 14 (67 ms), 16 READs either way. */
static const struct pair_opts opts = {
	.qp_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ,
	.max_rd_atomic = RD_DEPTH, .min_rnr_timer = 1, .rnr_retry = 7,
	.timeout = 14, .retry_cnt = 7,
};

static struct side S[2];
static struct ibv_device **list;
static uint8_t *buf;
static size_t buflen = 2 * NQP * (size_t)DEPTH * MSG;
static double rate_bytes, min_share, min_read_share;
static int ecn, cc_none;

static void
open_side(struct side *s, struct ibv_device *dev)
{
	s->ctx = open_when_active(dev);
	s->pd = ibv_alloc_pd(s->ctx);
	CHECK(s->pd != NULL, "alloc_pd");
	CHECK(ibv_query_gid(s->ctx, 1, 0, &s->gid) == 0, "gid");
	s->mr = ibv_reg_mr(s->pd, buf, buflen, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK(s->mr != NULL, "reg_mr");
	s->cq = ibv_create_cq(s->ctx, 4 * NQP * DEPTH, NULL, NULL, 0);
	CHECK(s->cq != NULL, "create_cq");
}

static struct ibv_qp *
make_qp(struct side *s)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(s->pd, &ia);

	CHECK(qp != NULL, "create_qp errno %d", errno);
	return qp;
}

struct stream {
	struct ibv_qp *qp[2];		/* requester on side 0 */
	uint64_t posted, done;
	uint64_t bytes_done;
};

static struct stream st[NQP];

static void
streams_open(int n)
{
	int i;

	for (i = 0; i < n; i++) {
		st[i].qp[0] = make_qp(&S[0]);
		st[i].qp[1] = make_qp(&S[1]);
		qp_connect_to(st[i].qp[0], st[i].qp[1]->qp_num, &S[1].gid,
			      &opts, IBV_MTU_1024, 0, 0);
		qp_connect_to(st[i].qp[1], st[i].qp[0]->qp_num, &S[0].gid,
			      &opts, IBV_MTU_1024, 0, 0);
		st[i].posted = st[i].done = st[i].bytes_done = 0;
	}
}

static void
streams_close(int n)
{
	int i;

	for (i = 0; i < n; i++)
		CHECK(ibv_destroy_qp(st[i].qp[0]) == 0 &&
		      ibv_destroy_qp(st[i].qp[1]) == 0, "destroy");
}

static uint8_t *
slot(int q, uint64_t k, int side)
{
	return buf + (((size_t)side * NQP + q) * DEPTH + k % DEPTH) * MSG;
}

static void
post_one(int q, enum ibv_wr_opcode op)
{
	struct stream *s = &st[q];
	uint64_t k = s->posted;
	struct ibv_sge sge = { (uintptr_t)slot(q, k, 0), MSG, S[0].mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = (uint64_t)q << 48 | k, .sg_list = &sge, .num_sge = 1,
		.opcode = op, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)slot(q, k, 1), S[1].mr->rkey },
	}, *bad;

	if (op == IBV_WR_SEND) {
		struct ibv_sge r = { (uintptr_t)slot(q, k, 1), MSG,
				     S[1].mr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = k, .sg_list = &r,
					   .num_sge = 1 }, *rbad;

		CHECK(ibv_post_recv(s->qp[1], &rwr, &rbad) == 0, "post_recv");
	}
	CHECK(ibv_post_send(s->qp[0], &wr, &bad) == 0, "post_send");
	s->posted++;
}

/*
 * Run @n streams of @op with @depth outstanding until each moved @bytes
 * (or, with @until_first, until the first one has); returns the seconds
 * taken. Every completion must be a success.
 */
static double
run(int n, enum ibv_wr_opcode op, int depth, uint64_t bytes, int until_first)
{
	double t0 = check_now(), end = t0 + WAIT;
	int q, finished;

	for (;;) {
		struct ibv_wc wc[32];
		int i, k;

		for (q = 0, finished = 0; q < n; q++)
			finished += st[q].bytes_done >= bytes;
		if (finished >= (until_first ? 1 : n))
			break;
		for (q = 0; q < n; q++)
			while (st[q].posted - st[q].done < (uint64_t)depth &&
			       st[q].posted * MSG < bytes)
				post_one(q, op);
		k = ibv_poll_cq(S[0].cq, 32, wc);
		CHECK(k >= 0, "poll");
		for (i = 0; i < k; i++) {
			struct stream *s = &st[wc[i].wr_id >> 48];

			CHECK(wc[i].status == IBV_WC_SUCCESS, "stream %d: %s",
			      (int)(wc[i].wr_id >> 48),
			      ibv_wc_status_str(wc[i].status));
			s->done++;
			s->bytes_done += MSG;
		}
		/* Receive completions of SENDs: drained, checked. */
		k = ibv_poll_cq(S[1].cq, 32, wc);
		for (i = 0; i < k; i++)
			CHECK(wc[i].status == IBV_WC_SUCCESS, "receive: %s",
			      ibv_wc_status_str(wc[i].status));
		CHECK(check_now() < end, "no end after %.0f s", WAIT);
	}
	return check_now() - t0;
}

/* The transport's counters of both ends that moved since the last call. */
static void
print_counters(void)
{
	static uint64_t last[2][128];
	const char *const *names;
	uint64_t v[128];
	int d, i, n;

	for (d = 0; d < 2; d++) {
		n = dpib_counters(S[d].ctx, &names, v, 128);
		for (i = 0; i < n && i < 128; i++) {
			if (v[i] != last[d][i] &&
			    (strstr(names[i], "nak") || strstr(names[i], "cwnd") ||
			     strstr(names[i], "retransmit") ||
			     strstr(names[i], "fault") || strstr(names[i], "gap") ||
			     strstr(names[i], "dup") || strstr(names[i], "packets") ||
			     strstr(names[i], "stale") || strstr(names[i], "seq") ||
			     strstr(names[i], "early")))
				printf("#   dpib%d %s %" PRIu64 "\n", d, names[i],
				       v[i] - last[d][i]);
			last[d][i] = v[i];
		}
	}
}

/* A counter of both devices together. */
static uint64_t
counter_sum(const char *name)
{
	const char *const *names;
	uint64_t v[128], sum = 0;
	int d, i, n;

	for (d = 0; d < 2; d++) {
		n = dpib_counters(S[d].ctx, &names, v, 128);
		for (i = 0; i < n && i < 128; i++)
			if (strcmp(names[i], name) == 0)
				sum += v[i];
	}
	return sum;
}

/* Until counters @a and @b agree, for at most a second (passes run). */
static void
settle(const char *a, const char *b)
{
	double end = check_now() + 1;
	int d;

	while (counter_sum(a) != counter_sum(b) && check_now() < end) {
		for (d = 0; d < 2; d++)
			(void)ibv_poll_cq(S[d].cq, 0, NULL);
		usleep(1000);
	}
}

/*
 * DCQCN against a marking port: no frame lost at the tail, and the loop
 * closed: frames marked, CNPs sent and received, rates cut.
 */
static void
expect_dcqcn(const char *what)
{
	static const char *const moved[] = {
		"fault_bottleneck_ecn_marked", "ecn_marked_received",
		"cnp_sent", "cnp_received", "dcqcn_rate_cut",
	};
	static uint64_t last[RTE_DIM(moved)];
	unsigned int i;

	if (cc_none) {
		for (i = 0; i < RTE_DIM(moved); i++)
			CHECK(counter_sum(moved[i]) == 0, "cc = none: %s %" PRIu64,
			      moved[i], counter_sum(moved[i]));
		return;
	}
	if (!ecn)
		return;
	/* Nothing else is lost here: every mark reached its NP - once the
	 * frames still on their way have landed: the streams are complete,
	 * but a frame marked at the bottleneck's departure (a late ACK, a
	 * resend) may still be between it and its receiver (CI once read
	 * 21971 marked against fewer received, and equal again in the
	 * message).
	 */
	settle("ecn_marked_received", "fault_bottleneck_ecn_marked");
	CHECK(counter_sum("ecn_marked_received") ==
	      counter_sum("fault_bottleneck_ecn_marked"),
	      "%s: %" PRIu64 " frames marked, %" PRIu64 " received marked",
	      what, counter_sum("fault_bottleneck_ecn_marked"),
	      counter_sum("ecn_marked_received"));
	CHECK(counter_sum("fault_bottleneck_tail_drop") == 0,
	      "%s: %" PRIu64 " frames dropped at the tail of the queue", what,
	      counter_sum("fault_bottleneck_tail_drop"));
	for (i = 0; i < RTE_DIM(moved); i++) {
		uint64_t v = counter_sum(moved[i]);

		printf("#   %s %" PRIu64 "\n", moved[i], v - last[i]);
		CHECK(v > last[i], "%s: %s did not move", what, moved[i]);
		last[i] = v;
	}
}

static void
expect_share_of(const char *what, double secs, uint64_t bytes, double min)
{
	double share = bytes / secs / rate_bytes;

	printf("# %s: %.1f MB in %.3f s, %.0f Mbit/s, %.0f %% of the "
	       "bottleneck\n", what, bytes / 1e6, secs, bytes * 8 / secs / 1e6,
	       share * 100);
	print_counters();
	expect_dcqcn(what);
	CHECK(share >= min, "%s reached %.0f %% of the bottleneck, "
	      "wanted %.0f %%", what, share * 100, min * 100);
}

static void
expect_share(const char *what, double secs, uint64_t bytes)
{
	expect_share_of(what, secs, bytes, min_share);
}

/*
 * Telemetry shows the requester's QP paced once DCQCN cut its rate (and
 * not before: without marks no QP is paced), at a rate near the port's.
 */
static void
expect_paced(struct ibv_qp *qp)
{
	const char *r;
	char q[64], key[32];
	int fd = tel_connect();

	snprintf(q, sizeof(q), "/dpib/cc,%s",
		 ibv_get_device_name(S[0].ctx->device));
	r = tel_query(fd, q);
	printf("# %s: %s\n", q, r);
	CHECK(strstr(r, cc_none ? "\"cc\":\"none\"" : "\"cc\":\"dcqcn\"")
	      != NULL, "cc: %s", r);
	snprintf(key, sizeof(key), "\"qp_%u\":", qp->qp_num);
	if (!ecn) {
		CHECK(strstr(r, key) == NULL, "paced without marks: %s", r);
	} else {
		uint64_t mbps;

		snprintf(key, sizeof(key), "qp_%u", qp->qp_num);
		mbps = json_u64(r, key);
		CHECK(mbps >= 1 && mbps < 4 * rate_bytes * 8 / 1e6,
		      "QP %u paced at %" PRIu64 " Mbit/s", qp->qp_num, mbps);
	}
	close(fd);
}

static void
write_stream(void)
{
	streams_open(1);
	expect_share("WRITE 64 KiB x 128", run(1, IBV_WR_RDMA_WRITE, DEPTH,
						STREAM_BYTES, 0), STREAM_BYTES);
	expect_paced(st[0].qp[0]);
	streams_close(1);
}

static void
send_stream(void)
{
	streams_open(1);
	expect_share("SEND 64 KiB x 128", run(1, IBV_WR_SEND, DEPTH,
					       STREAM_BYTES, 0), STREAM_BYTES);
	streams_close(1);
}

static void
read_stream(void)
{
	streams_open(1);
	expect_share_of("READ 64 KiB x 16", run(1, IBV_WR_RDMA_READ, RD_DEPTH,
						 STREAM_BYTES, 0), STREAM_BYTES,
			min_read_share);
	streams_close(1);
}

/*
 * Four QPs share the port. Once they have found their windows (the first
 * moved STREAM_BYTES / 4), what each moves until the first has moved
 * STREAM_BYTES is within 25 % of the others: in one of three windows in a
 * row. Tail drop shares a port unevenly now and then (on a 2-vCPU EPYC
 * whose vCPUs move on the host, the spread of single windows reached 1.24
 * in 15 runs, and 1.28 once in a CI run); a QP the port starves stays
 * starved in all three.
 */
static void
four_qps_fair(void)
{
	uint64_t lo, hi, total, start[NQP];
	double secs;
	int q, window;

	streams_open(NQP);
	run(NQP, IBV_WR_RDMA_WRITE, DEPTH / NQP, STREAM_BYTES / 4, 1);
	for (window = 1;; window++) {
		lo = UINT64_MAX;
		hi = total = 0;
		for (q = 0; q < NQP; q++)
			start[q] = st[q].bytes_done;
		secs = run(NQP, IBV_WR_RDMA_WRITE, DEPTH / NQP, STREAM_BYTES,
			   1);
		for (q = 0; q < NQP; q++) {
			uint64_t b = st[q].bytes_done - start[q];

			lo = RTE_MIN(lo, b);
			hi = RTE_MAX(hi, b);
			total += b;
			printf("# window %d, QP %d: %.1f MB\n", window, q,
			       b / 1e6);
		}
		if (lo * 1.25 >= hi || window == 3)
			break;
	}
	CHECK(lo * 1.25 >= hi, "unfair in 3 windows in a row: %.1f MB "
	      "against %.1f MB", lo / 1e6, hi / 1e6);
	expect_share("4 QPs together", secs, total);
	/* Let the others finish before their QPs go. */
	run(NQP, IBV_WR_RDMA_WRITE, DEPTH / NQP, STREAM_BYTES, 0);
	streams_close(NQP);
}

int
main(int argc, char **argv)
{
	const char *faults = getenv("DPIB_FAULTS"), *r;

	CHECK(argc > 1, "usage: test_congestion MIN_SHARE [MIN_READ_SHARE "
	      "[ecn [write]]]");
	min_share = atof(argv[1]);
	min_read_share = argc > 2 ? atof(argv[2]) : min_share;
	ecn = argc > 3 && strcmp(argv[3], "ecn") == 0;
	cc_none = argc > 3 && strcmp(argv[3], "none") == 0;
	CHECK(faults != NULL && (r = strstr(faults, "rate_mbps=")) != NULL,
	      "DPIB_FAULTS must set rate_mbps");
	rate_bytes = atof(r + strlen("rate_mbps=")) * 1e6 / 8;
	memif_pair_config_with("cc", cc_none ? "cc = none\n" : "");
	buf = aligned_alloc(4096, buflen);
	CHECK(buf != NULL, "alloc");
	memset(buf, 0, buflen);
	list = ibv_get_device_list(NULL);
	CHECK(list != NULL && list[0] != NULL && list[1] != NULL, "devices");
	open_side(&S[0], list[0]);
	open_side(&S[1], list[1]);
	RUN(write_stream);
	if (argc > 4 && strcmp(argv[4], "write") == 0)
		CHECK_DONE();
	RUN(send_stream);
	RUN(read_stream);
	RUN(four_qps_fair);
	CHECK_DONE();
}
