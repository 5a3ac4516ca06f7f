/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * RoCEv2 encapsulation: Ethernet/IPv4/UDP around the IBA transport headers,
 * the ICRC (IBA Annex A17.3.3), transmit buffering and receive validation.
 */
#include <string.h>
#include <errno.h>
#include <time.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_udp.h>
#include <isa-l/crc.h>

#include "ib_hca.h"

#define ETH_LEN		RTE_ETHER_HDR_LEN
#define VLAN_LEN	4
#define IP_LEN		20
#define IP6_LEN		40
#define UDP_LEN		8
#define IP_OFF		ETH_LEN

/*
 * ICRC over the masked pseudo packet (IBA A17.3.3): 8 bytes of ones stand
 * for the LRH, then the IP header with its variant fields as ones (IPv4:
 * TOS, TTL, header checksum; IPv6: traffic class, flow label, hop limit),
 * the UDP header with its checksum as ones, the BTH with resv8a as ones,
 * and the rest. @ip points at the IP header; @len counts from there to the
 * end of the payload and pad, the ICRC itself excluded. The version nibble
 * says which IP it is; a span too short for IPv6 headers is IPv4.
 */
/*
 * ISA-L's CRC-32, leaving the vector registers clean. Its AVX-512 kernel
 * (inputs of 256 bytes and more) returns with the upper halves of the
 * vector registers dirty, and nothing clears them: every legacy-SSE
 * instruction after it - dpdk's libraries and dpib itself are built for
 * corei7 (libdpdk.pc's -march) - then pays for merging them, for as long
 * as the process lives. Measured: after the first 4 KiB packet the 64 B
 * RDMA WRITE rate fell from 7.5 to 2.5 M/s and stayed there. VZEROUPPER
 * costs a cycle; the assembler takes it whatever -march says, and it runs
 * only on CPUs with AVX (the only ones ISA-L gives AVX code to).
 */
static int cpu_avx;

static inline uint32_t
crc32(uint32_t seed, const uint8_t *buf, uint64_t len)
{
	uint32_t crc = crc32_gzip_refl(seed, buf, len);

	if (likely(cpu_avx))
		__asm__ volatile("vzeroupper" ::: "memory");
	return crc;
}

static inline int
icrc_is_ip6(const uint8_t *ip, uint32_t len)
{
	return (ip[0] >> 4) == 6 && len >= IP6_LEN + UDP_LEN + IB_BTH_LEN;
}

uint32_t
ib_icrc(const uint8_t *ip, uint32_t len)
{
	uint8_t ps[8 + IP6_LEN + UDP_LEN + IB_BTH_LEN];
	uint32_t l3 = icrc_is_ip6(ip, len) ? IP6_LEN : IP_LEN;
	uint32_t hl = l3 + UDP_LEN + IB_BTH_LEN;
	uint32_t crc;

	memset(ps, 0xff, 8);
	memcpy(ps + 8, ip, hl);
	if (l3 == IP_LEN) {
		ps[8 + 1] = 0xff;			/* TOS */
		ps[8 + 8] = 0xff;			/* TTL */
		ps[8 + 10] = ps[8 + 11] = 0xff;		/* header checksum */
	} else {
		ps[8] |= 0x0f;				/* traffic class, */
		ps[8 + 1] = ps[8 + 2] = ps[8 + 3] = 0xff; /* flow label */
		ps[8 + 7] = 0xff;			/* hop limit */
	}
	ps[8 + l3 + 6] = ps[8 + l3 + 7] = 0xff;	/* UDP checksum */
	ps[8 + l3 + UDP_LEN + 4] = 0xff;	/* BTH resv8a */
	crc = crc32(0, ps, 8 + hl);
	return crc32(crc, ip + hl, len - hl);
}

/*
 * The same ICRC computed in place with one CRC pass: the variant fields are
 * set to ones, hashed from the CRC state after the 8 bytes of ones, and put
 * back. For packets the engine owns (being built or just received).
 */
static uint32_t ones_crc;	/* CRC state after the 8 bytes of ones */

RTE_INIT(ib_icrc_init)
{
	static const uint8_t ones[8] = { 0xff, 0xff, 0xff, 0xff,
					 0xff, 0xff, 0xff, 0xff };

	__builtin_cpu_init();
	cpu_avx = __builtin_cpu_supports("avx");
	ones_crc = crc32(0, ones, sizeof(ones));
}

static uint32_t
icrc_inplace6(uint8_t *ip, uint32_t len)
{
	uint8_t save[4], hop = ip[7], b4 = ip[IP6_LEN + UDP_LEN + 4];
	uint16_t ucsum;
	uint32_t crc;

	memcpy(save, ip, 4);
	memcpy(&ucsum, ip + IP6_LEN + 6, 2);
	ip[0] |= 0x0f;
	ip[1] = ip[2] = ip[3] = ip[7] = 0xff;
	ip[IP6_LEN + 6] = ip[IP6_LEN + 7] = ip[IP6_LEN + UDP_LEN + 4] = 0xff;
	crc = crc32(ones_crc, ip, len);
	memcpy(ip, save, 4);
	ip[7] = hop;
	memcpy(ip + IP6_LEN + 6, &ucsum, 2);
	ip[IP6_LEN + UDP_LEN + 4] = b4;
	return crc;
}

uint32_t
ib_icrc_inplace(uint8_t *ip, uint32_t len)
{
	uint8_t tos = ip[1], ttl = ip[8], b4 = ip[IP_LEN + UDP_LEN + 4];
	uint16_t csum, ucsum;
	uint32_t crc;

	if (unlikely(icrc_is_ip6(ip, len)))
		return icrc_inplace6(ip, len);
	memcpy(&csum, ip + 10, 2);
	memcpy(&ucsum, ip + IP_LEN + 6, 2);
	ip[1] = ip[8] = ip[10] = ip[11] = 0xff;
	ip[IP_LEN + 6] = ip[IP_LEN + 7] = ip[IP_LEN + UDP_LEN + 4] = 0xff;
	crc = crc32(ones_crc, ip, len);
	ip[1] = tos;
	ip[8] = ttl;
	memcpy(ip + 10, &csum, 2);
	memcpy(ip + IP_LEN + 6, &ucsum, 2);
	ip[IP_LEN + UDP_LEN + 4] = b4;
	return crc;
}

static int
gid_is_v4(const union ibv_gid *gid)
{
	static const uint8_t v4map[12] = { 0, 0, 0, 0, 0, 0, 0, 0,
					   0, 0, 0xff, 0xff };

	return memcmp(gid->raw, v4map, sizeof(v4map)) == 0;
}

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
	/* RC and UC frames are ECN-capable under DCQCN (ib_dcqcn.c) unless
	 * the application chose the ECN bits; an AH's (UD) are not.
	 */
	if (qpn != 0 && !dev->conf.dcqcn.disabled && (tclass & 3) == 0)
		tclass |= IB_ECN_ECT0;
	if (sidx >= dev->ngid)
		return EINVAL;
	sgid = &dev->gid[sidx];
	h->ip6 = !gid_is_v4(sgid);
	if (h->ip6 != !gid_is_v4(dgid))
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
	  uint32_t paylen, uint8_t **bth, uint8_t **payload);

/* NULL too while the path's destination MAC is not known yet. */
struct rte_mbuf *
ib_pkt_alloc(struct ib_qp *qp, uint8_t opcode, uint32_t paylen,
	     uint8_t **bth, uint8_t **payload)
{
	if (ib_hdr_resolve(qp->dev, &qp->path.hdr) != 0)
		return NULL;
	return pkt_alloc(qp, &qp->path.hdr, opcode, paylen, bth, payload);
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
	return pkt_alloc(qp, av, opcode, paylen, bth, payload);
}

/*
 * The mbuf records where the IP header starts (l2_len) and its length
 * (l3_len): ib_tx and the fault hook find the ICRC span and the BTH there.
 */
static struct rte_mbuf *
pkt_alloc(struct ib_qp *qp, const struct ib_encap *h, uint8_t opcode,
	  uint32_t paylen, uint8_t **bth, uint8_t **payload)
{
	const struct ib_opcode_info *info = &ib_opcode[opcode];
	struct ib_dev *dev = qp->dev;
	unsigned int pad = (-paylen) & 3;
	uint32_t udplen = UDP_LEN + info->length + paylen + pad + IB_ICRC_LEN;
	uint32_t total = h->len - UDP_LEN + udplen;
	struct rte_udp_hdr *udp;
	struct rte_mbuf *m;
	uint8_t *p;

	m = rte_pktmbuf_alloc(dev->pool);
	if (unlikely(m == NULL)) {
		ib_count(dev, IB_CNT_TX_DROP_NOMBUF);
		return NULL;
	}
	p = (uint8_t *)rte_pktmbuf_append(m, total);
	memcpy(p, h->b, h->len);
	m->l2_len = h->ip_off;
	udp = (void *)(p + h->len - UDP_LEN);
	udp->src_port = rte_cpu_to_be_16(qp->udp_sport);
	udp->dgram_len = rte_cpu_to_be_16(udplen);
	if (likely(!h->ip6)) {
		struct rte_ipv4_hdr *ip = (void *)(p + h->ip_off);

		m->l3_len = IP_LEN;
		ip->total_length = rte_cpu_to_be_16(IP_LEN + udplen);
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	} else {
		struct rte_ipv6_hdr *ip6 = (void *)(p + h->ip_off);

		m->l3_len = IP6_LEN;
		ip6->payload_len = rte_cpu_to_be_16(udplen);
	}
	qp->rp.tx_bytes += total;
	if (unlikely(qp->rp.limited))
		ib_dcqcn_sent(qp, total);
	*bth = p + h->len;
	*payload = *bth + info->length;
	if (pad)
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
ib_tx_room(const struct ib_dev *dev)
{
	return IB_TX_PENDING - dev->tx_n;
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

void
ib_tx_flush(struct ib_dev *dev)
{
	uint16_t sent;

	if (unlikely(dev->fault != NULL)) {
		/* Frames a port refused earlier were faulted already. */
		dev->tx_n = dev->tx_clean +
			    ib_fault_apply(dev, dev->tx_pending + dev->tx_clean,
					   dev->tx_n - dev->tx_clean,
					   IB_TX_PENDING - dev->tx_clean);
	}
	if (dev->tx_n == 0)
		return;
	/* Before the port owns them (it may free them at once); frames it
	 * refuses stay at the head, already recorded.
	 */
	if (unlikely(dev->capture != NULL) && dev->tx_n > dev->tx_clean)
		capture(dev, dev->tx_pending + dev->tx_clean,
			(uint16_t)(dev->tx_n - dev->tx_clean));
	sent = rte_eth_tx_burst(dev->port_id, 0, dev->tx_pending,
				(uint16_t)dev->tx_n);
	dev->cnt[IB_CNT_TX_PKTS] += sent;
	if (sent < dev->tx_n)
		memmove(dev->tx_pending, dev->tx_pending + sent,
			(dev->tx_n - sent) * sizeof(dev->tx_pending[0]));
	dev->tx_n -= sent;
	dev->tx_clean = dev->tx_n;
}

/*
 * Queue a frame as it is (ARP); the port takes it at the next flush. A
 * burst's worth is handed over at once; a port that still takes nothing
 * makes the frame a drop.
 */
int
ib_tx_raw(struct ib_dev *dev, struct rte_mbuf *m)
{
	if (dev->tx_n >= IB_TX_BURST)
		ib_tx_flush(dev);
	if (unlikely(dev->tx_n == IB_TX_PENDING)) {
		ib_count(dev, IB_CNT_TX_DROP_FULL);
		rte_pktmbuf_free(m);
		return -ENOBUFS;
	}
	dev->tx_pending[dev->tx_n++] = m;
	return 0;
}

/* Seal a RoCEv2 packet with its ICRC and queue it. */
int
ib_tx(struct ib_dev *dev, struct rte_mbuf *m)
{
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	uint32_t iplen = rte_pktmbuf_data_len(m) - m->l2_len;
	uint32_t crc = ib_icrc_inplace(p + m->l2_len, iplen - IB_ICRC_LEN);
	rte_le32_t le = rte_cpu_to_le_32(crc);

	memcpy(p + m->l2_len + iplen - IB_ICRC_LEN, &le, IB_ICRC_LEN);
	return ib_tx_raw(dev, m);
}

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

/* A UD packet to a multicast group: one copy per attached QP. */
static void
rx_multicast(struct ib_dev *dev, uint32_t ip, uint32_t qpn, struct ib_pkt *p)
{
	struct ib_mcast_group *g = ib_mcast_lookup(dev, ip);
	uint32_t i;

	if (qpn != IB_QPN_MASK || !(p->mask & IB_M_UD) || g == NULL) {
		ib_count(dev, IB_CNT_RX_MCAST_NO_GROUP);
		return;
	}
	for (i = 0; i < g->nqp; i++)
		rx_deliver(dev, g->qps[i], p);
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
 * Receive one frame. Checks run in the order of IBA 9.6 (packet header
 * validation) after the RoCEv2 encapsulation (802.1Q tag, IPv4 or IPv6,
 * UDP): length against the opcode table, ICRC, transport version, P_Key,
 * destination QP, QP type and state; then the packet goes to the
 * responder or the completer.
 */
void
ib_rx(struct ib_dev *dev, struct rte_mbuf *m)
{
	const struct ib_opcode_info *info;
	const struct ib_bth *b;
	struct ib_pkt pkt;
	struct ib_qp *qp;
	uint32_t len, off, l3len, udplen, qpn, paylen, crc, wire_crc;
	uint16_t type = 0;
	uint8_t *p, *l3, *bth;

	ib_count(dev, IB_CNT_RX_PKTS);
	if (unlikely(m->nb_segs > 1) && rte_pktmbuf_linearize(m) != 0)
		goto drop_len;
	p = rte_pktmbuf_mtod(m, uint8_t *);
	len = rte_pktmbuf_data_len(m);
	off = rx_l2(dev, p, len, &type);
	if (unlikely(off == 0))
		goto free;
	l3 = p + off;
	if (unlikely(rx_is_neigh(l3, len - off, type)) && ib_neigh_rx(dev, m))
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
	memcpy(&wire_crc, l3 + l3len + udplen - IB_ICRC_LEN, IB_ICRC_LEN);
	crc = ib_icrc_inplace(l3, l3len + udplen - IB_ICRC_LEN);
	if (crc != rte_le_to_cpu_32(wire_crc)) {
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
	paylen = udplen - UDP_LEN - info->length - IB_ICRC_LEN - bth_pad(b);
	ib_pkt_parse(&pkt, bth, paylen, l3);
	if (unlikely(l3len == IP6_LEN && l3[24] == 0xff)) {
		ib_count(dev, IB_CNT_RX_MCAST6);	/* no IPv6 groups */
		goto free;
	}
	if (unlikely(l3len == IP_LEN &&
		     ib_ipv4_is_mcast(((struct rte_ipv4_hdr *)l3)->dst_addr))) {
		rx_multicast(dev, ((struct rte_ipv4_hdr *)l3)->dst_addr, qpn,
			     &pkt);
		goto free;
	}
	qp = qpn < IB_MAX_QP ?
		__atomic_load_n(&dev->qp_tbl[qpn], __ATOMIC_ACQUIRE) : NULL;
	if (qp == NULL) {
		ib_count(dev, IB_CNT_RX_NO_QP);
		goto free;
	}
	rx_deliver(dev, qp, &pkt);
	goto free;

not_roce:
	ib_count(dev, IB_CNT_RX_NOT_ROCE);
	goto free;
drop_len:
	ib_count(dev, IB_CNT_RX_BAD_LEN);
free:
	rte_pktmbuf_free(m);
}
