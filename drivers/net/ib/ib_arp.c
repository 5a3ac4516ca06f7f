/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * IPv4 neighbours: ARP (RFC 826) on the device's port, run by the engine.
 *
 * The table is open addressing with linear probing, keyed by the IPv4
 * address; deletion shifts the rest of a probe run back, so there are no
 * tombstones to clean up. Everything runs on the engine lcore: no locks.
 *
 * Timing (constants in ib_hca.h, converted to TSC once in ib_neigh_init):
 * - IB_NEIGH_RETRY_MS (100 ms): between two requests for one address. Far
 *   above a LAN round trip, short enough not to stall connection set-up.
 * - IB_NEIGH_TRIES (5): requests before the address is declared FAILED,
 *   so an absent host is reported about half a second after the first ask.
 * - IB_NEIGH_REACHABLE_MS (60 s): life of a learned MAC, restarted by every
 *   ARP frame from that host. It bounds how long a host that changed its
 *   MAC without announcing it stays unreachable.
 * - IB_NEIGH_FAILED_MS (5 s): how long a failure is remembered, so that a
 *   dead host does not cost a burst of broadcasts on every lookup.
 *
 * The module's clock is nt->now: the TSC passed to the last ib_neigh_timer
 * call (rte_rdtsc() at init). Lookups and received frames use it, so time
 * stands still between two timer calls and deadlines are at most one
 * engine pass late. Tests drive time through ib_neigh_timer alone.
 */
#include <errno.h>
#include <string.h>
#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_malloc.h>

#include "ib_hca.h"

/* ARP is 42 bytes; pad to the Ethernet minimum since not every port does. */
#define ARP_FRAME_LEN	(RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN)
#define SLOT_MASK	(IB_NEIGH_SLOTS - 1)

enum neigh_state {
	NEIGH_FREE,
	NEIGH_INCOMPLETE,	/* requests out, no answer yet */
	NEIGH_REACHABLE,	/* MAC valid until the deadline */
	NEIGH_FAILED,		/* IB_NEIGH_TRIES requests went unanswered */
};

struct neigh_entry {
	uint64_t deadline;	/* TSC: next request, or end of the state */
	uint32_t ip;		/* network order */
	uint8_t state;		/* enum neigh_state */
	uint8_t tries;		/* requests sent in this resolution */
	struct rte_ether_addr mac;
};

struct ib_neigh {
	uint64_t now;		/* the clock, see the top of the file */
	uint64_t next_due;	/* no entry's deadline is earlier */
	uint64_t retry_tsc;
	uint64_t reachable_tsc;
	uint64_t failed_tsc;
	uint32_t used;
	struct neigh_entry tbl[IB_NEIGH_SLOTS];
};

static const struct rte_ether_addr ether_bcast = {
	.addr_bytes = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
};
static const struct rte_ether_addr ether_zero;

/*
 * Hosts of one subnet differ in the low-order octets, which are the high
 * bits of a network-order word on little-endian CPUs; the multiplicative
 * hash carries every input bit into the top bits it keeps.
 */
static inline uint32_t
neigh_home(uint32_t ip)
{
	return (ip * 0x9e3779b1u) >> (32 - __builtin_ctz(IB_NEIGH_SLOTS));
}

/* An address ARP can resolve: not 0/8, loopback, multicast or class E. */
static inline int
ip_unicast(uint32_t ip)
{
	uint32_t a = rte_be_to_cpu_32(ip) >> 24;

	return a != 0 && a != 127 && a < 224;
}

static uint64_t
ms_to_tsc(uint64_t ms)
{
	return rte_get_tsc_hz() * ms / 1000;
}

/* The load cap keeps a free slot in the table, which ends every probe. */
static struct neigh_entry *
neigh_find(struct ib_neigh *nt, uint32_t ip)
{
	uint32_t i;

	for (i = neigh_home(ip); nt->tbl[i].state != NEIGH_FREE;
	     i = (i + 1) & SLOT_MASK)
		if (nt->tbl[i].ip == ip)
			return &nt->tbl[i];
	return NULL;
}

static struct neigh_entry *
neigh_insert(struct ib_neigh *nt, uint32_t ip)
{
	uint32_t i = neigh_home(ip);

	while (nt->tbl[i].state != NEIGH_FREE)
		i = (i + 1) & SLOT_MASK;
	nt->tbl[i].ip = ip;
	nt->used++;
	return &nt->tbl[i];
}

/*
 * Free slot @hole. A later entry of the same probe run moves into the hole
 * when the hole lies between its home slot and where it sits, otherwise a
 * lookup starting at its home would stop at the hole and miss it.
 */
static void
neigh_remove(struct ib_neigh *nt, uint32_t hole)
{
	uint32_t i, home;

	for (i = (hole + 1) & SLOT_MASK; nt->tbl[i].state != NEIGH_FREE;
	     i = (i + 1) & SLOT_MASK) {
		home = neigh_home(nt->tbl[i].ip);
		if (((i - home) & SLOT_MASK) < ((i - hole) & SLOT_MASK))
			continue;
		nt->tbl[hole] = nt->tbl[i];
		hole = i;
	}
	memset(&nt->tbl[hole], 0, sizeof(nt->tbl[hole]));
	nt->used--;
}

/*
 * Make room in a full table: drop the entry nearest its deadline, which
 * among REACHABLE ones is the least recently confirmed and otherwise a
 * FAILED one. INCOMPLETE entries stay: someone is waiting for them.
 */
static int
neigh_evict(struct ib_neigh *nt)
{
	uint64_t oldest = UINT64_MAX;
	uint32_t i, victim = IB_NEIGH_SLOTS;

	for (i = 0; i < IB_NEIGH_SLOTS; i++) {
		const struct neigh_entry *e = &nt->tbl[i];

		if (e->state == NEIGH_FREE || e->state == NEIGH_INCOMPLETE)
			continue;
		if (e->deadline < oldest) {
			oldest = e->deadline;
			victim = i;
		}
	}
	if (victim == IB_NEIGH_SLOTS)
		return 0;
	neigh_remove(nt, victim);
	return 1;
}

/*
 * A slot for a new address. Only a lookup may evict (the application needs
 * that address now); learning from requests may not, or any host sending
 * requests from many addresses could push out the ones in use.
 */
static struct neigh_entry *
neigh_alloc(struct ib_dev *dev, uint32_t ip, int may_evict)
{
	struct ib_neigh *nt = dev->neigh;

	if (nt->used >= IB_NEIGH_MAX) {
		ib_count(dev, IB_CNT_ARP_TABLE_FULL);
		if (!may_evict || !neigh_evict(nt))
			return NULL;
	}
	return neigh_insert(nt, ip);
}

static void
neigh_arm(struct ib_neigh *nt, struct neigh_entry *e, uint64_t delay)
{
	e->deadline = nt->now + delay;
	if (e->deadline < nt->next_due)
		nt->next_due = e->deadline;
}

/* Build and queue an ARP frame from this device; 0 when queued. */
static int
arp_send(struct ib_dev *dev, uint16_t op, const struct rte_ether_addr *dst,
	 const struct rte_ether_addr *tha, uint32_t tip)
{
	struct rte_ether_hdr *eth;
	struct rte_arp_hdr *arp;
	struct rte_mbuf *m;

	m = rte_pktmbuf_alloc(dev->pool);
	if (unlikely(m == NULL)) {
		ib_count(dev, IB_CNT_TX_DROP_NOMBUF);
		return -ENOBUFS;
	}
	eth = (void *)rte_pktmbuf_append(m, ARP_FRAME_LEN);
	if (unlikely(eth == NULL)) {
		rte_pktmbuf_free(m);
		ib_count(dev, IB_CNT_TX_DROP_NOMBUF);
		return -ENOBUFS;
	}
	memset(eth, 0, ARP_FRAME_LEN);
	rte_ether_addr_copy(dst, &eth->dst_addr);
	rte_ether_addr_copy(&dev->mac, &eth->src_addr);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	arp = (void *)(eth + 1);
	arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = RTE_ETHER_ADDR_LEN;
	arp->arp_plen = sizeof(uint32_t);
	arp->arp_opcode = rte_cpu_to_be_16(op);
	arp->arp_data.arp_sha = dev->mac;
	arp->arp_data.arp_sip = dev->conf.ip;
	arp->arp_data.arp_tha = *tha;
	arp->arp_data.arp_tip = tip;
	return ib_tx_raw(dev, m);
}

/* One more broadcast request; a lost one (no mbuf) still uses a try. */
static void
neigh_solicit(struct ib_dev *dev, struct neigh_entry *e)
{
	e->tries++;
	neigh_arm(dev->neigh, e, dev->neigh->retry_tsc);
	if (arp_send(dev, RTE_ARP_OP_REQUEST, &ether_bcast, &ether_zero,
		     e->ip) == 0)
		ib_count(dev, IB_CNT_ARP_REQUEST_SENT);
}

/* A deadline passed: ask again, give up, or (returning 0) forget. */
static int
neigh_due(struct ib_dev *dev, struct neigh_entry *e)
{
	if (e->state != NEIGH_INCOMPLETE)
		return 0;	/* REACHABLE aged out, or FAILED forgiven */
	if (e->tries < IB_NEIGH_TRIES) {
		neigh_solicit(dev, e);
		return 1;
	}
	e->state = NEIGH_FAILED;
	ib_count(dev, IB_CNT_ARP_FAILED);
	neigh_arm(dev->neigh, e, dev->neigh->failed_tsc);
	return 1;
}

/* Visit every entry whose deadline passed and find the next deadline. */
static void
neigh_scan(struct ib_dev *dev, struct ib_neigh *nt)
{
	uint64_t next = UINT64_MAX;
	struct neigh_entry *e;
	uint32_t i = 0;

	while (i < IB_NEIGH_SLOTS) {
		e = &nt->tbl[i];
		if (e->state == NEIGH_FREE) {
			i++;
			continue;
		}
		/* Removal may pull a not yet visited entry into slot i. */
		if (e->deadline <= nt->now && !neigh_due(dev, e)) {
			neigh_remove(nt, i);
			continue;
		}
		next = RTE_MIN(next, e->deadline);
		i++;
	}
	nt->next_due = next;
}

void
ib_neigh_timer(struct ib_dev *dev, uint64_t now)
{
	struct ib_neigh *nt = dev->neigh;

	nt->now = now;
	if (likely(now < nt->next_due))
		return;
	neigh_scan(dev, nt);
}

/* A request for a new address: -EAGAIN, or -ENOSPC with a full table. */
static int
neigh_resolve(struct ib_dev *dev, uint32_t ip)
{
	struct neigh_entry *e = neigh_alloc(dev, ip, 1);

	if (e == NULL)
		return -ENOSPC;
	e->state = NEIGH_INCOMPLETE;
	e->tries = 0;
	neigh_solicit(dev, e);
	return -EAGAIN;
}

int
ib_neigh_lookup(struct ib_dev *dev, uint32_t ip, struct rte_ether_addr *mac)
{
	struct neigh_entry *e;

	if (!ip_unicast(ip))
		return -EINVAL;
	if (ip == dev->conf.ip) {
		rte_ether_addr_copy(&dev->mac, mac);
		return 0;
	}
	e = neigh_find(dev->neigh, ip);
	if (e == NULL)
		return neigh_resolve(dev, ip);
	switch (e->state) {
	case NEIGH_REACHABLE:
		rte_ether_addr_copy(&e->mac, mac);
		return 0;
	case NEIGH_FAILED:
		return -EHOSTUNREACH;
	default:
		return -EAGAIN;
	}
}

/*
 * RFC 826 merge: whatever the frame, a sender already in the table gets
 * its MAC updated and its lifetime restarted; that is how a host's
 * gratuitous ARP after a MAC change reaches us, and how a reply completes
 * an INCOMPLETE entry. A new entry is made only when @may_add (a request
 * for our address: its sender is about to talk to us). Returns 1 when the
 * table took the sender.
 */
static int
neigh_learn(struct ib_dev *dev, uint32_t ip, const struct rte_ether_addr *mac,
	    int may_add)
{
	struct neigh_entry *e = neigh_find(dev->neigh, ip);

	if (e == NULL) {
		if (!may_add)
			return 0;
		e = neigh_alloc(dev, ip, 0);
		if (e == NULL)
			return 0;
	}
	rte_ether_addr_copy(mac, &e->mac);
	e->state = NEIGH_REACHABLE;
	e->tries = 0;
	neigh_arm(dev->neigh, e, dev->neigh->reachable_tsc);
	return 1;
}

/* The counter that drops @arp, or IB_CNT_NUM when it is well formed. */
static enum ib_counter
arp_check(const struct rte_arp_hdr *arp)
{
	uint16_t op = rte_be_to_cpu_16(arp->arp_opcode);

	if (arp->arp_hardware != rte_cpu_to_be_16(RTE_ARP_HRD_ETHER) ||
	    arp->arp_protocol != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) ||
	    (op != RTE_ARP_OP_REQUEST && op != RTE_ARP_OP_REPLY))
		return IB_CNT_ARP_RX_UNSUPPORTED;
	/* A sender MAC that is a group or zero address cannot be learned
	 * or answered.
	 */
	if (arp->arp_hlen != RTE_ETHER_ADDR_LEN ||
	    arp->arp_plen != sizeof(uint32_t) ||
	    !rte_is_valid_assigned_ether_addr(&arp->arp_data.arp_sha))
		return IB_CNT_ARP_RX_MALFORMED;
	return IB_CNT_NUM;
}

/*
 * A well-formed ARP frame. Requests for other addresses and replies from
 * unknown senders only refresh entries we already have: learning every
 * broadcast would fill the table with hosts we never talk to, and taking
 * replies we did not ask for would let anyone plant entries in advance.
 */
static void
arp_process(struct ib_dev *dev, const struct rte_ether_addr *eth_dst,
	    const struct rte_arp_hdr *arp)
{
	struct rte_ether_addr sha = arp->arp_data.arp_sha;
	uint32_t sip = arp->arp_data.arp_sip;
	int request = arp->arp_opcode == rte_cpu_to_be_16(RTE_ARP_OP_REQUEST);
	int asks_us = request && arp->arp_data.arp_tip == dev->conf.ip;
	int used = 0;

	/* Another host's unicast, seen because the port is promiscuous, or
	 * our own broadcast coming back.
	 */
	if ((!rte_is_multicast_ether_addr(eth_dst) &&
	     !rte_is_same_ether_addr(eth_dst, &dev->mac)) ||
	    rte_is_same_ether_addr(&sha, &dev->mac)) {
		ib_count(dev, IB_CNT_ARP_RX_IGNORED);
		return;
	}
	if (sip == dev->conf.ip && ip_unicast(sip)) {
		ib_count(dev, IB_CNT_ARP_IP_CONFLICT);
		return;
	}
	/* A probe (RFC 5227) has sender 0.0.0.0: answered, not learned. */
	if (ip_unicast(sip))
		used = neigh_learn(dev, sip, &sha, asks_us);
	if (asks_us) {
		if (arp_send(dev, RTE_ARP_OP_REPLY, &sha, &sha, sip) == 0)
			ib_count(dev, IB_CNT_ARP_REPLY_SENT);
		used = 1;
	}
	if (!used)
		ib_count(dev, IB_CNT_ARP_RX_IGNORED);
}

int
ib_neigh_rx(struct ib_dev *dev, struct rte_mbuf *m)
{
	struct rte_ether_hdr eth_buf;
	struct rte_arp_hdr arp_buf;
	const struct rte_ether_hdr *eth;
	const struct rte_arp_hdr *arp;
	enum ib_counter drop;

	eth = rte_pktmbuf_read(m, 0, sizeof(*eth), &eth_buf);
	if (unlikely(eth == NULL) ||
	    likely(eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP)))
		return 0;
	ib_count(dev, IB_CNT_ARP_RX);
	arp = rte_pktmbuf_read(m, sizeof(*eth), sizeof(*arp), &arp_buf);
	drop = arp == NULL ? IB_CNT_ARP_RX_MALFORMED : arp_check(arp);
	if (drop != IB_CNT_NUM)
		ib_count(dev, drop);
	else
		arp_process(dev, &eth->dst_addr, arp);
	rte_pktmbuf_free(m);
	return 1;
}

/* RFC 5227 announcement: a request whose sender and target are us. */
void
ib_neigh_announce(struct ib_dev *dev)
{
	if (!ip_unicast(dev->conf.ip))
		return;
	if (arp_send(dev, RTE_ARP_OP_REQUEST, &ether_bcast, &ether_zero,
		     dev->conf.ip) == 0)
		ib_count(dev, IB_CNT_GARP_SENT);
}

int
ib_neigh_init(struct ib_dev *dev)
{
	struct ib_neigh *nt;

	RTE_BUILD_BUG_ON(!RTE_IS_POWER_OF_2(IB_NEIGH_SLOTS));
	RTE_BUILD_BUG_ON(IB_NEIGH_MAX >= IB_NEIGH_SLOTS);
	if (dev->neigh != NULL)
		return -EEXIST;
	if (dev->pool == NULL)
		return -EINVAL;
	nt = rte_zmalloc("ib_neigh", sizeof(*nt), RTE_CACHE_LINE_SIZE);
	if (nt == NULL)
		return -ENOMEM;
	nt->retry_tsc = ms_to_tsc(IB_NEIGH_RETRY_MS);
	nt->reachable_tsc = ms_to_tsc(IB_NEIGH_REACHABLE_MS);
	nt->failed_tsc = ms_to_tsc(IB_NEIGH_FAILED_MS);
	nt->now = rte_rdtsc();
	nt->next_due = UINT64_MAX;
	dev->neigh = nt;
	return 0;
}

void
ib_neigh_fini(struct ib_dev *dev)
{
	rte_free(dev->neigh);
	dev->neigh = NULL;
}
