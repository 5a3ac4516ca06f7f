/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef DPIB_H
#define DPIB_H

/**
 * @file
 * dpib extensions beside the verbs API (infiniband/verbs.h).
 */

#include <stdint.h>
#include <infiniband/verbs.h>

/**
 * ibv_device_attr_ex.device_cap_flags_ex: the device executes ATOMIC WRITE
 * (IBV_WR_ATOMIC_WRITE). Linux 6.2's ib_user_verbs.h names this bit
 * IB_UVERBS_DEVICE_ATOMIC_WRITE; rdma-core 44's headers do not.
 */
#define DPIB_DEVICE_ATOMIC_WRITE	(1ULL << 40)

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Bring up DPDK and the configured devices now instead of at the first
 * verbs call. Idempotent.
 *
 * @return 0, or a positive errno value.
 */
int dpib_init(void);

/**
 * Read a device's counters.
 *
 * @param ctx     an open device context
 * @param names   if not NULL, receives the counter name table
 * @param values  receives up to @p n counter values
 * @param n       size of @p values
 * @return the number of counters the device has, or -1 with errno set.
 */
int dpib_counters(struct ibv_context *ctx, const char *const **names,
		  uint64_t *values, int n);

/**
 * The DPDK ethdev port id a device runs on (for tools that measure the raw
 * packet path beside dpib).
 */
int dpib_port_id(struct ibv_context *ctx, uint16_t *port_id);

/** Packet buffers of a device's pool in use now (leak checks). */
int dpib_mbufs_in_use(struct ibv_context *ctx);

/** The engine lcore and the Ethernet MTU a device uses. */
int dpib_device_info(struct ibv_context *ctx, unsigned int *lcore,
		     uint32_t *eth_mtu);

/** What one engine does on a device (dpib_engine_stats). */
struct dpib_engine_stats {
	uint32_t qps;		/**< QPs of the device placed on it */
	uint32_t queue;		/**< its RX/TX queue pair on the port */
	uint64_t rx_packets;	/**< frames it took in from its queue */
	uint64_t tx_packets;	/**< frames it sent on its queue */
	uint64_t rx_handed;	/**< ... of rx_packets, for another engine */
	uint64_t cycles;	/**< TSC spent in passes that did work */
};

/**
 * A device's share of each engine ([engine] engines): fills up to @p n
 * entries, one per engine serving the device.
 *
 * @return the number of engines serving the device (1 with one engine or a
 *         port with one queue pair), or -1 with errno set.
 */
int dpib_engine_stats(struct ibv_context *ctx, struct dpib_engine_stats *st,
		      int n);

/**
 * Lend the CPU of the device's first engine: @p fn(@p arg) runs on that
 * engine's lcore, between two of its passes, and the call returns when it
 * does. The engine makes no progress meanwhile (no frame, timer or
 * doorbell of its QPs is served), so @p fn must not wait for it. For tools
 * that measure something else on the very CPU the engine runs on, turn
 * about with it: dpib-perf's raw packet path, each repetition beside
 * dpib's, so that both see the machine in the same state.
 *
 * @return 0; EAGAIN before the engine runs (it starts with the first QP),
 *         ENOTSUP in inline mode (no lcore of its own), EDEADLK when
 *         called on that engine's lcore.
 */
int dpib_engine_lend(struct ibv_context *ctx, void (*fn)(void *), void *arg);

/**
 * The engine that owns a QP (0 .. engines - 1): the one that runs its
 * transport and whose passes an inline-mode post or poll drives.
 */
int dpib_qp_engine(struct ibv_qp *qp);

/**
 * Does the device put an ICRC on its frames and check its own? 1 on every
 * port but the embedded loopback's net_ring, whose frames never leave the
 * process's memory: there 0, unless `icrc = on` (DPIB_ICRC=on), fault
 * injection or a capture. Frames from anywhere else are always checked.
 */
int dpib_icrc(struct ibv_context *ctx);

/**
 * Can the device's port DMA from this MR's memory? 1 when the MR is
 * registered with DPDK (external memory, mapped for the port's device
 * where an IOMMU translates) or lies in DPDK's own memory; 0 when the
 * device does no DMA registration (a virtual port, `dma = off`) or the
 * memory could not be registered (the MR then works through the CPU copy;
 * the log says why).
 */
int dpib_mr_dma(struct ibv_mr *mr);

/**
 * Memory ready to be registered for DMA: @p len bytes rounded up to whole
 * pages of the system's default hugepage size, mapped, populated and
 * zeroed. Without free hugepages it falls back to ordinary pages (the log
 * says so once); *page_size (when not NULL) tells which.
 *
 * @return the buffer, or NULL with errno set. Free with dpib_free_buf().
 */
void *dpib_alloc_buf(size_t len, size_t *page_size);

/** Unmap a buffer from dpib_alloc_buf(); EINVAL for anything else. */
int dpib_free_buf(void *buf);

/**
 * Hand a raw Ethernet frame to a device's receive path as if its port had
 * delivered it. For tests and fuzzing: frames from scapy, replays of
 * captures. The frame is copied; it is processed asynchronously by the
 * engine (or at once when no engine runs yet).
 *
 * @return 0, or -1 with errno set (ENOBUFS, EMSGSIZE).
 */
int dpib_inject(struct ibv_context *ctx, const void *frame, uint32_t len);

/**
 * QP 1 of the device, the General Services Interface, for a connection
 * manager (dpib's librdmacm): a UD QP whose number is 1 and whose Q_Key is
 * the GSI's, 0x80010000, whatever ibv_modify_qp() is given. It receives
 * the CM MADs arriving at the port (whole 256-byte MADs of the CM class;
 * others are counted and dropped) and sends with source QP 1. Moved to
 * RTS and used like any UD QP. @p init->qp_type must be IBV_QPT_UD.
 *
 * @return the QP, or NULL with errno set: EBUSY when the device's QP 1
 * exists already (one CM per device and process), EINVAL.
 */
struct ibv_qp *dpib_create_gsi_qp(struct ibv_pd *pd,
				  struct ibv_qp_init_attr *init);

/**
 * The Ethernet address of the host at @p gid (IPv4-mapped or IPv6) as the
 * device's ARP / Neighbor Discovery knows it, for address resolution
 * (rdma_resolve_addr). The device's own address resolves at once.
 *
 * @return 0 with @p mac filled; otherwise -1 with errno EAGAIN (the
 * device is asking now; ask again later), EHOSTUNREACH (the host did not
 * answer its requests) or EINVAL (no unicast address of the device's
 * families).
 */
int dpib_neigh_resolve(struct ibv_context *ctx, const union ibv_gid *gid,
		       uint8_t mac[6]);

#ifdef __cplusplus
}
#endif

#endif /* DPIB_H */
