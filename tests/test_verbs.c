/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Verbs rules on the loopback device, one program (wire_dissect judges its
 * capture as a whole), split by area: completion channels and events
 * (verbs_events.c), the SRQ (verbs_srq.c), UD/UC and QP-state semantics
 * (verbs_qp_types.c), PDs and MRs (verbs_mr.c), a path's neighbour
 * (verbs_neigh.c). The device, PD, buffer and MR they share are here.
 */
#include <stdlib.h>
#include <unistd.h>

#include "verbs_lb.h"

struct ibv_device **list;
struct ibv_context *ctx;
struct ibv_pd *pd;
uint8_t *buf;
struct ibv_mr *mr;

static void
open_all(void)
{
	ctx = open_first(&list, &pd, &buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, &mr);
}

char capture_path[64];

static void
remove_capture(void)
{
	unlink(capture_path);
}

int
main(void)
{
	/* The FENCE test reads the frames off a capture of this run. */
	if (getenv("DPIB_CAPTURE") == NULL) {
		snprintf(capture_path, sizeof(capture_path),
			 "/tmp/dpib-test-verbs-%d.pcap", getpid());
		setenv("DPIB_CAPTURE", capture_path, 1);
		atexit(remove_capture);
	}
	open_all();
	RUN(completion_channel_events);
	RUN(solicited_only_events);
	RUN(cq_event_wait_interrupted_as_read);
	RUN(destroy_cq_waits_for_ack);
	RUN(async_comm_est);
	RUN(srq_shared_and_limit);
	RUN(destroy_leaves_heap_clean);
	RUN(destroy_mid_stream_leaves_heap_clean);
	RUN(ud_semantics);
	RUN(uc_semantics);
	RUN(sqd_drains_and_resumes);
	RUN(reset_purges_only_its_cqes);
	RUN(resize_cq_keeps_entries);
	RUN(unresolved_peer_times_out);
	RUN(reads_wait_for_neighbour);
	RUN(path_follows_neighbour_mac);
	RUN(first_packet_times_from_its_send);
	RUN(ud_multicast);
	RUN(post_limits);
	RUN(protection_domains_and_local_access);
	RUN(post_send_in_init_and_rtr);
	RUN(ud_sqe_recovers_and_no_comm_est);
	RUN(channel_with_epoll);
	RUN(remote_operational_error);
	RUN(fence_waits_for_read);
	RUN(rereg_mr_rules);
	RUN(shared_pd_imports_in_process);
	CHECK(ibv_dereg_mr(mr) == 0 && ibv_dealloc_pd(pd) == 0, "teardown");
	CHECK(ibv_close_device(ctx) == 0, "close");
	ibv_free_device_list(list);
	free(buf);
	CHECK_DONE();
}
