/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Verbs: the device list, contexts and the device/port/GID/P_Key queries.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "verbs_priv.h"

#undef ibv_query_port

/* rdma-core's driver.h value for a RoCE v2 GID (sysfs "RoCE v2"). */
#define GID_TYPE_SYSFS_ROCE_V2	1

static int dpib_query_port_ex(struct ibv_context *ctx, uint8_t port,
			      struct ibv_port_attr *attr, size_t len);
static int dpib_query_device_ex(struct ibv_context *ctx,
				const struct ibv_query_device_ex_input *input,
				struct ibv_device_attr_ex *attr, size_t len);

struct ibv_device **
ibv_get_device_list(int *num_devices)
{
	struct dpib_device *devs;
	struct ibv_device **list;
	unsigned int n, i;
	int err;

	/* Zero first, as rdma-core does: perftest reads the count before
	 * it looks at the list (a NULL list and a stale count: SIGSEGV).
	 */
	if (num_devices != NULL)
		*num_devices = 0;
	err = dpib_global_init();
	if (err) {
		errno = err;
		return NULL;
	}
	devs = dpib_devices(&n);
	list = calloc(n + 1, sizeof(*list));
	if (list == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < n; i++)
		list[i] = &devs[i].ibv;
	if (num_devices != NULL)
		*num_devices = n;
	return list;
}

void
ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *
ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

__be64
ibv_get_device_guid(struct ibv_device *device)
{
	return hca_guid(container_of(device, struct dpib_device, ibv)->hw);
}

int
ibv_get_device_index(struct ibv_device *device)
{
	unsigned int n;

	return container_of(device, struct dpib_device, ibv) - dpib_devices(&n);
}

int
ibv_fork_init(void)
{
	/* The engine addresses MRs by virtual address in this process, and no
	 * kernel pins pages, so fork() needs no preparation.
	 */
	return 0;
}

/*
 * A port whose link comes up only when its peer attaches (a memif server
 * before its client starts) is waited for, within the device's
 * link_wait_ms: a program that checks for PORT_ACTIVE right after opening
 * the device (perftest does) then finds it active.
 */
static void
link_wait(struct ib_dev *dev)
{
	static int settled;	/* once a process */
	const struct ib_dev_conf *conf = hca_conf(dev);
	struct rte_eth_link link;
	uint32_t t;

	hca_port_reconnect(dev);
	for (t = 0; t < conf->link_wait_ms; t++) {
		if (rte_eth_link_get_nowait(hca_port_id(dev), &link) == 0 &&
		    link.link_status == RTE_ETH_LINK_UP)
			break;
		usleep(1000);
	}
	if (rte_eth_link_get_nowait(hca_port_id(dev), &link) == 0 &&
	    link.link_status == RTE_ETH_LINK_UP)
		hca_port_linked(dev);
	/* Both ends see the link come up together; a client program that
	 * then connects at once (perftest's, to the server's TCP port) must
	 * not beat the server's program to its listening socket.
	 */
	if (t < conf->link_wait_ms && !settled &&
	    strstr(conf->port, "role=client") != NULL) {
		settled = 1;
		usleep(DPIB_LINK_SETTLE_MS * 1000);
	}
}

struct ibv_context *
ibv_open_device(struct ibv_device *device)
{
	return dpib_open_context(device, -1);
}

struct ibv_context *
dpib_open_context(struct ibv_device *device, int cmd_fd)
{
	struct dpib_context *c = calloc(1, sizeof(*c));
	struct ibv_context *ctx;

	if (c == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	c->dev = container_of(device, struct dpib_device, ibv);
	link_wait(c->dev->hw);
	c->vctx.sz = sizeof(c->vctx);
	c->vctx.query_port = dpib_query_port_ex;
	c->vctx.query_device_ex = dpib_query_device_ex;
	c->vctx.create_cq_ex = dpib_create_cq_ex;
	c->vctx.query_rt_values = dpib_query_rt_values;
	c->vctx.create_qp_ex = dpib_create_qp_ex;
	ctx = &c->vctx.context;
	ctx->device = device;
	/* Asynchronous events arrive through this descriptor. */
	c->async = ib_evq_async();
	if (c->async == NULL) {
		free(c);
		return NULL;
	}
	/* The context's file (share.c): what ibv_import_device takes. */
	if (dpib_share_open(c, cmd_fd) != 0) {
		ib_evq_free(c->async);
		free(c);
		return NULL;
	}
	ctx->async_fd = ib_evq_fd(c->async);
	/* Its port's changes arrive there too (IBV_EVENT_PORT_*). */
	if (hca_port_events(c->dev->hw, c->async, 1) != 0)
		DPIB_LOG(NOTICE, "%s: too many contexts open: this one gets "
			 "no port events", device->name);
	ctx->num_comp_vectors = 1;
	ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
	pthread_mutex_init(&ctx->mutex, NULL);
	ctx->ops.post_send = ib_post_send;
	ctx->ops.post_recv = ib_post_recv;
	ctx->ops.poll_cq = ib_cq_poll;
	ctx->ops.req_notify_cq = ib_cq_req_notify;
	ctx->ops.post_srq_recv = ib_post_srq_recv;
	ctx->ops.alloc_mw = dpib_alloc_mw;
	ctx->ops.dealloc_mw = dpib_dealloc_mw;
	ctx->ops.bind_mw = ib_bind_mw1;
	return ctx;
}

int
ibv_close_device(struct ibv_context *ctx)
{
	struct dpib_context *c = to_dctx(ctx);

	hca_port_events(c->dev->hw, c->async, 0);
	ib_evq_free(c->async);
	dpib_share_close(c);
	pthread_mutex_destroy(&ctx->mutex);
	free(c);
	return 0;
}

int
ibv_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr)
{
	return ib_dev_query(ctx_hw(ctx), attr);
}

/*
 * The classic attributes and the extensions dpib has: completion
 * timestamps and ATOMIC WRITE. @len is the caller's idea of the
 * structure's size.
 */
static int
dpib_query_device_ex(struct ibv_context *ctx,
		     const struct ibv_query_device_ex_input *input,
		     struct ibv_device_attr_ex *attr, size_t len)
{
	struct ibv_device_attr_ex full;
	int err;

	if (input != NULL && input->comp_mask != 0)
		return EINVAL;
	if (len < sizeof(attr->orig_attr))
		return EINVAL;
	memset(&full, 0, sizeof(full));
	err = ib_dev_query(ctx_hw(ctx), &full.orig_attr);
	if (err)
		return err;
	/* Completions are stamped with the engine's clock, the TSC, whole. */
	full.hca_core_clock = rte_get_tsc_hz() / 1000;
	full.completion_timestamp_mask = UINT64_MAX;
	full.device_cap_flags_ex = full.orig_attr.device_cap_flags |
				   DPIB_DEVICE_ATOMIC_WRITE;
	full.phys_port_cnt_ex = full.orig_attr.phys_port_cnt;
	/*
	 * Left 0 because dpib lacks them: ODP (no implicit MRs or advise),
	 * TSO, RSS, WQs and raw packet QPs (RC, UC and UD only), tag
	 * matching, packet pacing, CQ moderation and device memory. Also
	 * pci_atomic_caps: atomics run on the CPU against host memory, never
	 * as the PCIe atomics those bits describe.
	 */
	memset(attr, 0, len);
	memcpy(attr, &full, RTE_MIN(len, sizeof(full)));
	return 0;
}

static int
dpib_query_port_ex(struct ibv_context *ctx, uint8_t port,
		   struct ibv_port_attr *attr, size_t len)
{
	struct ibv_port_attr full;

	/* As rdma-core: the caller's whole struct is zeroed first (a
	 * program built with newer headers passes a longer one, whose tail
	 * it reads), and left so for a bad port; a shorter one only on
	 * success.
	 */
	if (len >= sizeof(full))
		memset(attr, 0, len);
	if (port != 1)
		return EINVAL;
	ib_dev_query_port(ctx_hw(ctx), &full);
	memcpy(attr, &full, RTE_MIN(len, sizeof(full)));
	return 0;
}

/*
 * The pre-extension entry point: the older, shorter layout, which ends
 * with flags (48 bytes with its padding, rdma-core's
 * _compat_ibv_port_attr).
 */
#define COMPAT_PORT_ATTR_LEN \
	RTE_ALIGN_CEIL(offsetof(struct ibv_port_attr, flags) + 1, 4)

int
ibv_query_port(struct ibv_context *ctx, uint8_t port,
	       struct _compat_ibv_port_attr *attr)
{
	return dpib_query_port_ex(ctx, port, (struct ibv_port_attr *)attr,
				  COMPAT_PORT_ATTR_LEN);
}

int
ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index,
	      union ibv_gid *gid)
{
	/* An empty entry reads as the zero GID, as rdma-core answers. */
	if (port != 1 || index < 0 ||
	    hca_gid(ctx_hw(ctx), (uint32_t)index, gid) == EINVAL) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

int
_ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
		  struct ibv_gid_entry *entry, uint32_t flags, size_t size)
{
	union ibv_gid gid;
	int err;

	if (port != 1 || flags != 0 || size < sizeof(struct ibv_gid_entry))
		return EINVAL;
	err = hca_gid(ctx_hw(ctx), index, &gid);
	if (err)
		return err;		/* ENODATA: an empty entry */
	memset(entry, 0, size);
	entry->gid = gid;
	entry->gid_index = index;
	entry->port_num = 1;
	entry->gid_type = IBV_GID_TYPE_ROCE_V2;
	entry->ndev_ifindex = 0;
	return 0;
}

int
ibv_query_gid_type(struct ibv_context *ctx, uint8_t port, unsigned int index,
		   int *type)
{
	union ibv_gid gid;
	int err = port != 1 ? EINVAL : hca_gid(ctx_hw(ctx), index, &gid);

	if (err == EINVAL) {
		errno = EINVAL;
		return -1;
	}
	/* An empty entry: what rdma-core reports for one (RoCE v1). */
	*type = err == 0 ? GID_TYPE_SYSFS_ROCE_V2 : 0;
	return 0;
}

int
ibv_query_pkey(struct ibv_context *ctx, uint8_t port, int index,
	       __be16 *pkey)
{
	(void)ctx;
	if (port != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(0xffff);	/* the default P_Key, full member */
	return 0;
}

int
dpib_counters(struct ibv_context *ctx, const char *const **names,
	      uint64_t *values, int n)
{
	return hca_counters(ctx_hw(ctx), names, values, n);
}

int
dpib_port_id(struct ibv_context *ctx, uint16_t *port_id)
{
	*port_id = hca_port_id(ctx_hw(ctx));
	return 0;
}

int
dpib_mbufs_in_use(struct ibv_context *ctx)
{
	return (int)hca_mbufs_in_use(ctx_hw(ctx));
}

int
dpib_device_info(struct ibv_context *ctx, unsigned int *lcore,
		 uint32_t *eth_mtu)
{
	const struct ib_dev_conf *c = hca_conf(ctx_hw(ctx));

	if (lcore != NULL)
		*lcore = c->lcore;
	if (eth_mtu != NULL)
		*eth_mtu = c->mtu;
	return 0;
}

int
dpib_icrc(struct ibv_context *ctx)
{
	return hca_icrc_computed(ctx_hw(ctx));
}

int
dpib_engine_lend(struct ibv_context *ctx, void (*fn)(void *), void *arg)
{
	return hca_engine_lend(ctx_hw(ctx), fn, arg);
}

int
dpib_engine_stats(struct ibv_context *ctx, struct dpib_engine_stats *st, int n)
{
	struct ib_dev *hw = ctx_hw(ctx);
	int k, m = (int)hca_engines(hw);

	for (k = 0; st != NULL && k < n && k < m; k++) {
		struct hca_engine_stats h;

		hca_engine_stats(hw, (uint32_t)k, &h);
		st[k] = (struct dpib_engine_stats){
			.qps = h.qps, .queue = h.queue,
			.rx_packets = h.rx_packets, .tx_packets = h.tx_packets,
			.rx_handed = h.rx_handed, .cycles = h.cycles,
		};
	}
	return m;
}

int
dpib_qp_engine(struct ibv_qp *qp)
{
	return (int)hca_qp_engine(qp);
}

int
dpib_mr_dma(struct ibv_mr *mr)
{
	return hca_mr_dma(mr);
}

int
dpib_neigh_resolve(struct ibv_context *ctx, const union ibv_gid *gid,
		   uint8_t mac[6])
{
	int err = hca_neigh_query(ctx_hw(ctx), gid, mac);

	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

int
dpib_inject(struct ibv_context *ctx, const void *frame, uint32_t len)
{
	int ret = ib_inject(ctx_hw(ctx), frame, len);

	if (ret < 0) {
		errno = -ret;
		return -1;
	}
	return 0;
}
