/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * The raw DPDK packet path between two processes over the port of a dpib
 * device: the baseline of the two-process figures (dpib-pktperf, and
 * dpib-perf's perftest mode, which measures it in the same run). It runs
 * on the port's queue 0 before any QP exists: dpib's engine starts with
 * the first QP. Frames are broadcast (no address resolution), EtherType
 * 0x88b5 (local experimental), tagged with a magic; anything else the port
 * brings (ARP) is dropped. The two sides share a connected TCP socket for
 * the parameters (the client's win, as in perftest) and the server's
 * counts.
 */
#ifndef DPIB_PKTPATH_H
#define DPIB_PKTPATH_H

#include <stdint.h>
#include <infiniband/verbs.h>
#include <rte_ether.h>
#include <rte_mempool.h>

#define PKT_MAX_FRAME	4352	/* what dpib's own mbufs hold */
#define PKT_MIN_FRAME	26	/* Ethernet header, magic, kind, sequence */

enum pkt_test { PKT_LAT = 0, PKT_RATE = 1 };

/*
 * What the client tells the server (host byte order: one machine).
 * @frames (PKT_LAT): frames each way per round, 1 or 2. With 2, a second
 * frame of PKT_ACK_FRAME bytes leaves in the same burst as each ping and
 * each echo, as an RC responder's ACK leaves with its program's answer
 * (and a requester's ACK of that answer with its next request): the floor
 * of an RC ping-pong on the link, where the kernel carries frame by frame.
 */
struct pkt_params {
	uint32_t test, size, iters, secs, frames;
};

#define PKT_ACK_FRAME	62	/* a RoCEv2 ACK over IPv4, FCS left out */

struct pkt_path {
	uint16_t port;
	struct rte_mempool *pool;
	struct rte_ether_addr mac;
	int sock;		/* the control connection */
};

/* The client's figures. */
struct pkt_result {
	/* PKT_LAT: half round trips (us) */
	double min_us, typical_us, p99_us, max_us;
	uint32_t resends;
	/* PKT_RATE: what the server received of what was sent */
	uint64_t sent, received;
	double mpps, gbps, loss;
};

/* @ctx's port and a pool of frames of its own named @pool_name. */
void pkt_path_open(struct pkt_path *p, struct ibv_context *ctx,
		   const char *pool_name);
/* One run on connected socket p->sock: the server takes the parameters
 * from the client; the client fills @r.
 */
void pkt_path_server(struct pkt_path *p);
void pkt_path_client(struct pkt_path *p, const struct pkt_params *prm,
		     struct pkt_result *r);

#endif
