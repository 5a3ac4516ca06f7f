/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef DPIB_TEST_ROCE_FRAME_H
#define DPIB_TEST_ROCE_FRAME_H

/*
 * Crafted RoCEv2 frames for tests that attack the receive path as a peer
 * would: frame() builds Ethernet + IPv4 + UDP + BTH + extension headers +
 * payload from any source to the loopback device (127.0.0.1), with
 * lengths, pad and a correct ICRC (the driver's ib_icrc: link ib_dep);
 * inject_sync() hands it to dpib_inject() and returns once the engine has
 * handled it; last_ack_syndrome() reads what dpib answered off its
 * capture (DPIB_CAPTURE).
 */
#include <arpa/inet.h>

#include "verbs_util.h"
#include "dpib.h"
#include "pcap.h"
#include "ib_hca.h"

#ifndef WAIT
#define WAIT		5.0
#endif

static inline uint64_t
counter(struct pair *p, const char *name)
{
	return dev_counter(p->ctx, name);
}

/* Queue a marker frame (not RoCE) and wait until it is counted. */
static inline void
marker_sync(struct pair *p)
{
	static const uint8_t marker[60] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					    0x02, 0, 0, 0, 0, 9, 0x88, 0xb5 };
	uint64_t seen = counter(p, "rx_drop_not_roce");
	struct ibv_wc wc;
	double end = check_now() + WAIT;

	CHECK(dpib_inject(p->ctx, marker, sizeof(marker)) == 0, "inject");
	while (counter(p, "rx_drop_not_roce") == seen && check_now() < end)
		CHECK(ibv_poll_cq(p->cq[0], 0, &wc) == 0, "poll");
	CHECK(counter(p, "rx_drop_not_roce") > seen, "injected frame not taken");
}

/*
 * Queue @f and a marker behind it; once the marker is counted @f has been
 * handled. A second marker, taken in a later engine pass, makes sure that
 * what @f caused was sent too (ACKs leave at the end of a receive burst,
 * the capture is written when the port takes the frames). Polling nothing
 * drives an inline engine.
 */
static inline void
inject_sync(struct pair *p, const uint8_t *f, uint32_t len)
{
	CHECK(dpib_inject(p->ctx, f, len) == 0, "inject");
	marker_sync(p);
	marker_sync(p);
}

/*
 * A RoCEv2 frame from @src (IPv4, network order) to 127.0.0.1: BTH of
 * @op to @qpn at @psn, then @ext (extension headers) and @pay; lengths,
 * pad and ICRC filled. Returns its length.
 */
static inline uint32_t
frame(uint8_t *f, uint32_t src, uint8_t op, uint32_t qpn, uint32_t psn,
      const void *ext, uint32_t extlen, const void *pay, uint32_t paylen)
{
	uint32_t pad = (-paylen) & 3, l4 = 8 + 12 + extlen + paylen + pad + 4;
	uint8_t *ip = f + 14, *udp = ip + 20, *bth = udp + 8;
	uint32_t dst = htonl(INADDR_LOOPBACK), crc, sum = 0, i;
	uint16_t v;

	memset(f, 0, 14 + 20 + l4);
	memset(f, 0xff, 6);
	f[6] = 0x02;
	f[11] = 0x07;
	f[12] = 0x08;			/* IPv4 */
	ip[0] = 0x45;
	v = htons(20 + l4);
	memcpy(ip + 2, &v, 2);
	ip[6] = 0x40;			/* DF */
	ip[8] = 64;
	ip[9] = IPPROTO_UDP;
	memcpy(ip + 12, &src, 4);
	memcpy(ip + 16, &dst, 4);
	for (i = 0; i < 20; i += 2)
		sum += ip[i] << 8 | ip[i + 1];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	v = htons(~sum & 0xffff);
	memcpy(ip + 10, &v, 2);
	v = htons(0xc001);
	memcpy(udp, &v, 2);
	v = htons(4791);
	memcpy(udp + 2, &v, 2);
	v = htons(l4);
	memcpy(udp + 4, &v, 2);
	bth[0] = op;
	bth[1] = pad << 4;
	bth[2] = bth[3] = 0xff;		/* default P_Key */
	bth[5] = qpn >> 16;
	bth[6] = qpn >> 8;
	bth[7] = qpn;
	bth[8] = 0x80;			/* AckReq */
	bth[9] = psn >> 16;
	bth[10] = psn >> 8;
	bth[11] = psn;
	memcpy(bth + 12, ext, extlen);
	if (paylen)
		memcpy(bth + 12 + extlen, pay, paylen);
	crc = rte_cpu_to_le_32(ib_icrc(ip, 20 + l4 - 4));
	memcpy(ip + 20 + l4 - 4, &crc, 4);
	return 14 + 20 + l4;
}

static inline void
reth(uint8_t *b, uint64_t va, uint32_t rkey, uint32_t len)
{
	uint64_t va_be = rte_cpu_to_be_64(va);
	uint32_t k = htonl(rkey), l = htonl(len);

	memcpy(b, &va_be, 8);
	memcpy(b + 8, &k, 4);
	memcpy(b + 12, &l, 4);
}

static inline void
aeth(uint8_t *b, uint8_t syndrome, uint32_t msn)
{
	uint32_t v = htonl((uint32_t)syndrome << 24 | (msn & 0xffffff));

	memcpy(b, &v, 4);
}

/*
 * The AETH syndrome of the last ACKNOWLEDGE in capture @path to @qpn, or
 * -1; with @count, how many there are.
 */
static inline int
ack_frames(const char *path, uint32_t qpn, int *count)
{
	struct pcap_file pf;
	const uint8_t *d;
	uint32_t len;
	int syn = -1, n = 0;

	CHECK(pcap_open(&pf, path) == 0, "open %s", path);
	while (pcap_next(&pf, &d, &len) == 1) {
		const uint8_t *bth = d + 14 + 20 + 8;

		if (len >= 14 + 20 + 8 + 12 + 4 && d[12] == 0x08 && d[13] == 0 &&
		    bth[0] == IB_RC_ACKNOWLEDGE &&
		    (uint32_t)(bth[5] << 16 | bth[6] << 8 | bth[7]) == qpn) {
			syn = bth[12];
			n++;
		}
	}
	pcap_close(&pf);
	if (count != NULL)
		*count = n;
	return syn;
}

static inline int
last_ack_syndrome(const char *path, uint32_t qpn)
{
	return ack_frames(path, qpn, NULL);
}

/* Wait until counter @name moved past @from (driving an inline engine). */
static inline void
wait_counter(struct pair *p, const char *name, uint64_t from)
{
	double end = check_now() + WAIT;
	struct ibv_wc wc;

	while (counter(p, name) <= from && check_now() < end)
		CHECK(ibv_poll_cq(p->cq[1], 0, &wc) == 0, "poll");
	CHECK(counter(p, name) > from, "%s did not move", name);
}

#endif /* DPIB_TEST_ROCE_FRAME_H */
