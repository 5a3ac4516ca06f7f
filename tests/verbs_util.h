/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef DPIB_VERBS_UTIL_H
#define DPIB_VERBS_UTIL_H

/* Two RC QPs on one device, connected to each other, for verbs tests. */

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <infiniband/verbs.h>

#include "check.h"
#include "dpib.h"

#define DIM(a) (sizeof(a) / sizeof((a)[0]))

struct pair {
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
	uint8_t *buf;		/* one buffer, registered once */
	size_t len;
	struct ibv_mr *mr;
	enum ibv_mtu mtu;
	struct ibv_cq_ex *cqx[2];	/* pair_open_ex only */
	struct ibv_qp_ex *qpx[2];
};

struct pair_opts {
	size_t buflen;
	int mr_access;
	int qp_access;
	int sq_sig_all;
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t max_inline;
	uint8_t max_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t rnr_retry;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t traffic_class;	/* the path's GRH traffic class */
};

/* The device, a PD and one registered buffer. */
static inline void
pair_open_mem(struct pair *p, const struct pair_opts *o)
{
	struct ibv_port_attr pa;

	memset(p, 0, sizeof(*p));
	p->list = ibv_get_device_list(NULL);
	CHECK(p->list != NULL && p->list[0] != NULL, "no device (errno %d)",
	      errno);
	p->ctx = ibv_open_device(p->list[0]);
	CHECK(p->ctx != NULL, "ibv_open_device");
	CHECK(ibv_query_port(p->ctx, 1, &pa) == 0, "query_port");
	p->mtu = pa.active_mtu;
	p->pd = ibv_alloc_pd(p->ctx);
	CHECK(p->pd != NULL, "alloc_pd");
	p->len = o->buflen;
	p->buf = aligned_alloc(4096, (p->len + 4095) & ~(size_t)4095);
	CHECK(p->buf != NULL, "alloc %zu", p->len);
	memset(p->buf, 0, p->len);
	p->mr = ibv_reg_mr(p->pd, p->buf, p->len, o->mr_access);
	CHECK(p->mr != NULL, "reg_mr errno %d", errno);
}

/* The QP capabilities and CQ size both kinds of pair use. */
static inline struct ibv_qp_cap
pair_cap(const struct pair_opts *o)
{
	struct ibv_qp_cap cap = {
		.max_send_wr = o->max_wr,
		.max_recv_wr = o->max_wr,
		.max_send_sge = o->max_sge,
		.max_recv_sge = o->max_sge,
		.max_inline_data = o->max_inline,
	};

	return cap;
}

#define PAIR_CQE(o)	(2 * (o)->max_wr + 16)

static inline void
pair_open(struct pair *p, const struct pair_opts *o)
{
	int i;

	pair_open_mem(p, o);
	for (i = 0; i < 2; i++) {
		struct ibv_qp_init_attr ia = {
			.qp_type = IBV_QPT_RC,
			.cap = pair_cap(o),
			.sq_sig_all = o->sq_sig_all,
		};

		p->cq[i] = ibv_create_cq(p->ctx, PAIR_CQE(o), NULL, NULL, 0);
		CHECK(p->cq[i] != NULL, "create_cq");
		ia.send_cq = ia.recv_cq = p->cq[i];
		p->qp[i] = ibv_create_qp(p->pd, &ia);
		CHECK(p->qp[i] != NULL, "create_qp errno %d", errno);
	}
}

/* pair_open with extended CQs reporting @wc_flags and QPs with @send_ops. */
static inline void
pair_open_ex(struct pair *p, const struct pair_opts *o, uint64_t wc_flags,
	     uint64_t send_ops)
{
	int i;

	pair_open_mem(p, o);
	for (i = 0; i < 2; i++) {
		struct ibv_cq_init_attr_ex ca = {
			.cqe = PAIR_CQE(o),
			.wc_flags = wc_flags,
		};
		struct ibv_qp_init_attr_ex ia = {
			.qp_type = IBV_QPT_RC,
			.cap = pair_cap(o),
			.sq_sig_all = o->sq_sig_all,
			.comp_mask = IBV_QP_INIT_ATTR_PD |
				     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.pd = p->pd,
			.send_ops_flags = send_ops,
		};

		p->cqx[i] = ibv_create_cq_ex(p->ctx, &ca);
		CHECK(p->cqx[i] != NULL, "create_cq_ex errno %d", errno);
		p->cq[i] = ibv_cq_ex_to_cq(p->cqx[i]);
		ia.send_cq = ia.recv_cq = p->cq[i];
		p->qp[i] = ibv_create_qp_ex(p->ctx, &ia);
		CHECK(p->qp[i] != NULL, "create_qp_ex errno %d", errno);
		p->qpx[i] = ibv_qp_to_qp_ex(p->qp[i]);
		CHECK(p->qpx[i] != NULL, "ibv_qp_to_qp_ex");
	}
}

/*
 * An address vector to this device itself: RoCE addresses by GID, so the
 * GRH is required (ibv_create_ah and ibv_modify_qp refuse an AV without
 * one with EINVAL, as rxe and mlx5 do).
 */
static inline void
ah_self(struct ibv_context *ctx, struct ibv_ah_attr *ah)
{
	ah->is_global = 1;
	ah->port_num = 1;
	ah->grh.hop_limit = 64;
	ah->grh.sgid_index = 0;
	CHECK(ibv_query_gid(ctx, 1, 0, &ah->grh.dgid) == 0, "GID 0");
}

/* A UD QP Reset -> RTS: port 1, P_Key index 0, Q_Key @qkey, SQ PSN 0. */
static inline void
ud_to_rts(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qkey = qkey };

	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_QKEY) == 0, "UD to INIT");
	a.qp_state = IBV_QPS_RTR;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0, "UD to RTR");
	a.qp_state = IBV_QPS_RTS;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0,
	      "UD to RTS");
}

/* Reset -> RTS toward QP @dest_qpn at GID @dgid, as @o says. */
static inline void
qp_connect_to(struct ibv_qp *qp, uint32_t dest_qpn, const union ibv_gid *dgid,
	      const struct pair_opts *o, enum ibv_mtu mtu, uint32_t rq_psn,
	      uint32_t sq_psn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = o->qp_access,
	};
	int ret;

	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	CHECK(ret == 0, "to INIT: %d", ret);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = o->max_rd_atomic;
	a.min_rnr_timer = o->min_rnr_timer;
	ah_self(qp->context, &a.ah_attr);
	a.ah_attr.grh.dgid = *dgid;
	a.ah_attr.grh.traffic_class = o->traffic_class;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	CHECK(ret == 0, "to RTR: %d", ret);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = o->timeout;
	a.retry_cnt = o->retry_cnt;
	a.rnr_retry = o->rnr_retry;
	a.max_rd_atomic = o->max_rd_atomic;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	CHECK(ret == 0, "to RTS: %d", ret);
}

/* The same toward a QP of this device itself (its GID 0). */
static inline void
qp_connect(struct ibv_qp *qp, uint32_t dest_qpn, const struct pair_opts *o,
	   enum ibv_mtu mtu, uint32_t rq_psn, uint32_t sq_psn)
{
	union ibv_gid gid;

	CHECK(ibv_query_gid(qp->context, 1, 0, &gid) == 0, "GID 0");
	qp_connect_to(qp, dest_qpn, &gid, o, mtu, rq_psn, sq_psn);
}

/* UC: Reset -> RTS toward @dest (UC takes no READ/atomic attributes). */
static inline void
uc_connect(struct ibv_qp *qp, uint32_t dest, enum ibv_mtu mtu)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0, "UC INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = dest;
	a.ah_attr.port_num = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.hop_limit = 64;
	CHECK(ibv_query_gid(qp->context, 1, 0, &a.ah_attr.grh.dgid) == 0,
	      "GID");
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
			    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			    IBV_QP_RQ_PSN) == 0, "UC RTR");
	a.qp_state = IBV_QPS_RTS;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0,
	      "UC RTS");
}

/*
 * The pair's RC QPs replaced by UC ones, connected to each other (UC takes
 * no READ/atomic attributes); @sig_all as sq_sig_all.
 */
static inline void
pair_make_uc(struct pair *p, const struct pair_opts *o, int sig_all)
{
	int i;

	for (i = 0; i < 2; i++) {
		struct ibv_qp_init_attr ia = {
			.qp_type = IBV_QPT_UC, .sq_sig_all = sig_all,
			.cap = pair_cap(o),
			.send_cq = p->cq[i], .recv_cq = p->cq[i],
		};

		CHECK(ibv_destroy_qp(p->qp[i]) == 0, "destroy");
		p->qp[i] = ibv_create_qp(p->pd, &ia);
		CHECK(p->qp[i] != NULL, "UC QP");
	}
	uc_connect(p->qp[0], p->qp[1]->qp_num, p->mtu);
	uc_connect(p->qp[1], p->qp[0]->qp_num, p->mtu);
}

/* PSNs near the 24-bit wrap so that every test crosses it. */
static inline void
pair_connect(struct pair *p, const struct pair_opts *o)
{
	qp_connect(p->qp[0], p->qp[1]->qp_num, o, p->mtu, 0xfffff0, 0xffff00);
	qp_connect(p->qp[1], p->qp[0]->qp_num, o, p->mtu, 0xffff00, 0xfffff0);
}

static inline void
pair_close(struct pair *p)
{
	int i;

	for (i = 0; i < 2; i++) {
		CHECK(ibv_destroy_qp(p->qp[i]) == 0, "destroy_qp");
		CHECK(ibv_destroy_cq(p->cq[i]) == 0, "destroy_cq");
	}
	CHECK(ibv_dereg_mr(p->mr) == 0, "dereg_mr");
	CHECK(ibv_dealloc_pd(p->pd) == 0, "dealloc_pd");
	CHECK(ibv_close_device(p->ctx) == 0, "close_device");
	ibv_free_device_list(p->list);
	free(p->buf);
}

/*
 * Run @fn(@arg) in a forked child (which opens dpib for itself and must
 * exit(0)); a signal, a failure or a minute's silence fails the test.
 * Fork before this process opens a device: the engine is a thread.
 */
static inline void
check_in_child(void (*fn)(int), int arg, const char *what)
{
	int status;
	pid_t pid = fork();

	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		alarm(60);
		fn(arg);
		exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK(!WIFSIGNALED(status), "%s: killed by signal %d", what,
	      WTERMSIG(status));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s failed (%d)",
	      what, WEXITSTATUS(status));
}

/* Poll one completion within @secs seconds; 0 when none arrived. */
static inline int
poll_one(struct ibv_cq *cq, struct ibv_wc *wc, double secs)
{
	double deadline = check_now() + secs;
	int n;

	do {
		n = ibv_poll_cq(cq, 1, wc);
		CHECK(n >= 0, "poll_cq %d", n);
		if (n == 1)
			return 1;
	} while (check_now() < deadline);
	return 0;
}

/*
 * How many leading bytes of @dst equal @src's, read through volatile:
 * for memory an engine writes from another thread. memcmp is no test of
 * that: it finds a differing block, then reloads bytes of it to order
 * them, and a byte written in between makes it return 0 with later bytes
 * still unwritten.
 */
static inline size_t
landed(const volatile uint8_t *dst, const uint8_t *src, size_t n)
{
	size_t i;

	for (i = 0; i < n && dst[i] == src[i]; i++)
		;
	return i;
}

static inline void
fill_pattern(uint8_t *b, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		b[i] = (uint8_t)((i * 131 + seed * 7 + (i >> 8)) ^ (seed >> 3));
}

/* ibv_create_cq_ex with these attributes: 0, or the errno it failed with. */
static inline int
create_cq_ex_errno(struct ibv_context *ctx, uint64_t wc_flags,
		   uint32_t comp_mask, uint32_t flags)
{
	struct ibv_cq_init_attr_ex a = {
		.cqe = 16, .wc_flags = wc_flags, .comp_mask = comp_mask,
		.flags = flags,
	};
	struct ibv_cq_ex *cq;

	errno = 0;
	cq = ibv_create_cq_ex(ctx, &a);
	if (cq == NULL)
		return errno;
	CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0, "destroy");
	return 0;
}

/*
 * The first device opened, a PD, @len zeroed bytes (page aligned) and
 * their MR with @access: what most tests start from.
 */
static inline struct ibv_context *
open_first(struct ibv_device ***list, struct ibv_pd **pd, uint8_t **buf,
	   size_t len, int access, struct ibv_mr **mr)
{
	struct ibv_context *c;

	*list = ibv_get_device_list(NULL);
	CHECK(*list != NULL && (*list)[0] != NULL, "no device");
	c = ibv_open_device((*list)[0]);
	CHECK(c != NULL, "open");
	*pd = ibv_alloc_pd(c);
	*buf = aligned_alloc(4096, len);
	CHECK(*pd != NULL && *buf != NULL, "pd, buffer");
	memset(*buf, 0, len);
	*mr = ibv_reg_mr(*pd, *buf, len, access);
	CHECK(*mr != NULL, "reg_mr");
	return c;
}

/* The device counter called @name (dpib_counters()); a missing one fails. */
static inline uint64_t
dev_counter(struct ibv_context *ctx, const char *name)
{
	const char *const *names;
	uint64_t v[128];
	int n = dpib_counters(ctx, &names, v, 128), i;

	for (i = 0; i < n && i < 128; i++)
		if (strcmp(names[i], name) == 0)
			return v[i];
	CHECK(0, "no counter %s", name);
	return 0;
}

#endif /* DPIB_VERBS_UTIL_H */
