/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * test_verbs: a path's neighbour: an unresolved peer times out, READs wait for the
 * MAC, a path follows its peer to a new MAC.
 */
#include "verbs_lb.h"

static uint64_t
counter(const char *name)
{
	return dev_counter(ctx, name);
}

/*
 * An RC QP in RTS toward 192.0.2.@host (TEST-NET-1, on no link: only ARP
 * replies the test injects make it known), QPN 0x123.
 */
static struct ibv_qp *
qp_to_remote(struct ibv_cq *cq, uint8_t host, uint8_t timeout,
	     uint8_t retry_cnt, uint8_t max_rd_atomic)
{
	struct ibv_qp *a = make_qp(IBV_QPT_RC, cq, cq, NULL);
	struct ibv_qp_attr x = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	CHECK(ibv_modify_qp(a, &x, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0, "init");
	memset(&x, 0, sizeof(x));
	x.qp_state = IBV_QPS_RTR;
	x.path_mtu = IBV_MTU_1024;
	x.dest_qp_num = 0x123;
	x.ah_attr.is_global = 1;
	x.ah_attr.port_num = 1;
	x.ah_attr.grh.dgid.raw[10] = x.ah_attr.grh.dgid.raw[11] = 0xff;
	x.ah_attr.grh.dgid.raw[12] = 192;
	x.ah_attr.grh.dgid.raw[13] = 0;
	x.ah_attr.grh.dgid.raw[14] = 2;
	x.ah_attr.grh.dgid.raw[15] = host;
	CHECK(ibv_modify_qp(a, &x, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == 0,
	      "RTR to a remote GID");
	memset(&x, 0, sizeof(x));
	x.qp_state = IBV_QPS_RTS;
	x.timeout = timeout;
	x.retry_cnt = retry_cnt;
	x.rnr_retry = 0;
	x.max_rd_atomic = max_rd_atomic;
	CHECK(ibv_modify_qp(a, &x, IBV_QP_STATE | IBV_QP_SQ_PSN |
			    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC) == 0, "RTS");
	return a;
}

/*
 * A peer nobody answers ARP for: nothing is sent to a guessed MAC, and the
 * WR fails with RETRY_EXC_ERR once timeout x (retry_cnt + 1) has passed.
 */
void
unresolved_peer_times_out(void)
{
	/* Counted from before RTR, which starts resolving the peer. */
	uint64_t rx0 = counter("rx_packets"), tx0 = counter("tx_packets");
	uint64_t arp0 = counter("arp_rx");
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *a = qp_to_remote(cq, 99, 12, 2, 0);	/* 16.8 ms */
	struct ibv_wc wc;
	double t0, bound;

	t0 = check_now();
	CHECK(post_send(a, IBV_WR_RDMA_WRITE, 0, 64, 1, 0) == 0, "post");
	CHECK(poll_one(cq, &wc, 5), "no completion");
	bound = 4.096e-6 * (1 << 12) * 3;
	CHECK(wc.wr_id == 1 && wc.status == IBV_WC_RETRY_EXC_ERR, "status %s",
	      ibv_wc_status_str(wc.status));
	CHECK(check_now() - t0 >= bound * 0.9 && check_now() - t0 < bound + 1,
	      "failed after %.3f s, bound %.3f s", check_now() - t0, bound);
	/* Only ARP requests went out (and came back on the loopback port). */
	CHECK(counter("arp_request_sent") > 0, "no ARP request");
	CHECK(counter("tx_packets") - tx0 == counter("rx_packets") - rx0,
	      "loopback lost frames");
	CHECK(counter("rx_packets") - rx0 == counter("arp_rx") - arp0 &&
	      counter("rx_packets") > rx0, "a non-ARP frame was sent");
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_cq(cq) == 0, "destroy");
}

/*
 * An ARP reply (op 2) or gratuitous request (op 1) for 192.0.2.@host,
 * returning once the engine has taken it in: dpib_inject only queues, so
 * a marker frame follows (not RoCE, counted as such) and the ARP frame is
 * in when the marker is counted. Polling @cq for nothing drives an inline
 * engine.
 */
static void
inject_arp(struct ibv_cq *cq, uint8_t host, uint8_t op, uint8_t mac_low)
{
	uint8_t f[42] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff,	/* broadcast */
		0x02, 0, 0, 0, host, mac_low, 0x08, 0x06,
		0, 1, 0x08, 0, 6, 4, 0, op,
		0x02, 0, 0, 0, host, mac_low, 192, 0, 2, host,	/* sender */
		0, 0, 0, 0, 0, 0, 192, 0, 2, host,	/* target: itself */
	};
	uint8_t marker[60] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0,
			       0, 0, host, mac_low, 0x88, 0xb5 };
	uint64_t seen = counter("rx_drop_not_roce");
	struct ibv_wc wc;
	double end;

	CHECK(dpib_inject(ctx, f, sizeof(f)) == 0 &&
	      dpib_inject(ctx, marker, sizeof(marker)) == 0, "inject ARP");
	end = check_now() + 2;
	while (counter("rx_drop_not_roce") == seen && check_now() < end)
		CHECK(ibv_poll_cq(cq, 0, &wc) == 0, "poll");
	CHECK(counter("rx_drop_not_roce") > seen, "injected ARP not taken in");
}

/*
 * The RoCE frames this run sent to 192.0.2.@host (read off its capture),
 * and the destination MAC of the last one in @mac.
 */
static int
frames_to(uint8_t host, uint8_t mac[6])
{
	const char *path = getenv("DPIB_CAPTURE");
	struct pcap_file pf;
	const uint8_t *d;
	uint32_t len;
	int n = 0;

	CHECK(path != NULL && pcap_open(&pf, path) == 0, "open capture");
	while (pcap_next(&pf, &d, &len) == 1)
		if (len >= 54 && d[12] == 0x08 && d[13] == 0x00 &&
		    d[23] == 17 && d[30] == 192 && d[31] == 0 && d[32] == 2 &&
		    d[33] == host) {
			memcpy(mac, d, 6);
			n++;
		}
	pcap_close(&pf);
	return n;
}

/*
 * READs posted while the peer's MAC is being resolved go out once it is
 * known: waiting for ARP holds no READ credit (each engine pass that found
 * no MAC used to keep one, and after max_rd_atomic passes the READs never
 * left, as perftest's ib_read_bw showed between two processes).
 */
void
reads_wait_for_neighbour(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *a = qp_to_remote(cq, 98, 20, 7, 2);	/* 4.3 s */
	uint8_t mac[6];
	struct ibv_wc wc;
	double end;
	int i;

	for (i = 0; i < 6; i++)
		CHECK(post_send(a, IBV_WR_RDMA_READ, 4096 * i, 64, 10 + i,
				IBV_SEND_SIGNALED) == 0, "post READ %d", i);
	/* Many engine passes without a MAC (polls drive an inline engine). */
	end = check_now() + 0.05;
	while (check_now() < end)
		CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "completion without a peer");
	CHECK(frames_to(98, mac) == 0, "sent before ARP");
	inject_arp(cq, 98, 2, 0x01);
	/* Then max_rd_atomic of them leave (nobody answers: no more). */
	end = check_now() + 2;
	while (frames_to(98, mac) < 2 && check_now() < end)
		CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "unexpected completion");
	end = check_now() + 0.02;
	while (check_now() < end)
		CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "unexpected completion");
	CHECK(frames_to(98, mac) == 2, "%d READ requests left once the MAC "
	      "was known, want 2", frames_to(98, mac));
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_cq(cq) == 0, "destroy");
}

/*
 * A path follows its peer's MAC: a gratuitous ARP announcing another MAC
 * for the peer's address (a failover) moves the QP's next packets there.
 */
void
path_follows_neighbour_mac(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *a = qp_to_remote(cq, 97, 20, 7, 2);	/* 4.3 s */
	uint8_t mac[6];
	struct ibv_wc wc;
	double end;

	CHECK(post_send(a, IBV_WR_RDMA_WRITE, 0, 64, 1, IBV_SEND_SIGNALED) ==
	      0, "post");
	end = check_now() + 0.02;
	while (check_now() < end)
		CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "completion without a peer");
	inject_arp(cq, 97, 2, 0x01);
	end = check_now() + 2;
	while (!frames_to(97, mac) && check_now() < end)
		CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "unexpected completion");
	CHECK(frames_to(97, mac) && mac[5] == 0x01, "first MAC not used");
	/* Announced elsewhere: the next packet (a retransmission, or a new
	 * WR) goes to the new MAC.
	 */
	inject_arp(cq, 97, 1, 0x02);
	CHECK(post_send(a, IBV_WR_RDMA_WRITE, 64, 64, 2, IBV_SEND_SIGNALED) ==
	      0, "post");
	end = check_now() + 2;
	while (frames_to(97, mac) && mac[5] != 0x02 && check_now() < end)
		CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "unexpected completion");
	CHECK(mac[5] == 0x02, "still sending to %02x after the announcement",
	      mac[5]);
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_cq(cq) == 0, "destroy");
}

/*
 * The transport timer runs from the first packet on the wire: a QP that
 * waited for ARP at RTS (which armed the timer), then sat idle for longer
 * than its timeout before its first WR (perftest's set-up), must not time
 * that WR's first packet out at once. It did: the first WRITE went out,
 * was sent again within microseconds (a go-back-N on a stale deadline),
 * and the QP stayed in loss recovery, resending early, for its life.
 */
void
first_packet_times_from_its_send(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *a = qp_to_remote(cq, 96, 12, 7, 0);	/* 16.8 ms */
	uint64_t timeouts = counter("retransmit_timeout");
	uint8_t mac[6];
	struct ibv_wc wc;
	double end;

	/* Engine passes while the MAC is unknown (an inline engine is
	 * driven by the polls), then the answer, then idle for three
	 * timeouts.
	 */
	end = check_now() + 0.005;
	while (check_now() < end)
		CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "completion without a WR");
	inject_arp(cq, 96, 2, 0x01);
	end = check_now() + 0.05;
	while (check_now() < end)
		CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "completion without a WR");
	CHECK(post_send(a, IBV_WR_RDMA_WRITE, 0, 64, 1, IBV_SEND_SIGNALED) ==
	      0, "post");
	end = check_now() + 2;
	while (!frames_to(96, mac) && check_now() < end)
		CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "unexpected completion");
	CHECK(frames_to(96, mac) >= 1, "the WRITE did not leave");
	/* Well within its 16.8 ms: the one packet, no timeout. */
	end = check_now() + 0.008;
	while (check_now() < end)
		CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "unexpected completion");
	CHECK(frames_to(96, mac) == 1, "%d frames within 8 ms of the first: "
	      "a timer armed before it fired", frames_to(96, mac));
	CHECK(counter("retransmit_timeout") == timeouts, "a transport timeout");
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_cq(cq) == 0, "destroy");
}
