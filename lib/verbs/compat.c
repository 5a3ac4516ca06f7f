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
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "verbs_priv.h"

int
ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	(void)dir;
	(void)file;
	(void)buf;
	(void)size;
	errno = ENOSYS;		/* no sysfs class for dpib devices */
	return -1;
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

	if (!attr->is_global ||
	    memcmp(&attr->grh.dgid, &hw->gid, sizeof(hw->gid)) != 0)
		return ENOSYS;	/* peers resolve inside the engine (ARP) */
	memcpy(eth_mac, hw->mac.addr_bytes, 6);
	*vid = 0xffff;
	return 0;
}

/* Sharing objects through a kernel file descriptor does not exist here. */
struct ibv_context *
ibv_import_device(int cmd_fd)
{
	(void)cmd_fd;
	errno = EOPNOTSUPP;
	return NULL;
}

struct ibv_pd *
ibv_import_pd(struct ibv_context *ctx, uint32_t pd_handle)
{
	(void)ctx;
	(void)pd_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

void
ibv_unimport_pd(struct ibv_pd *pd)
{
	(void)pd;
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
