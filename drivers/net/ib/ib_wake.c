/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * What wakes a sleeping engine when a frame arrives on a device's port.
 *
 * - The port's receive interrupt, where the PMD has one (net_tap, most PCI
 *   NICs under vfio-pci): DPDK's per-queue event descriptor, registered in
 *   the engine's epoll set with rte_eth_dev_rx_intr_ctl_q so that DPDK reads
 *   out what needs reading.
 * - net_af_packet has none, but the kernel signals its packet socket
 *   (poll's EPOLLIN) whenever it puts a frame in the socket's receive
 *   ring: the PMD's own socket for the shard's queue joins the engine's
 *   epoll set while the engine sleeps, and leaves it when it wakes. A
 *   frame then costs nothing more while the engine runs: an epoll entry
 *   left on the socket would run its callback for every frame, and the
 *   tap below costs every frame a delivery to one more socket (on veth
 *   about 50 ns a frame, 4 % of a ping-pong's round trip). The socket is
 *   the first member of the PMD's receive queue (`int sockfd` in DPDK
 *   22.11 and since), taken only once it proves to be an AF_PACKET
 *   socket bound to the port's interface.
 * - Otherwise on net_af_packet, the frames pass the kernel's packet taps:
 *   a second packet socket on the same interface is the doorbell. Its
 *   filter keeps one byte of a frame and its receive buffer is as small as
 *   the kernel allows: while the engine runs the buffer is full and the
 *   kernel drops the tap's copies before cloning anything; arming empties
 *   it, so the next frame wakes the sleep. (Swapping filters instead costs
 *   a BPF JIT compilation per arm and per disarm, tens of µs of kernel
 *   time each.) It hears every queue's frames: shard 0 takes it, the
 *   others nap.
 * - Anything else (net_memif, net_ring, net_af_xdp, whose XDP redirect
 *   bypasses the taps): no wake-up; the engine naps in bounded steps.
 *
 * Arm before the last look at the port, disarm after waking: a frame that
 * arrives in between is then either seen by that look or wakes the sleep.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <rte_ethdev.h>
#include <rte_interrupts.h>
#include <rte_log.h>
#include <rte_version.h>

#include "ib_hca.h"

static int
tap_filter(int fd, uint32_t snap)
{
	struct sock_filter ins = BPF_STMT(BPF_RET | BPF_K, snap);
	struct sock_fprog prog = { .len = 1, .filter = &ins };

	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog,
			  sizeof(prog));
}

static int
tap_open(struct ib_wake *w, const char *iface)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET };
	int fd, rcvbuf = 1;	/* the kernel's minimum: a few frames */

	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = (int)if_nametoindex(iface);
	if (sll.sll_ifindex == 0)
		return -errno;
	fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (tap_filter(fd, 1) != 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
		       sizeof(rcvbuf)) != 0 ||
	    bind(fd, (struct sockaddr *)&sll, sizeof(sll)) != 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	w->fd = fd;
	w->kind = IB_WAKE_TAP;
	return 0;
}

/*
 * net_af_packet's socket for @queue of @port, or -1 if what the queue
 * starts with is not an AF_PACKET socket bound to @iface.
 */
static int
pmd_sock(uint16_t port, uint16_t queue, const char *iface)
{
	const void *q = rte_eth_fp_ops[port].rxq.data != NULL ?
			rte_eth_fp_ops[port].rxq.data[queue] : NULL;
	struct sockaddr_ll sll;
	socklen_t len = sizeof(int);
	int fd, v = 0;

	if (q == NULL)
		return -1;
	fd = *(const int *)q;
	if (fd < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &len) != 0 ||
	    v != AF_PACKET)
		return -1;
	len = sizeof(sll);
	if (getsockname(fd, (struct sockaddr *)&sll, &len) != 0 ||
	    sll.sll_family != AF_PACKET ||
	    sll.sll_ifindex != (int)if_nametoindex(iface))
		return -1;
	return fd;
}

/*
 * The port's receive interrupt descriptor, or -1. ethdev reports a PMD
 * without one as an error; here that is an answer, so it is not logged.
 */
static int
rx_intr_fd(uint16_t port, uint16_t queue)
{
	int type = rte_log_register("lib.ethdev");
	int level = type >= 0 ? rte_log_get_level(type) : -1;
	int fd;

	if (level >= 0)
		rte_log_set_level(type, RTE_LOG_CRIT);
	fd = rte_eth_dev_rx_intr_ctl_q_get_fd(port, queue);
	if (level >= 0)
		rte_log_set_level(type, (uint32_t)level);
	return fd;
}

/*
 * net_memif. DPDK 22.11's PMD offers no receive interrupt through ethdev,
 * but the memif protocol has one: a receiver clears MASK_INT in its ring's
 * flags, and its peer's transmit then writes the ring's eventfd after each
 * burst (DPDK's memif does, VPP's too); the PMD sets MASK_INT on every
 * receive ring when it connects and never clears it. The ring and the
 * eventfd sit in the PMD's queue and the per-process data, whose layouts
 * below are DPDK 22.11's private ones (drivers/net/memif): read only, and
 * each step checked before the next pointer is followed (the device's
 * name and queue array against the public view, the queue's port, the
 * ring's cookie). The connection's regions and eventfds change with each
 * (re)connection, so they are looked up again at each arm.
 */
#if RTE_VERSION >= RTE_VERSION_NUM(22, 11, 0, 0) && \
	RTE_VERSION < RTE_VERSION_NUM(22, 12, 0, 0)
#define MEMIF_WAKE		1
#define MEMIF_RING_COOKIE	0x3E31F20u
#define MEMIF_MASK_INT		1u
#define MEMIF_MAX_REGIONS	256

/* struct rte_eth_dev (ethdev_driver.h), up to process_private. */
struct eth_dev_view {
	void *burst_fns[6];
	const char *data;	/* struct rte_eth_dev_data: name[64], rx_queues */
	void *const *process_private;	/* memif: its regions' table first */
};

/* struct memif_queue (rte_eth_memif.h), up to the interrupt handle. */
struct memif_queue_view {
	void *mempool;
	void *pmd;
	int type;
	uint16_t region;
	uint16_t in_port;
	uint32_t ring_offset;
	uint16_t last_head;
	uint16_t last_tail;
	void *buffers;
	uint64_t n_pkts;
	uint64_t n_bytes;
	struct rte_intr_handle *intr_handle;
};

/* struct memif_region: its mapping first. */
struct memif_region_view {
	uint8_t *addr;
};

/* ethdev's own (exported, internal API): the device slot by name. */
struct rte_eth_dev *rte_eth_dev_get_by_name(const char *name);

/* The flags of @port's receive ring @queue and its eventfd, or NULL. */
static volatile uint16_t *
memif_ring(uint16_t port, uint16_t queue, int *fd)
{
	void *q = rte_eth_fp_ops[port].rxq.data != NULL ?
		  rte_eth_fp_ops[port].rxq.data[queue] : NULL;
	char name[RTE_ETH_NAME_MAX_LEN];
	const struct eth_dev_view *d;
	const struct memif_queue_view *mq = q;
	const struct memif_region_view *r;
	struct rte_eth_link link;
	uint8_t *ring;

	/* Down first: the PMD marks the link down before it closes the
	 * eventfds and unmaps the rings, and its unmap waits for the engine
	 * (ib_engine_unmap_fence), which holds its pass lock here.
	 */
	if (q == NULL || rte_eth_link_get_nowait(port, &link) != 0 ||
	    link.link_status != RTE_ETH_LINK_UP ||
	    rte_eth_dev_get_name_by_port(port, name) != 0)
		return NULL;
	d = (const void *)rte_eth_dev_get_by_name(name);
	if (d == NULL || d->data == NULL ||
	    strncmp(d->data, name, sizeof(name)) != 0 ||
	    (*(void *const *const *)(d->data + RTE_ETH_NAME_MAX_LEN))[queue] !=
	    q || d->process_private == NULL || mq->in_port != port ||
	    mq->region >= MEMIF_MAX_REGIONS || mq->intr_handle == NULL)
		return NULL;
	r = d->process_private[mq->region];
	if (r == NULL || r->addr == NULL)
		return NULL;
	ring = r->addr + mq->ring_offset;
	if (*(volatile uint32_t *)ring != MEMIF_RING_COOKIE)
		return NULL;
	*fd = rte_intr_fd_get(mq->intr_handle);
	return *fd >= 0 ? (volatile uint16_t *)(ring + 4) : NULL;
}

/*
 * Armed: the ring's eventfd joins the set and the peer is asked to write
 * it (a full fence between that store and the engine's last look, which
 * the peer's transmit mirrors: its ring update, then its read of the flag).
 * Not found (the link is down): the engine naps (ib_wake_armed).
 */
static void
memif_join(struct ib_shard *sh)
{
	struct ib_wake *w = &sh->wake;
	volatile uint16_t *flags;
	int fd = -1;

	flags = memif_ring(sh->dev->port_id, sh->queue, &fd);
	if (flags == NULL)
		return;
	w->ev.epdata.event = EPOLLIN;
	w->ev.epdata.data = sh;		/* engine_sleep counts its wake-ups */
	if (rte_epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &w->ev) != 0)
		return;
	w->fd = fd;
	w->memif_flags = flags;
	*flags = (uint16_t)(*flags & ~MEMIF_MASK_INT);
	rte_atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/*
 * The armed ring masked again, under the pass lock (the loop waking, or a
 * program's call while it sleeps): 1, or 0 when it is not armed or no
 * longer there. The link may have gone while the engine slept (the PMD
 * unmaps the ring and closes the eventfd, whose number another descriptor
 * may then have taken): the ring is looked up again, and only the same
 * ring with the same eventfd is touched.
 */
static int
memif_mask(struct ib_shard *sh)
{
	struct ib_wake *w = &sh->wake;
	volatile uint16_t *flags;
	int fd = -1;

	if (w->memif_flags == NULL)
		return 0;
	flags = memif_ring(sh->dev->port_id, sh->queue, &fd);
	if (flags != w->memif_flags || fd != w->fd)
		return 0;
	*flags = (uint16_t)(*flags | MEMIF_MASK_INT);
	return 1;
}

/*
 * Disarmed: polling again, the peer no longer writes; the eventfd leaves
 * the set (a closed one left it by itself) and is drained.
 */
static void
memif_leave(struct ib_shard *sh)
{
	struct ib_wake *w = &sh->wake;
	uint64_t v;

	if (memif_mask(sh)) {
		rte_epoll_ctl(w->epfd, EPOLL_CTL_DEL, w->fd, &w->ev);
		while (read(w->fd, &v, sizeof(v)) == sizeof(v))
			;
	}
	w->memif_flags = NULL;
	w->fd = -1;
}
#else
#define MEMIF_WAKE	0
static int memif_mask(struct ib_shard *sh) { (void)sh; return 0; }
static void memif_join(struct ib_shard *sh) { (void)sh; }
static void memif_leave(struct ib_shard *sh) { (void)sh; }
#endif

/*
 * After the port started: find the shard's wake-up, if it has one: its
 * queue's interrupt, memif's ring interrupt, af_packet's socket for the
 * queue, or the packet tap.
 */
void
ib_wake_open(struct ib_shard *sh)
{
	struct ib_dev *dev = sh->dev;
	struct ib_wake *w = &sh->wake;
	char iface[IF_NAMESIZE];
	const char *force;
	int fd;

	w->kind = IB_WAKE_NONE;
	w->fd = -1;
	if (dev->conf.loopback)
		return;		/* nothing arrives from outside */
	fd = dev->rx_intr ? rx_intr_fd(dev->port_id, sh->queue) : -1;
	if (fd >= 0) {
		w->kind = IB_WAKE_RX_INTR;
		w->fd = fd;
		return;
	}
	if (MEMIF_WAKE && strncmp(dev->conf.port, "net_memif", 9) == 0) {
		w->kind = IB_WAKE_MEMIF;
		return;
	}
	if (ib_af_packet_iface(dev->conf.port, iface, sizeof(iface)) != 0)
		return;
	/* DPIB_AF_PACKET_WAKE=tap: the fallback, for tests. */
	force = getenv("DPIB_AF_PACKET_WAKE");
	fd = force != NULL && strcmp(force, "tap") == 0 ? -1 :
	     pmd_sock(dev->port_id, sh->queue, iface);
	if (fd >= 0) {
		w->kind = IB_WAKE_PMD_SOCK;
		w->fd = fd;
		return;
	}
	if (sh->id != 0)
		return;
	if (tap_open(w, iface) == 0)
		IB_LOG(NOTICE, "%s: the engine wakes on a packet tap on %s",
		       dev->conf.name, iface);
	else
		IB_LOG(NOTICE, "%s: no packet tap on %s; the engine naps "
		       "instead of sleeping", dev->conf.name, iface);
}

void
ib_wake_close(struct ib_shard *sh)
{
	if (sh->wake.kind == IB_WAKE_TAP)
		close(sh->wake.fd);
	sh->wake.kind = IB_WAKE_NONE;
	sh->wake.fd = -1;
}

/* Join the engine's epoll set (engine side, once per shard). */
int
ib_wake_register(struct ib_shard *sh, int epfd)
{
	struct ib_wake *w = &sh->wake;

	switch (w->kind) {
	case IB_WAKE_RX_INTR:
		return rte_eth_dev_rx_intr_ctl_q(sh->dev->port_id, sh->queue,
						 epfd, RTE_INTR_EVENT_ADD, sh);
	case IB_WAKE_TAP:
		w->ev.epdata.event = EPOLLIN;
		w->ev.epdata.data = sh;
		return rte_epoll_ctl(epfd, EPOLL_CTL_ADD, w->fd, &w->ev);
	case IB_WAKE_PMD_SOCK:
	case IB_WAKE_MEMIF:
		w->epfd = epfd;		/* joined at each arm */
		return 0;
	default:
		return 0;
	}
}

void
ib_wake_unregister(struct ib_shard *sh, int epfd)
{
	struct ib_wake *w = &sh->wake;

	if (w->kind == IB_WAKE_RX_INTR)
		rte_eth_dev_rx_intr_ctl_q(sh->dev->port_id, sh->queue, epfd,
					  RTE_INTR_EVENT_DEL, sh);
	else if (w->kind == IB_WAKE_TAP)
		rte_epoll_ctl(epfd, EPOLL_CTL_DEL, w->fd, &w->ev);
}

/* The tap's queue emptied: the next frame wakes the engine. */
static void
tap_drain(int fd)
{
	char b[64];

	while (recv(fd, b, sizeof(b), MSG_DONTWAIT | MSG_TRUNC) >= 0)
		;	/* the doorbell rang; the frames are the port's */
}

/*
 * The PMD's socket joins the set. A socket error (the interface went
 * down) is read out first: it would keep the sleep from sleeping. Epoll
 * looks at the ring as the socket joins, so frames already there wake
 * the sleep at once.
 */
static void
sock_join(struct ib_wake *w)
{
	socklen_t len = sizeof(int);
	int err;

	(void)getsockopt(w->fd, SOL_SOCKET, SO_ERROR, &err, &len);
	w->ev.epdata.event = EPOLLIN;
	w->ev.epdata.data = NULL;
	if (rte_epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->fd, &w->ev) != 0)
		IB_LOG(DEBUG, "af_packet socket wake-up: %s", strerror(errno));
}

/* @memif: a memif ring's interrupt may be armed (see wake_set). */
void
ib_wake_arm(struct ib_shard *sh, int memif)
{
	if (sh->wake.kind == IB_WAKE_RX_INTR)
		rte_eth_dev_rx_intr_enable(sh->dev->port_id, sh->queue);
	else if (sh->wake.kind == IB_WAKE_PMD_SOCK)
		sock_join(&sh->wake);
	else if (sh->wake.kind == IB_WAKE_TAP)
		tap_drain(sh->wake.fd);
	else if (sh->wake.kind == IB_WAKE_MEMIF && memif)
		memif_join(sh);
}

void
ib_wake_mask(struct ib_shard *sh)
{
	if (sh->wake.kind == IB_WAKE_MEMIF)
		(void)memif_mask(sh);
}

/* Will a frame wake the sleep ib_wake_arm armed for? */
int
ib_wake_armed(const struct ib_shard *sh)
{
	return sh->wake.kind != IB_WAKE_NONE &&
	       (sh->wake.kind != IB_WAKE_MEMIF || sh->wake.memif_flags != NULL);
}

void
ib_wake_disarm(struct ib_shard *sh)
{
	if (sh->wake.kind == IB_WAKE_RX_INTR)
		rte_eth_dev_rx_intr_disable(sh->dev->port_id, sh->queue);
	else if (sh->wake.kind == IB_WAKE_PMD_SOCK)
		rte_epoll_ctl(sh->wake.epfd, EPOLL_CTL_DEL, sh->wake.fd,
			      &sh->wake.ev);
	else if (sh->wake.kind == IB_WAKE_MEMIF)
		memif_leave(sh);
}
