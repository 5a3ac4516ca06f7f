/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * RoCEv2 over IPv6 and over an 802.1Q VLAN on the loopback device
 * (tests/conf/ipv6_vlan.conf: ip, ip6, vlan 100). The GID table holds the
 * IPv4-mapped GID then the IPv6 one; RC SEND/WRITE/READ and UD SEND run
 * through each, UD multicast through the IPv6 one, then the capture
 * (DPIB_CAPTURE) is checked frame by frame: the tag's VID and PCP (the
 * AH's sl), the IP fields taken from the GRH, and the ICRC recomputed by
 * ib_icrc (IBA A17.3.3).
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <unistd.h>

#include "verbs_util.h"
#include "dpib.h"
#include "pcap.h"
#include "ib_hca.h"

#define VID		100
#define TCLASS		0x28
/*
 * On the wire: the DSCP asked for, and ECT(0), which DCQCN (on by default)
 * gives RC and UC frames whose traffic class leaves the ECN bits 0; UD
 * frames (opcodes 0x60..0x7f) keep the traffic class as it is.
 */
static inline unsigned int
tclass_wire(uint8_t opcode)
{
	return opcode >> 5 == 3 ? TCLASS : TCLASS | IB_ECN_ECT0;
}
#define FLOW		0x12345u
#define HOPS		33
#define SL6		5	/* PCP of the IPv6 paths */
#define SL4		3	/* PCP of the IPv4 paths */
#define MSG		10000	/* several packets at the 4096 MTU */

static const struct pair_opts rc = {
	.buflen = 1 << 20,
	.mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ,
	.qp_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ,
	.sq_sig_all = 1, .max_wr = 16, .max_sge = 1, .max_inline = 0,
	.max_rd_atomic = 4, .min_rnr_timer = 1, .rnr_retry = 7,
	.timeout = 14, .retry_cnt = 7,
};

/* rdma-core's provider-facing query (driver.h), which dpib exports too. */
int ibv_query_gid_type(struct ibv_context *ctx, uint8_t port,
		       unsigned int index, int *type);

static struct pair p;
static union ibv_gid gid[2];

static void
fill(uint8_t *b, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 7 + seed);
}

static void
wait_wc(struct ibv_cq *cq, uint64_t wr_id, struct ibv_wc *out)
{
	struct ibv_wc wc;
	double t0 = check_now();
	int n;

	do {
		n = ibv_poll_cq(cq, 1, &wc);
		CHECK(n >= 0, "poll_cq");
	} while (n == 0 && check_now() - t0 < 5);
	CHECK(n == 1, "no completion for wr %" PRIu64, wr_id);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == wr_id,
	      "wr %" PRIu64 ": %s (wr_id %" PRIu64 ")", wr_id,
	      ibv_wc_status_str(wc.status), wc.wr_id);
	if (out != NULL)
		*out = wc;
}

static struct ibv_ah_attr
av(int sgid_index)
{
	struct ibv_ah_attr a = {
		.is_global = 1, .port_num = 1,
		.sl = sgid_index ? SL6 : SL4,
		.grh = {
			.dgid = gid[sgid_index], .sgid_index = sgid_index,
			.hop_limit = HOPS, .traffic_class = TCLASS,
			.flow_label = sgid_index ? FLOW : 0,
		},
	};

	return a;
}

/* The GID table reports both addresses, each RoCE v2. */
static void
gid_table(void)
{
	struct ibv_gid_entry ent[4];
	struct ibv_port_attr pa;
	union ibv_gid g;
	uint8_t v6[16];
	int type;

	CHECK(ibv_query_port(p.ctx, 1, &pa) == 0, "query_port");
	CHECK(pa.gid_tbl_len == 16, "gid_tbl_len %d", pa.gid_tbl_len);
	CHECK(ibv_query_gid(p.ctx, 1, 0, &gid[0]) == 0, "gid 0");
	CHECK(ibv_query_gid(p.ctx, 1, 1, &gid[1]) == 0, "gid 1");
	/* Issue 15: entry 2 is empty: the zero GID, ENODATA from _ex. */
	memset(&g, 0xaa, sizeof(g));
	CHECK(ibv_query_gid(p.ctx, 1, 2, &g) == 0 &&
	      g.global.subnet_prefix == 0 && g.global.interface_id == 0,
	      "empty gid 2");
	CHECK(ibv_query_gid_ex(p.ctx, 1, 2, &ent[0], 0) == ENODATA,
	      "query_gid_ex of an empty entry");
	CHECK(ibv_query_gid(p.ctx, 1, 16, &g) != 0 && errno == EINVAL,
	      "gid 16 exists");
	CHECK(gid[0].raw[10] == 0xff && gid[0].raw[11] == 0xff &&
	      gid[0].raw[12] == 192 && gid[0].raw[15] == 1, "gid 0 not ::ffff:192.0.2.1");
	inet_pton(AF_INET6, "2001:db8::1", v6);
	CHECK(memcmp(gid[1].raw, v6, 16) == 0, "gid 1 not 2001:db8::1");
	CHECK(ibv_query_gid_type(p.ctx, 1, 1, &type) == 0, "gid_type 1");
	CHECK(ibv_query_gid_type(p.ctx, 1, 2, &type) == 0 && type == 0,
	      "gid_type of an empty entry");
	CHECK(ibv_query_gid_type(p.ctx, 1, 16, &type) != 0, "gid_type 16");
	CHECK(ibv_query_gid_ex(p.ctx, 1, 1, &ent[0], 0) == 0 &&
	      ent[0].gid_index == 1 && ent[0].gid_type == IBV_GID_TYPE_ROCE_V2 &&
	      memcmp(ent[0].gid.raw, v6, 16) == 0, "query_gid_ex 1");
	CHECK(ibv_query_gid_table(p.ctx, ent, 4, 0) == 2 &&
	      ent[0].gid_index == 0 && ent[1].gid_index == 1 &&
	      ent[1].gid_type == IBV_GID_TYPE_ROCE_V2, "query_gid_table");
}

/* The source GID's family must be the destination's; indexes exist. */
static void
family_mismatch_is_einval(void)
{
	struct ibv_ah_attr a = av(1);

	a.grh.dgid = gid[0];
	errno = 0;
	CHECK(ibv_create_ah(p.pd, &a) == NULL && errno == EINVAL,
	      "IPv6 source to an IPv4 GID: errno %d", errno);
	a = av(0);
	a.grh.dgid = gid[1];
	errno = 0;
	CHECK(ibv_create_ah(p.pd, &a) == NULL && errno == EINVAL,
	      "IPv4 source to an IPv6 GID: errno %d", errno);
	a = av(1);
	a.grh.sgid_index = 2;
	errno = 0;
	CHECK(ibv_create_ah(p.pd, &a) == NULL && errno == EINVAL,
	      "sgid_index 2: errno %d", errno);
}

static void
connect_rc(struct ibv_qp *qp, uint32_t dqpn, int sgid_index)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = rc.qp_access,
	};

	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0, "INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = p.mtu;
	a.dest_qp_num = dqpn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr = av(sgid_index);
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == 0,
	      "RTR through GID %d: errno %d", sgid_index, errno);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC) == 0,
	      "RTS");
}

static void
post(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t off, uint32_t len,
     uint32_t roff, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)p.buf + off, len, p.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.wr.rdma = { (uintptr_t)p.buf + roff, p.mr->rkey },
	}, *bad;

	CHECK(ibv_post_send(qp, &wr, &bad) == 0, "post_send");
}

static void
post_recv(struct ibv_qp *qp, uint32_t off, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)p.buf + off, len, p.mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	CHECK(ibv_post_recv(qp, &wr, &bad) == 0, "post_recv");
}

/* SEND, WRITE and READ between two RC QPs, every byte compared. */
static void
rc_through(int sgid_index)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp[2];
	struct ibv_cq *cq[2];
	uint8_t *b = p.buf;
	int i;

	for (i = 0; i < 2; i++) {
		cq[i] = ibv_create_cq(p.ctx, 64, NULL, NULL, 0);
		CHECK(cq[i] != NULL, "create_cq");
		ia.send_cq = ia.recv_cq = cq[i];
		qp[i] = ibv_create_qp(p.pd, &ia);
		CHECK(qp[i] != NULL, "create_qp");
	}
	connect_rc(qp[0], qp[1]->qp_num, sgid_index);
	connect_rc(qp[1], qp[0]->qp_num, sgid_index);
	memset(b, 0, p.len);
	fill(b, MSG, 1 + sgid_index);
	post_recv(qp[1], 0x20000, MSG, 7);
	post(qp[0], IBV_WR_SEND, 0, MSG, 0, 1);
	wait_wc(cq[0], 1, NULL);
	wait_wc(cq[1], 7, NULL);
	CHECK(memcmp(b, b + 0x20000, MSG) == 0, "SEND bytes differ");
	post(qp[0], IBV_WR_RDMA_WRITE, 0, MSG, 0x40000, 2);
	wait_wc(cq[0], 2, NULL);
	CHECK(memcmp(b, b + 0x40000, MSG) == 0, "WRITE bytes differ");
	fill(b + 0x60000, MSG, 9 + sgid_index);
	post(qp[0], IBV_WR_RDMA_READ, 0x80000, MSG, 0x60000, 3);
	wait_wc(cq[0], 3, NULL);
	CHECK(memcmp(b + 0x60000, b + 0x80000, MSG) == 0, "READ bytes differ");
	for (i = 0; i < 2; i++) {
		CHECK(ibv_destroy_qp(qp[i]) == 0, "destroy_qp");
		CHECK(ibv_destroy_cq(cq[i]) == 0, "destroy_cq");
	}
}

static void
rc_ipv6(void)
{
	rc_through(1);
}

static void
rc_ipv4(void)
{
	rc_through(0);
}

static struct ibv_qp *
ud_qp(struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UD, .sq_sig_all = 1,
		.send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(p.pd, &ia);

	CHECK(qp != NULL, "create UD qp");
	ud_to_rts(qp, 0x11111111);
	return qp;
}

/*
 * UD SEND: the payload arrives whole, and the 40-byte GRH area holds the
 * sender's IPv6 header (or the IPv4 header in its last 20 bytes).
 */
static void
ud_through(int sgid_index)
{
	struct ibv_cq *cq = ibv_create_cq(p.ctx, 32, NULL, NULL, 0);
	struct ibv_qp *a, *r;
	struct ibv_ah_attr aa = av(sgid_index), back;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	uint8_t *b = p.buf;
	const uint32_t len = 1000;
	struct ibv_sge sge = { (uintptr_t)b, len, p.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND }, *bad;

	CHECK(cq != NULL, "create_cq");
	a = ud_qp(cq);
	r = ud_qp(cq);
	ah = ibv_create_ah(p.pd, &aa);
	CHECK(ah != NULL, "create_ah through GID %d: errno %d", sgid_index,
	      errno);
	memset(b, 0, p.len);
	fill(b, len, 3 + sgid_index);
	post_recv(r, 0x10000, 40 + len, 9);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = r->qp_num;
	wr.wr.ud.remote_qkey = 0x11111111;
	CHECK(ibv_post_send(a, &wr, &bad) == 0, "UD post_send");
	wait_wc(cq, 1, NULL);
	wait_wc(cq, 9, &wc);
	CHECK(wc.byte_len == 40 + len && (wc.wc_flags & IBV_WC_GRH),
	      "byte_len %u", wc.byte_len);
	CHECK(memcmp(b, b + 0x10000 + 40, len) == 0, "UD bytes differ");
	if (sgid_index == 1) {
		const uint8_t *g = b + 0x10000;

		CHECK(g[0] >> 4 == 6 && memcmp(g + 8, gid[1].raw, 16) == 0 &&
		      memcmp(g + 24, gid[1].raw, 16) == 0 && g[7] == HOPS,
		      "GRH is not the IPv6 header");
	} else {
		CHECK(b[0x10000 + 20] == 0x45, "GRH is not the IPv4 header");
	}
	CHECK(ibv_init_ah_from_wc(p.ctx, 1, &wc, (void *)(b + 0x10000),
				  &back) == 0, "init_ah_from_wc");
	CHECK(back.grh.sgid_index == sgid_index &&
	      memcmp(&back.grh.dgid, &gid[sgid_index], 16) == 0,
	      "reply AH: sgid_index %u", back.grh.sgid_index);
	/* As rdma-core: hop limit and traffic class as received; a
	 * multicast destination or one not ours is refused.
	 */
	{
		uint8_t *g = b + 0x10000;
		uint8_t hops = sgid_index == 1 ? g[7] : g[20 + 8];
		uint8_t tc = sgid_index == 1 ?
			     (uint8_t)((g[0] << 4) | (g[1] >> 4)) : g[20 + 1];
		uint8_t *dst = sgid_index == 1 ? g + 24 : g + 20 + 16;
		uint8_t keep = dst[0];

		CHECK(back.grh.hop_limit == hops && back.grh.traffic_class == tc,
		      "reply AH: hop limit %u (received %u), class %u (%u)",
		      back.grh.hop_limit, hops, back.grh.traffic_class, tc);
		dst[0] = sgid_index == 1 ? 0xff : 239;
		errno = 0;
		CHECK(ibv_init_ah_from_wc(p.ctx, 1, &wc, (void *)g, &back) ==
		      -1 && errno == EINVAL, "to a multicast group: errno %d",
		      errno);
		dst[0] = keep ^ 0x10;
		errno = 0;
		CHECK(ibv_init_ah_from_wc(p.ctx, 1, &wc, (void *)g, &back) ==
		      -1 && errno == ENOENT, "to an address not ours: errno %d",
		      errno);
		dst[0] = keep;
	}
	CHECK(ibv_destroy_ah(ah) == 0, "destroy_ah");
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(r) == 0, "destroy_qp");
	CHECK(ibv_destroy_cq(cq) == 0, "destroy_cq");
}

static void
ud_ipv6(void)
{
	ud_through(1);
}

static void
ud_ipv4(void)
{
	ud_through(0);
}

static uint64_t
counter(const char *name)
{
	return dev_counter(p.ctx, name);
}

#define MC_LEN		300
#define MC_RECV(i)	(0x20000 + (i) * 0x1000)	/* member i's buffer */

/* One UD SEND of MC_LEN bytes from the start of the buffer to @dgid. */
static void
mc_send(struct ibv_qp *s, struct ibv_cq *cq, const union ibv_gid *dgid,
	uint64_t wr_id)
{
	struct ibv_ah_attr aa = av(1);
	struct ibv_sge sge = { (uintptr_t)p.buf, MC_LEN, p.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND,
		.wr.ud = { .remote_qpn = 0xffffff, .remote_qkey = 0x11111111 },
	}, *bad;

	aa.grh.dgid = *dgid;
	wr.wr.ud.ah = ibv_create_ah(p.pd, &aa);
	CHECK(wr.wr.ud.ah != NULL, "multicast AH: errno %d", errno);
	CHECK(ibv_post_send(s, &wr, &bad) == 0, "send to group");
	wait_wc(cq, wr_id, NULL);
	CHECK(ibv_destroy_ah(wr.wr.ud.ah) == 0, "destroy_ah");
}

/* The receives of members 0..2 (wr_id 0..2) that completed within 0.2 s. */
static void
mc_collect(struct ibv_cq *cq, int got[3])
{
	const uint8_t *b = p.buf;
	struct ibv_wc wc;

	got[0] = got[1] = got[2] = 0;
	while (poll_one(cq, &wc, 0.2)) {
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id < 3,
		      "wr %" PRIu64 ": %s", wc.wr_id,
		      ibv_wc_status_str(wc.status));
		CHECK(wc.byte_len == 40 + MC_LEN && (wc.wc_flags & IBV_WC_GRH),
		      "byte_len %u", wc.byte_len);
		CHECK(memcmp(b + MC_RECV(wc.wr_id) + 40, b, MC_LEN) == 0,
		      "member %" PRIu64 ": bytes differ", wc.wr_id);
		got[wc.wr_id]++;
	}
}

/*
 * UD multicast over IPv6 (IBA 10.5.2.4; on RoCEv2 the group's GID is the
 * IPv6 multicast address): attaching takes ff00::/8 and refuses a unicast
 * GID; a SEND ONLY to QPN 0xFFFFFF reaches each attached QP once, its GRH
 * area holding the sender's IPv6 header, and not a detached QP; a group
 * nobody joined is dropped and counted. The net_ring loopback port brings
 * the device's own multicast back; a port to a wire would not.
 */
static void
ud_multicast_ipv6(void)
{
	struct ibv_cq *scq = ibv_create_cq(p.ctx, 32, NULL, NULL, 0);
	struct ibv_cq *cq = ibv_create_cq(p.ctx, 32, NULL, NULL, 0);
	union ibv_gid grp, none;
	struct ibv_qp *s, *m[3];
	const uint8_t *g;
	uint64_t c0;
	int i, got[3];

	CHECK(scq != NULL && cq != NULL, "create_cq");
	inet_pton(AF_INET6, "ff0e::1234", grp.raw);
	inet_pton(AF_INET6, "ff0e::5678", none.raw);
	s = ud_qp(scq);
	for (i = 0; i < 3; i++)
		m[i] = ud_qp(cq);
	CHECK(ibv_attach_mcast(m[0], &gid[1], 0) == EINVAL,
	      "unicast IPv6 GID attached");
	for (i = 0; i < 3; i++)
		CHECK(ibv_attach_mcast(m[i], &grp, 0) == 0, "attach %d", i);
	CHECK(ibv_detach_mcast(m[2], &grp, 0) == 0, "detach");
	CHECK(ibv_detach_mcast(m[2], &grp, 0) == EINVAL, "detached twice");
	memset(p.buf, 0, p.len);
	fill(p.buf, MC_LEN, 11);
	for (i = 0; i < 3; i++)
		post_recv(m[i], MC_RECV(i), 40 + MC_LEN, (uint64_t)i);
	mc_send(s, scq, &grp, 100);
	mc_collect(cq, got);
	CHECK(got[0] == 1 && got[1] == 1 && got[2] == 0,
	      "copies %d %d, detached %d", got[0], got[1], got[2]);
	for (i = 0; i < 2; i++) {
		g = (const uint8_t *)p.buf + MC_RECV(i);
		CHECK(g[0] >> 4 == 6 && g[6] == 17 && g[7] == HOPS &&
		      memcmp(g + 8, gid[1].raw, 16) == 0 &&
		      memcmp(g + 24, grp.raw, 16) == 0,
		      "member %d: GRH is not the IPv6 header to the group", i);
	}

	/* Members 0 and 1 have a receive posted again, member 2 still has. */
	post_recv(m[0], MC_RECV(0), 40 + MC_LEN, 0);
	post_recv(m[1], MC_RECV(1), 40 + MC_LEN, 1);
	c0 = counter("rx_drop_multicast_no_group");
	mc_send(s, scq, &none, 101);
	mc_collect(cq, got);
	CHECK(got[0] + got[1] + got[2] == 0, "unjoined group delivered");
	CHECK(counter("rx_drop_multicast_no_group") == c0 + 1,
	      "unjoined group counted %" PRIu64,
	      counter("rx_drop_multicast_no_group") - c0);

	CHECK(ibv_destroy_qp(s) == 0, "destroy_qp");
	for (i = 0; i < 3; i++)
		CHECK(ibv_destroy_qp(m[i]) == 0, "destroy_qp");
	CHECK(ibv_destroy_cq(scq) == 0 && ibv_destroy_cq(cq) == 0,
	      "destroy_cq");
}

/* Frames of another VLAN, or untagged, are not ours: dropped, counted. */
static void
foreign_vlan_dropped(void)
{
	uint8_t f[64] = { 0 };
	uint64_t c0 = counter("rx_drop_vlan_mismatch");
	double t0 = check_now();

	f[0] = 0x02;
	f[12] = 0x81;
	f[15] = VID + 1;
	f[16] = 0x86;
	f[17] = 0xdd;
	CHECK(dpib_inject(p.ctx, f, sizeof(f)) == 0, "inject tagged");
	f[12] = 0x86;
	f[13] = 0xdd;
	CHECK(dpib_inject(p.ctx, f, sizeof(f)) == 0, "inject untagged");
	while (counter("rx_drop_vlan_mismatch") < c0 + 2 &&
	       check_now() - t0 < 5)
		usleep(1000);
	CHECK(counter("rx_drop_vlan_mismatch") == c0 + 2, "counted %" PRIu64,
	      counter("rx_drop_vlan_mismatch") - c0);
}

struct seen {
	unsigned int v6, v4, other, udp6, udp4;
};

/* One captured frame: the tag, then the RoCEv2 fields of its family. */
static void
check_frame(const uint8_t *f, uint32_t n, struct seen *s)
{
	uint16_t tci, type;
	const uint8_t *ip;
	uint32_t iplen, crc, wire;

	CHECK(n >= 18 && f[12] == 0x81 && f[13] == 0x00, "untagged frame");
	tci = (uint16_t)(f[14] << 8 | f[15]);
	type = (uint16_t)(f[16] << 8 | f[17]);
	CHECK((tci & 0xfff) == VID, "VID %u", tci & 0xfff);
	ip = f + 18;
	if (type == 0x86dd && ip[6] == 17) {
		uint32_t vtc = (uint32_t)ip[0] << 24 | ip[1] << 16 |
			       ip[2] << 8 | ip[3];

		iplen = 40 + (ip[4] << 8 | ip[5]);
		CHECK(tci >> 13 == SL6, "IPv6 frame PCP %u", tci >> 13);
		CHECK((vtc >> 20 & 0xff) == tclass_wire(ip[48]),
		      "traffic class %#x", vtc >> 20 & 0xff);
		CHECK((vtc & 0xfffff) == FLOW, "flow label %#x", vtc & 0xfffff);
		CHECK(ip[7] == HOPS, "hop limit %u", ip[7]);
		CHECK(ip[42] == 0x12 && ip[43] == 0xb7, "UDP port");
		s->v6++;
	} else if (type == 0x0800 && ip[9] == 17) {
		iplen = ip[2] << 8 | ip[3];
		CHECK(tci >> 13 == SL4, "IPv4 frame PCP %u", tci >> 13);
		CHECK(ip[1] == tclass_wire(ip[28]) && ip[8] == HOPS,
		      "TOS %#x TTL %u",
		      ip[1], ip[8]);
		s->v4++;
	} else {
		s->other++;	/* ARP announcement */
		return;
	}
	CHECK(18 + iplen <= n && iplen > 4, "IP length %u in %u", iplen, n);
	memcpy(&wire, ip + iplen - 4, 4);
	crc = ib_icrc(ip, iplen - 4);
	CHECK(crc == rte_le_to_cpu_32(wire), "ICRC %#x, frame has %#x", crc,
	      rte_le_to_cpu_32(wire));
}

static void
capture_fields(void)
{
	const char *path = getenv("DPIB_CAPTURE");
	struct pcap_file pf;
	struct seen s = { 0 };
	const uint8_t *f;
	uint32_t n;

	CHECK(path != NULL && *path, "DPIB_CAPTURE is not set");
	CHECK(pcap_open(&pf, path) == 0, "open %s", path);
	while (pcap_next(&pf, &f, &n) == 1)
		check_frame(f, n, &s);
	pcap_close(&pf);
	printf("  %u IPv6 and %u IPv4 RoCEv2 frames, %u others\n", s.v6, s.v4,
	       s.other);
	/* Each RC run: 3 SEND + 3 WRITE + 3 READ response packets at least. */
	CHECK(s.v6 >= 10 && s.v4 >= 10, "too few frames");
}

int
main(void)
{
	pair_open_mem(&p, &rc);
	RUN(gid_table);
	RUN(family_mismatch_is_einval);
	RUN(rc_ipv6);
	RUN(rc_ipv4);
	RUN(ud_ipv6);
	RUN(ud_ipv4);
	RUN(ud_multicast_ipv6);
	RUN(capture_fields);
	RUN(foreign_vlan_dropped);
	CHECK(ibv_dereg_mr(p.mr) == 0 && ibv_dealloc_pd(p.pd) == 0 &&
	      ibv_close_device(p.ctx) == 0, "cleanup");
	ibv_free_device_list(p.list);
	free(p.buf);
	CHECK_DONE();
}
