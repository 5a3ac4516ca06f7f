/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef IB_PKT_H
#define IB_PKT_H

/*
 * The packet layer: a received RoCEv2 packet as ib_rx parsed it once
 * (after its length, ICRC, version and P_Key checks), passed to the
 * responder and the completer, and one accessor per extension header.
 * The opcode table says which headers a packet has and where; an
 * accessor for a header the opcode does not carry must not be called.
 */
#include <stdint.h>
#include <string.h>

#include "ib_opcode.h"
#include "ib_wire.h"

struct ib_pkt {
	uint8_t *bth;			/* the frame's BTH, in the mbuf */
	const struct ib_opcode_info *info;
	uint32_t mask;			/* info->mask */
	uint8_t opcode;
	uint32_t psn;
	uint8_t *payload;		/* past the extension headers */
	uint32_t paylen;		/* payload bytes, pad excluded */
	const uint8_t *ip;		/* its IPv4 or IPv6 header */
	uint8_t *addr;			/* responder: where the RETH/AtomicETH
					 * points, once the rkey was checked */
};

/* Fill @p from the BTH at @bth (the opcode known valid). */
static inline void
ib_pkt_parse(struct ib_pkt *p, uint8_t *bth, uint32_t paylen,
	     const uint8_t *ip)
{
	const struct ib_bth *b = (const struct ib_bth *)bth;

	p->bth = bth;
	p->opcode = bth_opcode(b);
	p->info = &ib_opcode[p->opcode];
	p->mask = p->info->mask;
	p->psn = bth_psn(b);
	p->payload = bth + p->info->length;
	p->paylen = paylen;
	p->ip = ip;
	p->addr = NULL;
}

static inline const struct ib_bth *
pkt_bth(const struct ib_pkt *p)
{
	return (const struct ib_bth *)p->bth;
}

static inline int
pkt_se(const struct ib_pkt *p)
{
	return bth_se(pkt_bth(p));
}

static inline int
pkt_ackreq(const struct ib_pkt *p)
{
	return bth_ackreq(pkt_bth(p));
}

/* Extension header @h of the packet (its mask has the bit). */
static inline uint8_t *
pkt_hdr(const struct ib_pkt *p, enum ib_hdr h)
{
	return p->bth + p->info->offset[h];
}

static inline const struct ib_reth *
pkt_reth(const struct ib_pkt *p)
{
	return (const struct ib_reth *)pkt_hdr(p, IB_HDR_RETH);
}

static inline const struct ib_atmeth *
pkt_atmeth(const struct ib_pkt *p)
{
	return (const struct ib_atmeth *)pkt_hdr(p, IB_HDR_ATMETH);
}

static inline const struct ib_deth *
pkt_deth(const struct ib_pkt *p)
{
	return (const struct ib_deth *)pkt_hdr(p, IB_HDR_DETH);
}

static inline uint8_t
pkt_aeth_syndrome(const struct ib_pkt *p)
{
	return aeth_syndrome((const rte_be32_t *)pkt_hdr(p, IB_HDR_AETH));
}

static inline uint32_t
pkt_aeth_msn(const struct ib_pkt *p)
{
	return aeth_msn((const rte_be32_t *)pkt_hdr(p, IB_HDR_AETH));
}

/* ImmDt as it travels (network order), for struct ibv_wc's imm_data. */
static inline rte_be32_t
pkt_immdt(const struct ib_pkt *p)
{
	rte_be32_t v;

	memcpy(&v, pkt_hdr(p, IB_HDR_IMMDT), 4);
	return v;
}

/* The IETH's rkey to invalidate, in host order. */
static inline uint32_t
pkt_ieth_rkey(const struct ib_pkt *p)
{
	rte_be32_t v;

	memcpy(&v, pkt_hdr(p, IB_HDR_IETH), 4);
	return rte_be_to_cpu_32(v);
}

/* The original value an ATOMIC ACKNOWLEDGE carries (network order). */
static inline rte_be64_t
pkt_atmack(const struct ib_pkt *p)
{
	rte_be64_t v;

	memcpy(&v, pkt_hdr(p, IB_HDR_ATMACK), 8);
	return v;
}

/* The ECN codepoint of its IP header (IPv4 or IPv6). */
static inline unsigned int
pkt_ecn(const struct ib_pkt *p)
{
	return ip_ecn(p->ip);
}

#endif
