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
 * After the port started: find the shard's wake-up, if it has one: its
 * queue's interrupt, af_packet's socket for the queue, or the packet tap.
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

void
ib_wake_arm(struct ib_shard *sh)
{
	if (sh->wake.kind == IB_WAKE_RX_INTR)
		rte_eth_dev_rx_intr_enable(sh->dev->port_id, sh->queue);
	else if (sh->wake.kind == IB_WAKE_PMD_SOCK)
		sock_join(&sh->wake);
	else if (sh->wake.kind == IB_WAKE_TAP)
		tap_drain(sh->wake.fd);
}

void
ib_wake_disarm(struct ib_shard *sh)
{
	if (sh->wake.kind == IB_WAKE_RX_INTR)
		rte_eth_dev_rx_intr_disable(sh->dev->port_id, sh->queue);
	else if (sh->wake.kind == IB_WAKE_PMD_SOCK)
		rte_epoll_ctl(sh->wake.epfd, EPOLL_CTL_DEL, sh->wake.fd,
			      &sh->wake.ev);
}
