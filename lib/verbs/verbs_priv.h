/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef VERBS_PRIV_H
#define VERBS_PRIV_H

#include <sys/queue.h>
#include <sys/types.h>
#include <infiniband/verbs.h>
#include <rte_log.h>

#include "hca_if.h"
#include "dpib.h"

/*
 * The library's messages: DPDK log type lib.dpib, through the log stream
 * (stderr, eal.c), one line each, "dpib: " first. Before EAL starts too.
 */
extern int dpib_logtype;
#define DPIB_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, dpib_logtype, "dpib: " fmt "\n", \
		##__VA_ARGS__)

#define DPIB_MAX_DEVICES	8
#define DPIB_MAX_EAL_ARGS	48	/* [eal] args: words passed to EAL */

/* Process-wide configuration, from DPIB_CONF or the built-in default. */
/* A memif client, its link just up, lets the server's program go first. */
#define DPIB_LINK_SETTLE_MS	200

struct dpib_config {
	char eal_args[1024];
	unsigned int memory_mb;		/* without hugepages */
	int hugepages;			/* -1 auto, 0 no, 1 yes */
	int lcore_cpu[IB_MAX_ENGINES];	/* engine k's CPU; [0] -1: auto */
	uint32_t ncpu;			/* CPUs listed in [engine] cpu */
	uint32_t engines;		/* [engine] engines */
	int placement;			/* enum ib_placement */
	int engine_mode;		/* enum ib_engine_mode */
	uint32_t spin_us;		/* [engine] spin_us, 0: default */
	uint32_t takeover_us;		/* [engine] takeover_us, 0: default */
	int loop_rt;			/* [engine] loop_priority = realtime */
	unsigned int ndev;
	struct ib_dev_conf dev[DPIB_MAX_DEVICES];
};

struct dpib_device {
	struct ibv_device ibv;
	struct ib_dev *hw;
};

struct dpib_context {
	struct verbs_context vctx;	/* ends with struct ibv_context */
	struct dpib_device *dev;
	struct ib_evq *async;		/* its fd is the context's async_fd */
	dev_t file_dev;			/* cmd_fd's file (share.c) */
	ino_t file_ino;
	LIST_ENTRY(dpib_context) share_link;
};

struct dpib_channel {
	struct ibv_comp_channel ibv;
	struct ib_evq *evq;
};

static inline struct dpib_channel *
to_dchannel(struct ibv_comp_channel *ch)
{
	return container_of(ch, struct dpib_channel, ibv);
}

static inline struct dpib_context *
to_dctx(struct ibv_context *ctx)
{
	return container_of(container_of(ctx, struct verbs_context, context),
			    struct dpib_context, vctx);
}

static inline struct ib_dev *
ctx_hw(struct ibv_context *ctx)
{
	return to_dctx(ctx)->dev->hw;
}

/* config.c */
int dpib_config_load(struct dpib_config *cfg);

/* objects.c: memory windows, through the context's ops */
struct ibv_mw *dpib_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int dpib_dealloc_mw(struct ibv_mw *mw);

/* cq_ex.c */
struct ibv_cq_ex *dpib_create_cq_ex(struct ibv_context *ctx,
				    struct ibv_cq_init_attr_ex *attr);
int dpib_query_rt_values(struct ibv_context *ctx, struct ibv_values_ex *values);

/* qp_ex.c */
struct ibv_qp *dpib_create_qp_ex(struct ibv_context *ctx,
				 struct ibv_qp_init_attr_ex *attr);

/* device.c: a context on @device, with @cmd_fd (-1: a new file) */
struct ibv_context *dpib_open_context(struct ibv_device *device, int cmd_fd);

/* share.c: contexts' files, imported PDs and MRs */
int dpib_share_open(struct dpib_context *c, int fd);
void dpib_share_close(struct dpib_context *c);
int dpib_same_file(struct ibv_context *a, struct ibv_context *b);
void dpib_share_pd(struct ibv_pd *pd);
int dpib_share_pd_dealloc(struct ibv_pd *pd);
void dpib_share_pd_gone(struct ibv_pd *pd);
struct ibv_pd *dpib_pd(struct ibv_pd *pd);
int dpib_mr_imported(struct ibv_mr *mr);

/* telemetry.c */
void dpib_telemetry_register(void);

/* eal.c */
int dpib_global_init(void);
struct dpib_device *dpib_devices(unsigned int *n);
void dpib_sysfs_write(void);

#endif /* VERBS_PRIV_H */
