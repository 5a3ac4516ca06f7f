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
#define IP_LEN		20
#define UDP_LEN		8
#define IP_OFF		ETH_LEN
#define UDP_OFF		(ETH_LEN + IP_LEN)
#define BTH_OFF		(ETH_LEN + IP_LEN + UDP_LEN)

/*
 * ICRC over the masked pseudo packet: 8 bytes of ones stand for the LRH
 * (A17.3.3); IP TOS, TTL and checksum, UDP checksum and the BTH resv8a byte
 * are variant fields and are hashed as ones. @len counts from the IP header
 * to the end of the payload and pad, the ICRC itself excluded.
 */
uint32_t
ib_icrc(const uint8_t *ip, uint32_t len)
{
	uint8_t ps[8 + IP_LEN + UDP_LEN + IB_BTH_LEN];
	uint32_t crc;

	memset(ps, 0xff, 8);
	memcpy(ps + 8, ip, IP_LEN + UDP_LEN + IB_BTH_LEN);
	ps[8 + 1] = 0xff;			/* TOS */
	ps[8 + 8] = 0xff;			/* TTL */
	ps[8 + 10] = ps[8 + 11] = 0xff;		/* header checksum */
	ps[8 + IP_LEN + 6] = ps[8 + IP_LEN + 7] = 0xff;	/* UDP checksum */
	ps[8 + IP_LEN + UDP_LEN + 4] = 0xff;	/* BTH resv8a */
	crc = crc32_gzip_refl(0, ps, sizeof(ps));
	return crc32_gzip_refl(crc, ip + IP_LEN + UDP_LEN + IB_BTH_LEN,
			       len - (IP_LEN + UDP_LEN + IB_BTH_LEN));
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

	ones_crc = crc32_gzip_refl(0, ones, sizeof(ones));
}

uint32_t
ib_icrc_inplace(uint8_t *ip, uint32_t len)
{
	uint8_t tos = ip[1], ttl = ip[8], b4 = ip[IP_LEN + UDP_LEN + 4];
	uint16_t csum, ucsum;
	uint32_t crc;

	memcpy(&csum, ip + 10, 2);
	memcpy(&ucsum, ip + IP_LEN + 6, 2);
	ip[1] = ip[8] = ip[10] = ip[11] = 0xff;
	ip[IP_LEN + 6] = ip[IP_LEN + 7] = ip[IP_LEN + UDP_LEN + 4] = 0xff;
	crc = crc32_gzip_refl(ones_crc, ip, len);
	ip[1] = tos;
	ip[8] = ttl;
	memcpy(ip + 10, &csum, 2);
	memcpy(ip + IP_LEN + 6, &ucsum, 2);
	ip[IP_LEN + UDP_LEN + 4] = b4;
	return crc;
}

static int
gid_to_ipv4(const union ibv_gid *gid, uint32_t *ip)
{
	static const uint8_t v4map[12] = { 0, 0, 0, 0, 0, 0, 0, 0,
					   0, 0, 0xff, 0xff };

	if (memcmp(gid->raw, v4map, sizeof(v4map)) != 0)
		return -1;
	memcpy(ip, &gid->raw[12], 4);
	return 0;
}

/* UDP source port for ECMP entropy: 0xC000 plus a hash of the QPN. */
uint16_t
ib_udp_sport(uint32_t qpn)
{
	uint32_t h = qpn * 0x9e3779b1u;

	return 0xc000 | ((h >> 18) & 0x3fff);
}

/*
 * Resolve an address vector into the header template of the QP's primary
 * path. Without a GRH the destination is this device itself (loopback); a
 * peer's MAC needs neighbour resolution, which this device does not have yet.
 */
int
ib_path_set(struct ib_dev *dev, uint32_t qpn, const struct ibv_ah_attr *ah,
	    uint8_t hdr[IB_HDR_ROOM], uint32_t *dipp, uint8_t *resolved)
{
	struct rte_ether_hdr *eth = (void *)hdr;
	struct rte_ipv4_hdr *ip = (void *)(hdr + IP_OFF);
	struct rte_udp_hdr *udp = (void *)(hdr + UDP_OFF);
	uint32_t dip = dev->conf.ip;
	uint8_t ttl = 64, tos = 0;

	*resolved = 1;
	/* RoCE addresses by GID: only the loopback device, whose one
	 * destination is itself, lets a program leave the GRH out.
	 */
	if (!ah->is_global && !dev->conf.loopback)
		return EINVAL;
	if (ah->is_global) {
		if (gid_to_ipv4(&ah->grh.dgid, &dip) != 0)
			return EAFNOSUPPORT;
		if (ah->grh.hop_limit > 1)
			ttl = ah->grh.hop_limit;
		tos = ah->grh.traffic_class;
	}
	if (ib_ipv4_is_mcast(dip)) {
		const uint8_t *b = (const uint8_t *)&dip;
		struct rte_ether_addr m = {
			{ 0x01, 0x00, 0x5e, b[1] & 0x7f, b[2], b[3] } };

		rte_ether_addr_copy(&m, &eth->dst_addr);
	} else if (dip == dev->conf.ip) {
		rte_ether_addr_copy(&dev->mac, &eth->dst_addr);
	} else {
		/* The engine fills the MAC in once ARP has it; until then
		 * nothing is sent on this path.
		 */
		memset(&eth->dst_addr, 0, sizeof(eth->dst_addr));
		*resolved = 0;
	}
	rte_ether_addr_copy(&dev->mac, &eth->src_addr);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	memset(ip, 0, sizeof(*ip));
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->type_of_service = tos;
	ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = ttl;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = dev->conf.ip;
	ip->dst_addr = dip;
	udp->src_port = rte_cpu_to_be_16(ib_udp_sport(qpn));
	udp->dst_port = rte_cpu_to_be_16(IB_UDP_PORT);
	udp->dgram_cksum = 0;
	*dipp = dip;
	return 0;
}

/* Engine: put the destination MAC into a template once it is known. */
int
ib_hdr_resolve(struct ib_dev *dev, uint8_t *hdr, uint32_t dip,
	       uint8_t *resolved)
{
	struct rte_ether_addr mac;
	int ret;

	if (likely(*resolved))
		return 0;
	ret = ib_neigh_lookup(dev, dip, &mac);
	if (ret != 0) {
		ib_count(dev, IB_CNT_TX_WAIT_NEIGH);
		return ret;
	}
	rte_ether_addr_copy(&mac, &((struct rte_ether_hdr *)hdr)->dst_addr);
	*resolved = 1;
	return 0;
}

/*
 * Allocate a packet of @opcode with @paylen payload bytes on the QP's path.
 * Returns the mbuf with its BTH at *bth (to be filled by bth_set) and the
 * payload at *payload; NULL when the pool is empty.
 */
static struct rte_mbuf *
pkt_alloc(struct ib_qp *qp, const uint8_t *hdr, uint8_t opcode,
	  uint32_t paylen, uint8_t **bth, uint8_t **payload);

/* NULL too while the path's destination MAC is not known yet. */
struct rte_mbuf *
ib_pkt_alloc(struct ib_qp *qp, uint8_t opcode, uint32_t paylen,
	     uint8_t **bth, uint8_t **payload)
{
	if (ib_hdr_resolve(qp->dev, qp->path.hdr, qp->path.dip,
			   &qp->path.resolved) != 0)
		return NULL;
	return pkt_alloc(qp, qp->path.hdr, opcode, paylen, bth, payload);
}

/* The same, to the destination of an address handle. */
struct rte_mbuf *
ib_pkt_alloc_ah(struct ib_qp *qp, struct ib_ah *ah, uint8_t opcode,
		uint32_t paylen, uint8_t **bth, uint8_t **payload)
{
	if (ib_hdr_resolve(qp->dev, ah->hdr, ah->dip, &ah->resolved) != 0)
		return NULL;
	return pkt_alloc(qp, ah->hdr, opcode, paylen, bth, payload);
}

static struct rte_mbuf *
pkt_alloc(struct ib_qp *qp, const uint8_t *hdr, uint8_t opcode,
	  uint32_t paylen, uint8_t **bth, uint8_t **payload)
{
	const struct ib_opcode_info *info = &ib_opcode[opcode];
	struct ib_dev *dev = qp->dev;
	unsigned int pad = (-paylen) & 3;
	uint32_t total = BTH_OFF + info->length + paylen + pad + IB_ICRC_LEN;
	struct rte_ipv4_hdr *ip;
	struct rte_udp_hdr *udp;
	struct rte_mbuf *m;
	uint8_t *p;

	m = rte_pktmbuf_alloc(dev->pool);
	if (unlikely(m == NULL)) {
		ib_count(dev, IB_CNT_TX_DROP_NOMBUF);
		return NULL;
	}
	p = (uint8_t *)rte_pktmbuf_append(m, total);
	memcpy(p, hdr, BTH_OFF);
	ip = (void *)(p + IP_OFF);
	udp = (void *)(p + UDP_OFF);
	udp->src_port = rte_cpu_to_be_16(qp->udp_sport);
	ip->total_length = rte_cpu_to_be_16(total - ETH_LEN);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->dgram_len = rte_cpu_to_be_16(total - ETH_LEN - IP_LEN);
	*bth = p + BTH_OFF;
	*payload = p + BTH_OFF + info->length;
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
	fwrite(hdr, sizeof(hdr), 1, dev->capture);
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
	sent = rte_eth_tx_burst(dev->port_id, 0, dev->tx_pending,
				(uint16_t)dev->tx_n);
	if (unlikely(dev->capture != NULL) && sent)
		capture(dev, dev->tx_pending, sent);
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
	uint32_t iplen = rte_pktmbuf_data_len(m) - ETH_LEN;
	uint32_t crc = ib_icrc_inplace(p + IP_OFF, iplen - IB_ICRC_LEN);
	rte_le32_t le = rte_cpu_to_le_32(crc);

	memcpy(p + ETH_LEN + iplen - IB_ICRC_LEN, &le, IB_ICRC_LEN);
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

/* The QP-level checks (type, state), then the responder or completer. */
static void
rx_deliver(struct ib_dev *dev, struct ib_qp *qp,
	   const struct ib_opcode_info *info, uint8_t *bth, uint32_t paylen)
{
	int state = qp->attr.qp_state;

	if (!qp_accepts(qp, info->mask)) {
		ib_count(dev, IB_CNT_RX_BAD_TRANSPORT);
		return;
	}
	if (state < IBV_QPS_RTR || state == IBV_QPS_ERR ||
	    ((info->mask & IB_M_RESP) && state == IBV_QPS_RTR)) {
		ib_count(dev, IB_CNT_RX_BAD_STATE);
		return;
	}
	if (info->mask & IB_M_RESP)
		ib_comp_rx(qp, bth, paylen);
	else
		ib_resp_rx(qp, bth, paylen);
}

/* A UD packet to a multicast group: one copy per attached QP. */
static void
rx_multicast(struct ib_dev *dev, uint32_t ip, uint32_t qpn,
	     const struct ib_opcode_info *info, uint8_t *bth, uint32_t paylen)
{
	struct ib_mcast_group *g = ib_mcast_lookup(dev, ip);
	uint32_t i;

	if (qpn != IB_QPN_MASK || !(info->mask & IB_M_UD) || g == NULL) {
		ib_count(dev, IB_CNT_RX_MCAST_NO_GROUP);
		return;
	}
	for (i = 0; i < g->nqp; i++)
		rx_deliver(dev, g->qps[i], info, bth, paylen);
}

/*
 * Receive one frame. Checks run in the order of IBA 9.6 (packet header
 * validation) after the RoCEv2 encapsulation: length against the opcode
 * table, ICRC, transport version, P_Key, destination QP, QP type and
 * state; then the packet goes to the responder or the completer.
 */
void
ib_rx(struct ib_dev *dev, struct rte_mbuf *m)
{
	const struct ib_opcode_info *info;
	const struct rte_ether_hdr *eth;
	const struct rte_ipv4_hdr *ip;
	const struct rte_udp_hdr *udp;
	struct ib_qp *qp;
	uint32_t len, iplen, qpn, paylen, crc, wire_crc;
	uint8_t *p, *bth;

	ib_count(dev, IB_CNT_RX_PKTS);
	if (unlikely(m->nb_segs > 1) && rte_pktmbuf_linearize(m) != 0)
		goto drop_len;
	p = rte_pktmbuf_mtod(m, uint8_t *);
	len = rte_pktmbuf_data_len(m);
	eth = (const void *)p;
	if (len >= RTE_ETHER_HDR_LEN &&
	    eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP) &&
	    ib_neigh_rx(dev, m))
		return;
	if (len < BTH_OFF + IB_BTH_LEN + IB_ICRC_LEN)
		goto not_roce;
	ip = (const void *)(p + IP_OFF);
	udp = (const void *)(p + UDP_OFF);
	if (eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) ||
	    ip->version_ihl != RTE_IPV4_VHL_DEF ||
	    ip->next_proto_id != IPPROTO_UDP ||
	    (ip->fragment_offset & rte_cpu_to_be_16(RTE_IPV4_HDR_MF_FLAG |
						     RTE_IPV4_HDR_OFFSET_MASK)) ||
	    udp->dst_port != rte_cpu_to_be_16(IB_UDP_PORT) ||
	    (ip->dst_addr != dev->conf.ip && !ib_ipv4_is_mcast(ip->dst_addr)))
		goto not_roce;
	iplen = rte_be_to_cpu_16(ip->total_length);
	if (iplen + ETH_LEN > len ||
	    rte_be_to_cpu_16(udp->dgram_len) != iplen - IP_LEN ||
	    iplen < IP_LEN + UDP_LEN + IB_BTH_LEN + IB_ICRC_LEN)
		goto drop_len;

	bth = p + BTH_OFF;
	info = &ib_opcode[bth_opcode((struct ib_bth *)bth)];
	if (info->mask == 0) {
		ib_count(dev, IB_CNT_RX_BAD_OPCODE);
		goto free;
	}
	if (iplen < IP_LEN + UDP_LEN + info->length + IB_ICRC_LEN +
		    bth_pad((struct ib_bth *)bth))
		goto drop_len;
	memcpy(&wire_crc, p + ETH_LEN + iplen - IB_ICRC_LEN, IB_ICRC_LEN);
	crc = ib_icrc_inplace(p + IP_OFF, iplen - IB_ICRC_LEN);
	if (crc != rte_le_to_cpu_32(wire_crc)) {
		ib_count(dev, IB_CNT_RX_BAD_ICRC);
		goto free;
	}
	if (bth_tver((struct ib_bth *)bth) != 0) {
		ib_count(dev, IB_CNT_RX_BAD_VERSION);
		goto free;
	}
	if ((bth_pkey((struct ib_bth *)bth) & 0x7fff) != 0x7fff) {
		ib_count(dev, IB_CNT_RX_BAD_PKEY);
		goto free;
	}
	qpn = bth_qpn((struct ib_bth *)bth);
	paylen = iplen - IP_LEN - UDP_LEN - info->length - IB_ICRC_LEN -
		 bth_pad((struct ib_bth *)bth);
	if (unlikely(ib_ipv4_is_mcast(ip->dst_addr))) {
		rx_multicast(dev, ip->dst_addr, qpn, info, bth, paylen);
		goto free;
	}
	qp = qpn < IB_MAX_QP ?
		__atomic_load_n(&dev->qp_tbl[qpn], __ATOMIC_ACQUIRE) : NULL;
	if (qp == NULL) {
		ib_count(dev, IB_CNT_RX_NO_QP);
		goto free;
	}
	rx_deliver(dev, qp, info, bth, paylen);
	goto free;

not_roce:
	ib_count(dev, IB_CNT_RX_NOT_ROCE);
	goto free;
drop_len:
	ib_count(dev, IB_CNT_RX_BAD_LEN);
free:
	rte_pktmbuf_free(m);
}
