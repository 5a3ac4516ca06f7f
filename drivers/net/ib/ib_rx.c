/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Receive: a frame's encapsulation (802.1Q, IPv4 or IPv6, UDP 4791), its
 * validation in IBA 9.6 order, the packet parsed once (ib_pkt.h), and its
 * delivery to the responder or the completer of its QP.
 */
#include <stddef.h>
#include <string.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "ib_hca.h"

static int
qp_accepts(const struct ib_qp *qp, uint32_t mask)
{
	switch (qp->ibv.qp_type) {
	case IBV_QPT_RC:
		return !!(mask & IB_M_RC);
	case IBV_QPT_UC:
		return !!(mask & IB_M_UC);
	case IBV_QPT_UD:
		return !!(mask & IB_M_UD);
	default:
		return 0;
	}
}

/*
 * A connected QP hears only its peer: the frame's source address must be
 * the path's destination and its destination the path's source (the VLAN
 * was checked per device). Otherwise any host that guessed a QPN could
 * write into a connection (IBA checks the source LID of RC/UC packets;
 * RoCE has addresses instead).
 */
static int
rx_from_peer(const struct ib_qp *qp, const uint8_t *l3)
{
	const struct ib_encap *h = &qp->path.hdr;
	const uint8_t *tmpl = h->b + h->ip_off;

	if (((l3[0] >> 4) == 6) != h->ip6)
		return 0;
	if (!h->ip6) {
		const struct rte_ipv4_hdr *ip = (const void *)l3;
		const struct rte_ipv4_hdr *t = (const void *)tmpl;

		return ip->src_addr == t->dst_addr && ip->dst_addr == t->src_addr;
	}
	/* IPv6: source (8) then destination (24), 16 bytes each. */
	return memcmp(l3 + 8, tmpl + 24, 16) == 0 &&
	       memcmp(l3 + 24, tmpl + 8, 16) == 0;
}

/*
 * A CNP (RoCEv2 A17.9.3) names the QP that sent the marked frames: its
 * reaction point slows down. Only a connected QP's peer may send one.
 */
static void
rx_cnp(struct ib_dev *dev, struct ib_qp *qp, const struct ib_pkt *p)
{
	int state = qp->attr.qp_state;

	if (qp->ibv.qp_type != IBV_QPT_RC && qp->ibv.qp_type != IBV_QPT_UC) {
		ib_count(dev, IB_CNT_RX_BAD_TRANSPORT);
		return;
	}
	if (state != IBV_QPS_RTS && state != IBV_QPS_SQD) {
		ib_count(dev, IB_CNT_RX_BAD_STATE);
		return;
	}
	if (!rx_from_peer(qp, p->ip)) {
		ib_count(dev, IB_CNT_RX_BAD_PATH);
		return;
	}
	ib_count(dev, IB_CNT_CNP_RCVD);
	ib_dcqcn_cnp_rx(qp);
}

/* The QP-level checks (type, state), then the responder or completer. */
static void
rx_deliver(struct ib_dev *dev, struct ib_qp *qp, struct ib_pkt *p)
{
	int state = qp->attr.qp_state;

	if (unlikely(p->mask & IB_M_CNP)) {
		rx_cnp(dev, qp, p);
		return;
	}
	if (!qp_accepts(qp, p->mask)) {
		ib_count(dev, IB_CNT_RX_BAD_TRANSPORT);
		return;
	}
	if (state < IBV_QPS_RTR || state == IBV_QPS_ERR ||
	    ((p->mask & IB_M_RESP) && state == IBV_QPS_RTR)) {
		ib_count(dev, IB_CNT_RX_BAD_STATE);
		return;
	}
	if (qp->ibv.qp_type != IBV_QPT_UD && !rx_from_peer(qp, p->ip)) {
		ib_count(dev, IB_CNT_RX_BAD_PATH);
		return;
	}
	if (unlikely(pkt_ecn(p) == IB_ECN_CE))
		ib_dcqcn_ce_rx(qp);
	if (p->mask & IB_M_RESP)
		ib_comp_rx(qp, p);
	else
		ib_resp_rx(qp, p);
}

/*
 * Another engine owns the QP: the frame, validated, goes to it through its
 * shard's hand-off ring (a full ring drops it, as a full receive queue
 * would). Returns 1 when the frame left (or was dropped).
 */
static int
rx_handoff(struct ib_dev *dev, struct ib_shard *to, struct rte_mbuf *m)
{
	if (likely(rte_ring_mp_enqueue(to->handoff, m) == 0)) {
		ib_count(dev, IB_CNT_RX_HANDOFF);
		if (to->eng != NULL)
			ib_engine_nudge(to->eng);
		return 1;
	}
	ib_count(dev, IB_CNT_RX_HANDOFF_DROP);
	rte_pktmbuf_free(m);
	return 1;
}

/*
 * A UD packet to a multicast group, IPv4 or IPv6: one copy per attached
 * QP, each with the frame's IP header in its GRH area as for unicast.
 * Members on other engines get the frame itself (a reference each
 * engine), and deliver to their own members only.
 */
static void
rx_multicast(struct ib_dev *dev, uint32_t qpn, struct ib_pkt *p,
	     struct rte_mbuf *m, int handed)
{
	struct ib_mcast_group *g = ib_mcast_lookup(dev, p->ip);
	struct ib_shard *self = ib_sh(dev);
	uint32_t i, others = 0;

	if (qpn != IB_QPN_MASK || !(p->mask & IB_M_UD) || g == NULL) {
		ib_count(dev, IB_CNT_RX_MCAST_NO_GROUP);
		return;
	}
	for (i = 0; i < g->nqp; i++) {
		if (g->qps[i]->sh == self)
			rx_deliver(dev, g->qps[i], p);
		else if (!handed)
			others |= 1u << g->qps[i]->sh->id;
	}
	while (others != 0) {
		i = (uint32_t)__builtin_ctz(others);
		others &= others - 1;
		rte_mbuf_refcnt_update(m, 1);
		rx_handoff(dev, &dev->sh[i], m);
	}
}

/*
 * The L2 header: an optional 802.1Q tag (its VID must be the device's),
 * then the EtherType. Returns the L3 offset, or 0 for a drop it counted.
 */
static uint32_t
rx_l2(struct ib_dev *dev, const uint8_t *p, uint32_t len, uint16_t *type)
{
	const struct rte_ether_hdr *eth = (const void *)p;
	const struct rte_vlan_hdr *vh = (const void *)(eth + 1);

	if (unlikely(len < ETH_LEN)) {
		ib_count(dev, IB_CNT_RX_NOT_ROCE);
		return 0;
	}
	if (likely(eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_VLAN))) {
		if (unlikely(dev->conf.vlan != 0)) {
			ib_count(dev, IB_CNT_RX_BAD_VLAN);
			return 0;
		}
		*type = eth->ether_type;
		return ETH_LEN;
	}
	if (len < ETH_LEN + VLAN_LEN) {
		ib_count(dev, IB_CNT_RX_NOT_ROCE);
		return 0;
	}
	if ((rte_be_to_cpu_16(vh->vlan_tci) & 0xfff) != dev->conf.vlan) {
		ib_count(dev, IB_CNT_RX_BAD_VLAN);
		return 0;
	}
	*type = vh->eth_proto;
	return ETH_LEN + VLAN_LEN;
}

/*
 * IPv4 to this device (or multicast), not fragmented, UDP 4791. Returns
 * the UDP length, 0 for not RoCE, UINT32_MAX for a bad length.
 */
static uint32_t
rx_ipv4(struct ib_dev *dev, const uint8_t *l3, uint32_t room)
{
	const struct rte_ipv4_hdr *ip = (const void *)l3;
	const struct rte_udp_hdr *udp = (const void *)(l3 + IP_LEN);
	uint32_t iplen;

	if (room < IP_LEN + UDP_LEN ||
	    ip->version_ihl != RTE_IPV4_VHL_DEF ||
	    ip->next_proto_id != IPPROTO_UDP ||
	    (ip->fragment_offset & rte_cpu_to_be_16(RTE_IPV4_HDR_MF_FLAG |
						     RTE_IPV4_HDR_OFFSET_MASK)) ||
	    udp->dst_port != rte_cpu_to_be_16(IB_UDP_PORT) ||
	    dev->conf.ip == 0 ||
	    (ip->dst_addr != dev->conf.ip && !ib_ipv4_is_mcast(ip->dst_addr)))
		return 0;
	iplen = rte_be_to_cpu_16(ip->total_length);
	if (iplen > room || iplen < IP_LEN + UDP_LEN ||
	    rte_be_to_cpu_16(udp->dgram_len) != iplen - IP_LEN)
		return UINT32_MAX;
	return iplen - IP_LEN;
}

/* The same for IPv6 (no extension headers: RoCEv2 puts UDP next). */
static uint32_t
rx_ipv6(struct ib_dev *dev, const uint8_t *l3, uint32_t room)
{
	const struct rte_ipv6_hdr *ip6 = (const void *)l3;
	const struct rte_udp_hdr *udp = (const void *)(l3 + IP6_LEN);
	const uint8_t *dst = (const uint8_t *)&ip6->dst_addr;
	uint32_t plen;

	if (room < IP6_LEN + UDP_LEN || (l3[0] >> 4) != 6 ||
	    ip6->proto != IPPROTO_UDP ||
	    udp->dst_port != rte_cpu_to_be_16(IB_UDP_PORT) ||
	    !dev->conf.has_ip6 ||
	    (dst[0] != 0xff && memcmp(dst, dev->conf.ip6, 16) != 0))
		return 0;
	plen = rte_be_to_cpu_16(ip6->payload_len);
	if (plen + IP6_LEN > room || plen < UDP_LEN ||
	    rte_be_to_cpu_16(udp->dgram_len) != plen)
		return UINT32_MAX;
	return plen;
}

/* Neighbour frames: ARP, or ICMPv6 (Neighbor Discovery). */
static int
rx_is_neigh(const uint8_t *l3, uint32_t room, uint16_t type)
{
	if (type == rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP))
		return 1;
	return type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6) &&
	       room >= IP6_LEN && l3[6] == IPPROTO_ICMPV6;
}

/*
 * A frame of a zero-copy sender on a port that hands mbufs over as they
 * are (net_ring): headers, the payload in place, pad and ICRC (ib_tx.c's
 * ib_pkt_alloc_zc). Taken as it is; other chains are made linear.
 */
static inline int
rx_zc_layout(const struct rte_mbuf *m)
{
	const struct rte_mbuf *last = rte_pktmbuf_lastseg((struct rte_mbuf *)m);

	return m->nb_segs == 3 && rte_pktmbuf_data_len(m) <= 128 &&
	       rte_pktmbuf_data_len(m) >= ETH_LEN + IP_LEN + UDP_LEN +
					   IB_BTH_LEN &&
	       rte_pktmbuf_data_len(last) >= IB_ICRC_LEN &&
	       rte_pktmbuf_data_len(last) <= IB_ICRC_LEN + 3;
}

/*
 * Receive one frame. Checks run in the order of IBA 9.6 (packet header
 * validation) after the RoCEv2 encapsulation (802.1Q tag, IPv4 or IPv6,
 * UDP): length against the opcode table, ICRC, transport version, P_Key,
 * destination QP, QP type and state; then the packet goes to the
 * responder or the completer, on the engine that owns the QP. A frame
 * @handed over by another engine passed the checks up to the QP there.
 */
static void
rx_frame(struct ib_dev *dev, struct rte_mbuf *m, int handed,
	 uint32_t pre_crc, uint32_t pre_span)
{
	const struct ib_opcode_info *info;
	const struct ib_bth *b;
	struct ib_pkt pkt;
	struct ib_qp *qp;
	uint32_t len, off, l3len, udplen, qpn, paylen, crc = 0, wire_crc = 0;
	uint16_t type = 0;
	uint8_t *p, *l3, *bth, *at;
	/* Checked by the engine that handed it over, or never sealed: it
	 * did not leave this process's memory (icrc_local in ib_dev.c). Only
	 * such a device takes the mark: another port's PMD could not set it,
	 * and no frame of its can carry it.
	 */
	int unchecked = handed ||
			(dev->icrc_skip && (m->ol_flags & ib_unsealed) != 0);

	if (likely(!handed))
		ib_count(dev, IB_CNT_RX_PKTS);
	if (unlikely(m->nb_segs > 1) && !rx_zc_layout(m) &&
	    rte_pktmbuf_linearize(m) != 0)
		goto drop_len;
	p = rte_pktmbuf_mtod(m, uint8_t *);
	len = rte_pktmbuf_pkt_len(m);
	off = rx_l2(dev, p, len, &type);
	if (unlikely(off == 0))
		goto free;
	l3 = p + off;
	if (unlikely(rx_is_neigh(l3, len - off, type)) && !handed &&
	    ib_neigh_rx(dev, m))
		return;
	if (likely(type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4))) {
		l3len = IP_LEN;
		udplen = rx_ipv4(dev, l3, len - off);
	} else if (type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6)) {
		l3len = IP6_LEN;
		udplen = rx_ipv6(dev, l3, len - off);
	} else {
		goto not_roce;
	}
	if (udplen == 0)
		goto not_roce;
	if (udplen == UINT32_MAX ||
	    udplen < UDP_LEN + IB_BTH_LEN + IB_ICRC_LEN)
		goto drop_len;

	bth = l3 + l3len + UDP_LEN;
	b = (const struct ib_bth *)bth;
	info = &ib_opcode[bth_opcode(b)];
	if (info->mask == 0) {
		ib_count(dev, IB_CNT_RX_BAD_OPCODE);
		goto free;
	}
	if (udplen < UDP_LEN + info->length + IB_ICRC_LEN + bth_pad(b))
		goto drop_len;
	paylen = udplen - UDP_LEN - info->length - IB_ICRC_LEN - bth_pad(b);
	if (unlikely(m->nb_segs > 1)) {
		if (bth + info->length != p + rte_pktmbuf_data_len(m) ||
		    rte_pktmbuf_data_len(m->next) != paylen ||
		    rte_pktmbuf_data_len(m->next->next) !=
		    IB_ICRC_LEN + bth_pad(b))
			goto drop_len;
		if (!unchecked) {
			crc = ib_icrc_chain(m, l3, &at);
			memcpy(&wire_crc, at, IB_ICRC_LEN);
		}
	} else if (!unchecked) {
		memcpy(&wire_crc, l3 + l3len + udplen - IB_ICRC_LEN,
		       IB_ICRC_LEN);
		/* ib_rx_burst's, when it hashed this very span. */
		crc = pre_span == l3len + udplen - IB_ICRC_LEN &&
		      off == RTE_ETHER_HDR_LEN ? pre_crc :
		      ib_icrc_inplace(l3, l3len + udplen - IB_ICRC_LEN);
	}
	if (!unchecked && crc != rte_le_to_cpu_32(wire_crc)) {
		ib_count(dev, IB_CNT_RX_BAD_ICRC);
		goto free;
	}
	if (bth_tver(b) != 0) {
		ib_count(dev, IB_CNT_RX_BAD_VERSION);
		goto free;
	}
	if ((bth_pkey(b) & 0x7fff) != 0x7fff) {
		ib_count(dev, IB_CNT_RX_BAD_PKEY);
		goto free;
	}
	qpn = bth_qpn(b);
	ib_pkt_parse(&pkt, bth, paylen, l3);
	if (unlikely(m->nb_segs > 1))
		pkt.payload = rte_pktmbuf_mtod(m->next, uint8_t *);
	if (unlikely(l3len == IP_LEN ?
		     ib_ipv4_is_mcast(((struct rte_ipv4_hdr *)l3)->dst_addr) :
		     l3[offsetof(struct rte_ipv6_hdr, dst_addr)] == 0xff)) {
		rx_multicast(dev, qpn, &pkt, m, handed);
		goto free;
	}
	qp = qpn < IB_MAX_QP ?
		__atomic_load_n(&dev->qp_tbl[qpn], __ATOMIC_ACQUIRE) : NULL;
	if (qp == NULL) {
		ib_count(dev, IB_CNT_RX_NO_QP);
		goto free;
	}
	if (unlikely(qp->sh != ib_sh(dev))) {
		if (!handed && rx_handoff(dev, qp->sh, m))
			return;
		ib_count(dev, IB_CNT_RX_NO_QP);	/* destroyed and reused */
		goto free;
	}
	/* An ACK, a NAK or a response for a QP that waited: it may send. */
	if (unlikely(qp->active == IB_QP_WAITING))
		ib_engine_activate(qp);
	rx_deliver(dev, qp, &pkt);
	goto free;

not_roce:
	ib_count(dev, IB_CNT_RX_NOT_ROCE);
	goto free;
drop_len:
	ib_count(dev, IB_CNT_RX_BAD_LEN);
free:
	ib_mbuf_free(dev, m);
}

void
ib_rx(struct ib_dev *dev, struct rte_mbuf *m)
{
	rx_frame(dev, m, 0, 0, 0);
}

/*
 * The span of a plain RoCEv2 frame that the ICRC covers, from its IPv4
 * header (an untagged one-segment frame with a 20-byte IPv4 header to UDP
 * port 4791 and room for the rest), else 0 (also for a frame sent
 * unsealed, which rx_frame hashes itself if its device did not send it).
 * rx_frame still checks every field; it takes the CRC hashed here only for
 * the same span.
 */
static inline uint32_t
icrc_span(struct rte_mbuf *m)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	const struct rte_ipv4_hdr *ip = (const void *)(p + RTE_ETHER_HDR_LEN);
	const struct rte_udp_hdr *udp = (const void *)(ip + 1);
	uint32_t tot;

	if (m->nb_segs != 1 || (m->ol_flags & ib_unsealed) != 0 ||
	    rte_pktmbuf_data_len(m) < RTE_ETHER_HDR_LEN + IP_LEN + UDP_LEN +
				      IB_BTH_LEN + IB_ICRC_LEN ||
	    ((const struct rte_ether_hdr *)p)->ether_type !=
	    rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) ||
	    ip->version_ihl != 0x45 || ip->next_proto_id != IPPROTO_UDP ||
	    udp->dst_port != rte_cpu_to_be_16(IB_UDP_PORT))
		return 0;
	tot = rte_be_to_cpu_16(ip->total_length);
	if (tot < (uint32_t)(IP_LEN + UDP_LEN + IB_BTH_LEN + IB_ICRC_LEN) ||
	    tot > (uint32_t)rte_pktmbuf_data_len(m) - RTE_ETHER_HDR_LEN)
		return 0;
	return tot - IB_ICRC_LEN;
}

/*
 * A burst from the port: the ICRCs of its plain RoCEv2 frames first, in
 * rounds (ib_icrc_many: masked all, hashed all, put back, a third of the
 * cost of one at a time), then each frame in order.
 */
void
ib_rx_burst(struct ib_dev *dev, struct rte_mbuf **pkts, uint32_t n)
{
	uint8_t *ip[IB_RX_BURST];
	uint32_t span[IB_RX_BURST], len[IB_RX_BURST], crc[IB_RX_BURST];
	uint32_t i, k;

	while (n > (uint32_t)IB_RX_BURST) {
		ib_rx_burst(dev, pkts, IB_RX_BURST);
		pkts += IB_RX_BURST;
		n -= IB_RX_BURST;
	}
	for (i = 0, k = 0; i < n; i++) {
		span[i] = icrc_span(pkts[i]);
		if (span[i] != 0) {
			ip[k] = rte_pktmbuf_mtod(pkts[i], uint8_t *) +
				RTE_ETHER_HDR_LEN;
			len[k++] = span[i];
		}
	}
	if (k < 2) {		/* nothing to gain from a round */
		for (i = 0; i < n; i++)
			rx_frame(dev, pkts[i], 0, 0, 0);
		return;
	}
	ib_icrc_many(ip, len, crc, k);
	for (i = 0, k = 0; i < n; i++) {
		if (span[i] != 0)
			rx_frame(dev, pkts[i], 0, crc[k++], span[i]);
		else
			rx_frame(dev, pkts[i], 0, 0, 0);
	}
}

/* A frame another engine took in for one of this engine's QPs. */
void
ib_rx_handed(struct ib_dev *dev, struct rte_mbuf *m)
{
	rx_frame(dev, m, 1, 0, 0);
}
