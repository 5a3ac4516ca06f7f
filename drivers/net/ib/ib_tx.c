/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Transmit: header templates of paths and AHs (Ethernet [+ 802.1Q], IPv4
 * or IPv6, UDP 4791), packets built from them, the ICRC, the device's
 * transmit buffer and its capture.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_memcpy.h>
#include <rte_udp.h>

#include "ib_hca.h"

/* UDP source port for ECMP entropy: 0xC000 plus a hash of the QPN. */
uint16_t
ib_udp_sport(uint32_t qpn)
{
	uint32_t h = qpn * 0x9e3779b1u;

	return 0xc000 | ((h >> 18) & 0x3fff);
}

/* Ethernet [+ 802.1Q] of a template; returns the IP header offset. */
static uint32_t
l2_fill(struct ib_dev *dev, uint8_t *b, const struct rte_ether_addr *dst,
	uint16_t type, uint8_t pcp)
{
	struct rte_ether_hdr *eth = (void *)b;
	struct rte_vlan_hdr *vh = (void *)(eth + 1);

	rte_ether_addr_copy(dst, &eth->dst_addr);
	rte_ether_addr_copy(&dev->mac, &eth->src_addr);
	if (dev->conf.vlan == 0) {
		eth->ether_type = rte_cpu_to_be_16(type);
		return ETH_LEN;
	}
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_VLAN);
	vh->vlan_tci = rte_cpu_to_be_16((uint16_t)(pcp & 7) << 13 |
					dev->conf.vlan);
	vh->eth_proto = rte_cpu_to_be_16(type);
	return ETH_LEN + VLAN_LEN;
}

/*
 * The destination MAC of an address: multicast mapped (RFC 1112, RFC
 * 2464), this device's own, or zero and unresolved until the engine's
 * ARP/ND has it (nothing is sent on the path until then).
 */
static void
dst_mac(struct ib_dev *dev, struct ib_encap *h, struct rte_ether_addr *mac)
{
	memset(mac, 0, sizeof(*mac));
	h->resolved = 1;
	h->neigh = 0;
	if (!h->ip6) {
		const uint8_t *b = (const uint8_t *)&h->dip;

		if (ib_ipv4_is_mcast(h->dip)) {
			struct rte_ether_addr m = {
				{ 0x01, 0x00, 0x5e, b[1] & 0x7f, b[2], b[3] } };
			*mac = m;
		} else if (h->dip == dev->conf.ip) {
			*mac = dev->mac;
		} else {
			h->resolved = 0;
		}
	} else if (h->dip6[0] == 0xff) {
		mac->addr_bytes[0] = mac->addr_bytes[1] = 0x33;
		memcpy(&mac->addr_bytes[2], &h->dip6[12], 4);
	} else if (dev->conf.has_ip6 &&
		   memcmp(h->dip6, dev->conf.ip6, 16) == 0) {
		*mac = dev->mac;
	} else {
		h->resolved = 0;
	}
}

/*
 * Resolve an address vector into a header template. The source GID
 * (grh.sgid_index) chooses IPv4 or IPv6, and the destination must be of
 * the same family; an AV without a GRH has no address on RoCE (EINVAL).
 * The flow label is taken as given: 0 stays 0.
 */
int
ib_path_set(struct ib_dev *dev, uint32_t qpn, const struct ibv_ah_attr *ah,
	    struct ib_encap *h)
{
	const union ibv_gid *sgid, *dgid;
	struct rte_ether_addr mac;
	struct rte_udp_hdr *udp;
	uint8_t hop = 64, tclass = 0, sidx = 0;

	/* RoCE addresses by GID: an AV without a GRH is EINVAL (rxe and
	 * mlx5 refuse it too, at ibv_create_ah and at ibv_modify_qp).
	 */
	if (!ah->is_global)
		return EINVAL;
	if (dev->ngid == 0)
		return EINVAL;
	memset(h, 0, sizeof(*h));
	sidx = ah->grh.sgid_index;
	dgid = &ah->grh.dgid;
	if (ah->grh.hop_limit > 1)
		hop = ah->grh.hop_limit;
	tclass = ah->grh.traffic_class;
	/* A sender never sets CE, which only a congested hop may (RFC 3168
	 * 5): a traffic class that asks for it gets ECT(0). Sent marked, a
	 * DCQCN peer (dpib among them) answered every frame with a CNP and
	 * the QP's own rate fell to the floor (test_random).
	 */
	if ((tclass & 3) == IB_ECN_CE)
		tclass = (uint8_t)((tclass & ~3) | IB_ECN_ECT0);
	/* RC and UC frames are ECN-capable under DCQCN (ib_dcqcn.c) unless
	 * the application chose the ECN bits; an AH's (UD) are not.
	 */
	if (qpn != 0 && !dev->conf.dcqcn.disabled && (tclass & 3) == 0)
		tclass |= IB_ECN_ECT0;
	if (sidx >= dev->ngid)
		return EINVAL;
	sgid = &dev->gid[sidx];
	h->ip6 = !ib_gid_is_v4(sgid);
	if (h->ip6 != !ib_gid_is_v4(dgid))
		return EINVAL;	/* source and destination families differ */
	if (h->ip6)
		memcpy(h->dip6, dgid->raw, 16);
	else
		memcpy(&h->dip, &dgid->raw[12], 4);
	dst_mac(dev, h, &mac);
	h->ip_off = l2_fill(dev, h->b, &mac, h->ip6 ? RTE_ETHER_TYPE_IPV6 :
			    RTE_ETHER_TYPE_IPV4, ah->sl);
	if (h->ip6) {
		struct rte_ipv6_hdr *ip6 = (void *)(h->b + h->ip_off);

		ip6->vtc_flow = rte_cpu_to_be_32(6u << 28 |
			(uint32_t)tclass << 20 | (ah->grh.flow_label & 0xfffff));
		ip6->proto = IPPROTO_UDP;
		ip6->hop_limits = hop;
		memcpy(&ip6->src_addr, sgid->raw, 16);
		memcpy(&ip6->dst_addr, h->dip6, 16);
		h->len = h->ip_off + IP6_LEN + UDP_LEN;
	} else {
		struct rte_ipv4_hdr *ip = (void *)(h->b + h->ip_off);

		ip->version_ihl = RTE_IPV4_VHL_DEF;
		ip->type_of_service = tclass;
		ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
		ip->time_to_live = hop;
		ip->next_proto_id = IPPROTO_UDP;
		ip->src_addr = dev->conf.ip;
		ip->dst_addr = h->dip;
		/* With total_length 0: pkt_alloc adds each frame's length. */
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		h->len = h->ip_off + IP_LEN + UDP_LEN;
	}
	udp = (void *)(h->b + h->len - UDP_LEN);
	udp->src_port = rte_cpu_to_be_16(ib_udp_sport(qpn));
	udp->dst_port = rte_cpu_to_be_16(IB_UDP_PORT);
	udp->dgram_cksum = 0;
	return 0;
}

/*
 * Engine: put the destination MAC into a template once it is known, and
 * again when ARP/ND learned another MAC for some address since (a peer
 * that moved, a gratuitous ARP after a failover). While the address is
 * being resolved again (its entry expired) the known MAC stays in use.
 */
int
ib_hdr_resolve(struct ib_dev *dev, struct ib_encap *h)
{
	struct rte_ether_addr mac;
	int ret;

	if (likely(h->resolved && (!h->neigh || h->neigh_gen == dev->neigh_gen)))
		return 0;
	ret = h->ip6 ? ib_neigh_lookup6(dev, h->dip6, &mac) :
		       ib_neigh_lookup(dev, h->dip, &mac);
	h->neigh_gen = dev->neigh_gen;
	if (ret != 0) {
		if (h->resolved)
			return 0;
		ib_count(dev, IB_CNT_TX_WAIT_NEIGH);
		return ret;
	}
	rte_ether_addr_copy(&mac, &((struct rte_ether_hdr *)h->b)->dst_addr);
	h->resolved = 1;
	h->neigh = 1;
	return 0;
}

/*
 * Allocate a packet of @opcode with @paylen payload bytes on the QP's path.
 * Returns the mbuf with its BTH at *bth (to be filled by bth_set) and the
 * payload at *payload; NULL when the pool is empty.
 */
static struct rte_mbuf *
pkt_alloc(struct ib_qp *qp, const struct ib_encap *h, uint8_t opcode,
	  uint32_t paylen, uint8_t **bth, uint8_t **payload, int zc);

/* NULL too while the path's destination MAC is not known yet. */
struct rte_mbuf *
ib_pkt_alloc(struct ib_qp *qp, uint8_t opcode, uint32_t paylen,
	     uint8_t **bth, uint8_t **payload)
{
	if (ib_hdr_resolve(qp->dev, &qp->path.hdr) != 0)
		return NULL;
	return pkt_alloc(qp, &qp->path.hdr, opcode, paylen, bth, payload, 0);
}

/*
 * Wait a little (1 ms) for the @n counts at @refs of zero-copy frames a
 * port still holds to reach 0; 1 when they did. A port that frees sent
 * mbufs only when its ring fills (net_virtio) holds them long after the
 * NIC read them: the caller then keeps the counts allocated, for the
 * frames' release to decrement.
 */
int
ib_zc_settle(const uint32_t *refs, uint32_t n, size_t stride)
{
	uint64_t deadline = rte_get_timer_cycles() + rte_get_timer_hz() / 1000;
	uint32_t i = 0;

	while (i < n) {
		if (__atomic_load_n((const uint32_t *)((const uint8_t *)refs +
			i * stride), __ATOMIC_ACQUIRE) == 0) {
			i++;
			continue;
		}
		if (rte_get_timer_cycles() > deadline)
			return 0;
		rte_delay_us_sleep(50);
	}
	return 1;
}

/* The port freed the last frame of a zero-copy payload: one less. */
static void
zc_released(void *addr __rte_unused, void *opaque)
{
	__atomic_fetch_sub((uint32_t *)opaque, 1, __ATOMIC_RELEASE);
}

/*
 * The same, for a count that only the QP's engine changes: a port that
 * frees each frame inside the engine's transmit burst (net_af_packet,
 * dev->tx_gathers), a WQE's count. A plain decrement and a release store:
 * the locked one, right after the PMD copied the frame into its ring,
 * waited for those stores to drain (4 % of the client's CPU in
 * ib_write_bw -s 65536 over veth).
 */
static void
zc_released_own(void *addr __rte_unused, void *opaque)
{
	uint32_t *ref = opaque;

	__atomic_store_n(ref, *ref - 1, __ATOMIC_RELEASE);
}

/*
 * Zero copy: a packet like ib_pkt_alloc's whose @paylen payload bytes are
 * not copied but referenced where they are (@va, IOVA @iova): headers in
 * one mbuf, the payload as an external buffer in a second, pad and ICRC in
 * a third. The second mbuf's own data room, unused while it points
 * elsewhere, holds the shared info, so that nothing outlives it; when the
 * port frees it, *@ref drops by one (a UC WQE completes only at 0). @own:
 * only this QP's engine changes *@ref (zc_released_own).
 */
struct rte_mbuf *
ib_pkt_alloc_zc(struct ib_qp *qp, uint8_t opcode, uint8_t *va,
		rte_iova_t iova, uint32_t paylen, uint32_t *ref, int own,
		uint8_t **bth)
{
	struct ib_dev *dev = qp->dev;
	struct rte_mbuf_ext_shared_info *shinfo;
	struct rte_mbuf *m, *pm, *tm;
	unsigned int pad = (-paylen) & 3;
	uint8_t *pay, *tail;

	if (ib_hdr_resolve(dev, &qp->path.hdr) != 0)
		return NULL;
	pm = ib_mbuf_alloc(dev);
	tm = ib_mbuf_alloc(dev);
	m = pm != NULL && tm != NULL ? pkt_alloc(qp, &qp->path.hdr, opcode,
						 paylen, bth, &pay, 1) : NULL;
	if (unlikely(m == NULL)) {
		if (pm != NULL)
			ib_mbuf_free(dev, pm);
		if (tm != NULL)
			ib_mbuf_free(dev, tm);
		return NULL;
	}
	shinfo = pm->buf_addr;
	shinfo->free_cb = own ? zc_released_own : zc_released;
	shinfo->fcb_opaque = ref;
	rte_mbuf_ext_refcnt_set(shinfo, 1);
	rte_pktmbuf_attach_extbuf(pm, va, iova, (uint16_t)paylen, shinfo);
	pm->data_len = (uint16_t)paylen;
	pm->pkt_len = paylen;
	tail = (uint8_t *)rte_pktmbuf_append(tm, pad + IB_ICRC_LEN);
	memset(tail, 0, pad);
	m->next = pm;
	pm->next = tm;
	m->nb_segs = 3;
	m->pkt_len += paylen + pad + IB_ICRC_LEN;
	if (own)
		__atomic_store_n(ref, *ref + 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(ref, 1, __ATOMIC_RELAXED);
	ib_count(dev, IB_CNT_TX_ZERO_COPY);
	return m;
}

/*
 * The same, to a UD WQE's copy of an address vector: the engine resolves
 * the copy, never the AH, which the application reads at every post.
 */
struct rte_mbuf *
ib_pkt_alloc_av(struct ib_qp *qp, struct ib_encap *av, uint8_t opcode,
		uint32_t paylen, uint8_t **bth, uint8_t **payload)
{
	if (ib_hdr_resolve(qp->dev, av) != 0)
		return NULL;
	return pkt_alloc(qp, av, opcode, paylen, bth, payload, 0);
}

/*
 * The checksum @c of a header one of whose 16-bit words was 0 and is now
 * @v (RFC 1624, eqn. 3, with m = 0), both as the header holds them.
 */
static inline rte_be16_t
cksum_add(rte_be16_t c, rte_be16_t v)
{
	uint32_t s = (uint32_t)(uint16_t)~c + v;

	s = (s & 0xffff) + (s >> 16);
	return (rte_be16_t)~s;
}

/*
 * The mbuf records where the IP header starts (l2_len) and its length
 * (l3_len): ib_tx and the fault hook find the ICRC span and the BTH there.
 * With @zc it holds the headers only (ib_pkt_alloc_zc chains the rest).
 */
static struct rte_mbuf *
pkt_alloc(struct ib_qp *qp, const struct ib_encap *h, uint8_t opcode,
	  uint32_t paylen, uint8_t **bth, uint8_t **payload, int zc)
{
	const struct ib_opcode_info *info = &ib_opcode[opcode];
	struct ib_dev *dev = qp->dev;
	unsigned int pad = (-paylen) & 3;
	uint32_t udplen = UDP_LEN + info->length + paylen + pad + IB_ICRC_LEN;
	uint32_t total = h->len - UDP_LEN + udplen;
	struct rte_udp_hdr *udp;
	struct rte_mbuf *m;
	uint8_t *p;

	m = ib_mbuf_alloc(dev);
	if (unlikely(m == NULL)) {
		ib_count(dev, IB_CNT_TX_DROP_NOMBUF);
		return NULL;
	}
	p = (uint8_t *)rte_pktmbuf_append(m, zc ? total - paylen - pad -
					  IB_ICRC_LEN : total);
	rte_memcpy(p, h->b, h->len);
	/* Both lengths in one store: set one after the other, the second
	 * bit-field's load waited for the first one's byte store (a store
	 * that cannot forward to a wider load).
	 */
	m->tx_offload = rte_mbuf_tx_offload(h->ip_off, h->ip6 ? IP6_LEN :
					    IP_LEN, 0, 0, 0, 0, 0);
	udp = (void *)(p + h->len - UDP_LEN);
	udp->src_port = rte_cpu_to_be_16(qp->udp_sport);
	udp->dgram_len = rte_cpu_to_be_16(udplen);
	if (likely(!h->ip6)) {
		struct rte_ipv4_hdr *ip = (void *)(p + h->ip_off);

		ip->total_length = rte_cpu_to_be_16(IP_LEN + udplen);
		ip->hdr_checksum = cksum_add(ip->hdr_checksum,
					     ip->total_length);
	} else {
		struct rte_ipv6_hdr *ip6 = (void *)(p + h->ip_off);

		ip6->payload_len = rte_cpu_to_be_16(udplen);
	}
	qp->rp.tx_bytes += total;
	if (unlikely(qp->rp.limited))
		ib_dcqcn_sent(qp, total);
	*bth = p + h->len;
	*payload = *bth + info->length;
	if (pad && !zc)
		memset(*payload + paylen, 0, pad);
	(*bth)[1] = pad << BTH_PAD_SHIFT;
	return m;
}

/* Fill the BTH of a packet from ib_pkt_alloc (keeps its pad count). */
void
ib_pkt_bth(uint8_t *bth, uint8_t opcode, int se, uint32_t qpn, int ackreq,
	   uint32_t psn)
{
	unsigned int pad = bth_pad((struct ib_bth *)bth);

	bth_set((struct ib_bth *)bth, opcode, se, pad, IB_DEFAULT_PKEY, qpn,
		ackreq, psn);
}

int
ib_tx_room(struct ib_dev *dev)
{
	return IB_TX_PENDING - ib_sh(dev)->tx_n;
}

/*
 * Room for a requester's new packet: what is left past IB_TX_RESERVE.
 * While the port takes nothing, the requesters fill the queue only so far;
 * the rest is for the ACKs, NAKs and responses the receive side still
 * owes (one per QP of a burst), which would otherwise be dropped and
 * cost their peers a retransmission timeout.
 */
int
ib_tx_room_req(struct ib_dev *dev)
{
	return ib_tx_room(dev) - IB_TX_RESERVE;
}

/*
 * DPIB_CAPTURE: a classic pcap file (link type Ethernet) of every frame
 * the device transmits, for dissection by tshark or scapy. A debugging aid:
 * it writes from the engine's transmit path.
 */
int
ib_capture_open(struct ib_dev *dev, const char *path)
{
	const uint32_t hdr[6] = { 0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1 };

	dev->capture = fopen(path, "w");
	if (dev->capture == NULL)
		return -errno;
	/* A valid (empty) capture from the start, for readers that open
	 * it before the first frame.
	 */
	fwrite(hdr, sizeof(hdr), 1, dev->capture);
	fflush(dev->capture);
	return 0;
}

static void
capture(struct ib_dev *dev, struct rte_mbuf **m, uint16_t n)
{
	struct timespec ts;
	uint16_t i;

	clock_gettime(CLOCK_REALTIME, &ts);
	for (i = 0; i < n; i++) {
		uint32_t len = rte_pktmbuf_data_len(m[i]);
		uint32_t rec[4] = { ts.tv_sec, ts.tv_nsec / 1000, len, len };

		fwrite(rec, sizeof(rec), 1, dev->capture);
		fwrite(rte_pktmbuf_mtod(m[i], void *), len, 1, dev->capture);
	}
	fflush(dev->capture);
}

/*
 * A port whose link is down (a memif peer not attached yet) takes nothing:
 * its frames are dropped, as a NIC drops them, rather than kept for a link
 * that may never come. The transport's timers resend what matters.
 */
static int
link_down(struct ib_dev *dev, struct ib_shard *sh)
{
	struct rte_eth_link link;
	uint32_t i;

	if (rte_eth_link_get_nowait(dev->port_id, &link) != 0 ||
	    link.link_status != RTE_ETH_LINK_DOWN)
		return 0;
	for (i = 0; i < sh->tx_n; i++)
		rte_pktmbuf_free(sh->tx_pending[i]);
	sh->cnt[IB_CNT_TX_DROP_LINK_DOWN] += sh->tx_n;
	sh->tx_n = 0;
	sh->tx_clean = 0;
	return 1;
}

/*
 * Frames addressed to the device itself (a QP talking to another QP of the
 * same device by its own GID, as UCX's wire-up does with its own worker)
 * go back to the shard's receive side, as an HCA loops them back: a port
 * would put them on the wire, where no one takes them. Those from
 * tx_clean on are new; the rest of tx_pending closes up behind them.
 */
static void
loop_back(struct ib_dev *dev, struct ib_shard *sh)
{
	uint32_t i, kept = sh->tx_clean;

	for (i = sh->tx_clean; i < sh->tx_n; i++) {
		struct rte_mbuf *m = sh->tx_pending[i];
		const struct rte_ether_hdr *eth =
			rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);

		if (likely(!rte_is_same_ether_addr(&eth->dst_addr,
						   &dev->mac))) {
			sh->tx_pending[kept++] = m;
			continue;
		}
		if (rte_ring_sp_enqueue(sh->self, m) == 0) {
			sh->cnt[IB_CNT_TX_LOOPBACK]++;
			sh->loop_unread = 1;
		} else {
			sh->cnt[IB_CNT_TX_LOOPBACK_DROP]++;
			rte_pktmbuf_free(m);
		}
	}
	sh->tx_n = kept;
}

/* The frames this thread's engine queued on @dev, to its queue pair. */
void
ib_tx_flush(struct ib_dev *dev)
{
	struct ib_shard *sh = ib_sh(dev);
	uint16_t sent;

	if (sh->tx_nseal != 0) {
		ib_icrc_seal(sh->tx_seal, sh->tx_nseal);
		sh->tx_nseal = 0;
	}
	sh->tx_ack_end = 0;
	if (unlikely(dev->fault != NULL)) {
		/* Frames a port refused earlier were faulted already. The
		 * fault state is the device's: one engine at a time.
		 */
		rte_spinlock_lock(&dev->dbg_lock);
		sh->tx_n = sh->tx_clean +
			   ib_fault_apply(dev, sh->tx_pending + sh->tx_clean,
					  sh->tx_n - sh->tx_clean,
					  IB_TX_PENDING - sh->tx_clean);
		rte_spinlock_unlock(&dev->dbg_lock);
	}
	if (sh->tx_n == 0)
		return;
	/* Before the port owns them (it may free them at once); frames it
	 * refuses stay at the head, already recorded.
	 */
	if (unlikely(dev->capture != NULL) && sh->tx_n > sh->tx_clean) {
		rte_spinlock_lock(&dev->dbg_lock);
		capture(dev, sh->tx_pending + sh->tx_clean,
			(uint16_t)(sh->tx_n - sh->tx_clean));
		rte_spinlock_unlock(&dev->dbg_lock);
	}
	/* A net_ring loopback port brings every frame back by itself. */
	if (!dev->conf.loopback && sh->self != NULL) {
		loop_back(dev, sh);
		if (sh->tx_n == 0)
			return;
	}
	sent = rte_eth_tx_burst(dev->port_id, sh->queue, sh->tx_pending,
				(uint16_t)sh->tx_n);
	if (unlikely(sent == 0) && link_down(dev, sh))
		return;
	sh->cnt[IB_CNT_TX_PKTS] += sent;
	if (dev->conf.loopback)
		sh->loop_unread |= sent;
	if (sent < sh->tx_n)
		memmove(sh->tx_pending, sh->tx_pending + sent,
			(sh->tx_n - sent) * sizeof(sh->tx_pending[0]));
	sh->tx_n -= sent;
	sh->tx_clean = sh->tx_n;
}

/*
 * Zero-copy frames keep a UC WQE from completing until the port frees
 * them: hand over what is queued, and ask a PMD that frees its sent mbufs
 * lazily (PCI NICs, at a later burst) to do it now.
 */
void
ib_tx_reclaim(struct ib_dev *dev)
{
	ib_tx_flush(dev);
	(void)rte_eth_tx_done_cleanup(dev->port_id, ib_sh(dev)->queue, 0);
}

/*
 * Queue a frame as it is (ARP); the port takes it at the next flush. A
 * burst's worth is handed over at once; a port that still takes nothing
 * makes the frame a drop.
 */
int
ib_tx_raw(struct ib_dev *dev, struct rte_mbuf *m)
{
	struct ib_shard *sh = ib_sh(dev);

	if (sh->tx_n >= IB_TX_BURST)
		ib_tx_flush(dev);
	if (unlikely(sh->tx_n == IB_TX_PENDING)) {
		sh->cnt[IB_CNT_TX_DROP_FULL]++;
		rte_pktmbuf_free(m);
		return -ENOBUFS;
	}
	sh->tx_pending[sh->tx_n++] = m;
	sh->tx_queued++;
	return 0;
}

/*
 * Queue a RoCEv2 packet; ib_tx_flush seals it with its ICRC, together with
 * the others queued since (ib_icrc_seal: in rounds, a third of the cost of
 * one at a time). A zero-copy chain is sealed here, one of a kind.
 */
int
ib_tx(struct ib_dev *dev, struct rte_mbuf *m)
{
	struct ib_shard *sh;
	rte_le32_t le;
	uint8_t *at;

	if (dev->icrc_skip) {		/* it stays in memory: icrc_local */
		m->ol_flags |= ib_unsealed;
		return ib_tx_raw(dev, m);
	}
	if (unlikely(m->next != NULL)) {	/* zero copy: ib_pkt_alloc_zc */
		le = rte_cpu_to_le_32(ib_icrc_chain(m,
			rte_pktmbuf_mtod(m, uint8_t *) + m->l2_len, &at));
		memcpy(at, &le, IB_ICRC_LEN);
		return ib_tx_raw(dev, m);
	}
	if (ib_tx_raw(dev, m) != 0)
		return -ENOBUFS;	/* dropped: the queue is full */
	sh = ib_sh(dev);
	sh->tx_seal[sh->tx_nseal++] = m;
	return 0;
}
