/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Neighbours: ARP (RFC 826) for IPv4 and Neighbor Discovery (RFC 4861) for
 * IPv6 on the device's port, run by the engine. Both share one table and
 * one state machine; only the frames differ.
 *
 * The table is open addressing with linear probing, keyed by the IPv4
 * address or a fold of the IPv6 one; deletion shifts the rest of a probe
 * run back, so there are no tombstones to clean up. Everything runs on the
 * engine lcore: no locks.
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
 *
 * With several engines, any of them may take in a neighbour frame or look
 * up an address: the public entry points hold dev->neigh_lock (slow paths:
 * a resolved header never asks). The timer runs on the engine of shard 0.
 */
#include <errno.h>
#include <string.h>
#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_ip.h>
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
	uint32_t ip;		/* IPv4, network order; IPv6: fold of ip6 */
	uint8_t state;		/* enum neigh_state */
	uint8_t tries;		/* requests sent in this resolution */
	uint8_t v6;		/* keyed by ip6 */
	struct rte_ether_addr mac;
	uint8_t ip6[16];
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

/* The 32-bit key of an IPv6 address: its words folded. */
static uint32_t
fold6(const uint8_t ip6[16])
{
	uint32_t w[4];

	memcpy(w, ip6, 16);
	return w[0] ^ w[1] ^ w[2] ^ w[3];
}

/*
 * The load cap keeps a free slot in the table, which ends every probe.
 * @ip6 is NULL for an IPv4 address, else @ip is fold6(@ip6).
 */
static struct neigh_entry *
neigh_find(struct ib_neigh *nt, uint32_t ip, const uint8_t *ip6)
{
	struct neigh_entry *e;
	uint32_t i;

	for (i = neigh_home(ip); nt->tbl[i].state != NEIGH_FREE;
	     i = (i + 1) & SLOT_MASK) {
		e = &nt->tbl[i];
		if (e->ip == ip && e->v6 == (ip6 != NULL) &&
		    (ip6 == NULL || memcmp(e->ip6, ip6, 16) == 0))
			return e;
	}
	return NULL;
}

static struct neigh_entry *
neigh_insert(struct ib_neigh *nt, uint32_t ip, const uint8_t *ip6)
{
	uint32_t i = neigh_home(ip);

	while (nt->tbl[i].state != NEIGH_FREE)
		i = (i + 1) & SLOT_MASK;
	nt->tbl[i].ip = ip;
	nt->tbl[i].v6 = ip6 != NULL;
	if (ip6 != NULL)
		memcpy(nt->tbl[i].ip6, ip6, 16);
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
neigh_alloc(struct ib_dev *dev, uint32_t ip, const uint8_t *ip6,
	    int may_evict)
{
	struct ib_neigh *nt = dev->neigh;

	if (nt->used >= IB_NEIGH_MAX) {
		ib_count(dev, IB_CNT_ARP_TABLE_FULL);
		if (!may_evict || !neigh_evict(nt))
			return NULL;
	}
	return neigh_insert(nt, ip, ip6);
}

static void
neigh_arm(struct ib_neigh *nt, struct neigh_entry *e, uint64_t delay)
{
	e->deadline = nt->now + delay;
	if (e->deadline < nt->next_due)
		nt->next_due = e->deadline;
}

/*
 * Append an Ethernet header (802.1Q tagged, priority 0, on a VLAN device)
 * and @len zeroed bytes to @m; returns those bytes, or NULL (counted).
 */
uint8_t *
ib_l2_put(struct ib_dev *dev, struct rte_mbuf *m,
	  const struct rte_ether_addr *dst, uint16_t type, uint32_t len)
{
	uint32_t l2 = RTE_ETHER_HDR_LEN + (dev->conf.vlan ? 4 : 0);
	struct rte_ether_hdr *eth;
	struct rte_vlan_hdr *vh;

	eth = (void *)rte_pktmbuf_append(m, l2 + len);
	if (unlikely(eth == NULL)) {
		ib_count(dev, IB_CNT_TX_DROP_NOMBUF);
		return NULL;
	}
	memset(eth, 0, l2 + len);
	rte_ether_addr_copy(dst, &eth->dst_addr);
	rte_ether_addr_copy(&dev->mac, &eth->src_addr);
	eth->ether_type = rte_cpu_to_be_16(type);
	if (dev->conf.vlan) {
		eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_VLAN);
		vh = (void *)(eth + 1);
		vh->vlan_tci = rte_cpu_to_be_16(dev->conf.vlan);
		vh->eth_proto = rte_cpu_to_be_16(type);
	}
	return (uint8_t *)eth + l2;
}

static struct rte_mbuf *
frame_alloc(struct ib_dev *dev)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(dev->pool);

	if (unlikely(m == NULL))
		ib_count(dev, IB_CNT_TX_DROP_NOMBUF);
	return m;
}

/* Build and queue an ARP frame from this device; 0 when queued. */
static int
arp_send(struct ib_dev *dev, uint16_t op, const struct rte_ether_addr *dst,
	 const struct rte_ether_addr *tha, uint32_t tip)
{
	struct rte_arp_hdr *arp;
	struct rte_mbuf *m = frame_alloc(dev);

	if (m == NULL)
		return -ENOBUFS;
	arp = (void *)ib_l2_put(dev, m, dst, RTE_ETHER_TYPE_ARP,
				ARP_FRAME_LEN - RTE_ETHER_HDR_LEN);
	if (arp == NULL) {
		rte_pktmbuf_free(m);
		return -ENOBUFS;
	}
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

/*
 * Neighbor Discovery messages (RFC 4861 4.3, 4.4): a 24-byte ICMPv6 body
 * (type, code, checksum, flags, target address) and one link-layer address
 * option of 8 bytes. Sent with hop limit 255, which receivers check.
 */
#define ND_NS		135
#define ND_NA		136
#define ND_OPT_SLLA	1
#define ND_OPT_TLLA	2
#define ND_NA_SOLICITED	0x40
#define ND_NA_OVERRIDE	0x20
#define ND_HOP_LIMIT	255
#define ND_BODY_LEN	24
#define ND_LEN		(ND_BODY_LEN + 8)

static int
nd_send(struct ib_dev *dev, uint8_t type, uint8_t flags,
	const struct rte_ether_addr *dst, const uint8_t dip[16],
	const uint8_t target[16])
{
	struct rte_ipv6_hdr *ip6;
	struct rte_mbuf *m = frame_alloc(dev);
	uint8_t *icmp;
	uint16_t ck;

	if (m == NULL)
		return -ENOBUFS;
	ip6 = (void *)ib_l2_put(dev, m, dst, RTE_ETHER_TYPE_IPV6,
				IP6_LEN + ND_LEN);
	if (ip6 == NULL) {
		rte_pktmbuf_free(m);
		return -ENOBUFS;
	}
	ip6->vtc_flow = rte_cpu_to_be_32(6u << 28);
	ip6->payload_len = rte_cpu_to_be_16(ND_LEN);
	ip6->proto = IPPROTO_ICMPV6;
	ip6->hop_limits = ND_HOP_LIMIT;
	memcpy(&ip6->src_addr, dev->conf.ip6, 16);
	memcpy(&ip6->dst_addr, dip, 16);
	icmp = (uint8_t *)(ip6 + 1);
	icmp[0] = type;
	icmp[4] = flags;
	memcpy(icmp + 8, target, 16);
	icmp[ND_BODY_LEN] = type == ND_NS ? ND_OPT_SLLA : ND_OPT_TLLA;
	icmp[ND_BODY_LEN + 1] = 1;	/* in units of 8 bytes */
	memcpy(icmp + ND_BODY_LEN + 2, dev->mac.addr_bytes, 6);
	ck = rte_ipv6_udptcp_cksum(ip6, icmp);
	memcpy(icmp + 2, &ck, 2);
	return ib_tx_raw(dev, m);
}

/* A solicitation to @target's solicited-node group (RFC 4291 2.7.1). */
static void
nd_solicit(struct ib_dev *dev, const uint8_t target[16])
{
	uint8_t dip[16] = { 0xff, 0x02, [11] = 0x01, [12] = 0xff };
	struct rte_ether_addr mac = { { 0x33, 0x33, 0xff } };

	memcpy(dip + 13, target + 13, 3);
	memcpy(&mac.addr_bytes[3], target + 13, 3);
	if (nd_send(dev, ND_NS, 0, &mac, dip, target) == 0)
		ib_count(dev, IB_CNT_ND_SOLICIT_SENT);
}

/* One more request; a lost one (no mbuf) still uses a try. */
static void
neigh_solicit(struct ib_dev *dev, struct neigh_entry *e)
{
	e->tries++;
	neigh_arm(dev->neigh, e, dev->neigh->retry_tsc);
	if (e->v6)
		nd_solicit(dev, e->ip6);
	else if (arp_send(dev, RTE_ARP_OP_REQUEST, &ether_bcast, &ether_zero,
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
	ib_count(dev, e->v6 ? IB_CNT_ND_FAILED : IB_CNT_ARP_FAILED);
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

	__atomic_store_n(&nt->now, now, __ATOMIC_RELAXED);
	if (likely(now < __atomic_load_n(&nt->next_due, __ATOMIC_RELAXED)))
		return;
	rte_spinlock_lock(&dev->neigh_lock);
	neigh_scan(dev, nt);
	rte_spinlock_unlock(&dev->neigh_lock);
}

/* When the table next needs the engine (TSC; UINT64_MAX: never). */
uint64_t
ib_neigh_next_due(const struct ib_dev *dev)
{
	return dev->neigh != NULL ? dev->neigh->next_due : UINT64_MAX;
}

/* A request for a new address: -EAGAIN, or -ENOSPC with a full table. */
static int
neigh_resolve(struct ib_dev *dev, uint32_t ip, const uint8_t *ip6)
{
	struct neigh_entry *e = neigh_alloc(dev, ip, ip6, 1);

	if (e == NULL)
		return -ENOSPC;
	e->state = NEIGH_INCOMPLETE;
	e->tries = 0;
	neigh_solicit(dev, e);
	return -EAGAIN;
}

static int neigh_state(struct ib_dev *dev, uint32_t ip, const uint8_t *ip6,
		       struct rte_ether_addr *mac);

int
ib_neigh_lookup(struct ib_dev *dev, uint32_t ip, struct rte_ether_addr *mac)
{
	int ret;

	/* Our own address first: the loopback device's is 127.0.0.1, which
	 * ARP would never be asked about.
	 */
	if (ip == dev->conf.ip) {
		rte_ether_addr_copy(&dev->mac, mac);
		return 0;
	}
	if (!ip_unicast(ip))
		return -EINVAL;
	rte_spinlock_lock(&dev->neigh_lock);
	ret = neigh_state(dev, ip, NULL, mac);
	rte_spinlock_unlock(&dev->neigh_lock);
	return ret;
}

/* The answer of the table for an address other than ours. */
static int
neigh_state(struct ib_dev *dev, uint32_t ip, const uint8_t *ip6,
	    struct rte_ether_addr *mac)
{
	struct neigh_entry *e = neigh_find(dev->neigh, ip, ip6);

	if (e == NULL)
		return neigh_resolve(dev, ip, ip6);
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

/* An IPv6 unicast address ND can resolve: not ::, ::1 or multicast. */
static int
ip6_unicast(const uint8_t ip6[16])
{
	static const uint8_t zero[15];

	return ip6[0] != 0xff &&
	       (memcmp(ip6, zero, 15) != 0 || ip6[15] > 1);
}

int
ib_neigh_lookup6(struct ib_dev *dev, const uint8_t ip6[16],
		 struct rte_ether_addr *mac)
{
	int ret;

	if (!dev->conf.has_ip6 || !ip6_unicast(ip6))
		return -EINVAL;
	if (memcmp(ip6, dev->conf.ip6, 16) == 0) {
		rte_ether_addr_copy(&dev->mac, mac);
		return 0;
	}
	rte_spinlock_lock(&dev->neigh_lock);
	ret = neigh_state(dev, fold6(ip6), ip6, mac);
	rte_spinlock_unlock(&dev->neigh_lock);
	return ret;
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
neigh_learn(struct ib_dev *dev, uint32_t ip, const uint8_t *ip6,
	    const struct rte_ether_addr *mac, int may_add)
{
	struct neigh_entry *e = neigh_find(dev->neigh, ip, ip6);

	if (e == NULL) {
		if (!may_add)
			return 0;
		e = neigh_alloc(dev, ip, ip6, 0);
		if (e == NULL)
			return 0;
	}
	/* Templates that copied the old MAC look again (ib_hdr_resolve). */
	if (!rte_is_same_ether_addr(mac, &e->mac))
		dev->neigh_gen++;
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
		used = neigh_learn(dev, sip, NULL, &sha, asks_us);
	if (asks_us) {
		if (arp_send(dev, RTE_ARP_OP_REPLY, &sha, &sha, sip) == 0)
			ib_count(dev, IB_CNT_ARP_REPLY_SENT);
		used = 1;
	}
	if (!used)
		ib_count(dev, IB_CNT_ARP_RX_IGNORED);
}

/* The link-layer address option @type of an ND message, or NULL. */
static const uint8_t *
nd_option(const uint8_t *opt, uint32_t len, uint8_t type, int *bad)
{
	const uint8_t *found = NULL;

	while (len >= 2) {
		uint32_t olen = opt[1] * 8u;

		if (olen == 0 || olen > len) {
			*bad = 1;	/* RFC 4861 7.1.1: length 0 invalid */
			return NULL;
		}
		if (opt[0] == type && olen == 8)
			found = opt + 2;
		opt += olen;
		len -= olen;
	}
	return found;
}

/* The counter that drops an ND message, or IB_CNT_NUM when it is valid. */
static enum ib_counter
nd_check(const struct rte_ipv6_hdr *ip6, const uint8_t *icmp, uint32_t len)
{
	if (len < ND_BODY_LEN || icmp[1] != 0 || icmp[8] == 0xff ||
	    rte_ipv6_udptcp_cksum_verify(ip6, icmp) != 0)
		return IB_CNT_ND_RX_MALFORMED;
	/* Only a neighbour on the link can send with the hop limit intact. */
	if (ip6->hop_limits != ND_HOP_LIMIT)
		return IB_CNT_ND_RX_BAD_HOPLIMIT;
	return IB_CNT_NUM;
}

/*
 * A valid NS or NA. A solicitation for our address is answered and its
 * sender learned (it is about to talk to us); an advertisement only
 * completes or refreshes an entry we have, as for ARP replies.
 */
static void
nd_process(struct ib_dev *dev, const struct rte_ether_hdr *eth,
	   const struct rte_ipv6_hdr *ip6, const uint8_t *icmp, uint32_t len)
{
	const uint8_t *src = (const uint8_t *)&ip6->src_addr;
	const uint8_t *target = icmp + 8;
	static const uint8_t all_nodes[16] = { 0xff, 0x02, [15] = 1 };
	struct rte_ether_addr mac;
	const uint8_t *lla;
	int bad = 0, used = 0;

	lla = nd_option(icmp + ND_BODY_LEN, len - ND_BODY_LEN,
			icmp[0] == ND_NS ? ND_OPT_SLLA : ND_OPT_TLLA, &bad);
	if (bad) {
		ib_count(dev, IB_CNT_ND_RX_MALFORMED);
		return;
	}
	if (rte_is_same_ether_addr(&eth->src_addr, &dev->mac)) {
		ib_count(dev, IB_CNT_ND_RX_IGNORED);	/* our own, looped */
		return;
	}
	if (lla != NULL)
		memcpy(mac.addr_bytes, lla, 6);
	else
		mac = eth->src_addr;
	if (icmp[0] == ND_NS) {
		int asks_us = memcmp(target, dev->conf.ip6, 16) == 0;

		/* From :: (duplicate address detection): answer to all. */
		if (!ip6_unicast(src)) {
			if (asks_us && nd_send(dev, ND_NA, ND_NA_OVERRIDE,
					       &eth->src_addr, all_nodes,
					       dev->conf.ip6) == 0)
				ib_count(dev, IB_CNT_ND_ADVERT_SENT);
			if (!asks_us)
				ib_count(dev, IB_CNT_ND_RX_IGNORED);
			return;
		}
		if (lla != NULL &&
		    rte_is_valid_assigned_ether_addr(&mac))
			used = neigh_learn(dev, fold6(src), src, &mac, asks_us);
		if (asks_us) {
			if (nd_send(dev, ND_NA, ND_NA_SOLICITED | ND_NA_OVERRIDE,
				    &mac, src, dev->conf.ip6) == 0)
				ib_count(dev, IB_CNT_ND_ADVERT_SENT);
			used = 1;
		}
	} else if (ip6_unicast(target) &&
		   rte_is_valid_assigned_ether_addr(&mac)) {
		used = neigh_learn(dev, fold6(target), target, &mac, 0);
	}
	if (!used)
		ib_count(dev, IB_CNT_ND_RX_IGNORED);
}

/* ICMPv6 at @off: 1 when it was an NS or NA (consumed), 0 otherwise. */
static int
nd_rx(struct ib_dev *dev, struct rte_mbuf *m, uint32_t off,
      const struct rte_ether_hdr *eth)
{
	uint8_t buf[IP6_LEN + ND_LEN + 64];
	const struct rte_ipv6_hdr *ip6;
	const uint8_t *icmp;
	enum ib_counter drop;
	uint32_t plen;

	ip6 = rte_pktmbuf_read(m, off, IP6_LEN + 1, buf);
	if (ip6 == NULL || ip6->proto != IPPROTO_ICMPV6 ||
	    (ip6->vtc_flow & rte_cpu_to_be_32(0xf0000000)) !=
	    rte_cpu_to_be_32(0x60000000))
		return 0;
	icmp = (const uint8_t *)(ip6 + 1);
	if (icmp[0] != ND_NS && icmp[0] != ND_NA)
		return 0;
	if (!dev->conf.has_ip6)
		return 0;
	ib_count(dev, IB_CNT_ND_RX);
	plen = rte_be_to_cpu_16(ip6->payload_len);
	if (plen > sizeof(buf) - IP6_LEN ||
	    off + IP6_LEN + plen > rte_pktmbuf_pkt_len(m) ||
	    (ip6 = rte_pktmbuf_read(m, off, IP6_LEN + plen, buf)) == NULL) {
		ib_count(dev, IB_CNT_ND_RX_MALFORMED);
		goto done;
	}
	icmp = (const uint8_t *)(ip6 + 1);
	drop = nd_check(ip6, icmp, plen);
	if (drop != IB_CNT_NUM)
		ib_count(dev, drop);
	else
		nd_process(dev, eth, ip6, icmp, plen);
done:
	rte_pktmbuf_free(m);
	return 1;
}

/*
 * Take @m when it is ARP or Neighbor Discovery on the device's VLAN (or
 * untagged on a device without one); 0 leaves it to the caller.
 */
static int
neigh_rx(struct ib_dev *dev, struct rte_mbuf *m)
{
	struct rte_ether_hdr eth_buf;
	struct rte_arp_hdr arp_buf;
	struct rte_vlan_hdr vlan_buf;
	const struct rte_ether_hdr *eth;
	const struct rte_vlan_hdr *vh;
	const struct rte_arp_hdr *arp;
	enum ib_counter drop;
	uint32_t off = sizeof(*eth);
	uint16_t type;

	eth = rte_pktmbuf_read(m, 0, sizeof(*eth), &eth_buf);
	if (unlikely(eth == NULL))
		return 0;
	type = eth->ether_type;
	if (type == rte_cpu_to_be_16(RTE_ETHER_TYPE_VLAN)) {
		vh = rte_pktmbuf_read(m, off, sizeof(*vh), &vlan_buf);
		if (vh == NULL || dev->conf.vlan == 0 ||
		    (rte_be_to_cpu_16(vh->vlan_tci) & 0xfff) != dev->conf.vlan)
			return 0;
		type = vh->eth_proto;
		off += sizeof(*vh);
	} else if (dev->conf.vlan != 0) {
		return 0;
	}
	if (type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6))
		return nd_rx(dev, m, off, eth);
	if (likely(type != rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP)))
		return 0;
	ib_count(dev, IB_CNT_ARP_RX);
	arp = rte_pktmbuf_read(m, off, sizeof(*arp), &arp_buf);
	drop = arp == NULL ? IB_CNT_ARP_RX_MALFORMED : arp_check(arp);
	if (drop != IB_CNT_NUM)
		ib_count(dev, drop);
	else if (dev->conf.ip == 0)
		ib_count(dev, IB_CNT_ARP_RX_IGNORED);	/* IPv6 only */
	else
		arp_process(dev, &eth->dst_addr, arp);
	rte_pktmbuf_free(m);
	return 1;
}

int
ib_neigh_rx(struct ib_dev *dev, struct rte_mbuf *m)
{
	int ret;

	rte_spinlock_lock(&dev->neigh_lock);
	ret = neigh_rx(dev, m);
	rte_spinlock_unlock(&dev->neigh_lock);
	return ret;
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

struct neigh_query {
	struct ib_dev *dev;
	const union ibv_gid *gid;
	struct rte_ether_addr mac;
	int ret;
};

static void
neigh_query_on_engine(void *arg)
{
	struct neigh_query *q = arg;
	uint32_t ip;

	if (ib_gid_is_v4(q->gid)) {
		memcpy(&ip, &q->gid->raw[12], 4);
		q->ret = ib_neigh_lookup(q->dev, ip, &q->mac);
	} else {
		q->ret = ib_neigh_lookup6(q->dev, q->gid->raw, &q->mac);
	}
}

/*
 * For the connection manager's address resolution (an application
 * thread): the lookup, and the request it may send, run as on the engine
 * that owns the neighbour timer.
 */
int
hca_neigh_query(struct ib_dev *dev, const union ibv_gid *gid, uint8_t mac[6])
{
	struct neigh_query q = { .dev = dev, .gid = gid };

	ib_engine_exec(dev, neigh_query_on_engine, &q);
	if (q.ret == 0)
		memcpy(mac, q.mac.addr_bytes, 6);
	return -q.ret;
}
