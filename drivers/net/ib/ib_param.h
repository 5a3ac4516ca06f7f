/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef IB_PARAM_H
#define IB_PARAM_H

/* The HCA's limits and tunables: what it reports, what it enforces. */
#include <rte_ether.h>
#include <rte_mbuf.h>

/* Device limits reported by ibv_query_device and enforced at creation. */
#define IB_MAX_QP		65536
#define IB_MAX_MR		65536
#define IB_MAX_QP_WR		16384
#define IB_MAX_SGE		32
#define IB_MAX_CQE		65536
#define IB_MAX_INLINE		256
#define IB_MAX_RD_ATOMIC	128	/* as rxe: perftest asks for the peer's */
#define IB_MAX_MSG_SZ		(1u << 31)
#define IB_MAX_PD		65536
#define IB_QPN_BASE		0x11	/* 0 and 1 are the special QPs */
#define IB_QPN_GSI		1	/* QP 1, the General Services Interface */
#define IB_GSI_QKEY		0x80010000u	/* IBA 13.5.1: QP 1's Q_Key */
#define IB_MAD_LEN		256	/* a MAD on RoCE: no larger ones */
#define IB_MAD_CLASS_CM		0x07	/* the one class QP 1 takes */

#define IB_TX_BURST		32
/* Zero copy by default from this payload size per packet (bytes). */
#define IB_ZC_MIN_DEFAULT	1024
#define IB_TX_PENDING		512	/* mbufs built but not yet taken by the port */
#define IB_TX_RESERVE		128	/* ... of which requesters leave to answers */
#define IB_RX_BURST		32
#define IB_HANDOFF_RING		4096	/* frames in flight to one shard */
#define IB_SELF_RING		1024	/* frames to the device's own address */
#define IB_REQ_BUDGET		32	/* packets one QP may send per engine pass */
#define IB_HOT_MAX		16	/* QPs of a shard whose posts need no fence */
#define IB_MBUF_DATA		(4096 + 256 + RTE_PKTMBUF_HEADROOM)
/* The longest encapsulation: Eth + 802.1Q + IPv6 + UDP. */
#define IB_HDR_MAX		(RTE_ETHER_HDR_LEN + 4 + 40 + 8)
#define IB_MAX_GID		2	/* IPv4-mapped, then IPv6 */
#define IB_PORT_EV_MAX		64	/* contexts told of port events */
#define IB_PORT_WATCH_US	100000	/* how often the link is looked at */
/*
 * The GID table a port reports: more entries than it fills, as hardware
 * has; the unused ones read as the zero GID (ibv_query_gid) or ENODATA
 * (ibv_query_gid_ex), so programs see how an empty entry answers.
 */
#define IB_GID_TBL_LEN		16

/* Multicast (ib_mcast.c) */
#define IB_MAX_MCAST_GRP	64
#define IB_MAX_MCAST_QPS	16	/* QPs attached to one group */

/* Congestion window (ib_cc.c) */
#define IB_CWND_MIN		16	/* packets: never fewer in flight */
#define IB_CWND_INIT		16
#define IB_CWND_MAX		32768
#define IB_CWND_OFF		INT32_MAX	/* UC, UD: no acknowledgements */
#define IB_ACKREQ_EVERY		64	/* packets of a message, a power of 2 */
#define IB_ACK_COALESCE		16	/* AckReq packets one held ACK covers */
#define IB_RTO_MIN_US		1000	/* floor of the early resend timer */

/* Inline progress (ib_engine.c) */
#define IB_INLINE_PASSES	64	/* a control call runs up to this many */
#define IB_POST_PASSES		1	/* a post: its WRs leave, an answer on
					 * a loopback device arrives; polls and
					 * the loop carry the rest */
#define IB_INLINE_SPIN_US	200	/* an event wait spins this long */
#define IB_ENGINE_SPIN_US	50	/* an engine lcore spins, then sleeps */
#define IB_TAKEOVER_US		20	/* inline: no call drove it for this */
#define IB_TAKEOVER_SPIN_US	5	/* ... and the loop's spin, short: it
					 * shares the CPUs with the program */
#define IB_LINGER_MAX_US	50	/* a poll returning a UC send waits for
					 * the answer (ib_cq.c): the longest
					 * gap its wait is sized by */
#define IB_LINGER_LEARN_US	200	/* ... learnt if answers came this soon */
#define IB_LINGER_MISSES	4	/* ... until this many in a row did not */
#define IB_LINGER_WAIT_US	200	/* ... and the longest wait */

/* Neighbours (ib_neigh.c) */
#define IB_NEIGH_SLOTS		1024	/* hash table slots, a power of two */
#define IB_NEIGH_MAX		768	/* entries: a 75% load keeps probes short */
#define IB_NEIGH_RETRY_MS	100	/* between requests for one address */
#define IB_NEIGH_TRIES		5	/* requests before the address fails */
#define IB_NEIGH_REACHABLE_MS	60000	/* life of a learned MAC */
#define IB_NEIGH_FAILED_MS	5000	/* how long a failure is remembered */

#endif
