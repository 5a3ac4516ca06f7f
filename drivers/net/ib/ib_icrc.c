/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * The RoCEv2 ICRC (IBA Annex A17.3.3), by ISA-L's PCLMUL CRC-32.
 */
#include <stdint.h>
#include <isa-l/crc.h>
#include <rte_common.h>
#include <rte_mbuf.h>

#include "ib_hca.h"

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

/*
 * The same over a chained packet (ib_tx.c's zero-copy frames): the masked
 * headers of its first segment from @ip, the other segments as they are,
 * up to the ICRC in the last four bytes of the last one, where *@icrc
 * points.
 */
uint32_t
ib_icrc_chain(struct rte_mbuf *m, uint8_t *ip, uint8_t **icrc)
{
	uint32_t crc = ib_icrc_inplace(ip, (uint32_t)(rte_pktmbuf_mtod(m,
			uint8_t *) + rte_pktmbuf_data_len(m) - ip));
	struct rte_mbuf *s;
	uint8_t *p;

	for (s = m->next; s->next != NULL; s = s->next)
		crc = crc32(crc, rte_pktmbuf_mtod(s, uint8_t *),
			    rte_pktmbuf_data_len(s));
	p = rte_pktmbuf_mtod(s, uint8_t *);
	*icrc = p + rte_pktmbuf_data_len(s) - IB_ICRC_LEN;
	return crc32(crc, p, rte_pktmbuf_data_len(s) - IB_ICRC_LEN);
}
