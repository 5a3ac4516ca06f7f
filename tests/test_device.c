/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Devices and QP state: what ibv_query_* report, the MTU rule, the QP state
 * transition table with its attribute masks (seed 003, table 1), query_qp
 * returning what was set, flush on Error, and an EAL that leaves no files.
 *
 * Usage: test_device [EXPECTED_ACTIVE_MTU EXPECTED_IPV4]
 * (defaults: 4096 and 127.0.0.1, the embedded loopback device)
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <rte_eal.h>
#include <rte_log.h>

#include "telemetry.h"
#include "verbs_util.h"

static int expect_mtu = 4096;
static const char *expect_ip = "127.0.0.1";
static struct pair P;

static const struct pair_opts opts = {
	.buflen = 65536,
	.mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	.qp_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	.sq_sig_all = 1,
	.max_wr = 16,
	.max_sge = 1,
	.max_rd_atomic = 1,
	.min_rnr_timer = 1,
	.rnr_retry = 7,
	.timeout = 14,
	.retry_cnt = 7,
};

static int
mtu_enum_to_int(enum ibv_mtu m)
{
	return 128 << m;
}

/* A verbs process that starts EAL and the engine leaves no runtime files. */
static void
eal_leaves_no_files(void)
{
	char path[256];
	struct stat st;
	pid_t pid;
	int status;

	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct pair p;

		pair_open(&p, &opts);
		pair_connect(&p, &opts);
		pair_close(&p);
		exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed");
	if (getuid() == 0)
		snprintf(path, sizeof(path), "/var/run/dpdk/dpib_%d", pid);
	else
		snprintf(path, sizeof(path), "%s/dpdk/dpib_%d",
			 getenv("XDG_RUNTIME_DIR") ? getenv("XDG_RUNTIME_DIR") :
			 "/tmp", pid);
	CHECK(stat(path, &st) != 0, "%s left behind", path);
}

static void
query_device_port_gid_pkey(void)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa, pa2;
	union ibv_gid gid;
	struct ibv_gid_entry ge;
	__be16 pkey;
	char ip[INET_ADDRSTRLEN];

	CHECK(ibv_query_device(P.ctx, &da) == 0, "query_device");
	CHECK(da.phys_port_cnt == 1, "ports %u", da.phys_port_cnt);
	CHECK(da.node_guid == ibv_get_device_guid(P.list[0]), "guid");
	CHECK(da.node_guid != 0, "zero GUID");
	CHECK(da.max_qp > 1000 && da.max_qp_wr >= 1024 && da.max_sge >= 4 &&
	      da.max_cqe >= 1024 && da.max_mr > 1000 && da.max_pd > 0,
	      "limits");
	CHECK(da.max_qp_rd_atom > 0 && da.atomic_cap != IBV_ATOMIC_NONE,
	      "rd_atom/atomic caps");

	CHECK(ibv_query_port(P.ctx, 1, &pa) == 0, "query_port");
	CHECK(pa.state == IBV_PORT_ACTIVE, "state %d", pa.state);
	CHECK(pa.link_layer == IBV_LINK_LAYER_ETHERNET, "link layer");
	CHECK(mtu_enum_to_int(pa.active_mtu) == expect_mtu, "active_mtu %d",
	      mtu_enum_to_int(pa.active_mtu));
	CHECK(pa.max_mtu == IBV_MTU_4096, "max_mtu");
	CHECK(pa.gid_tbl_len >= 1 && pa.pkey_tbl_len >= 1, "table lengths");
	CHECK(pa.max_msg_sz >= (1u << 30), "max_msg_sz");
	memset(&pa2, 0xaa, sizeof(pa2));
	CHECK(ibv_query_port(P.ctx, 2, &pa2) != 0, "port 2 exists");
	CHECK(pa2.state == 0 && pa2.gid_tbl_len == 0 && pa2.flags == 0,
	      "port 2's attributes not zeroed, as rdma-core leaves them");

	CHECK(ibv_query_gid(P.ctx, 1, 0, &gid) == 0, "query_gid");
	CHECK(gid.raw[10] == 0xff && gid.raw[11] == 0xff &&
	      !memcmp(gid.raw, "\0\0\0\0\0\0\0\0\0\0", 10), "not IPv4-mapped");
	inet_ntop(AF_INET, &gid.raw[12], ip, sizeof(ip));
	CHECK(strcmp(ip, expect_ip) == 0, "GID IPv4 %s want %s", ip, expect_ip);
	CHECK(ibv_query_gid_ex(P.ctx, 1, 0, &ge, 0) == 0, "query_gid_ex");
	CHECK(ge.gid_type == IBV_GID_TYPE_ROCE_V2, "gid type %u", ge.gid_type);
	CHECK(!memcmp(&ge.gid, &gid, sizeof(gid)), "gid_ex differs");
	/* Issue 15: a table with room; entry 1 is empty (zero GID), and
	 * an AV naming it has no source address.
	 */
	CHECK(pa.gid_tbl_len == 16, "gid_tbl_len %d", pa.gid_tbl_len);
	CHECK(ibv_query_gid(P.ctx, 1, 1, &gid) == 0 &&
	      gid.global.interface_id == 0 && gid.global.subnet_prefix == 0,
	      "GID index 1 not empty");
	CHECK(ibv_query_gid_ex(P.ctx, 1, 1, &ge, 0) == ENODATA,
	      "query_gid_ex of an empty entry");
	CHECK(ibv_query_gid(P.ctx, 1, 16, &gid) != 0 && errno == EINVAL,
	      "GID index 16 exists");
	{
		struct ibv_ah_attr aa = { .port_num = 1 };

		ah_self(P.ctx, &aa);
		aa.grh.sgid_index = 1;
		errno = 0;
		CHECK(ibv_create_ah(P.pd, &aa) == NULL && errno == EINVAL,
		      "AH from an empty GID entry: errno %d", errno);
	}

	CHECK(ibv_query_pkey(P.ctx, 1, 0, &pkey) == 0, "query_pkey");
	CHECK(ntohs(pkey) == 0xffff, "pkey %x", ntohs(pkey));
	CHECK(ibv_query_pkey(P.ctx, 1, 1, &pkey) != 0, "pkey index 1");
}

static struct ibv_qp *
new_qp(void)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = P.cq[0], .recv_cq = P.cq[0], .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(P.pd, &ia);

	CHECK(qp != NULL, "create_qp");
	return qp;
}

static int
to_init(struct ibv_qp *qp, int mask)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	return ibv_modify_qp(qp, &a, mask);
}

/* Seed 003 table 1: required attributes must be present, others absent. */
static void
qp_transition_masks(void)
{
	const int init_req = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			     IBV_QP_ACCESS_FLAGS;
	struct ibv_qp *qp = new_qp();
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	CHECK(to_init(qp, init_req & ~IBV_QP_ACCESS_FLAGS) == EINVAL,
	      "Reset->Init without ACCESS_FLAGS");
	CHECK(to_init(qp, init_req | IBV_QP_QKEY) == EINVAL,
	      "Reset->Init with QKEY on RC");
	CHECK(to_init(qp, init_req | IBV_QP_SQ_PSN) == EINVAL,
	      "Reset->Init with SQ_PSN");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE) == EINVAL, "Reset->RTR");
	a.qp_state = IBV_QPS_RTS;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE) == EINVAL, "Reset->RTS");
	CHECK(to_init(qp, init_req) == 0, "Reset->Init");
	CHECK(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) == 0 &&
	      a.qp_state == IBV_QPS_INIT, "state after Init");
	/* Init->Init may change the optional attributes. */
	a.qp_state = IBV_QPS_INIT;
	a.qp_access_flags = IBV_ACCESS_REMOTE_READ;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS) == 0,
	      "Init->Init");
	/* Init->RTR needs AV, PATH_MTU, DEST_QPN, RQ_PSN, MAX_DEST_RD_ATOMIC
	 * and MIN_RNR_TIMER on RC.
	 */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = qp->qp_num;
	a.rq_psn = 0x123456;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	ah_self(qp->context, &a.ah_attr);
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC) == EINVAL,
	      "Init->RTR without MIN_RNR_TIMER");
	a.path_mtu = 9;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) ==
	      EINVAL, "invalid path_mtu accepted");
	a.path_mtu = IBV_MTU_1024;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == 0,
	      "Init->RTR");
	/* RTR->RTS needs SQ_PSN, TIMEOUT, RETRY_CNT, RNR_RETRY, MAX_QP_RD_ATOMIC. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0xabcdef;
	a.timeout = 14;
	a.retry_cnt = 6;
	a.rnr_retry = 5;
	a.max_rd_atomic = 2;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == EINVAL,
	      "RTR->RTS with only SQ_PSN");
	a.retry_cnt = 8;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC) == EINVAL,
	      "retry_cnt 8 accepted");
	a.retry_cnt = 6;
	a.cur_qp_state = IBV_QPS_INIT;	/* wrong current state */
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_CUR_STATE |
			    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC) == EINVAL,
	      "wrong CUR_STATE accepted");
	a.cur_qp_state = IBV_QPS_RTR;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_CUR_STATE |
			    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC) == 0,
	      "RTR->RTS");
	/* What was set is what query returns. */
	memset(&a, 0, sizeof(a));
	CHECK(ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RQ_PSN |
			   IBV_QP_PATH_MTU | IBV_QP_DEST_QPN, &ia) == 0, "query");
	CHECK(a.qp_state == IBV_QPS_RTS, "state %d", a.qp_state);
	CHECK(a.sq_psn == 0xabcdef && a.rq_psn == 0x123456, "PSNs");
	CHECK(a.path_mtu == IBV_MTU_1024 && a.dest_qp_num == qp->qp_num, "path");
	CHECK(a.timeout == 14 && a.retry_cnt == 6 && a.rnr_retry == 5, "timers");
	CHECK(a.max_rd_atomic == 2 && a.max_dest_rd_atomic == 4 &&
	      a.min_rnr_timer == 12, "rd_atomic");
	CHECK(a.qp_access_flags == IBV_ACCESS_REMOTE_READ, "access");
	CHECK(ia.qp_type == IBV_QPT_RC && ia.send_cq == P.cq[0] &&
	      ia.cap.max_send_wr >= 8 && ia.cap.max_recv_sge >= 1, "init attr");
	/* RTS->RTS changes optional attributes; SQ_PSN is not one of them. */
	a.min_rnr_timer = 3;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_MIN_RNR_TIMER) == 0, "RTS->RTS");
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_SQ_PSN) == EINVAL, "RTS SQ_PSN");
	/* Any state to Error and Error to Reset, Reset to Init again. */
	a.qp_state = IBV_QPS_ERR;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0, "RTS->Error");
	a.qp_state = IBV_QPS_RTS;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE) == EINVAL, "Error->RTS");
	a.qp_state = IBV_QPS_RESET;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0, "Error->Reset");
	CHECK(to_init(qp, init_req) == 0, "Reset->Init again");
	CHECK(ibv_destroy_qp(qp) == 0, "destroy");
}

/* Error flushes every outstanding WR, signaled or not, in order. */
static void
error_flushes_outstanding(void)
{
	struct ibv_qp *qp = new_qp();
	struct ibv_sge sge = { (uintptr_t)P.buf, 16, P.mr->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *rbad;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc;
	int i;

	CHECK(to_init(qp, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		      IBV_QP_ACCESS_FLAGS) == 0, "init");
	for (i = 0; i < 3; i++) {
		rwr.wr_id = 300 + i;
		CHECK(ibv_post_recv(qp, &rwr, &rbad) == 0, "post_recv in Init");
	}
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0, "to Error");
	for (i = 0; i < 3; i++) {
		CHECK(poll_one(P.cq[0], &wc, 5), "flush %d", i);
		CHECK(wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 300u + i,
		      "flush order/status: wr %lu %s", (unsigned long)wc.wr_id,
		      ibv_wc_status_str(wc.status));
		CHECK(wc.qp_num == qp->qp_num, "qp_num");
	}
	/* WRs posted in Error complete with a flush error too. */
	rwr.wr_id = 399;
	CHECK(ibv_post_recv(qp, &rwr, &rbad) == 0, "post_recv in Error");
	CHECK(poll_one(P.cq[0], &wc, 5) && wc.wr_id == 399 &&
	      wc.status == IBV_WC_WR_FLUSH_ERR, "late flush");
	CHECK(ibv_destroy_qp(qp) == 0, "destroy");
}

/* Objects in use cannot be destroyed. */
static void
busy_objects(void)
{
	CHECK(ibv_destroy_cq(P.cq[0]) == EBUSY, "CQ in use destroyed");
	CHECK(ibv_dealloc_pd(P.pd) == EBUSY, "PD in use freed");
}

/* QP types dpib does not offer fail honestly. */
static void
unsupported_types_say_so(void)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = P.cq[0], .recv_cq = P.cq[0],
		.qp_type = IBV_QPT_RAW_PACKET,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	errno = 0;
	CHECK(ibv_create_qp(P.pd, &ia) == NULL && errno == EOPNOTSUPP,
	      "raw packet QP: errno %d", errno);
}

/*
 * The counters through DPDK telemetry (what dpdk-telemetry.py reads): the
 * device list, each counter as dpib_counters() has it, the device's port
 * and addresses, and a refusal for a device that does not exist.
 */
static void
telemetry_counters(void)
{
	const char *const *names;
	uint64_t before[128], after[128];
	const char *r;
	char q[64], want[64];
	int fd, n, i;

	fd = tel_connect();
	r = tel_query(fd, "/dpib/devices");
	snprintf(want, sizeof(want), "\"%s\"",
		 ibv_get_device_name(P.ctx->device));
	CHECK(strstr(r, want) != NULL, "devices: %s", r);

	/* Something to count: a frame that is not RoCE, once the engine
	 * has taken it in (polling drives an inline engine).
	 */
	{
		uint8_t f[60] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0,
				  0, 0, 0, 0x33, 0x88, 0xb5 };
		struct ibv_wc wc;
		double end = check_now() + 2;

		CHECK(dpib_inject(P.ctx, f, sizeof(f)) == 0, "inject");
		while (dev_counter(P.ctx, "rx_drop_not_roce") == 0 &&
		       check_now() < end)
			CHECK(ibv_poll_cq(P.cq[0], 0, &wc) == 0, "poll");
	}
	n = dpib_counters(P.ctx, &names, before, 128);
	snprintf(q, sizeof(q), "/dpib/counters,%s",
		 ibv_get_device_name(P.ctx->device));
	r = tel_query(fd, q);
	CHECK(dpib_counters(P.ctx, NULL, after, 128) == n, "counters");
	for (i = 0; i < n; i++) {
		uint64_t v = json_u64(r, names[i]);

		CHECK(v >= before[i] && v <= after[i], "%s: %lu, between %lu "
		      "and %lu", names[i], (unsigned long)v,
		      (unsigned long)before[i], (unsigned long)after[i]);
	}
	CHECK(json_u64(r, "rx_packets") > 0 &&
	      json_u64(r, "rx_drop_not_roce") > 0, "the injected frame: %s", r);
	(void)json_u64(r, "mbufs_in_use");

	snprintf(q, sizeof(q), "/dpib/info,%s",
		 ibv_get_device_name(P.ctx->device));
	r = tel_query(fd, q);
	snprintf(want, sizeof(want), "\"ip\":\"%s\"", expect_ip);
	CHECK(strstr(r, want) != NULL, "info: %s", r);
	CHECK(json_u64(r, "active_mtu") == (uint64_t)expect_mtu, "info: %s",
	      r);
	r = tel_query(fd, "/dpib/counters,nosuchdevice");
	CHECK(strstr(r, "tx_packets") == NULL && strstr(r, "null") != NULL,
	      "unknown device: %s", r);
	close(fd);
}

/*
 * DPDK log types a user can select: the driver's (control path and data
 * path) under pmd.net.ib.*, the library's as lib.dpib; none registered
 * under a name the build failed to give (RTE_LOG_DEFAULT_LOGTYPE).
 */
static void
log_types_selectable(void)
{
	static const char *const names[] = {
		"pmd.net.ib.driver", "pmd.net.ib.dp", "lib.dpib",
	};
	char *dump = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&dump, &len);
	unsigned int i;

	CHECK(f != NULL, "memstream");
	rte_log_dump(f);
	fclose(f);
	CHECK(strstr(dump, "RTE_LOG_DEFAULT_LOGTYPE") == NULL,
	      "a type without its name: %s", dump);
	for (i = 0; i < RTE_DIM(names); i++)
		CHECK(strstr(dump, names[i]) != NULL, "no log type %s",
		      names[i]);
	free(dump);
	/* EAL runs with pmd.*:error and lib.*:error; dpib's own stay at
	 * notice, so a warning (a memory hook that failed) is seen.
	 */
	for (i = 0; i < RTE_DIM(names); i++)
		CHECK(rte_log_get_level(rte_log_register(names[i])) ==
		      RTE_LOG_NOTICE, "%s at level %d", names[i],
		      rte_log_get_level(rte_log_register(names[i])));
	CHECK(rte_log_set_level_pattern("pmd.net.ib.*", RTE_LOG_DEBUG) == 0,
	      "set pattern");
	CHECK(rte_log_get_level(rte_log_register("pmd.net.ib.driver")) ==
	      RTE_LOG_DEBUG &&
	      rte_log_get_level(rte_log_register("pmd.net.ib.dp")) ==
	      RTE_LOG_DEBUG, "pmd.net.ib.* did not select both");
	CHECK(rte_log_set_level_pattern("pmd.net.ib.*", RTE_LOG_NOTICE) == 0,
	      "set pattern back");
}

int
main(int argc, char **argv)
{
	if (argc == 3) {
		expect_mtu = atoi(argv[1]);
		expect_ip = argv[2];
	}
	RUN(eal_leaves_no_files);
	pair_open(&P, &opts);
	RUN(query_device_port_gid_pkey);
	RUN(qp_transition_masks);
	RUN(error_flushes_outstanding);
	RUN(busy_objects);
	RUN(unsupported_types_say_so);
	RUN(telemetry_counters);
	RUN(log_types_selectable);
	pair_close(&P);
	CHECK_DONE();
}
