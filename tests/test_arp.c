/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * The neighbour module against RFC 826 (ARP), RFC 4861 (Neighbor
 * Discovery) and its own timing contract: what it answers, what it learns,
 * when it asks again, when it gives up and when it forgets.
 *
 * The device is built by hand on a ring port whose TX queue is its RX
 * queue, so every frame the module queues is read back with
 * rte_eth_rx_burst after ib_tx_flush. Time is only what the test passes
 * to ib_neigh_timer.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <unistd.h>
#include <rte_arp.h>
#include <rte_bus_vdev.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "check.h"
#include "eal_util.h"
#include "ib_hca.h"

#define ARP_FRAME_LEN	60	/* 14 + 28, padded to the Ethernet minimum */
#define NB_MBUF		4095
#define MAX_FRAMES	64

#define IPV4(a, b, c, d) \
	rte_cpu_to_be_32((uint32_t)(a) << 24 | (b) << 16 | (c) << 8 | (d))

static const struct rte_ether_addr our_mac = {
	.addr_bytes = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 } };
static const struct rte_ether_addr peer_mac = {
	.addr_bytes = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 } };
static const struct rte_ether_addr other_mac = {
	.addr_bytes = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x03 } };
static const struct rte_ether_addr bcast = {
	.addr_bytes = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff } };
static const struct rte_ether_addr zero_mac;

static uint32_t our_ip, peer_ip, other_ip;
static uint8_t our6[16], peer6[16], other6[16];	/* 2001:db8::1, 2, 3 */

static struct rte_mempool *pool;
static struct ib_dev *dev;
static uint64_t now;		/* the time last given to ib_neigh_timer */

/* net_ring without rings given: queue i transmits into what it receives. */
static uint16_t
loop_port(void)
{
	struct rte_eth_conf conf = { 0 };
	char name[RTE_DEV_NAME_MAX_LEN];
	uint16_t port;

	snprintf(name, sizeof(name), "net_ring_ta%d", getpid());
	CHECK(rte_vdev_init(name, NULL) == 0, "create %s", name);
	CHECK(rte_eth_dev_get_port_by_name(name, &port) == 0, "find %s", name);
	CHECK(rte_eth_dev_configure(port, 1, 1, &conf) == 0, "configure");
	CHECK(rte_eth_rx_queue_setup(port, 0, 1024, SOCKET_ID_ANY, NULL,
				     pool) == 0, "rx queue");
	CHECK(rte_eth_tx_queue_setup(port, 0, 1024, SOCKET_ID_ANY, NULL) == 0,
	      "tx queue");
	CHECK(rte_eth_dev_start(port) == 0, "start");
	return port;
}

static void
setup(void)
{
	our_ip = IPV4(192, 0, 2, 1);
	peer_ip = IPV4(192, 0, 2, 2);
	other_ip = IPV4(192, 0, 2, 3);
	pool = rte_pktmbuf_pool_create("ta_pool", NB_MBUF, 0, 0,
				       RTE_MBUF_DEFAULT_BUF_SIZE,
				       SOCKET_ID_ANY);
	CHECK(pool != NULL, "mbuf pool: rte_errno %d", rte_errno);
	dev = rte_zmalloc("ta_dev", sizeof(*dev), RTE_CACHE_LINE_SIZE);
	CHECK(dev != NULL, "device");
	dev->conf.ip = our_ip;
	inet_pton(AF_INET6, "2001:db8::1", our6);
	inet_pton(AF_INET6, "2001:db8::2", peer6);
	inet_pton(AF_INET6, "2001:db8::3", other6);
	memcpy(dev->conf.ip6, our6, 16);
	dev->conf.has_ip6 = 1;
	dev->mac = our_mac;
	dev->pool = pool;
	dev->port_id = loop_port();
}

static uint64_t
tsc_ms(uint64_t ms)
{
	return rte_get_tsc_hz() * ms / 1000;	/* as ib_neigh_init converts */
}

static void
tick(uint64_t t)
{
	now = t;
	ib_neigh_timer(dev, now);
}

/*
 * Up to @max frames the module sent since the last call, oldest first:
 * what the port holds, then what is still in tx_pending.
 */
static unsigned int
sent(struct rte_mbuf **out, unsigned int max)
{
	unsigned int n = 0;
	uint16_t k;

	while (n < max) {
		k = rte_eth_rx_burst(dev->port_id, 0, out + n,
				     RTE_MIN(max - n, 32u));
		n += k;
		if (k > 0)
			continue;
		if (dev->sh[0].tx_n == 0)
			break;
		ib_tx_flush(dev);
		CHECK(rte_eth_rx_burst(dev->port_id, 0, out + n, 0) == 0 &&
		      dev->sh[0].tx_n < IB_TX_PENDING, "the port takes nothing");
	}
	return n;
}

/* How many frames went out, all discarded. */
static unsigned int
drain(void)
{
	struct rte_mbuf *m[MAX_FRAMES];
	unsigned int n, total = 0;

	while ((n = sent(m, MAX_FRAMES)) > 0) {
		rte_pktmbuf_free_bulk(m, n);
		total += n;
	}
	return total;
}

/* A clean module, counters at zero, and its clock at a known point. */
static void
fresh(void)
{
	drain();
	ib_neigh_fini(dev);
	CHECK(ib_neigh_init(dev) == 0, "ib_neigh_init");
	memset(dev->sh[0].cnt, 0, sizeof(dev->sh[0].cnt));
	tick(rte_rdtsc());
}

/* The test returned every mbuf it took and the module kept none. */
static void
no_leak(void)
{
	CHECK(drain() == 0, "unchecked frames were sent");
	CHECK(rte_mempool_avail_count(pool) == NB_MBUF,
	      "%u of %u mbufs in the pool", rte_mempool_avail_count(pool),
	      NB_MBUF);
}

static struct rte_mbuf *
arp_frame(const struct rte_ether_addr *dst, uint16_t op,
	  const struct rte_ether_addr *sha, uint32_t sip,
	  const struct rte_ether_addr *tha, uint32_t tip)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	struct rte_ether_hdr *eth;
	struct rte_arp_hdr *arp;

	CHECK(m != NULL, "no mbuf for a test frame");
	eth = (void *)rte_pktmbuf_append(m, ARP_FRAME_LEN);
	CHECK(eth != NULL, "no room for a test frame");
	memset(eth, 0, ARP_FRAME_LEN);
	eth->dst_addr = *dst;
	eth->src_addr = *sha;
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	arp = (void *)(eth + 1);
	arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = 6;
	arp->arp_plen = 4;
	arp->arp_opcode = rte_cpu_to_be_16(op);
	arp->arp_data.arp_sha = *sha;
	arp->arp_data.arp_sip = sip;
	arp->arp_data.arp_tha = *tha;
	arp->arp_data.arp_tip = tip;
	return m;
}

static struct rte_arp_hdr *
arp_of(struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod_offset(m, struct rte_arp_hdr *,
				       RTE_ETHER_HDR_LEN);
}

static void
rx_arp(struct rte_mbuf *m)
{
	CHECK(ib_neigh_rx(dev, m) == 1, "an ARP frame was not taken");
}

static void
request_from(const struct rte_ether_addr *sha, uint32_t sip, uint32_t tip)
{
	rx_arp(arp_frame(&bcast, RTE_ARP_OP_REQUEST, sha, sip, &zero_mac, tip));
}

static void
reply_from(const struct rte_ether_addr *sha, uint32_t sip)
{
	rx_arp(arp_frame(&our_mac, RTE_ARP_OP_REPLY, sha, sip, &our_mac,
			 our_ip));
}

/* Every field of a frame the module built: RFC 826 packet format. */
static void
check_frame(struct rte_mbuf *m, const struct rte_ether_addr *dst,
	    uint16_t op, const struct rte_ether_addr *tha, uint32_t tip)
{
	const struct rte_ether_hdr *eth;
	const struct rte_arp_hdr *arp;
	const uint8_t *p;
	struct rte_ether_addr a;
	unsigned int i;

	CHECK(rte_pktmbuf_pkt_len(m) == ARP_FRAME_LEN &&
	      rte_pktmbuf_data_len(m) == ARP_FRAME_LEN,
	      "frame of %u bytes", rte_pktmbuf_pkt_len(m));
	eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	arp = arp_of(m);
	CHECK(rte_is_same_ether_addr(&eth->dst_addr, dst), "Ethernet dst");
	CHECK(rte_is_same_ether_addr(&eth->src_addr, &our_mac), "Ethernet src");
	CHECK(eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP),
	      "EtherType %#x", rte_be_to_cpu_16(eth->ether_type));
	CHECK(arp->arp_hardware == rte_cpu_to_be_16(1), "htype %u",
	      rte_be_to_cpu_16(arp->arp_hardware));
	CHECK(arp->arp_protocol == rte_cpu_to_be_16(0x0800), "ptype %#x",
	      rte_be_to_cpu_16(arp->arp_protocol));
	CHECK(arp->arp_hlen == 6 && arp->arp_plen == 4, "hlen %u plen %u",
	      arp->arp_hlen, arp->arp_plen);
	CHECK(arp->arp_opcode == rte_cpu_to_be_16(op), "op %u, want %u",
	      rte_be_to_cpu_16(arp->arp_opcode), op);
	a = arp->arp_data.arp_sha;
	CHECK(rte_is_same_ether_addr(&a, &our_mac), "sender MAC");
	CHECK(arp->arp_data.arp_sip == our_ip, "sender IP %#x",
	      rte_be_to_cpu_32(arp->arp_data.arp_sip));
	a = arp->arp_data.arp_tha;
	CHECK(rte_is_same_ether_addr(&a, tha), "target MAC");
	CHECK(arp->arp_data.arp_tip == tip, "target IP %#x, want %#x",
	      rte_be_to_cpu_32(arp->arp_data.arp_tip), rte_be_to_cpu_32(tip));
	/* No ICRC or anything else written behind the ARP packet. */
	p = rte_pktmbuf_mtod(m, const uint8_t *);
	for (i = RTE_ETHER_HDR_LEN + sizeof(*arp); i < ARP_FRAME_LEN; i++)
		CHECK(p[i] == 0, "padding byte %u is %#x", i, p[i]);
}

/* Exactly one frame went out: a broadcast request for @ip. */
static void
expect_request(uint32_t ip)
{
	struct rte_mbuf *m[MAX_FRAMES];
	unsigned int n = sent(m, MAX_FRAMES);

	CHECK(n == 1, "%u frames sent, want one request", n);
	check_frame(m[0], &bcast, RTE_ARP_OP_REQUEST, &zero_mac, ip);
	rte_pktmbuf_free_bulk(m, n);
}

static void
expect_silence(const char *when)
{
	unsigned int n = drain();

	CHECK(n == 0, "%u frames sent %s", n, when);
}

static void
expect_mac(uint32_t ip, const struct rte_ether_addr *want)
{
	struct rte_ether_addr mac;
	int ret = ib_neigh_lookup(dev, ip, &mac);

	CHECK(ret == 0, "lookup %#x: %d", rte_be_to_cpu_32(ip), ret);
	CHECK(rte_is_same_ether_addr(&mac, want), "lookup %#x: wrong MAC",
	      rte_be_to_cpu_32(ip));
}

static int
lookup(uint32_t ip)
{
	struct rte_ether_addr mac;

	return ib_neigh_lookup(dev, ip, &mac);
}

/* RFC 826: a request for our address is answered to its sender. */
static void
reply_to_request_for_our_ip(void)
{
	struct rte_mbuf *m[MAX_FRAMES];
	unsigned int n;

	fresh();
	request_from(&peer_mac, peer_ip, our_ip);
	n = sent(m, MAX_FRAMES);
	CHECK(n == 1, "%u frames sent, want one reply", n);
	check_frame(m[0], &peer_mac, RTE_ARP_OP_REPLY, &peer_mac, peer_ip);
	rte_pktmbuf_free_bulk(m, n);
	CHECK(dev->sh[0].cnt[IB_CNT_ARP_RX] == 1 &&
	      dev->sh[0].cnt[IB_CNT_ARP_REPLY_SENT] == 1, "counters rx %" PRIu64
	      " reply %" PRIu64, dev->sh[0].cnt[IB_CNT_ARP_RX],
	      dev->sh[0].cnt[IB_CNT_ARP_REPLY_SENT]);
	/* The requester is learned: no request needed to answer it. */
	expect_mac(peer_ip, &peer_mac);
	expect_silence("resolving a requester");
	no_leak();
}

/* Requests for other hosts are theirs to answer, and teach us nothing. */
static void
no_reply_for_other_ip(void)
{
	fresh();
	request_from(&peer_mac, peer_ip, other_ip);
	expect_silence("for a request to another host");
	CHECK(dev->sh[0].cnt[IB_CNT_ARP_RX_IGNORED] == 1, "ignored %" PRIu64,
	      dev->sh[0].cnt[IB_CNT_ARP_RX_IGNORED]);
	CHECK(dev->sh[0].cnt[IB_CNT_ARP_REPLY_SENT] == 0, "reply counted");
	CHECK(lookup(peer_ip) == -EAGAIN, "learned from a foreign request");
	expect_request(peer_ip);
	no_leak();
}

/* Other EtherTypes are the caller's: untouched and not freed. */
static void
non_arp_left_alone(void)
{
	struct rte_mbuf *m = arp_frame(&our_mac, RTE_ARP_OP_REQUEST, &peer_mac,
				       peer_ip, &zero_mac, our_ip);
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);

	fresh();
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	CHECK(ib_neigh_rx(dev, m) == 0, "an IPv4 frame was taken");
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_VLAN);
	CHECK(ib_neigh_rx(dev, m) == 0, "a VLAN frame was taken");
	rte_pktmbuf_trim(m, ARP_FRAME_LEN - 10);
	CHECK(ib_neigh_rx(dev, m) == 0, "a 10-byte frame was taken");
	CHECK(rte_mbuf_refcnt_read(m) == 1 && rte_pktmbuf_data_len(m) == 10,
	      "the frame was changed");
	rte_pktmbuf_free(m);
	CHECK(dev->sh[0].cnt[IB_CNT_ARP_RX] == 0, "counted as ARP");
	expect_silence("for non-ARP frames");
	no_leak();
}

/* An unknown address costs one broadcast request, not one per lookup. */
static void
unknown_ip_sends_one_request(void)
{
	uint64_t t0;

	fresh();
	t0 = now;
	CHECK(lookup(peer_ip) == -EAGAIN, "first lookup");
	expect_request(peer_ip);
	CHECK(dev->sh[0].cnt[IB_CNT_ARP_REQUEST_SENT] == 1, "requests %" PRIu64,
	      dev->sh[0].cnt[IB_CNT_ARP_REQUEST_SENT]);
	CHECK(lookup(peer_ip) == -EAGAIN, "second lookup");
	expect_silence("on a second lookup");
	tick(t0 + tsc_ms(IB_NEIGH_RETRY_MS) - 1);
	CHECK(lookup(peer_ip) == -EAGAIN, "lookup before the retry");
	expect_silence("before the retry interval");
	no_leak();
}

/* A reply completes the resolution and stops the retries. */
static void
reply_completes_resolution(void)
{
	uint64_t t0;

	fresh();
	t0 = now;
	CHECK(lookup(peer_ip) == -EAGAIN, "lookup");
	expect_request(peer_ip);
	reply_from(&peer_mac, peer_ip);
	expect_silence("in answer to a reply");
	expect_mac(peer_ip, &peer_mac);
	tick(t0 + 3 * tsc_ms(IB_NEIGH_RETRY_MS));
	expect_silence("after the reply, at retry time");
	expect_mac(peer_ip, &peer_mac);
	CHECK(dev->sh[0].cnt[IB_CNT_ARP_RX_IGNORED] == 0, "the reply was ignored");
	no_leak();
}

/* Unsolicited replies do not plant entries. */
static void
unsolicited_reply_ignored(void)
{
	fresh();
	reply_from(&peer_mac, peer_ip);
	CHECK(dev->sh[0].cnt[IB_CNT_ARP_RX_IGNORED] == 1, "ignored %" PRIu64,
	      dev->sh[0].cnt[IB_CNT_ARP_RX_IGNORED]);
	CHECK(lookup(peer_ip) == -EAGAIN, "an unsolicited reply was learned");
	expect_request(peer_ip);
	no_leak();
}

/*
 * IB_NEIGH_TRIES requests IB_NEIGH_RETRY_MS apart, then FAILED for
 * IB_NEIGH_FAILED_MS, then a new resolution.
 */
static void
retries_then_unreachable(void)
{
	uint64_t t0, retry = tsc_ms(IB_NEIGH_RETRY_MS), fail_at;
	unsigned int k;

	fresh();
	t0 = now;
	CHECK(lookup(peer_ip) == -EAGAIN, "lookup");
	expect_request(peer_ip);
	for (k = 1; k < IB_NEIGH_TRIES; k++) {
		tick(t0 + k * retry - 1);
		expect_silence("just before a retry");
		tick(t0 + k * retry);
		expect_request(peer_ip);
		CHECK(lookup(peer_ip) == -EAGAIN, "lookup after try %u", k + 1);
	}
	tick(t0 + IB_NEIGH_TRIES * retry - 1);
	CHECK(lookup(peer_ip) == -EAGAIN, "failed before the last interval");
	fail_at = t0 + IB_NEIGH_TRIES * retry;
	tick(fail_at);
	expect_silence("after the last try");
	CHECK(lookup(peer_ip) == -EHOSTUNREACH, "lookup after the last try");
	expect_silence("looking up a failed address");
	CHECK(dev->sh[0].cnt[IB_CNT_ARP_REQUEST_SENT] == IB_NEIGH_TRIES &&
	      dev->sh[0].cnt[IB_CNT_ARP_FAILED] == 1, "requests %" PRIu64
	      " failed %" PRIu64, dev->sh[0].cnt[IB_CNT_ARP_REQUEST_SENT],
	      dev->sh[0].cnt[IB_CNT_ARP_FAILED]);

	tick(fail_at + tsc_ms(IB_NEIGH_FAILED_MS) - 1);
	CHECK(lookup(peer_ip) == -EHOSTUNREACH, "failure forgotten early");
	expect_silence("while the failure is remembered");
	tick(fail_at + tsc_ms(IB_NEIGH_FAILED_MS));
	CHECK(lookup(peer_ip) == -EAGAIN, "failure not forgotten");
	expect_request(peer_ip);
	no_leak();
}

/* A host that comes back answers a failed address at once. */
static void
reply_revives_failed_entry(void)
{
	uint64_t t0;
	unsigned int k;

	fresh();
	t0 = now;
	CHECK(lookup(peer_ip) == -EAGAIN, "lookup");
	for (k = 1; k <= IB_NEIGH_TRIES; k++)
		tick(t0 + k * tsc_ms(IB_NEIGH_RETRY_MS));
	CHECK(drain() == IB_NEIGH_TRIES, "requests");
	CHECK(lookup(peer_ip) == -EHOSTUNREACH, "not failed");
	reply_from(&peer_mac, peer_ip);
	expect_mac(peer_ip, &peer_mac);
	no_leak();
}

/*
 * A learned MAC lives IB_NEIGH_REACHABLE_MS from the last frame of its
 * host, then has to be resolved again. Two hosts resolved together: one
 * stays silent, the other sends a request halfway through.
 */
static void
expiry_after_lifetime(void)
{
	uint64_t life = tsc_ms(IB_NEIGH_REACHABLE_MS), t1, t2;

	fresh();
	CHECK(lookup(peer_ip) == -EAGAIN && lookup(other_ip) == -EAGAIN,
	      "lookups");
	CHECK(drain() == 2, "requests");
	t1 = now + tsc_ms(20);
	tick(t1);
	reply_from(&peer_mac, peer_ip);
	reply_from(&other_mac, other_ip);

	t2 = t1 + life / 2;
	tick(t2);
	request_from(&peer_mac, peer_ip, our_ip);
	CHECK(drain() == 1, "reply to the refreshing request");

	tick(t1 + life - 1);
	expect_mac(other_ip, &other_mac);
	expect_mac(peer_ip, &peer_mac);
	expect_silence("while the entries are valid");
	tick(t1 + life);
	CHECK(lookup(other_ip) == -EAGAIN, "expired entry still used");
	expect_request(other_ip);
	reply_from(&other_mac, other_ip);
	expect_mac(peer_ip, &peer_mac);

	tick(t2 + life - 1);
	expect_mac(peer_ip, &peer_mac);
	expect_silence("while the refreshed entry is valid");
	tick(t2 + life);
	CHECK(lookup(peer_ip) == -EAGAIN, "refreshed entry never expires");
	expect_request(peer_ip);
	no_leak();
}

/* Our own address needs no ARP; non-unicast addresses have none. */
static void
own_ip_resolves_without_packet(void)
{
	struct rte_ether_addr mac;

	fresh();
	memset(&mac, 0, sizeof(mac));
	CHECK(ib_neigh_lookup(dev, our_ip, &mac) == 0, "own address");
	CHECK(rte_is_same_ether_addr(&mac, &our_mac), "own MAC");
	CHECK(lookup(IPV4(0, 0, 0, 0)) == -EINVAL, "0.0.0.0");
	CHECK(lookup(IPV4(255, 255, 255, 255)) == -EINVAL, "broadcast");
	CHECK(lookup(IPV4(224, 0, 0, 1)) == -EINVAL, "multicast");
	CHECK(lookup(IPV4(127, 0, 0, 1)) == -EINVAL, "loopback");
	expect_silence("for addresses without ARP");
	CHECK(dev->sh[0].cnt[IB_CNT_ARP_REQUEST_SENT] == 0, "request counted");
	no_leak();
}

/* Malformed and unsupported ARP is counted, freed, and changes nothing. */
static void
malformed_arp_dropped(void)
{
	struct rte_mbuf *m;

	fresh();
	m = arp_frame(&bcast, RTE_ARP_OP_REQUEST, &peer_mac, peer_ip,
		      &zero_mac, our_ip);
	rte_pktmbuf_trim(m, ARP_FRAME_LEN - RTE_ETHER_HDR_LEN - 20);
	rx_arp(m);

	m = arp_frame(&bcast, RTE_ARP_OP_REQUEST, &peer_mac, peer_ip,
		      &zero_mac, our_ip);
	arp_of(m)->arp_hlen = 8;
	rx_arp(m);

	m = arp_frame(&bcast, RTE_ARP_OP_REQUEST, &bcast, peer_ip,
		      &zero_mac, our_ip);
	rx_arp(m);

	m = arp_frame(&bcast, RTE_ARP_OP_REQUEST, &zero_mac, peer_ip,
		      &zero_mac, our_ip);
	rx_arp(m);
	CHECK(dev->sh[0].cnt[IB_CNT_ARP_RX_MALFORMED] == 4, "malformed %" PRIu64,
	      dev->sh[0].cnt[IB_CNT_ARP_RX_MALFORMED]);

	m = arp_frame(&bcast, RTE_ARP_OP_REQUEST, &peer_mac, peer_ip,
		      &zero_mac, our_ip);
	arp_of(m)->arp_hardware = rte_cpu_to_be_16(6);	/* IEEE 802 */
	rx_arp(m);

	m = arp_frame(&bcast, RTE_ARP_OP_REQUEST, &peer_mac, peer_ip,
		      &zero_mac, our_ip);
	arp_of(m)->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6);
	rx_arp(m);

	m = arp_frame(&bcast, RTE_ARP_OP_REVREQUEST, &peer_mac, peer_ip,
		      &zero_mac, our_ip);
	rx_arp(m);
	CHECK(dev->sh[0].cnt[IB_CNT_ARP_RX_UNSUPPORTED] == 3, "unsupported %" PRIu64,
	      dev->sh[0].cnt[IB_CNT_ARP_RX_UNSUPPORTED]);
	CHECK(dev->sh[0].cnt[IB_CNT_ARP_RX] == 7, "ARP frames %" PRIu64,
	      dev->sh[0].cnt[IB_CNT_ARP_RX]);

	expect_silence("for malformed ARP");
	CHECK(lookup(peer_ip) == -EAGAIN, "learned from a malformed frame");
	expect_request(peer_ip);
	no_leak();
}

/* RFC 5227 announcement: sender and target are our address. */
static void
gratuitous_arp_fields(void)
{
	struct rte_mbuf *m[MAX_FRAMES];
	unsigned int n;

	fresh();
	ib_neigh_announce(dev);
	n = sent(m, MAX_FRAMES);
	CHECK(n == 1, "%u frames for one announcement", n);
	check_frame(m[0], &bcast, RTE_ARP_OP_REQUEST, &zero_mac, our_ip);
	rte_pktmbuf_free_bulk(m, n);
	CHECK(dev->sh[0].cnt[IB_CNT_GARP_SENT] == 1 &&
	      dev->sh[0].cnt[IB_CNT_ARP_REQUEST_SENT] == 0, "garp %" PRIu64
	      " request %" PRIu64, dev->sh[0].cnt[IB_CNT_GARP_SENT],
	      dev->sh[0].cnt[IB_CNT_ARP_REQUEST_SENT]);
	no_leak();
}

/*
 * RFC 826 merge: a known host's gratuitous ARP updates its MAC; an unknown
 * host's does not create an entry.
 */
static void
peer_garp_updates_known_entry(void)
{
	fresh();
	request_from(&peer_mac, peer_ip, our_ip);
	CHECK(drain() == 1, "reply");
	request_from(&other_mac, peer_ip, peer_ip);
	expect_silence("for a gratuitous ARP");
	expect_mac(peer_ip, &other_mac);
	request_from(&other_mac, other_ip, other_ip);
	CHECK(lookup(other_ip) == -EAGAIN, "unknown announcer learned");
	expect_request(other_ip);
	no_leak();
}

/*
 * Another host claiming our address is counted, not answered; our own
 * announcement coming back is not a conflict; frames unicast to another
 * MAC (promiscuous port) are not ours.
 */
static void
conflicts_and_foreign_frames(void)
{
	fresh();
	request_from(&peer_mac, our_ip, our_ip);
	CHECK(dev->sh[0].cnt[IB_CNT_ARP_IP_CONFLICT] == 1, "conflict %" PRIu64,
	      dev->sh[0].cnt[IB_CNT_ARP_IP_CONFLICT]);
	ib_neigh_announce(dev);
	CHECK(drain() == 1, "announcement");
	request_from(&our_mac, our_ip, our_ip);
	CHECK(dev->sh[0].cnt[IB_CNT_ARP_IP_CONFLICT] == 1, "own echo is a conflict");
	rx_arp(arp_frame(&other_mac, RTE_ARP_OP_REQUEST, &peer_mac, peer_ip,
			 &zero_mac, our_ip));
	expect_silence("for conflicts and foreign frames");
	CHECK(dev->sh[0].cnt[IB_CNT_ARP_RX_IGNORED] == 2, "ignored %" PRIu64,
	      dev->sh[0].cnt[IB_CNT_ARP_RX_IGNORED]);
	CHECK(lookup(peer_ip) == -EAGAIN, "learned from a foreign frame");
	expect_request(peer_ip);
	no_leak();
}

/* An RFC 5227 probe (sender 0.0.0.0) is answered but not learned. */
static void
probe_answered_not_learned(void)
{
	struct rte_mbuf *m[MAX_FRAMES];
	unsigned int n;

	fresh();
	request_from(&peer_mac, 0, our_ip);
	n = sent(m, MAX_FRAMES);
	CHECK(n == 1, "%u frames in answer to a probe", n);
	check_frame(m[0], &peer_mac, RTE_ARP_OP_REPLY, &peer_mac, 0);
	rte_pktmbuf_free_bulk(m, n);
	no_leak();
}

static uint32_t host_ip[IB_NEIGH_MAX];

static uint32_t
nth_ip(uint32_t i)
{
	return host_ip[i];
}

/* 10.1.0.0 and up: a subnet's worth of hosts, as the table will see. */
static void
hosts_sequential(void)
{
	uint32_t i;

	for (i = 0; i < IB_NEIGH_MAX; i++)
		host_ip[i] = IPV4(10, 1, i >> 8, i & 0xff);
}

/*
 * Distinct addresses all over 10/8 (a full-period LCG mod 2^24): unlike a
 * subnet they collide in the hash, so probe runs form and deletions have
 * to shift entries.
 */
static void
hosts_scattered(void)
{
	uint32_t i, x = 12345;

	for (i = 0; i < IB_NEIGH_MAX; i++) {
		x = (x * 1103515245u + 12345u) & 0xffffff;
		host_ip[i] = rte_cpu_to_be_32(10u << 24 | x);
	}
}

/* Host i of fill_reachable: 02:00:00:01:ii:ii, never our MAC. */
static struct rte_ether_addr
nth_mac(uint32_t i)
{
	struct rte_ether_addr mac = {
		.addr_bytes = { 0x02, 0, 0, 0x01, i >> 8, i & 0xff } };

	return mac;
}

/* IB_NEIGH_MAX entries, resolved one TSC tick apart in order. */
static void
fill_reachable(void)
{
	struct rte_ether_addr mac;
	uint32_t i;

	for (i = 0; i < IB_NEIGH_MAX; i++) {
		CHECK(lookup(nth_ip(i)) == -EAGAIN, "lookup %u", i);
		CHECK(drain() == 1, "request %u", i);
		tick(now + 1);
		mac = nth_mac(i);
		reply_from(&mac, nth_ip(i));
	}
	for (i = 0; i < IB_NEIGH_MAX; i++) {
		mac = nth_mac(i);
		expect_mac(nth_ip(i), &mac);
	}
}

/*
 * A full table: a lookup replaces the entry nearest its deadline (the
 * least recently confirmed); INCOMPLETE entries are never replaced, so a
 * table of them gives -ENOSPC; learning from requests never replaces.
 */
static void
table_full(void)
{
	uint32_t i;

	fresh();
	hosts_sequential();
	fill_reachable();
	CHECK(lookup(other_ip) == -EAGAIN, "lookup in a full table");
	expect_request(other_ip);
	CHECK(dev->sh[0].cnt[IB_CNT_ARP_TABLE_FULL] == 1, "full %" PRIu64,
	      dev->sh[0].cnt[IB_CNT_ARP_TABLE_FULL]);
	for (i = 1; i < IB_NEIGH_MAX; i++)
		CHECK(lookup(nth_ip(i)) == 0, "entry %u evicted", i);
	CHECK(lookup(other_ip) == -EAGAIN, "new entry lost");
	expect_silence("for entries in the table");
	CHECK(lookup(nth_ip(0)) == -EAGAIN, "oldest entry kept");
	expect_request(nth_ip(0));
	CHECK(lookup(nth_ip(1)) == -EAGAIN, "second oldest kept");
	expect_request(nth_ip(1));

	/* A request for us from a new host is answered, not learned. */
	request_from(&peer_mac, peer_ip, our_ip);
	CHECK(drain() == 1, "reply in a full table");
	CHECK(lookup(nth_ip(3)) == 0, "learning evicted the oldest entry");
	CHECK(lookup(peer_ip) == -EAGAIN, "learned into a full table");
	expect_request(peer_ip);

	fresh();
	for (i = 0; i < IB_NEIGH_MAX; i++) {
		CHECK(lookup(nth_ip(i)) == -EAGAIN, "lookup %u", i);
		CHECK(drain() == 1, "request %u", i);
	}
	CHECK(lookup(other_ip) == -ENOSPC, "table of pending entries");
	expect_silence("without room for the address");
	for (i = 0; i < IB_NEIGH_MAX; i++)
		CHECK(lookup(nth_ip(i)) == -EAGAIN, "pending entry %u lost", i);
	no_leak();
}

/*
 * Expiry of many colliding entries at once exercises deletion inside probe
 * runs during a scan: after every other entry expires, the rest is still
 * found, and exactly the expired entries' room is free again.
 */
static void
mass_expiry_keeps_survivors(void)
{
	uint64_t life = tsc_ms(IB_NEIGH_REACHABLE_MS), t0;
	uint32_t i;

	fresh();
	hosts_scattered();
	fill_reachable();
	t0 = now;
	tick(t0 + life / 2);
	for (i = 0; i < IB_NEIGH_MAX; i += 2)
		request_from(&peer_mac, nth_ip(i), our_ip);
	CHECK(drain() == IB_NEIGH_MAX / 2, "replies");
	tick(t0 + life);
	for (i = 0; i < IB_NEIGH_MAX; i += 2)
		expect_mac(nth_ip(i), &peer_mac);
	expect_silence("for refreshed entries");
	for (i = 1; i < IB_NEIGH_MAX; i += 2) {
		CHECK(lookup(nth_ip(i)) == -EAGAIN, "entry %u not expired", i);
		CHECK(drain() == 1, "request %u", i);
	}
	for (i = 0; i < IB_NEIGH_MAX; i += 2)
		expect_mac(nth_ip(i), &peer_mac);
	CHECK(dev->sh[0].cnt[IB_CNT_ARP_TABLE_FULL] == 0, "room not given back");
	CHECK(lookup(other_ip) == -EAGAIN, "lookup");
	CHECK(drain() == 1, "request");
	CHECK(dev->sh[0].cnt[IB_CNT_ARP_TABLE_FULL] == 1, "table not full");
	no_leak();
}

/* ib_tx_raw queues like ib_tx: flush at a burst, drop when still full. */
static void
tx_raw_drops_when_port_stalls(void)
{
	struct rte_mbuf *m;
	uint32_t queued = 0;

	fresh();
	/* Fill the ring port so that flushes take nothing. */
	for (;;) {
		m = rte_pktmbuf_alloc(pool);
		CHECK(m != NULL, "pool");
		if (rte_eth_tx_burst(dev->port_id, 0, &m, 1) == 0) {
			rte_pktmbuf_free(m);
			break;
		}
	}
	while (dev->sh[0].tx_n < IB_TX_PENDING) {
		m = rte_pktmbuf_alloc(pool);
		CHECK(m != NULL, "pool");
		CHECK(ib_tx_raw(dev, m) == 0, "queue %u", queued);
		queued++;
	}
	CHECK(queued == IB_TX_PENDING, "queued %u", queued);
	m = rte_pktmbuf_alloc(pool);
	CHECK(m != NULL, "pool");
	CHECK(ib_tx_raw(dev, m) == -ENOBUFS, "queued past the end");
	CHECK(dev->sh[0].cnt[IB_CNT_TX_DROP_FULL] == 1, "drop not counted");
	ib_neigh_announce(dev);
	CHECK(dev->sh[0].cnt[IB_CNT_GARP_SENT] == 0 &&
	      dev->sh[0].cnt[IB_CNT_TX_DROP_FULL] == 2, "dropped announcement");
	CHECK(drain() == 1023 + IB_TX_PENDING, "frames behind the stall");
	no_leak();
}

/*
 * IPv6 Neighbor Discovery (RFC 4861) through the same module and table:
 * our address 2001:db8::1, peers 2001:db8::2 and ::3.
 */
#define ND_NS		135
#define ND_NA		136
#define ND_LEN		(40 + 32)	/* IPv6 + NS/NA + one LL option */


/* The ICMPv6 checksum (RFC 4443 2.3), computed here independently. */
static uint16_t
icmp6_sum(const uint8_t *ip6, const uint8_t *icmp, uint32_t len)
{
	uint32_t sum = 0, i;

	for (i = 8; i < 40; i += 2)		/* source, destination */
		sum += (uint32_t)ip6[i] << 8 | ip6[i + 1];
	sum += len + 58;
	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)icmp[i] << 8 | icmp[i + 1];
	if (len & 1)
		sum += (uint32_t)icmp[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* An NS or NA from @smac/@sip6 with hop limit @hop and option @opt. */
static struct rte_mbuf *
nd_frame(const struct rte_ether_addr *dmac, const struct rte_ether_addr *smac,
	 const uint8_t *sip6, const uint8_t *dip6, uint8_t type,
	 uint8_t flags, const uint8_t *target, uint8_t opt, uint8_t hop)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	struct rte_ether_hdr *eth;
	uint8_t *ip, *icmp;
	uint16_t ck;

	CHECK(m != NULL, "no mbuf for a test frame");
	eth = (void *)rte_pktmbuf_append(m, RTE_ETHER_HDR_LEN + ND_LEN);
	CHECK(eth != NULL, "no room");
	memset(eth, 0, RTE_ETHER_HDR_LEN + ND_LEN);
	eth->dst_addr = *dmac;
	eth->src_addr = *smac;
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6);
	ip = (uint8_t *)(eth + 1);
	ip[0] = 0x60;
	ip[5] = 32;
	ip[6] = 58;
	ip[7] = hop;
	memcpy(ip + 8, sip6, 16);
	memcpy(ip + 24, dip6, 16);
	icmp = ip + 40;
	icmp[0] = type;
	icmp[4] = flags;
	memcpy(icmp + 8, target, 16);
	if (opt) {
		icmp[24] = opt;
		icmp[25] = 1;
		memcpy(icmp + 26, smac->addr_bytes, 6);
		ck = icmp6_sum(ip, icmp, 32);
	} else {
		ip[5] = 24;
		m->data_len -= 8;
		m->pkt_len -= 8;
		ck = icmp6_sum(ip, icmp, 24);
	}
	icmp[2] = ck >> 8;
	icmp[3] = ck & 0xff;
	return m;
}

static void
solicited_node(const uint8_t *t, uint8_t *ip, struct rte_ether_addr *mac)
{
	static const uint8_t pfx[13] = { 0xff, 0x02, [11] = 1, [12] = 0xff };

	memcpy(ip, pfx, 13);
	memcpy(ip + 13, t + 13, 3);
	mac->addr_bytes[0] = mac->addr_bytes[1] = 0x33;
	memcpy(&mac->addr_bytes[2], ip + 12, 4);
}

static void
ns_from(const struct rte_ether_addr *smac, const uint8_t *sip6,
	const uint8_t *target, uint8_t hop)
{
	struct rte_ether_addr dmac;
	uint8_t dip[16];

	solicited_node(target, dip, &dmac);
	CHECK(ib_neigh_rx(dev, nd_frame(&dmac, smac, sip6, dip, ND_NS, 0,
					target, 1, hop)) == 1, "NS not taken");
}

static void
na_from(const struct rte_ether_addr *smac, const uint8_t *sip6)
{
	CHECK(ib_neigh_rx(dev, nd_frame(&our_mac, smac, sip6, our6, ND_NA,
					0x60, sip6, 2, 255)) == 1,
	      "NA not taken");
}

/* The fields every ND frame we send shares; returns the ICMPv6 body. */
static const uint8_t *
check_nd(struct rte_mbuf *m, const struct rte_ether_addr *dmac,
	 const uint8_t *dip6, uint8_t type)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	const uint8_t *ip = f + RTE_ETHER_HDR_LEN, *icmp = ip + 40;

	CHECK(rte_pktmbuf_data_len(m) == RTE_ETHER_HDR_LEN + ND_LEN,
	      "ND frame of %u bytes", rte_pktmbuf_data_len(m));
	CHECK(memcmp(f, dmac, 6) == 0 && memcmp(f + 6, &our_mac, 6) == 0,
	      "Ethernet addresses");
	CHECK(f[12] == 0x86 && f[13] == 0xdd, "EtherType");
	CHECK(ip[0] == 0x60 && ip[4] == 0 && ip[5] == 32 && ip[6] == 58,
	      "IPv6 header");
	CHECK(ip[7] == 255, "hop limit %u (RFC 4861 needs 255)", ip[7]);
	CHECK(memcmp(ip + 8, our6, 16) == 0, "IPv6 source");
	CHECK(memcmp(ip + 24, dip6, 16) == 0, "IPv6 destination");
	CHECK(icmp[0] == type && icmp[1] == 0, "ICMPv6 type %u code %u",
	      icmp[0], icmp[1]);
	CHECK(icmp6_sum(ip, icmp, 32) == 0, "ICMPv6 checksum");
	CHECK(icmp[25] == 1 && memcmp(icmp + 26, &our_mac, 6) == 0,
	      "link-layer option");
	return icmp;
}

/* Exactly one NS for @t went out, to its solicited-node group. */
static void
expect_ns(const uint8_t *t)
{
	struct rte_mbuf *m[MAX_FRAMES];
	struct rte_ether_addr dmac;
	unsigned int n = sent(m, MAX_FRAMES);
	const uint8_t *icmp;
	uint8_t dip[16];

	CHECK(n == 1, "%u frames sent, want one solicitation", n);
	solicited_node(t, dip, &dmac);
	icmp = check_nd(m[0], &dmac, dip, ND_NS);
	CHECK(memcmp(icmp + 8, t, 16) == 0 && icmp[24] == 1,
	      "NS target or source link-layer option");
	rte_pktmbuf_free_bulk(m, n);
}

static int
lookup6(const uint8_t *ip6, struct rte_ether_addr *mac)
{
	struct rte_ether_addr tmp;

	return ib_neigh_lookup6(dev, ip6, mac ? mac : &tmp);
}

static void
expect_mac6(const uint8_t *ip6, const struct rte_ether_addr *want)
{
	struct rte_ether_addr mac;

	CHECK(lookup6(ip6, &mac) == 0, "IPv6 lookup");
	CHECK(rte_is_same_ether_addr(&mac, want), "IPv6 lookup: wrong MAC");
}

/*
 * RFC 4861 7.2.4: an NS for our address gets a solicited, override NA to
 * its sender with our MAC as target link-layer option; the sender is
 * learned from its source link-layer option.
 */
static void
nd_advert_for_our_address(void)
{
	struct rte_mbuf *m[MAX_FRAMES];
	const uint8_t *icmp;
	unsigned int n;

	fresh();
	ns_from(&peer_mac, peer6, our6, 255);
	n = sent(m, MAX_FRAMES);
	CHECK(n == 1, "%u frames, want one advertisement", n);
	icmp = check_nd(m[0], &peer_mac, peer6, ND_NA);
	CHECK(icmp[4] == 0x60, "NA flags %#x, want solicited|override",
	      icmp[4]);
	CHECK(memcmp(icmp + 8, our6, 16) == 0 && icmp[24] == 2,
	      "NA target or target link-layer option");
	rte_pktmbuf_free_bulk(m, n);
	expect_mac6(peer6, &peer_mac);
	expect_silence("looking up a learned IPv6 address");
	CHECK(dev->sh[0].cnt[IB_CNT_ND_ADVERT_SENT] == 1, "advertisements");
	/* An NS for another address is neither answered nor learned. */
	ns_from(&other_mac, other6, peer6, 255);
	expect_silence("after an NS for another address");
	CHECK(dev->sh[0].cnt[IB_CNT_ND_RX_IGNORED] == 1, "ignored not counted");
	no_leak();
}

/* RFC 4861 7.1.1: ND that crossed a router (hop limit below 255) and ND
 * with a bad checksum are dropped, counted, and teach nothing.
 */
static void
nd_invalid_dropped(void)
{
	struct rte_mbuf *m;

	fresh();
	ns_from(&peer_mac, peer6, our6, 254);
	expect_silence("after an NS with hop limit 254");
	CHECK(dev->sh[0].cnt[IB_CNT_ND_RX_BAD_HOPLIMIT] == 1, "hop limit drop");
	m = nd_frame(&our_mac, &peer_mac, peer6, our6, ND_NS, 0, our6, 1, 255);
	rte_pktmbuf_mtod(m, uint8_t *)[RTE_ETHER_HDR_LEN + 40 + 2] ^= 1;
	CHECK(ib_neigh_rx(dev, m) == 1, "NS not taken");
	expect_silence("after an NS with a bad checksum");
	CHECK(dev->sh[0].cnt[IB_CNT_ND_RX_MALFORMED] == 1, "checksum drop");
	CHECK(lookup6(peer6, NULL) == -EAGAIN, "learned from invalid ND");
	expect_ns(peer6);
	no_leak();
}

/* Resolution: one NS, completed by the NA; an unasked NA is ignored. */
static void
nd_resolution(void)
{
	fresh();
	na_from(&other_mac, other6);
	CHECK(dev->sh[0].cnt[IB_CNT_ND_RX_IGNORED] == 1, "unsolicited NA taken");
	CHECK(lookup6(peer6, NULL) == -EAGAIN, "first lookup");
	expect_ns(peer6);
	CHECK(lookup6(peer6, NULL) == -EAGAIN, "second lookup");
	expect_silence("on a second lookup");
	na_from(&peer_mac, peer6);
	expect_mac6(peer6, &peer_mac);
	CHECK(lookup6(other6, NULL) == -EAGAIN, "unsolicited NA was learned");
	expect_ns(other6);
	CHECK(lookup6(our6, NULL) == 0, "own address");
	expect_silence("looking up our own address");
	no_leak();
}

/* The ARP timing contract holds for IPv6: retries, failure, expiry. */
static void
nd_retries_and_expiry(void)
{
	uint64_t t0, retry = tsc_ms(IB_NEIGH_RETRY_MS), t1;
	unsigned int k;

	fresh();
	t0 = now;
	CHECK(lookup6(peer6, NULL) == -EAGAIN, "lookup");
	expect_ns(peer6);
	for (k = 1; k < IB_NEIGH_TRIES; k++) {
		tick(t0 + k * retry - 1);
		expect_silence("just before a retry");
		tick(t0 + k * retry);
		expect_ns(peer6);
	}
	tick(t0 + IB_NEIGH_TRIES * retry);
	CHECK(lookup6(peer6, NULL) == -EHOSTUNREACH, "after the last try");
	CHECK(dev->sh[0].cnt[IB_CNT_ND_SOLICIT_SENT] == IB_NEIGH_TRIES &&
	      dev->sh[0].cnt[IB_CNT_ND_FAILED] == 1, "solicitations %" PRIu64,
	      dev->sh[0].cnt[IB_CNT_ND_SOLICIT_SENT]);
	tick(now + tsc_ms(IB_NEIGH_FAILED_MS));
	CHECK(lookup6(peer6, NULL) == -EAGAIN, "failure not forgotten");
	expect_ns(peer6);
	t1 = now + tsc_ms(10);
	tick(t1);
	na_from(&peer_mac, peer6);
	tick(t1 + tsc_ms(IB_NEIGH_REACHABLE_MS) - 1);
	expect_mac6(peer6, &peer_mac);
	tick(t1 + tsc_ms(IB_NEIGH_REACHABLE_MS));
	CHECK(lookup6(peer6, NULL) == -EAGAIN, "expired entry still used");
	expect_ns(peer6);
	no_leak();
}

/* On a VLAN device ARP and ND go out tagged; other VLANs are not ours. */
static void
vlan_tagged_neighbour_frames(void)
{
	struct rte_mbuf *m[MAX_FRAMES], *f;
	const uint8_t *p;
	unsigned int n, i;

	fresh();
	dev->conf.vlan = 7;
	CHECK(lookup6(peer6, NULL) == -EAGAIN && lookup(peer_ip) == -EAGAIN,
	      "lookups");
	n = sent(m, MAX_FRAMES);
	CHECK(n == 2, "%u frames", n);
	for (i = 0; i < n; i++) {
		p = rte_pktmbuf_mtod(m[i], const uint8_t *);
		CHECK(p[12] == 0x81 && p[13] == 0 && p[14] == 0 && p[15] == 7,
		      "frame %u not tagged VID 7, priority 0", i);
	}
	rte_pktmbuf_free_bulk(m, n);
	/* An untagged NS is not on our VLAN: left to the caller. */
	f = nd_frame(&our_mac, &peer_mac, peer6, our6, ND_NS, 0, our6, 1, 255);
	CHECK(ib_neigh_rx(dev, f) == 0, "untagged NS taken on a VLAN");
	rte_pktmbuf_free(f);
	dev->conf.vlan = 0;
	no_leak();
}

int
main(void)
{
	eal_up("test_arp", "ta");
	/* A failed CHECK exits; the runtime directory must go then too. */
	atexit(eal_down);
	setup();
	RUN(reply_to_request_for_our_ip);
	RUN(no_reply_for_other_ip);
	RUN(non_arp_left_alone);
	RUN(unknown_ip_sends_one_request);
	RUN(reply_completes_resolution);
	RUN(unsolicited_reply_ignored);
	RUN(retries_then_unreachable);
	RUN(reply_revives_failed_entry);
	RUN(expiry_after_lifetime);
	RUN(own_ip_resolves_without_packet);
	RUN(malformed_arp_dropped);
	RUN(gratuitous_arp_fields);
	RUN(peer_garp_updates_known_entry);
	RUN(conflicts_and_foreign_frames);
	RUN(probe_answered_not_learned);
	RUN(table_full);
	RUN(mass_expiry_keeps_survivors);
	RUN(tx_raw_drops_when_port_stalls);
	RUN(nd_advert_for_our_address);
	RUN(nd_invalid_dropped);
	RUN(nd_resolution);
	RUN(nd_retries_and_expiry);
	RUN(vlan_tagged_neighbour_frames);
	ib_neigh_fini(dev);
	rte_eth_dev_stop(dev->port_id);
	rte_eth_dev_close(dev->port_id);
	rte_free(dev);
	rte_mempool_free(pool);
	eal_down();
	CHECK_DONE();
}
