/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * The rest of libibverbs.so.1's ABI that programs and the libraries they
 * load import (RDMA-CORE-NOTES.md): a few public verbs, and the
 * IBVERBS_PRIVATE_34 helpers that rdma-core's kernel providers (libmlx5,
 * libefa, ...) link against with BIND_NOW. dpib has no kernel: a provider
 * may register itself (its constructor does), but lists no device, so its
 * command helpers are never reached; they fail honestly if they are.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <sys/types.h>
#include <infiniband/sa.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

#include "verbs_priv.h"

/*
 * <dir>/<file> into @buf as a string without its trailing newline: the
 * length read, or -1 with errno. A plain reader, as rdma-core's: dpib-run
 * mounts the tree dpib fills (DPIB_SYSFS) at /sys/class/infiniband, and
 * programs read it through here (ibv_devinfo's board_id, librdmacm).
 */
int
ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	char path[PATH_MAX];
	ssize_t len;
	int fd, err;

	if (size == 0 ||
	    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >=
	    sizeof(path)) {
		errno = size == 0 ? EINVAL : ENAMETOOLONG;
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, size);
	err = errno;
	close(fd);
	if (len < 0) {
		errno = err;
		return -1;
	}
	if (len > 0 && buf[len - 1] == '\n') {
		buf[--len] = '\0';
	} else if ((size_t)len < size) {
		buf[len] = '\0';
	} else {
		errno = EOVERFLOW;	/* no room for the terminator: */
		return -1;		/* a cut string would mislead */
	}
	return (int)len;
}

/*
 * The static rates (IBA 9.11, enum ibv_rate): each one's multiple of
 * 2.5 Gbit/s where the verbs give it one (FDR's and EDR's have none), and
 * its data rate in Mbit/s (their encodings make those no round numbers).
 */
static const struct {
	enum ibv_rate rate;
	int mult;
	int mbps;
} rates[] = {
	{ IBV_RATE_2_5_GBPS, 1, 2500 },	{ IBV_RATE_5_GBPS, 2, 5000 },
	{ IBV_RATE_10_GBPS, 4, 10000 },	{ IBV_RATE_20_GBPS, 8, 20000 },
	{ IBV_RATE_30_GBPS, 12, 30000 },	{ IBV_RATE_40_GBPS, 16, 40000 },
	{ IBV_RATE_60_GBPS, 24, 60000 },	{ IBV_RATE_80_GBPS, 32, 80000 },
	{ IBV_RATE_120_GBPS, 48, 120000 },
	{ IBV_RATE_14_GBPS, -1, 14062 },	{ IBV_RATE_56_GBPS, -1, 56250 },
	{ IBV_RATE_112_GBPS, -1, 112500 },
	{ IBV_RATE_168_GBPS, -1, 168750 },
	{ IBV_RATE_25_GBPS, -1, 25781 },	{ IBV_RATE_100_GBPS, -1, 103125 },
	{ IBV_RATE_200_GBPS, -1, 206250 },
	{ IBV_RATE_300_GBPS, -1, 309375 },
	{ IBV_RATE_28_GBPS, 11, 28125 },	{ IBV_RATE_50_GBPS, 20, 53125 },
	{ IBV_RATE_400_GBPS, 160, 425000 },
	{ IBV_RATE_600_GBPS, 240, 637500 },
	{ IBV_RATE_800_GBPS, 320, 850000 },
	{ IBV_RATE_1200_GBPS, 480, 1275000 },
};

/* The row of @rate, or of the multiple (@mbps 0) or rate in Mbit/s @v. */
static int
rate_row(enum ibv_rate rate, int v, int mbps)
{
	size_t i;

	for (i = 0; i < RTE_DIM(rates); i++)
		if (v == 0 ? rates[i].rate == rate :
		    (mbps ? rates[i].mbps : rates[i].mult) == v)
			return (int)i;
	return -1;
}

static int
rate_to(enum ibv_rate rate, int mbps)
{
	int i = rate_row(rate, 0, 0);

	return i < 0 ? -1 : mbps ? rates[i].mbps : rates[i].mult;
}

static enum ibv_rate
rate_from(int v, int mbps)
{
	int i = v > 0 ? rate_row(IBV_RATE_MAX, v, mbps) : -1;

	return i < 0 ? IBV_RATE_MAX : rates[i].rate;
}

int
ibv_rate_to_mult(enum ibv_rate rate)
{
	return rate_to(rate, 0);
}

int
ibv_rate_to_mbps(enum ibv_rate rate)
{
	return rate_to(rate, 1);
}

enum ibv_rate
mult_to_ibv_rate(int mult)
{
	return rate_from(mult, 0);
}

enum ibv_rate
mbps_to_ibv_rate(int mbps)
{
	return rate_from(mbps, 1);
}

static char sysfs_path[PATH_MAX];

static void
sysfs_path_init(void)
{
	const char *env = secure_getenv("SYSFS_PATH");
	size_t n;

	if (env == NULL || strlen(env) >= sizeof(sysfs_path))
		return;
	n = strlen(env);
	while (n > 1 && env[n - 1] == '/')
		n--;
	memcpy(sysfs_path, env, n);
	sysfs_path[n] = '\0';
}

/* Nothing is pinned by a kernel, so fork() needs no madvise. */
int
ibv_dontfork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

int
ibv_dofork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

enum ibv_fork_status
ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

/* The L2 address of a GID: this device's own, or unknown here. */
int
ibv_resolve_eth_l2_from_gid(struct ibv_context *ctx, struct ibv_ah_attr *attr,
			    uint8_t eth_mac[6], uint16_t *vid)
{
	struct ib_dev *hw = ctx_hw(ctx);
	union ibv_gid gid;
	uint32_t i, n = hca_gid_count(hw);

	/* Failures are negative, as rdma-core's. */
	if (!attr->is_global)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (hca_gid(hw, i, &gid) == 0 &&
		    memcmp(&attr->grh.dgid, &gid, sizeof(gid)) == 0)
			break;
	if (i == n)
		return -EHOSTUNREACH;	/* peers resolve in the engine (ARP) */
	hca_mac(hw, eth_mac);
	*vid = hca_conf(hw)->vlan ? hca_conf(hw)->vlan : 0xffff;
	return 0;
}

/* IBVERBS_PRIVATE_34 */

int
verbs_register_driver_34(const void *ops)
{
	(void)ops;	/* accepted; the provider's devices do not exist here */
	return 0;
}

void
__verbs_log(void *ctx, int level, const char *fmt, ...)
{
	(void)ctx;
	(void)level;
	(void)fmt;
}

void *
_verbs_init_and_alloc_context(void *device, int cmd_fd, size_t alloc_size,
			      void *context_offset, uint32_t driver_id)
{
	(void)device;
	(void)cmd_fd;
	(void)alloc_size;
	(void)context_offset;
	(void)driver_id;
	errno = EOPNOTSUPP;
	return NULL;
}

void *
verbs_open_device(void *device, void *private_data)
{
	(void)device;
	(void)private_data;
	errno = EOPNOTSUPP;
	return NULL;
}

void
verbs_set_ops(void *vctx, const void *ops)
{
	(void)vctx;
	(void)ops;
}

void
verbs_uninit_context(void *vctx)
{
	(void)vctx;
}

void
verbs_init_cq(void *cq, void *ctx, void *channel, void *cq_context)
{
	(void)cq;
	(void)ctx;
	(void)channel;
	(void)cq_context;
}

bool
verbs_allow_disassociate_destroy(int ret)
{
	(void)ret;
	return false;
}

/*
 * The kernel command helpers: every one answers that the operation is not
 * supported (they return errno values; none is reachable without a kernel
 * device).
 */
#define NO_KERNEL_CMD(name) \
	int name(void); \
	int name(void) { errno = EOPNOTSUPP; return EOPNOTSUPP; }

NO_KERNEL_CMD(execute_ioctl)
NO_KERNEL_CMD(ibv_cmd_advise_mr)
NO_KERNEL_CMD(ibv_cmd_alloc_dm)
NO_KERNEL_CMD(ibv_cmd_alloc_mw)
NO_KERNEL_CMD(ibv_cmd_alloc_pd)
NO_KERNEL_CMD(ibv_cmd_attach_mcast)
NO_KERNEL_CMD(ibv_cmd_close_xrcd)
NO_KERNEL_CMD(ibv_cmd_create_ah)
NO_KERNEL_CMD(ibv_cmd_create_counters)
NO_KERNEL_CMD(ibv_cmd_create_cq)
NO_KERNEL_CMD(ibv_cmd_create_cq_ex)
NO_KERNEL_CMD(ibv_cmd_create_flow)
NO_KERNEL_CMD(ibv_cmd_create_flow_action_esp)
NO_KERNEL_CMD(ibv_cmd_create_qp_ex)
NO_KERNEL_CMD(ibv_cmd_create_qp_ex2)
NO_KERNEL_CMD(ibv_cmd_create_rwq_ind_table)
NO_KERNEL_CMD(ibv_cmd_create_srq)
NO_KERNEL_CMD(ibv_cmd_create_srq_ex)
NO_KERNEL_CMD(ibv_cmd_create_wq)
NO_KERNEL_CMD(ibv_cmd_dealloc_mw)
NO_KERNEL_CMD(ibv_cmd_dealloc_pd)
NO_KERNEL_CMD(ibv_cmd_dereg_mr)
NO_KERNEL_CMD(ibv_cmd_destroy_ah)
NO_KERNEL_CMD(ibv_cmd_destroy_counters)
NO_KERNEL_CMD(ibv_cmd_destroy_cq)
NO_KERNEL_CMD(ibv_cmd_destroy_flow)
NO_KERNEL_CMD(ibv_cmd_destroy_flow_action)
NO_KERNEL_CMD(ibv_cmd_destroy_qp)
NO_KERNEL_CMD(ibv_cmd_destroy_rwq_ind_table)
NO_KERNEL_CMD(ibv_cmd_destroy_srq)
NO_KERNEL_CMD(ibv_cmd_destroy_wq)
NO_KERNEL_CMD(ibv_cmd_detach_mcast)
NO_KERNEL_CMD(ibv_cmd_free_dm)
NO_KERNEL_CMD(ibv_cmd_get_context)
NO_KERNEL_CMD(ibv_cmd_modify_cq)
NO_KERNEL_CMD(ibv_cmd_modify_flow_action_esp)
NO_KERNEL_CMD(ibv_cmd_modify_qp)
NO_KERNEL_CMD(ibv_cmd_modify_qp_ex)
NO_KERNEL_CMD(ibv_cmd_modify_srq)
NO_KERNEL_CMD(ibv_cmd_modify_wq)
NO_KERNEL_CMD(ibv_cmd_open_qp)
NO_KERNEL_CMD(ibv_cmd_open_xrcd)
NO_KERNEL_CMD(ibv_cmd_query_context)
NO_KERNEL_CMD(ibv_cmd_query_device_any)
NO_KERNEL_CMD(ibv_cmd_query_mr)
NO_KERNEL_CMD(ibv_cmd_query_port)
NO_KERNEL_CMD(ibv_cmd_query_qp)
NO_KERNEL_CMD(ibv_cmd_query_srq)
NO_KERNEL_CMD(ibv_cmd_read_counters)
NO_KERNEL_CMD(ibv_cmd_reg_dm_mr)
NO_KERNEL_CMD(ibv_cmd_reg_dmabuf_mr)
NO_KERNEL_CMD(ibv_cmd_reg_mr)
NO_KERNEL_CMD(ibv_cmd_rereg_mr)
NO_KERNEL_CMD(ibv_cmd_resize_cq)

/*
 * Converters from the kernel's uverbs/SA structures (librdmacm calls them
 * on what its kernel hands back); plain field copies.
 */
void
ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst,
			   struct ib_uverbs_ah_attr *src)
{
	memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid));
	dst->grh.flow_label = src->grh.flow_label;
	dst->grh.sgid_index = src->grh.sgid_index;
	dst->grh.hop_limit = src->grh.hop_limit;
	dst->grh.traffic_class = src->grh.traffic_class;
	dst->dlid = src->dlid;
	dst->sl = src->sl;
	dst->src_path_bits = src->src_path_bits;
	dst->static_rate = src->static_rate;
	dst->is_global = src->is_global;
	dst->port_num = src->port_num;
}

void
ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst,
			   struct ib_uverbs_qp_attr *src)
{
	dst->cur_qp_state = src->cur_qp_state;
	dst->path_mtu = src->path_mtu;
	dst->path_mig_state = src->path_mig_state;
	dst->qkey = src->qkey;
	dst->rq_psn = src->rq_psn;
	dst->sq_psn = src->sq_psn;
	dst->dest_qp_num = src->dest_qp_num;
	dst->qp_access_flags = src->qp_access_flags;
	dst->cap.max_send_wr = src->max_send_wr;
	dst->cap.max_recv_wr = src->max_recv_wr;
	dst->cap.max_send_sge = src->max_send_sge;
	dst->cap.max_recv_sge = src->max_recv_sge;
	dst->cap.max_inline_data = src->max_inline_data;
	ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
	ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
	dst->pkey_index = src->pkey_index;
	dst->alt_pkey_index = src->alt_pkey_index;
	dst->en_sqd_async_notify = src->en_sqd_async_notify;
	dst->sq_draining = src->sq_draining;
	dst->max_rd_atomic = src->max_rd_atomic;
	dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	dst->min_rnr_timer = src->min_rnr_timer;
	dst->port_num = src->port_num;
	dst->timeout = src->timeout;
	dst->retry_cnt = src->retry_cnt;
	dst->rnr_retry = src->rnr_retry;
	dst->alt_port_num = src->alt_port_num;
	dst->alt_timeout = src->alt_timeout;
}

/* A path record's fields other than its GIDs: the same in both layouts. */
#define PATH_REC_FIELDS(X) \
	X(dlid) X(slid) X(raw_traffic) X(flow_label) X(reversible) X(mtu) \
	X(pkey) X(hop_limit) X(traffic_class) X(numb_path) X(sl) \
	X(mtu_selector) X(rate_selector) X(rate) \
	X(packet_life_time_selector) X(packet_life_time) X(preference)
#define PATH_REC_COPY(f) dst->f = src->f;

void
ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
			    struct ib_user_path_rec *src)
{
	memcpy(dst->dgid.raw, src->dgid, sizeof(dst->dgid));
	memcpy(dst->sgid.raw, src->sgid, sizeof(dst->sgid));
	PATH_REC_FIELDS(PATH_REC_COPY)
}

void
ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst,
			  struct ibv_sa_path_rec *src)
{
	memcpy(dst->dgid, src->dgid.raw, sizeof(dst->dgid));
	memcpy(dst->sgid, src->sgid.raw, sizeof(dst->sgid));
	PATH_REC_FIELDS(PATH_REC_COPY)
}

/* Where sysfs is: SYSFS_PATH (without trailing slashes) if set, as
 * rdma-core honours it, else /sys.
 */
const char *
ibv_get_sysfs_path(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, sysfs_path_init);
	return sysfs_path[0] != '\0' ? sysfs_path : "/sys";
}

/* P_Key table of one entry: the default partition, full membership. */
int
ibv_get_pkey_index(struct ibv_context *ctx, uint8_t port, __be16 pkey)
{
	(void)ctx;
	if (port != 1 || be16toh(pkey) != 0xffff) {	/* the whole key */
		errno = EINVAL;
		return -1;
	}
	return 0;
}

ssize_t
_ibv_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *entries,
		     size_t max_entries, uint32_t flags, size_t entry_size)
{
	struct ib_dev *hw = ctx_hw(ctx);
	uint32_t i, n = hca_gid_count(hw);

	if (flags != 0 || entry_size < sizeof(struct ibv_gid_entry))
		return -EINVAL;
	if (max_entries < n)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		struct ibv_gid_entry *e = (void *)((uint8_t *)entries +
						   i * entry_size);

		memset(e, 0, entry_size);
		hca_gid(hw, i, &e->gid);
		e->gid_index = i;
		e->port_num = 1;
		e->gid_type = IBV_GID_TYPE_ROCE_V2;
	}
	return n;
}

/*
 * The responder places the bytes of each message in order, one packet
 * after the other, with the CPU: a reader may poll the last byte.
 */
int
ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op,
			   uint32_t flags)
{
	(void)qp;
	if (flags != 0)
		return 0;
	return op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM ||
	       op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM ||
	       op == IBV_WR_RDMA_READ;
}

struct ibv_mr *
ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
		  uint64_t iova, int fd, int access)
{
	(void)pd;
	(void)offset;
	(void)length;
	(void)iova;
	(void)fd;
	(void)access;
	errno = EOPNOTSUPP;	/* no DMA-buf importer without a kernel */
	return NULL;
}

int
ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return EOPNOTSUPP;	/* no enhanced connection establishment */
}

int
ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	errno = EOPNOTSUPP;	/* set too, as rdma-core does */
	return EOPNOTSUPP;
}

struct ibv_dm *
ibv_import_dm(struct ibv_context *ctx, uint32_t dm_handle)
{
	(void)ctx;
	(void)dm_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

void
ibv_unimport_dm(struct ibv_dm *dm)
{
	(void)dm;
}
