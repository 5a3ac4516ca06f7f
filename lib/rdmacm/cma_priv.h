/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef CMA_PRIV_H
#define CMA_PRIV_H

/*
 * dpib's librdmacm: the RDMA-CM API (cma.c) over an IB CM that speaks the
 * IBA chapter 12 protocol in MADs on each device's QP 1 (cm.c, messages in
 * cm_msg.c). It is a verbs consumer: devices, QPs and address resolution
 * come through dpib's libibverbs.so.1 and its dpib.h extensions, never
 * from the driver.
 *
 * Threading: one lock (cma.lock) guards every id, channel and device. A
 * worker thread (cm.c) waits on each device's QP 1 completion channel and
 * on the earliest timer (retransmission, time-wait, address resolution)
 * and runs the protocol under the lock. API calls take the lock, change
 * state and send; they never wait under it. Events go to a channel's
 * queue and its eventfd (semaphore mode: one count per event), so the
 * channel's fd polls readable exactly while events wait and honours
 * O_NONBLOCK set by the application.
 */
#include <pthread.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "cm_msg.h"

#define CMA_MAX_GID		16
#define CMA_RECV_WR		1024	/* QP 1 receive buffers per device:
					 * cmtime -c 1000 sends bursts that big */
#define CMA_RECV_LEN		(40 + CM_MAD_LEN)	/* GRH + MAD */
#define CMA_SEND_WR		1024
#define CMA_MAX_PDATA		CM_RTU_PDATA	/* largest private data */
#define CMA_HDR_LEN		36	/* RDMA-CM's header in REQ/SIDR_REQ data */
#define CMA_MAX_CM_RETRIES	15
#define CMA_TIMEWAIT_MS		200
#define CMA_MAX_BACKLOG		1024	/* the kernel rdma_ucm's max_backlog */

/* A device as the CM uses it: its context (the one ids hand out as
 * id->verbs), a default PD, and QP 1 with its CQ and receive buffers.
 */
struct cma_dev {
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_qp *gsi;
	struct ibv_mr *mr;
	uint8_t *rbuf;
	uint64_t guid;			/* network order, as on the wire */
	enum ibv_mtu mtu;		/* the port's active MTU */
	uint8_t ack_delay;		/* local_ca_ack_delay */
	int ngid;
	union ibv_gid gid[CMA_MAX_GID];
	uint32_t sends;			/* posted on QP 1, not yet polled */
};

struct cma_chan;

enum cma_state {
	CS_IDLE,		/* created, maybe bound */
	CS_ADDR_QUERY,		/* waiting for ARP/ND */
	CS_ADDR_RESOLVED,
	CS_ROUTE_RESOLVED,
	CS_LISTEN,
	CS_REQ_SENT,		/* active: REQ out, REP awaited */
	CS_REP_RCVD,		/* active: CONNECT_RESPONSE given, no QP */
	CS_REQ_RCVD,		/* passive: CONNECT_REQUEST given */
	CS_REP_SENT,		/* passive: REP out, RTU awaited */
	CS_ESTABLISHED,
	CS_DREQ_SENT,
	CS_DREQ_RCVD,		/* DISCONNECTED given, DREP owed */
	CS_TIMEWAIT,
	CS_DISCONNECTED,	/* the connection is over */
	CS_SIDR_REQ_SENT,	/* UD: SIDR_REQ out */
	CS_SIDR_REQ_RCVD,	/* UD passive: CONNECT_REQUEST given */
	CS_ERROR,		/* rejected, unreachable */
};

struct cma_mc {
	LIST_ENTRY(cma_mc) link;
	struct sockaddr_storage addr;
	union ibv_gid mgid;
	void *context;
	int attached;
};

struct cma_id {
	struct rdma_cm_id id;
	TAILQ_ENTRY(cma_id) link;	/* cma.ids */
	struct cma_chan *chan;
	struct cma_dev *dev;		/* NULL: not bound to a device yet */
	enum cma_state state;
	int sync;			/* made with no channel (rdma_create_ep) */
	int bound;			/* has a local port */
	int reuseaddr, afonly;
	uint8_t tos, tos_set, ack_timeout;
	int backlog, pending;		/* listener: requests queued and not
					 * yet handed out */
	struct cma_id *listener;	/* a request's listening id */
	int passive;			/* made by a request: shares the
					 * listener's port, owns none */
	int counted;			/* in its listener's pending */
	int qp_owned;			/* rdma_create_qp made id->qp */
	int ud;				/* RDMA_PS_UDP or IBV_QPT_UD */

	/* The connection (IBA 12.6) */
	uint32_t local_id, remote_id;
	uint64_t remote_guid;
	uint64_t service_id;
	uint64_t tid;
	uint32_t remote_qpn, remote_psn, local_psn, remote_qkey;
	uint8_t resp_res, init_depth;	/* ours; the peer's are swapped */
	uint8_t peer_resp_res;
	uint8_t retry_count, rnr_retry, flow_control, srq;
	enum ibv_mtu mtu;
	uint8_t local_ack_timeout;
	uint8_t cm_timeout;		/* the peer's response timeout, 5 bits */
	uint8_t max_cm_retries;
	union ibv_gid dgid;
	uint8_t sgid_index;
	uint8_t hop_limit, traffic_class;
	uint32_t flow_label;
	/* ECE (rdma_set_local_ece, rdma_get_remote_ece): dpib's QPs have
	 * no options (ibv_query_ece: EOPNOTSUPP), so what goes out is what
	 * the application set, what came in is kept for it to read.
	 */
	struct ibv_ece local_ece, remote_ece;
	struct ibv_ah *ah;		/* to the peer's QP 1 */
	struct ibv_sa_path_rec path;

	/* Retransmission of the last message sent (REQ, REP, DREQ, ...) */
	uint8_t msg[CM_MAD_LEN];
	int msg_len;			/* 0: nothing to resend */
	uint64_t deadline;		/* ns, CLOCK_MONOTONIC; 0: no timer */
	uint64_t period;		/* ns between two sends */
	int tries_left;
	uint64_t addr_deadline;		/* ns: rdma_resolve_addr gives up */

	/* Received messages kept to answer duplicates */
	uint8_t rep_msg[CM_MAD_LEN];	/* the REP, the RTU or the DREP sent */
	int rep_len;

	/* Events handed out and not acknowledged (destroy waits for them) */
	int events_out;
	pthread_cond_t acked;
	int destroying;

	LIST_HEAD(, cma_mc) mcs;

	/* rdma_create_ep's listener: the QP each request gets */
	struct ibv_pd *ep_pd;
	struct ibv_qp_init_attr ep_attr;
	int ep_have_attr;
};

struct cma_event {
	struct rdma_cm_event ev;	/* first: rdma_ack_cm_event's pointer */
	TAILQ_ENTRY(cma_event) link;
	struct cma_id *owner;		/* the id the event is about */
	struct cma_id *counted;		/* handed out: the id whose events_out
					 * it holds (a CONNECT_REQUEST: its
					 * listener's, as librdmacm counts) */
	uint8_t pdata[CMA_MAX_PDATA];
};

/*
 * An event channel. Its eventfd's count always equals the number of
 * queued events (both change together under the lock), so the fd polls
 * readable exactly while events wait and a read of it never blocks;
 * rdma_get_cm_event waits on the condition variable instead.
 */
struct cma_chan {
	struct rdma_event_channel ch;
	TAILQ_HEAD(, cma_event) events;
	pthread_cond_t cond;
	int nids;			/* ids reporting here */
	int waiters;			/* in rdma_get_cm_event */
	int dead;			/* destroyed with waiters inside */
};

struct cma {
	pthread_mutex_t lock;
	pthread_cond_t acked;		/* an event handed out was acknowledged */
	int ready;
	int stopping;			/* the process exits (cm_fini) */
	pid_t pid;			/* the process that started the CM */
	int ndev;
	struct cma_dev *dev;
	TAILQ_HEAD(, cma_id) ids;
	pthread_t worker;
	int kick_fd;			/* eventfd: the worker looks again */
	int epfd;
	uint32_t next_comm_id;
	uint16_t next_port;
};

extern struct cma cma;

/* cma.c */
struct cma_event *cma_event_new(struct cma_id *c, enum rdma_cm_event_type t,
				int status);
void cma_event_post(struct cma_id *c, struct cma_event *e);
void cma_report(struct cma_id *c, enum rdma_cm_event_type t, int status);
struct cma_id *cma_id_new(struct cma_chan *chan, void *context,
			  enum rdma_port_space ps, enum ibv_qp_type qpt);
void cma_id_free(struct cma_id *c);
int cma_port_of(const struct sockaddr *sa);
int cma_addr_any(const struct sockaddr *sa);
socklen_t cma_addr_len(const struct sockaddr *sa);

/* cm.c: devices and the worker */
uint64_t dpib_cm_dropped(int why);
int cm_start(void);
struct cma_dev *cm_dev_by_addr(const struct sockaddr *sa, int *gid_index);
struct cma_dev *cm_dev_for_dst(const struct sockaddr *dst, int *gid_index);
void cm_gid_of(const struct sockaddr *sa, union ibv_gid *gid);
void cm_kick(void);
uint64_t cm_now(void);
uint32_t cm_random(void);
void cm_timer(struct cma_id *c, uint64_t deadline);

/* cm.c: the protocol, called with cma.lock held */
int cm_addr_poll(struct cma_id *c);
int cm_send_req(struct cma_id *c, const struct rdma_conn_param *p);
int cm_send_rep(struct cma_id *c, const struct rdma_conn_param *p);
int cm_send_rtu(struct cma_id *c);
int cm_send_rej(struct cma_id *c, uint16_t reason, const void *pdata,
		uint8_t len);
int cm_send_dreq(struct cma_id *c);
int cm_send_drep(struct cma_id *c);
int cm_send_sidr_req(struct cma_id *c, const struct rdma_conn_param *p);
int cm_send_sidr_rep(struct cma_id *c, uint8_t status, const void *pdata,
		     uint8_t len);
int cm_send_mra(struct cma_id *c);
void cm_established(struct cma_id *c);
void cm_release_pending(struct cma_id *c);
void cm_listen_started(void);
void cm_id_detach(struct cma_id *c);
int cm_qp_rtr_rts(struct cma_id *c);
int cm_qp_error(struct cma_id *c);
int cm_init_qp_attr(struct cma_id *c, struct ibv_qp_attr *a, int *mask);

#endif /* CMA_PRIV_H */
