/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * A peer that disappears mid-connection (issue 20), run by rdmacm.sh as
 * two processes over a link:
 *   cm_peer server ADDR PORT    accepts one RC connection, then waits
 *                               (at most 20 s) for DISCONNECTED; with
 *                               "active" it disconnects itself after the
 *                               client went silent, and must still get
 *                               DISCONNECTED (its DREQ's retries run out)
 *   cm_peer client ADDR PORT exit|kill
 *                               connects, then leaves without a word:
 *                               exit() (librdmacm tells the peer, as the
 *                               kernel does for a process that dies) or
 *                               SIGKILL (nobody tells it)
 * Exit status 0 when the side saw what it must; the server's 3: its
 * REP went unanswered (UNREACHABLE), the client's RTU never came.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The next event within @secs, or NULL. */
static struct rdma_cm_event *
next_event(struct rdma_event_channel *ch, double secs)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&p, 1, (int)(secs * 1000)) != 1)
		return NULL;
	if (rdma_get_cm_event(ch, &ev) != 0)
		return NULL;
	printf("event %s status %d\n", rdma_event_str(ev->event), ev->status);
	fflush(stdout);
	return ev;
}

/* Wait for @want on @ch, acknowledging the rest; 0 when it came. */
static int
wait_for(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
	 double secs, struct rdma_cm_id **id, int *status)
{
	double end = now() + secs;
	struct rdma_cm_event *ev;

	while (now() < end) {
		ev = next_event(ch, end - now());
		if (ev == NULL)
			break;
		if (ev->event == want) {
			if (id != NULL)
				*id = ev->id;
			if (status != NULL)
				*status = ev->status;
			rdma_ack_cm_event(ev);
			return 0;
		}
		rdma_ack_cm_event(ev);
	}
	fprintf(stderr, "no %s within %.0f s\n", rdma_event_str(want), secs);
	return -1;
}

static int
make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	if (rdma_create_qp(id, NULL, &a) != 0) {
		perror("rdma_create_qp");
		return -1;
	}
	return 0;
}

static int
server(struct rdma_event_channel *ch, struct sockaddr_in *sin, int active)
{
	struct rdma_conn_param cp = { .responder_resources = 1,
				      .initiator_depth = 1,
				      .rnr_retry_count = 7 };
	struct rdma_cm_id *l, *id = NULL;
	enum rdma_cm_event_type got;
	struct rdma_cm_event *ev;
	int status = 0;
	double t0;

	if (rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) != 0 ||
	    rdma_bind_addr(l, (struct sockaddr *)sin) != 0 ||
	    rdma_listen(l, 1) != 0) {
		perror("listen");
		return 1;
	}
	if (wait_for(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 20, &id, NULL) ||
	    make_qp(id) || rdma_accept(id, &cp) != 0)
		return 1;
	t0 = now();
	ev = next_event(ch, 10);
	if (ev == NULL)
		return 1;
	got = ev->event;
	status = ev->status;
	rdma_ack_cm_event(ev);
	if (got == RDMA_CM_EVENT_UNREACHABLE && status == -ETIMEDOUT) {
		/* Our REP's retries ran out: the client's RTU never came.
		 * A client killed right after its ESTABLISHED may take the
		 * RTU down with it (memif: the frame in the shared ring is
		 * gone with the link); rdmacm.sh accepts that for kill.
		 */
		printf("no RTU: unreachable after %.2f s, status %d\n",
		       now() - t0, status);
		return 3;
	}
	if (got != RDMA_CM_EVENT_ESTABLISHED)
		return 1;
	printf("connected\n");
	fflush(stdout);
	t0 = now();
	if (active) {
		/* The client is gone without a word: our DREQ goes
		 * unanswered until its retries run out.
		 */
		sleep(1);
		if (rdma_disconnect(id) != 0) {
			perror("rdma_disconnect");
			return 1;
		}
	}
	if (wait_for(ch, RDMA_CM_EVENT_DISCONNECTED, 20, NULL, &status))
		return 1;
	printf("disconnected after %.2f s, status %d\n", now() - t0, status);
	if (active && status != -ETIMEDOUT) {
		fprintf(stderr, "want status -ETIMEDOUT\n");
		return 1;
	}
	if (!active)
		rdma_disconnect(id);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_id(l);
	return 0;
}

static int
client(struct rdma_event_channel *ch, struct sockaddr_in *sin,
       const char *how)
{
	struct rdma_conn_param cp = { .responder_resources = 1,
				      .initiator_depth = 1, .retry_count = 7,
				      .rnr_retry_count = 7 };
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) != 0 ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)sin, 2000) != 0 ||
	    wait_for(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 5, NULL, NULL) ||
	    rdma_resolve_route(id, 2000) != 0 ||
	    wait_for(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 5, NULL, NULL) ||
	    make_qp(id) || rdma_connect(id, &cp) != 0 ||
	    wait_for(ch, RDMA_CM_EVENT_ESTABLISHED, 10, NULL, NULL))
		return 1;
	printf("connected, leaving by %s\n", how);
	fflush(stdout);
	if (strcmp(how, "kill") == 0)
		raise(SIGKILL);
	exit(0);	/* no disconnect, no destroy */
}

int
main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdma_event_channel *ch;

	if (argc < 5 || inet_pton(AF_INET, argv[2], &sin.sin_addr) != 1) {
		fprintf(stderr, "usage: cm_peer server|client ADDR PORT "
			"passive|active|exit|kill\n");
		return 2;
	}
	sin.sin_port = htons((uint16_t)atoi(argv[3]));
	ch = rdma_create_event_channel();
	if (ch == NULL) {
		perror("rdma_create_event_channel");
		return 1;
	}
	if (strcmp(argv[1], "server") == 0)
		return server(ch, &sin, strcmp(argv[4], "active") == 0);
	return client(ch, &sin, argv[4]);
}
