/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef IB_CONF_H
#define IB_CONF_H

/*
 * A device's configuration, as lib/verbs reads it from the configuration
 * file (docs/configuration.md) and hands it to ib_dev_create: part of the
 * HCA interface.
 */
#include <stdint.h>

/* Parameters of a device (config keys cc and dcqcn). */
struct ib_dcqcn_conf {
	int disabled;		/* cc = none: no ECT, no CNP, no pacing */
	uint32_t line_mbps;	/* the rate a QP starts at; 0: the port's */
	uint32_t min_mbps;	/* no QP is paced below this */
	uint32_t ai_mbps;	/* additive increase step */
	uint32_t hai_mbps;	/* hyper increase step */
	uint32_t t_us;		/* rate increase timer */
	uint32_t k_us;		/* alpha update timer */
	uint32_t bc_bytes;	/* byte counter: an increase every so many */
	uint32_t f;		/* fast recovery steps before additive */
	uint32_t g_inv;		/* alpha gain g = 1 / g_inv */
	uint32_t cnp_us;	/* NP: at most one CNP per QP per interval */
};

/* How the engine makes progress (DESIGN.md, progress modes). */
enum ib_engine_mode {
	IB_ENGINE_ADAPTIVE,	/* own lcore; spin, then sleep until woken */
	IB_ENGINE_POLL,		/* own lcore, always spinning */
	IB_ENGINE_INLINE,	/* verbs calls drive it; the loop when idle */
};

#define IB_MAX_ENGINES	8	/* engines (shards) a process runs */

/* Which engine a new QP goes to (ib_engine_place). */
enum ib_placement {
	IB_PLACE_CQ,		/* its CQ's engine, else the least loaded */
	IB_PLACE_SPREAD,	/* round the engines, whatever its CQs */
};

/* Fault injection rates of one direction (ib_fault.c). */
struct ib_fault_rates {
	int enabled;
	double drop, dup, reorder, corrupt, delay;
	uint32_t delay_us;
	uint32_t nak_drop;	/* requests lost after each NAK received */
	uint32_t rate_mbps;	/* bottleneck: link rate (Mbit/s), 0: none */
	uint32_t queue;		/* bottleneck: frames queued, tail drop */
	uint32_t ecn_kmin;	/* bottleneck: marks CE from this queue depth */
	uint32_t ecn_kmax;	/* ... with ecn_pmax at this one, all above */
	double ecn_pmax;
	uint64_t seed;
};


/* Device configuration, filled by lib/verbs from the config file. */
enum ib_dma_mode {
	IB_DMA_AUTO,		/* on a PCI port */
	IB_DMA_ON,
	IB_DMA_OFF,
};

struct ib_dev_conf {
	char name[64];		/* dpibN */
	char port[256];		/* vdev devargs or PCI address */
	uint32_t ip;		/* IPv4, network order; 0: none */
	uint8_t ip6[16];	/* IPv6; valid when has_ip6 */
	uint8_t has_ip6;
	uint16_t vlan;		/* 802.1Q VID, 0: untagged */
	uint32_t mtu;		/* Ethernet MTU of the port */
	int loopback;		/* the embedded loopback device */
	int icrc_on;		/* ICRC even where frames stay in memory */
	uint32_t link_wait_ms;	/* ibv_open_device waits for the link */
	int dma;		/* enum ib_dma_mode: MRs registered for DMA */
	int32_t zero_copy;	/* payload bytes from which frames point
				 * into the MR; 0: default, -1: never */
	int lcore;		/* engine lcore (engine k: lcore + k) */
	uint32_t engines;	/* engines of the process (1..IB_MAX_ENGINES) */
	int placement;		/* enum ib_placement */
	int engine_mode;	/* enum ib_engine_mode */
	uint32_t spin_us;	/* engine spin before sleeping; 0: default */
	uint32_t takeover_us;	/* inline: idle calls before the loop runs */
#define IB_TAKEOVER_NEVER	UINT32_MAX	/* inline without the loop */
	int loop_rt;		/* inline: the loop may run SCHED_FIFO */
	char capture[256];	/* pcap of transmitted frames, or "" */
	struct ib_fault_rates fault[2];	/* requests, responses */
	struct ib_dcqcn_conf dcqcn;	/* congestion control */
};

#endif
