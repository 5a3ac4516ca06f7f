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

/* The dynamic mbuf flag of frames a device sent unsealed (icrc_local in
 * ib_dev.c); 0 while no device does.
 */
uint64_t ib_unsealed;

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

/*
 * The variant fields of a frame's headers, kept while they are ones for
 * the CRC (IPv4: TOS, TTL, header checksum; IPv6: the first word's traffic
 * class and flow label, the hop limit; both: UDP checksum, BTH resv8a).
 */
struct icrc_saved {
	uint8_t *ip;
	uint32_t len;
	uint32_t crc;
	uint8_t v6;
	uint8_t b[4];		/* IPv4: TOS, TTL; IPv6: the first word */
	uint8_t hop;		/* IPv6 */
	uint8_t b4;		/* BTH resv8a */
	uint16_t csum;		/* IPv4 */
	uint16_t ucsum;
};

static inline void
icrc_mask(uint8_t *ip, uint32_t len, struct icrc_saved *s)
{
	uint32_t l3;

	s->ip = ip;
	s->len = len;
	s->v6 = icrc_is_ip6(ip, len);
	l3 = s->v6 ? IP6_LEN : IP_LEN;
	s->b4 = ip[l3 + UDP_LEN + 4];
	memcpy(&s->ucsum, ip + l3 + 6, 2);
	if (s->v6) {
		memcpy(s->b, ip, 4);
		s->hop = ip[7];
		ip[0] |= 0x0f;
		ip[1] = ip[2] = ip[3] = ip[7] = 0xff;
	} else {
		s->b[0] = ip[1];
		s->b[1] = ip[8];
		memcpy(&s->csum, ip + 10, 2);
		ip[1] = ip[8] = ip[10] = ip[11] = 0xff;
	}
	ip[l3 + 6] = ip[l3 + 7] = ip[l3 + UDP_LEN + 4] = 0xff;
}

static inline void
icrc_unmask(const struct icrc_saved *s)
{
	uint8_t *ip = s->ip;
	uint32_t l3 = s->v6 ? IP6_LEN : IP_LEN;

	if (s->v6) {
		memcpy(ip, s->b, 4);
		ip[7] = s->hop;
	} else {
		ip[1] = s->b[0];
		ip[8] = s->b[1];
		memcpy(ip + 10, &s->csum, 2);
	}
	memcpy(ip + l3 + 6, &s->ucsum, 2);
	ip[l3 + UDP_LEN + 4] = s->b4;
}

uint32_t
ib_icrc_inplace(uint8_t *ip, uint32_t len)
{
	struct icrc_saved s;
	uint32_t crc;

	icrc_mask(ip, len, &s);
	crc = crc32(ones_crc, ip, len);
	icrc_unmask(&s);
	return crc;
}

/*
 * The ICRCs of up to ICRC_BATCH frames at s[i].ip, s[i].len (as
 * ib_icrc_inplace takes them) into s[i].crc: all masked, then all hashed,
 * then all put back. A CRC that loads a header right after the byte
 * stores that masked it waits for them to reach the cache (its wide loads
 * cannot take narrow stores from the store buffer), and one CRC's chain of
 * carry-less multiplies leaves the core idle that the next independent one
 * fills. The 124-byte IPv4 frame of a 64 B WRITE: about 60 cycles each one
 * by one, 23 in rounds of 16 (a benchmark of the two loops), 25-30 in the
 * engine (the TSC around ib_icrc_seal, memif client).
 */
#define ICRC_BATCH	16

static void
icrc_round(struct icrc_saved *s, uint32_t k)
{
	uint32_t i;

	for (i = 0; i < k; i++)
		icrc_mask(s[i].ip, s[i].len, &s[i]);
	for (i = 0; i < k; i++)
		s[i].crc = crc32(ones_crc, s[i].ip, s[i].len);
	for (i = 0; i < k; i++)
		icrc_unmask(&s[i]);
}

/*
 * Seal @n linear RoCEv2 frames built by the engine (ib_tx): each one's
 * ICRC into its last four bytes, in rounds (icrc_round).
 */
void
ib_icrc_seal(struct rte_mbuf *const *m, uint32_t n)
{
	struct icrc_saved s[ICRC_BATCH];
	uint32_t base, i, k;
	rte_le32_t le;

	for (base = 0; base < n; base += k) {
		k = RTE_MIN(n - base, (uint32_t)ICRC_BATCH);
		for (i = 0; i < k; i++) {
			struct rte_mbuf *f = m[base + i];

			s[i].ip = rte_pktmbuf_mtod(f, uint8_t *) + f->l2_len;
			s[i].len = rte_pktmbuf_data_len(f) - f->l2_len -
				   IB_ICRC_LEN;
		}
		icrc_round(s, k);
		for (i = 0; i < k; i++) {
			le = rte_cpu_to_le_32(s[i].crc);
			memcpy(s[i].ip + s[i].len, &le, IB_ICRC_LEN);
		}
	}
}

/*
 * The ICRCs of @n received frames (ib_rx_burst): @ip[i], @len[i] as
 * ib_icrc_inplace takes them, into @crc[i]; in rounds (icrc_round).
 */
void
ib_icrc_many(uint8_t *const *ip, const uint32_t *len, uint32_t *crc,
	     uint32_t n)
{
	struct icrc_saved s[ICRC_BATCH];
	uint32_t base, i, k;

	for (base = 0; base < n; base += k) {
		k = RTE_MIN(n - base, (uint32_t)ICRC_BATCH);
		for (i = 0; i < k; i++) {
			s[i].ip = ip[base + i];
			s[i].len = len[base + i];
		}
		icrc_round(s, k);
		for (i = 0; i < k; i++)
			crc[base + i] = s[i].crc;
	}
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
