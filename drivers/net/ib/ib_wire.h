/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef IB_WIRE_H
#define IB_WIRE_H

/*
 * RoCEv2 wire format (IBA Vol 1 ch. 9 and Annex A17).
 *
 * Naming rule: bth_*()/reth_*()/aeth_*()... decode one raw header given a
 * pointer to it (byte order handled here); pkt_*() in ib_pkt.h find a header
 * inside a received packet through the opcode table and call these.
 */

#include <stdint.h>
#include <string.h>
#include <rte_byteorder.h>
#include <rte_ip.h>

#define IB_UDP_PORT		4791
/* The encapsulation's header lengths (bytes). */
#define ETH_LEN			14	/* RTE_ETHER_HDR_LEN */
#define VLAN_LEN		4
#define IP_LEN			20	/* IPv4, no options */
#define IP6_LEN			40
#define UDP_LEN			8
/* ECN codepoints (RFC 3168), the low bits of the IP traffic class. */
#define IB_ECN_MASK		3
#define IB_ECN_ECT0		2
#define IB_ECN_CE		3
#define IB_DEFAULT_PKEY		0xffff
#define IB_PSN_MASK		0xffffffu
#define IB_QPN_MASK		0xffffffu
#define IB_ICRC_LEN		4

/* Extension header sizes (IBA 9.2 - 9.4). */
#define IB_BTH_LEN		12
#define IB_RETH_LEN		16
#define IB_AETH_LEN		4
#define IB_ATMETH_LEN		28
#define IB_ATMACK_LEN		8
#define IB_IMMDT_LEN		4
#define IB_IETH_LEN		4
#define IB_DETH_LEN		8

struct ib_bth {
	uint8_t opcode;
	uint8_t flags;		/* SE:1 M:1 PadCnt:2 TVer:4 */
	rte_be16_t pkey;
	rte_be32_t qpn;		/* F:1 B:1 resv:6 DestQP:24 */
	rte_be32_t apsn;	/* A:1 resv:7 PSN:24 */
} __rte_packed;

#define BTH_SE		0x80
#define BTH_MIG		0x40
#define BTH_PAD_SHIFT	4
#define BTH_PAD_MASK	0x30
#define BTH_ACKREQ	0x80000000u

struct ib_reth {
	rte_be64_t va;
	rte_be32_t rkey;
	rte_be32_t len;
} __rte_packed;

struct ib_atmeth {
	rte_be64_t va;
	rte_be32_t rkey;
	rte_be64_t swap_add;
	rte_be64_t compare;
} __rte_packed;

struct ib_deth {
	rte_be32_t qkey;
	rte_be32_t sqp;
} __rte_packed;

/* AETH syndrome classes (IBA 9.7.5.2, table 41). */
#define AETH_TYPE_MASK		0xe0
#define AETH_ACK		0x00
#define AETH_RNR_NAK		0x20
#define AETH_NAK		0x60
#define AETH_NAK_PSN_SEQ	0x60
#define AETH_NAK_INVALID	0x61
#define AETH_NAK_REM_ACCESS	0x62
#define AETH_NAK_REM_OP		0x63
#define AETH_NAK_INV_RD		0x64
#define AETH_CREDIT_INVALID	0x1f

static inline uint8_t
bth_opcode(const struct ib_bth *bth)
{
	return bth->opcode;
}

static inline int
bth_se(const struct ib_bth *bth)
{
	return !!(bth->flags & BTH_SE);
}

static inline unsigned int
bth_pad(const struct ib_bth *bth)
{
	return (bth->flags & BTH_PAD_MASK) >> BTH_PAD_SHIFT;
}

static inline unsigned int
bth_tver(const struct ib_bth *bth)
{
	return bth->flags & 0x0f;
}

static inline uint16_t
bth_pkey(const struct ib_bth *bth)
{
	return rte_be_to_cpu_16(bth->pkey);
}

static inline uint32_t
bth_qpn(const struct ib_bth *bth)
{
	return rte_be_to_cpu_32(bth->qpn) & IB_QPN_MASK;
}

static inline uint32_t
bth_psn(const struct ib_bth *bth)
{
	return rte_be_to_cpu_32(bth->apsn) & IB_PSN_MASK;
}

static inline int
bth_ackreq(const struct ib_bth *bth)
{
	return !!(rte_be_to_cpu_32(bth->apsn) & BTH_ACKREQ);
}

static inline void
bth_set(struct ib_bth *bth, uint8_t opcode, int se, unsigned int pad,
	uint16_t pkey, uint32_t qpn, int ackreq, uint32_t psn)
{
	bth->opcode = opcode;
	bth->flags = (se ? BTH_SE : 0) | (pad << BTH_PAD_SHIFT);
	bth->pkey = rte_cpu_to_be_16(pkey);
	bth->qpn = rte_cpu_to_be_32(qpn & IB_QPN_MASK);
	bth->apsn = rte_cpu_to_be_32((ackreq ? BTH_ACKREQ : 0) |
				     (psn & IB_PSN_MASK));
}

static inline uint64_t
reth_va(const struct ib_reth *r)
{
	return rte_be_to_cpu_64(r->va);
}

static inline uint32_t
reth_rkey(const struct ib_reth *r)
{
	return rte_be_to_cpu_32(r->rkey);
}

static inline uint32_t
reth_len(const struct ib_reth *r)
{
	return rte_be_to_cpu_32(r->len);
}

static inline void
reth_set(struct ib_reth *r, uint64_t va, uint32_t rkey, uint32_t len)
{
	r->va = rte_cpu_to_be_64(va);
	r->rkey = rte_cpu_to_be_32(rkey);
	r->len = rte_cpu_to_be_32(len);
}

/* The AETH sits at BTH + 12, 2 mod 4 in a frame: no aligned access. */
static inline uint32_t
aeth_word(const rte_be32_t *aeth)
{
	rte_be32_t v;

	memcpy(&v, aeth, sizeof(v));
	return rte_be_to_cpu_32(v);
}

static inline uint8_t
aeth_syndrome(const rte_be32_t *aeth)
{
	return aeth_word(aeth) >> 24;
}

static inline uint32_t
aeth_msn(const rte_be32_t *aeth)
{
	return aeth_word(aeth) & 0xffffff;
}

static inline void
aeth_set(rte_be32_t *aeth, uint8_t syndrome, uint32_t msn)
{
	rte_be32_t v = rte_cpu_to_be_32(((uint32_t)syndrome << 24) |
					(msn & 0xffffff));

	memcpy(aeth, &v, sizeof(v));
}

/* The ECN codepoint of an IPv4 or IPv6 header (the version nibble says). */
static inline unsigned int
ip_ecn(const uint8_t *l3)
{
	return (l3[0] >> 4) == 4 ? l3[1] & IB_ECN_MASK :
				   (l3[1] >> 4) & IB_ECN_MASK;
}

/*
 * Set it (the IPv4 header checksum follows; the ICRC masks the traffic
 * class, so it stays valid).
 */
static inline void
ip_set_ecn(uint8_t *l3, unsigned int ecn)
{
	if ((l3[0] >> 4) == 4) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)l3;

		ip->type_of_service = (ip->type_of_service & ~IB_ECN_MASK) |
				      ecn;
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	} else {
		l3[1] = (l3[1] & ~(IB_ECN_MASK << 4)) | ecn << 4;
	}
}

/* PSNs are 24-bit serial numbers: a is before b when b - a is in (0, 2^23). */
static inline int32_t
psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

/* A UD receive completion's sl over RoCE: the packet type (as mlx5). */
#define IB_WC_SL_ROCE_V2	0x8	/* UDP encapsulated */
#define IB_WC_SL_IPV6		0x1
#define IB_WC_SL_IPV4		0x2

#endif /* IB_WIRE_H */
