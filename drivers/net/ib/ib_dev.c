/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * An HCA device on a DPDK ethdev port: port bring-up, the mbuf pool, the
 * resource tables, and the attributes verbs report about it.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <linux/if_packet.h>
#include <rte_alarm.h>
#include <rte_bus_vdev.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "ib_hca.h"

#ifdef MADV_POPULATE_WRITE
#define IB_MADV_POPULATE_WRITE	MADV_POPULATE_WRITE
#else
#define IB_MADV_POPULATE_WRITE	23	/* Linux 5.14 */
#endif

/* --log-level=pmd.net.ib.*:debug selects both. */
RTE_LOG_REGISTER(ib_logtype, pmd.net.ib.driver, NOTICE);
RTE_LOG_REGISTER(ib_logtype_dp, pmd.net.ib.dp, NOTICE);

#define IB_NB_MBUF	8192
#define IB_NB_DESC	1024
#define IB_MBUF_CACHE	256	/* per lcore, per shard */
#define IB_VENDOR_ID	0x1af4	/* virtio's, as soft devices commonly use */
#define IB_PART_ID	0xd1b0

const char *const ib_counter_names[IB_CNT_NUM] = {
#define IB_CNT_NAME(e, s) [IB_CNT_ ## e] = s,
	IB_COUNTERS(IB_CNT_NAME)
#undef IB_CNT_NAME
};

/*
 * The largest IB MTU whose RoCEv2 packet fits the Ethernet MTU: IPv4 20 +
 * UDP 8 + BTH 12 + the largest extension headers 28 + ICRC 4 = 72 bytes.
 */
enum ibv_mtu
ib_mtu_from_eth(uint32_t eth_mtu)
{
	enum ibv_mtu m;

	for (m = IBV_MTU_4096; m > IBV_MTU_256; m--)
		if ((128u << m) + 72 <= eth_mtu)
			break;
	return m;
}

/*
 * net_af_packet's own default ring (512 frames of 2 KiB) is smaller than
 * a burst of READ responses or a window of resends: the kernel drops what
 * does not fit. Unless the devargs say otherwise, the ring holds
 * IB_AF_PACKET_RING bytes of frames big enough for the configured MTU
 * (framecnt, framesz and blocksz are net_af_packet's own keys).
 */
#define IB_AF_PACKET_RING	(8u << 20)

static void
af_packet_defaults(char *args, size_t len, uint32_t *mtu)
{
	/* net_af_packet refuses a frame slot larger than an mbuf's room
	 * (less its 32-byte slot header); its MTU is what a slot carries
	 * after the 52-byte header, the Ethernet header and a VLAN tag.
	 */
	uint32_t slot_max = IB_MBUF_DATA - RTE_PKTMBUF_HEADROOM + 32;
	uint32_t mtu_max = slot_max - 52 - RTE_ETHER_HDR_LEN - 4;
	uint32_t framesz, blocksz, a, b;
	size_t n = strlen(args);

	if (strstr(args, "framecnt=") || strstr(args, "framesz=") ||
	    strstr(args, "blocksz="))
		return;		/* the user sized it */
	*mtu = RTE_MIN(*mtu, mtu_max);
	framesz = RTE_ALIGN_CEIL(*mtu + 52 + RTE_ETHER_HDR_LEN + 4, 16);
	/* The PMD finds frame i at i * framesz: blocks (whole pages) must
	 * hold whole frames, so a block is the least common multiple.
	 */
	for (a = framesz, b = 4096; b != 0;) {
		uint32_t r = a % b;

		a = b;
		b = r;
	}
	blocksz = framesz / a * 4096;
	snprintf(args + n, len - n, "%sblocksz=%u,framesz=%u,framecnt=%u",
		 n ? "," : "", blocksz, framesz,
		 RTE_MAX(IB_AF_PACKET_RING / blocksz, 1u) * (blocksz / framesz));
}

/*
 * net_memif: one ring buffer per frame. A frame longer than a buffer
 * (bsize, 2048 bytes by default) leaves as a chain of ring descriptors,
 * and DPDK 22.11's memif transmit keeps the NEXT flag a descriptor had in
 * its last use (fixed upstream in 2026, "net/memif: fix descriptor Tx
 * flags corruption"): a short frame put in such a slot chains on into
 * slots not written yet, and the receiver takes old frames in again. With
 * a 4096 IB MTU, ib_write_lat -s 16384 drew millions of duplicate
 * requests and hung, or crashed. So a buffer holds a whole frame: bsize is
 * an mbuf's data room unless the devargs give one, and the MTU is what a
 * buffer holds less the Ethernet header and a VLAN tag. Before, memif's
 * reported 1518-byte frame limit held the IB MTU to 1024. The ring then
 * has 512 slots (rsize=9) rather than 1024, unless the devargs say: its
 * buffers, in 4 KiB pages, span what 1024 of 2 KiB did, and with twice
 * that an 8-byte ib_send_lat averaged 1.6-1.8 us against 1.3-1.4 (the
 * frames take every slot in turn); the 64 B and 64 KiB streams ran as
 * fast with 512 (5.4 M msg/s, 9.0-9.5 GB/s).
 */
/* The value of devargs key @key ("name="), NULL when @args lacks it. */
static const char *
devarg(const char *args, const char *key)
{
	const char *p = strstr(args, key);

	return p != NULL && (p == args || p[-1] == ',') ? p + strlen(key) :
							   NULL;
}

static void
memif_defaults(char *args, size_t len, uint32_t *mtu)
{
	uint32_t bsize = IB_MBUF_DATA - RTE_PKTMBUF_HEADROOM;
	const char *v = devarg(args, "bsize=");
	size_t n = strlen(args);

	if (v != NULL)
		bsize = (uint32_t)strtoul(v, NULL, 10);
	else
		snprintf(args + n, len - n, "%sbsize=%u", n ? "," : "", bsize);
	n = strlen(args);
	if (devarg(args, "rsize=") == NULL)
		snprintf(args + n, len - n, ",rsize=9");
	*mtu = RTE_MIN(*mtu, bsize > RTE_ETHER_HDR_LEN + RTE_VLAN_HLEN + 256 ?
		       bsize - RTE_ETHER_HDR_LEN - RTE_VLAN_HLEN : 256u);
}

/* "iface=NAME" of an af_packet port's devargs, into @name. */
int
ib_af_packet_iface(const char *spec, char *name, size_t len)
{
	const char *p = strstr(spec, "iface=");
	size_t n;

	if (strncmp(spec, "net_af_packet", 13) != 0 || p == NULL)
		return -ENOENT;
	p += 6;
	n = strcspn(p, ",");
	if (n == 0 || n >= len)
		return -EINVAL;
	memcpy(name, p, n);
	name[n] = '\0';
	return 0;
}

/*
 * What an af_packet port carries: the kernel interface's MTU (set it with
 * `ip link set IFACE mtu N`), within what the frame slots hold. ethdev
 * will not set an MTU above the 1518-byte frame the PMD reports.
 */
static uint32_t
af_packet_mtu(const char *spec, uint32_t want)
{
	struct ifreq ifr = { 0 };
	int s, ok;

	if (ib_af_packet_iface(spec, ifr.ifr_name, sizeof(ifr.ifr_name)) != 0)
		return want;
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return want;
	ok = ioctl(s, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0;
	close(s);
	return ok ? RTE_MIN(want, (uint32_t)ifr.ifr_mtu) : want;
}

/*
 * A net_tap port's MTU: ethdev will not set one above the 1522-byte frame
 * the PMD reports, but the PMD reads whatever its kernel interface takes
 * (into chained mbufs, joined on receive): the interface gets the MTU the
 * configuration asks for, up to what one mbuf holds.
 */
static uint32_t
tap_mtu(const struct rte_eth_dev_info *info, uint32_t want)
{
	struct ifreq ifr = { 0 };
	int s, ok;

	want = RTE_MIN(want, (uint32_t)(IB_MBUF_DATA - RTE_PKTMBUF_HEADROOM -
					RTE_ETHER_HDR_LEN - 4));
	if (info->if_index == 0 ||
	    if_indextoname(info->if_index, ifr.ifr_name) == NULL)
		return RTE_MIN(want, 1500u);
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return RTE_MIN(want, 1500u);
	ifr.ifr_mtu = (int)want;
	ok = ioctl(s, SIOCSIFMTU, &ifr) == 0 ||
	     (ioctl(s, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0);
	close(s);
	return ok ? RTE_MIN(want, (uint32_t)ifr.ifr_mtu) : RTE_MIN(want, 1500u);
}

/*
 * The socket file in a memif port's devargs @args when its role is @role
 * (server or client) and the socket is a file (socket-abstract=no); 0 when
 * it is not.
 */
static int
memif_socket(const char *args, const char *role, char *path, size_t len)
{
	const char *p = strstr(args, "socket=");
	char want[32];
	size_t n;

	snprintf(want, sizeof(want), "role=%s", role);
	if (strstr(args, want) == NULL || p == NULL ||
	    strstr(args, "socket-abstract=no") == NULL)
		return 0;
	p += strlen("socket=");
	n = strcspn(p, ",");
	if (n == 0 || n >= len)
		return 0;
	memcpy(path, p, n);
	path[n] = '\0';
	return 1;
}

/*
 * A memif server binds its socket file, and one left by a process that was
 * killed makes the bind fail ("Address already in use"). A socket nobody
 * accepts on is such a leftover: it goes. One that answers belongs to a
 * live server, and stays (the port then fails to open, as it should).
 */
static void
memif_stale_socket(const char *args)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int s, ret;

	if (!memif_socket(args, "server", sa.sun_path, sizeof(sa.sun_path)) ||
	    stat(sa.sun_path, &st) != 0 || !S_ISSOCK(st.st_mode))
		return;
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return;
	ret = connect(s, (struct sockaddr *)&sa, sizeof(sa));
	if (ret != 0 && errno == ECONNREFUSED && unlink(sa.sun_path) == 0)
		IB_LOG(NOTICE, "removed %s, a memif socket nobody served",
		       sa.sun_path);
	close(s);
}

/* Is @port's link up now (without waiting for it)? */
static int
link_is_up(uint16_t port)
{
	struct rte_eth_link link;

	return rte_eth_link_get_nowait(port, &link) == 0 &&
	       link.link_status == RTE_ETH_LINK_UP;
}

/* Up to @ms for the port's link; 1 when it came up. */
static int
link_up_within(uint16_t port, uint32_t ms)
{
	for (;;) {
		if (link_is_up(port))
			return 1;
		if (ms-- == 0)
			return 0;
		rte_delay_us_sleep(1000);
	}
}

/*
 * Start the port. A memif client started together with its server (MPI
 * ranks, a perftest or UCX client a moment after its server) may find no
 * socket yet, or a server whose port is not started, which drops it: its
 * link then stays down. Within the device's link_wait_ms the client waits
 * for the socket file, and starts again until the link comes up.
 */
static int
port_start_retry(struct ib_dev *dev, const struct rte_eth_dev_info *info)
{
	uint64_t end = rte_get_timer_cycles() +
		       rte_get_timer_hz() / 1000 * dev->conf.link_wait_ms;
	char sock[108];
	struct stat st;
	int ret;

	if (strcmp(info->driver_name, "net_memif") != 0 ||
	    !memif_socket(dev->conf.port, "client", sock, sizeof(sock)))
		return rte_eth_dev_start(dev->port_id);
	for (;;) {
		while ((stat(sock, &st) != 0 || !S_ISSOCK(st.st_mode)) &&
		       rte_get_timer_cycles() < end)
			rte_delay_us_sleep(10000);
		ret = rte_eth_dev_start(dev->port_id);
		if (rte_get_timer_cycles() >= end ||
		    (ret == 0 && link_up_within(dev->port_id, 1000)))
			return ret;
		if (ret == 0)
			(void)rte_eth_dev_stop(dev->port_id);
		else
			rte_delay_us_sleep(50000);
	}
}

/*
 * net_memif's rings and their buffers live in shared memory regions that
 * the client creates (memfds) and both processes map; a page is allocated
 * and mapped at its first touch, and a ring of 512 slots of about 10 KiB
 * each takes its slots in turn. So each of the first few hundred frames
 * each way paid a page fault inside the PMD's copy: with perftest's
 * default 1000 iterations, ib_atomic_lat over memif measured 12-32 us
 * typical, against 1.2-1.6 us once every slot had been used (TSC stamps:
 * a one-frame transmit 5 us in the first tenth of the run, 0.12 after).
 * Once the link is up (the server maps the regions when its client
 * connects), every memif region mapped in this process is populated,
 * its contents untouched (MADV_POPULATE_WRITE; on kernels before 5.14 a
 * read of each page, which maps a shared memfd page writable too).
 */
static void
memif_populate(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	unsigned long lo, hi, a;
	char line[512], perms[8];
	FILE *f = fopen("/proc/self/maps", "re");

	if (f == NULL || pg <= 0) {
		if (f != NULL)
			fclose(f);
		return;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strstr(line, "memif_region") == NULL ||
		    sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 ||
		    perms[0] != 'r' || perms[1] != 'w')
			continue;
		if (madvise((void *)lo, hi - lo, IB_MADV_POPULATE_WRITE) == 0)
			continue;
		for (a = lo; a < hi; a += (unsigned long)pg)
			(void)*(volatile const uint8_t *)a;
	}
	fclose(f);
}

/* At open, and when a port query finds the link up again (a reconnected
 * memif peer maps new regions): once per time the link came up.
 */
void
hca_port_linked(struct ib_dev *dev)
{
	struct rte_eth_dev_info info;

	if (__atomic_exchange_n(&dev->linked, 1, __ATOMIC_ACQ_REL))
		return;
	dev->link_seen = 1;
	if (rte_eth_dev_info_get(dev->port_id, &info) == 0 &&
	    strcmp(info.driver_name, "net_memif") == 0)
		memif_populate();
}

/*
 * A memif client whose server went away stays disconnected: DPDK 22.11's
 * client connects only when its port starts. A server that serves each
 * test from a new process (qperf forks one per test) or that restarted
 * then never saw it again. Such a device reconnects, as a RoCE port comes
 * back up with its peer: once the server's socket file is there, the
 * port starts again with the engines standing still (their bursts must
 * not meet the stop), and again after each second without a link, for
 * up to link_wait_ms. One reconnection at a time (reconnecting); the
 * device's opening runs one and waits for it, the port watch starts one
 * on a thread of its own (the handshake needs the interrupt thread that
 * runs the watch).
 */
static int watch_stopped;	/* the process is exiting: ports close */
static uint32_t reconnects;	/* reconnect_thread()s running */

static int
memif_client_waits(struct ib_dev *dev, char *sock, size_t len)
{
	struct rte_eth_dev_info info;

	return dev->link_seen && !link_is_up(dev->port_id) &&
	       rte_eth_dev_info_get(dev->port_id, &info) == 0 &&
	       strcmp(info.driver_name, "net_memif") == 0 &&
	       memif_socket(dev->conf.port, "client", sock, len);
}

static void
port_restart(void *arg)
{
	struct ib_dev *dev = arg;

	(void)rte_eth_dev_stop(dev->port_id);
	if (rte_eth_dev_start(dev->port_id) != 0)
		IB_LOG(NOTICE, "%s: port %u did not start again",
		       dev->conf.name, dev->port_id);
}

void
hca_port_reconnect(struct ib_dev *dev)
{
	uint64_t end = rte_get_timer_cycles() +
		       rte_get_timer_hz() / 1000 * dev->conf.link_wait_ms;
	char sock[108];
	struct stat st;
	uint8_t no = 0;

	if (!memif_client_waits(dev, sock, sizeof(sock)) ||
	    !__atomic_compare_exchange_n(&dev->reconnecting, &no, 1, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&dev->linked, 0, __ATOMIC_RELEASE);
	while (rte_get_timer_cycles() < end &&
	       !__atomic_load_n(&watch_stopped, __ATOMIC_ACQUIRE)) {
		if (stat(sock, &st) != 0 || !S_ISSOCK(st.st_mode)) {
			rte_delay_us_sleep(10000);
			continue;
		}
		(void)ib_engine_exec(dev, port_restart, dev);
		if (link_up_within(dev->port_id, 1000)) {
			IB_LOG(INFO, "%s: memif reconnected", dev->conf.name);
			break;
		}
	}
	__atomic_store_n(&dev->reconnecting, 0, __ATOMIC_RELEASE);
}

static void *
reconnect_thread(void *arg)
{
	hca_port_reconnect(arg);
	__atomic_fetch_sub(&reconnects, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* From the port watch: a server back while the link is down. */
static void
reconnect_soon(struct ib_dev *dev)
{
	char sock[108];
	struct stat st;
	pthread_attr_t a;
	pthread_t t;

	if (__atomic_load_n(&dev->reconnecting, __ATOMIC_ACQUIRE) ||
	    !memif_client_waits(dev, sock, sizeof(sock)) ||
	    stat(sock, &st) != 0 || !S_ISSOCK(st.st_mode) ||
	    pthread_attr_init(&a) != 0)
		return;
	__atomic_fetch_add(&reconnects, 1, __ATOMIC_ACQUIRE);
	if (pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED) != 0 ||
	    pthread_create(&t, &a, reconnect_thread, dev) != 0)
		__atomic_fetch_sub(&reconnects, 1, __ATOMIC_RELEASE);
	pthread_attr_destroy(&a);
}

/*
 * Port events. A kernel HCA tells each open context when its port goes
 * up or down (IBV_EVENT_PORT_ACTIVE, IBV_EVENT_PORT_ERR: rxe on its
 * netdev's carrier, ibv_asyncwatch prints them, UCX and others act on
 * them). DPDK 22.11's virtual ports raise no link-state interrupt (memif
 * changes its link on the interrupt thread as a peer comes and goes), so
 * while a context is open the link is looked at every IB_PORT_WATCH_US
 * from an alarm on that thread - in every engine mode, with or without
 * QPs (the engines start with the first QP). A flap shorter than that
 * period can go unseen.
 */
static void
port_watch(void *arg)
{
	struct ib_dev *dev = arg;
	uint32_t i;
	int up;

	if (__atomic_load_n(&watch_stopped, __ATOMIC_ACQUIRE))
		return;
	up = link_is_up(dev->port_id);
	if (!up)
		reconnect_soon(dev);
	rte_spinlock_lock(&dev->port_ev_lock);
	if (up != dev->port_up) {
		dev->port_up = (uint8_t)up;
		for (i = 0; i < dev->nport_ev; i++)
			ib_async_event(dev->port_ev[i], up ?
				       IBV_EVENT_PORT_ACTIVE :
				       IBV_EVENT_PORT_ERR, NULL);
	}
	dev->port_watching = dev->nport_ev != 0 &&
		rte_eal_alarm_set(IB_PORT_WATCH_US, port_watch, dev) == 0;
	rte_spinlock_unlock(&dev->port_ev_lock);
}

/* At exit, before the ports close: no watch looks at them any more
 * (rte_eal_alarm_cancel waits for one under way), and no reconnection
 * that one started restarts a port (each gives up within its second's
 * wait for the link; bounded here all the same).
 */
void
hca_port_watch_stop(void)
{
	int ms;

	__atomic_store_n(&watch_stopped, 1, __ATOMIC_RELEASE);
	rte_eal_alarm_cancel(port_watch, (void *)-1);
	for (ms = 0; ms < 3000 &&
	     __atomic_load_n(&reconnects, __ATOMIC_ACQUIRE) != 0; ms++)
		rte_delay_us_sleep(1000);
}

/* A context's async queue @async starts (@on) or stops getting them. */
int
hca_port_events(struct ib_dev *dev, struct ib_evq *async, int on)
{
	int ret = 0;
	uint32_t i;

	rte_spinlock_lock(&dev->port_ev_lock);
	if (on) {
		if (dev->nport_ev == IB_PORT_EV_MAX) {
			ret = -ENOSPC;
		} else {
			if (dev->nport_ev == 0)
				dev->port_up = (uint8_t)link_is_up(dev->port_id);
			dev->port_ev[dev->nport_ev++] = async;
			if (!dev->port_watching)
				dev->port_watching = rte_eal_alarm_set(
					IB_PORT_WATCH_US, port_watch, dev) == 0;
		}
	} else {
		for (i = 0; i < dev->nport_ev; i++)
			if (dev->port_ev[i] == async) {
				dev->port_ev[i] = dev->port_ev[--dev->nport_ev];
				break;
			}
		/* With none left, a pending alarm runs once more and stops. */
	}
	rte_spinlock_unlock(&dev->port_ev_lock);
	return ret;
}

/* Find the port: a vdev is created from its devargs, a PCI NIC probed. */
static int
port_open(const char *spec, uint32_t *mtu, uint16_t *port_id)
{
	char name[RTE_DEV_NAME_MAX_LEN], args[512];
	const char *comma = strchr(spec, ',');
	size_t n = comma ? (size_t)(comma - spec) : strlen(spec);

	if (n >= sizeof(name))
		return -ENAMETOOLONG;
	memcpy(name, spec, n);
	name[n] = '\0';
	if (rte_eth_dev_get_port_by_name(name, port_id) == 0)
		return 0;
	if (strncmp(name, "net_", 4) == 0) {
		snprintf(args, sizeof(args), "%s", comma ? comma + 1 : "");
		if (strncmp(name, "net_af_packet", 13) == 0)
			af_packet_defaults(args, sizeof(args), mtu);
		if (strncmp(name, "net_memif", 9) == 0) {
			memif_stale_socket(args);
			memif_defaults(args, sizeof(args), mtu);
		}
		if (rte_vdev_init(name, args) != 0)
			return -ENODEV;
	} else if (rte_dev_probe(spec) != 0) {
		return -ENODEV;
	}
	return rte_eth_dev_get_port_by_name(name, port_id) == 0 ? 0 : -ENODEV;
}

/*
 * One queue pair per engine where the port has them: net_ring (each TX
 * ring feeds the RX ring of its number), net_tap, net_af_xdp, PCI NICs
 * (whose RSS then spreads what arrives), net_af_packet with qpairs=N in
 * its devargs. net_memif's queue pairs must match the peer's, which this
 * side cannot know: one.
 */
static uint32_t
port_queues(const struct ib_dev *dev, const struct rte_eth_dev_info *info)
{
	uint32_t n = RTE_MAX(dev->conf.engines, 1u);

	if (strcmp(info->driver_name, "net_memif") == 0)
		return 1;
	n = RTE_MIN(n, (uint32_t)info->max_rx_queues);
	n = RTE_MIN(n, (uint32_t)info->max_tx_queues);
	return RTE_MAX(RTE_MIN(n, (uint32_t)IB_MAX_ENGINES), 1u);
}

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23	/* Linux 4.20 */
#endif

/*
 * The packet sockets of this process on interface @ifindex (net_af_packet's
 * queues) stop receiving what they send. The kernel otherwise hands every
 * frame a socket sends to each packet socket on the interface, its own
 * included: DPDK 22.11's PMD leaves that on, so each frame dpib sent came
 * back into its receive ring - copied there by the kernel (a copy of the
 * user pages first: skb_copy_ubufs), then into an mbuf by the PMD, then
 * dropped by dpib as another host's - and took ring slots from the peer's
 * frames. Sockets are found by their bound interface in /proc/self/fd.
 */
static void
af_packet_ignore_outgoing(unsigned int ifindex)
{
	struct sockaddr_ll sll;
	struct dirent *e;
	socklen_t len;
	int fd, domain, one = 1, n = 0;
	DIR *d = opendir("/proc/self/fd");

	if (d == NULL || ifindex == 0) {
		if (d != NULL)
			closedir(d);
		return;
	}
	while ((e = readdir(d)) != NULL) {
		fd = atoi(e->d_name);
		if (e->d_name[0] == '.' || fd == dirfd(d))
			continue;
		len = sizeof(domain);
		if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 ||
		    domain != AF_PACKET)
			continue;
		len = sizeof(sll);
		if (getsockname(fd, (struct sockaddr *)&sll, &len) != 0 ||
		    (unsigned int)sll.sll_ifindex != ifindex)
			continue;
		if (setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one,
			       sizeof(one)) == 0)
			n++;
	}
	closedir(d);
	if (n == 0)
		IB_LOG(NOTICE, "af_packet: interface %u: its sockets still "
		       "receive what they send", ifindex);
}

static int
port_start(struct ib_dev *dev)
{
	struct rte_eth_conf conf = { 0 };
	struct rte_eth_dev_info info;
	uint16_t port = dev->port_id, q, nq;
	int ret;

	ret = rte_eth_dev_info_get(port, &info);
	if (ret != 0)
		return ret;
	dev->nsh = port_queues(dev, &info);
	/* net_ring keeps each queue's packet counts in an array of small
	 * structures that it writes at every burst: neighbouring queues
	 * share cache lines, and engines on them would trade the lines at
	 * every burst. Every fourth queue: lines of their own.
	 */
	dev->qstride = 1;
	if (strcmp(info.driver_name, "net_ring") == 0 && dev->nsh > 1)
		dev->qstride = (uint16_t)RTE_MAX(RTE_MIN(info.max_rx_queues /
						dev->nsh, 4u), 1u);
	if (dev->nsh > 1 && info.flow_type_rss_offloads != 0) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf = info.flow_type_rss_offloads &
			(RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP);
	}
	/* net_af_packet and net_memif say 1518 but take what their frame
	 * slots and ring buffers hold (af_packet_defaults and memif_defaults
	 * sized them).
	 */
	if (info.max_rx_pktlen < dev->conf.mtu + RTE_ETHER_HDR_LEN &&
	    strcmp(info.driver_name, "net_af_packet") != 0 &&
	    strcmp(info.driver_name, "net_tap") != 0 &&
	    strcmp(info.driver_name, "net_memif") != 0)
		dev->conf.mtu = info.max_rx_pktlen - RTE_ETHER_HDR_LEN;
	/* Chained frames (zero-copy payloads) where the port takes them;
	 * net_ring hands mbufs over as they are, to dpib's own receive.
	 */
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	dev->tx_chains = (conf.txmode.offloads &
			  RTE_ETH_TX_OFFLOAD_MULTI_SEGS) ||
			 strcmp(info.driver_name, "net_ring") == 0;
	/* net_af_packet copies each segment into its ring: a chain whose
	 * payload is the MR itself spares dpib's copy into the mbuf
	 * (ib_write_bw -s 65536 over veth +6 %). net_memif copies chains
	 * more slowly than one buffer (-8 % there), so it is not one.
	 */
	dev->tx_gathers = dev->tx_chains &&
			  strcmp(info.driver_name, "net_af_packet") == 0;
	/* The embedded loopback's net_ring brings the very mbufs back: its
	 * frames never leave the process's memory (ib_dev_create decides).
	 */
	dev->ring_loop = dev->conf.loopback &&
			 strcmp(info.driver_name, "net_ring") == 0;
	/* Receive interrupts wake a sleeping engine; a PMD without them
	 * ignores the request or refuses it, then the port runs without.
	 */
	conf.intr_conf.rxq = !dev->conf.loopback;
	nq = (uint16_t)((dev->nsh - 1) * dev->qstride + 1);
	ret = rte_eth_dev_configure(port, nq, nq, &conf);
	if (ret != 0 && conf.intr_conf.rxq) {
		conf.intr_conf.rxq = 0;
		ret = rte_eth_dev_configure(port, nq, nq, &conf);
	}
	if (ret != 0)
		return ret;
	dev->rx_intr = conf.intr_conf.rxq;
	/* Virtual ports without MTU control carry what the config says. */
	if (strcmp(info.driver_name, "net_af_packet") == 0)
		dev->conf.mtu = af_packet_mtu(dev->conf.port, dev->conf.mtu);
	else if (strcmp(info.driver_name, "net_tap") == 0)
		dev->conf.mtu = tap_mtu(&info, dev->conf.mtu);
	else if (strcmp(info.driver_name, "net_memif") == 0)
		;	/* what a buffer holds (memif_defaults) */
	else if (rte_eth_dev_set_mtu(port, dev->conf.mtu) != 0) {
		uint16_t mtu;

		if (!dev->conf.loopback && rte_eth_dev_get_mtu(port, &mtu) == 0)
			dev->conf.mtu = mtu;
	}
	for (q = 0; q < nq; q++) {
		ret = rte_eth_rx_queue_setup(port, q, IB_NB_DESC,
					     rte_eth_dev_socket_id(port), NULL,
					     dev->pool);
		if (ret != 0)
			return ret;
		ret = rte_eth_tx_queue_setup(port, q, IB_NB_DESC,
					     rte_eth_dev_socket_id(port), NULL);
		if (ret != 0)
			return ret;
	}
	ret = port_start_retry(dev, &info);
	if (ret != 0)
		return ret;
	rte_eth_promiscuous_enable(port);
	ret = rte_eth_macaddr_get(port, &dev->mac);
	if (ret == 0 && rte_is_zero_ether_addr(&dev->mac)) {
		/* A port without an address (net_ring): a locally
		 * administered unicast one, so frames and the GUID make sense.
		 */
		dev->mac.addr_bytes[0] = 0x02;
		dev->mac.addr_bytes[5] = (uint8_t)(port + 1);
		(void)rte_eth_dev_default_mac_addr_set(port, &dev->mac);
	}
	/*
	 * An af_packet port shares its interface with the kernel, which
	 * takes every frame sent to the interface's address into its IP stack
	 * as well: there, a RoCE frame for an address only dpib owns costs a
	 * route lookup, a dst entry freed through RCU and an ICMP error, all
	 * in the sending peer's system call (veth). dpib answers as a station
	 * of its own instead, at a locally administered address derived from
	 * the interface's (different from it whether that one was local or
	 * not; the port is promiscuous): the kernel drops its frames as
	 * another host's at once, while the packet socket still sees them.
	 * Measured on a veth pair: ib_write_bw -s 65536 12.9 -> 16.2 Gbit/s,
	 * ib_send_lat -s 8 3.3 -> 2.7 us.
	 */
	if (ret == 0 && strcmp(info.driver_name, "net_af_packet") == 0) {
		dev->mac.addr_bytes[0] = (uint8_t)((dev->mac.addr_bytes[0] |
						    0x02) ^ 0x04);
		af_packet_ignore_outgoing(info.if_index);
	}
	return ret;
}

/*
 * The shards, after the port started with one queue pair each: the rings
 * that doorbells and other engines' hand-offs arrive on, the wake-up.
 */
static int
shards_init(struct ib_dev *dev)
{
	static uint32_t seq;	/* ring names are process-wide */
	char name[RTE_RING_NAMESIZE];
	uint32_t i, n = __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED);

	for (i = 0; i < IB_MAX_ENGINES; i++) {
		struct ib_shard *sh = &dev->sh[i];

		sh->dev = dev;
		sh->id = (uint16_t)i;
		sh->queue = (uint16_t)(i * dev->qstride);
		sh->wake.kind = IB_WAKE_NONE;
		sh->wake.fd = -1;
		sh->wake.epfd = -1;
		sh->pass_rand = 0x9e3779b9u + i;	/* any but 0 */
		TAILQ_INIT(&sh->active);
		TAILQ_INIT(&sh->waiting);
		if (i >= dev->nsh)
			continue;
		snprintf(name, sizeof(name), "ib_db%u_%u", n, i);
		sh->db_ring = rte_ring_create(name, rte_align32pow2(IB_MAX_QP),
					      SOCKET_ID_ANY, RING_F_SC_DEQ |
					      RING_F_EXACT_SZ);
		snprintf(name, sizeof(name), "ib_ho%u_%u", n, i);
		sh->handoff = rte_ring_create(name, IB_HANDOFF_RING,
					      SOCKET_ID_ANY, RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "ib_lo%u_%u", n, i);
		sh->self = rte_ring_create(name, IB_SELF_RING, SOCKET_ID_ANY,
					   RING_F_SP_ENQ | RING_F_SC_DEQ);
		sh->mc = rte_mempool_cache_create(IB_MBUF_CACHE, SOCKET_ID_ANY);
		if (sh->db_ring == NULL || sh->handoff == NULL ||
		    sh->self == NULL || sh->mc == NULL)
			return -ENOMEM;
		ib_wake_open(sh);
	}
	return 0;
}

/*
 * Payload bytes from which a frame points into the MR instead of carrying
 * a copy (0: never). Not with fault injection or a capture, which read and
 * change frames as one buffer, nor on a port that takes no chains.
 */
static uint32_t
zc_threshold(const struct ib_dev *dev)
{
	if (!dev->tx_chains || dev->fault != NULL || dev->capture != NULL ||
	    dev->conf.zero_copy < 0)
		return 0;
	if (dev->conf.zero_copy > 0)
		return (uint32_t)dev->conf.zero_copy;
	return dev->dma_pci || dev->conf.loopback || dev->tx_gathers ?
	       IB_ZC_MIN_DEFAULT : 0;
}

/*
 * Frames that cannot be corrupted need no ICRC. On the embedded loopback
 * (net_ring, the same mbufs come back) a frame is only ever memory of
 * this process, as a frame on Linux's loopback interface, which carries
 * no checksum either: the device sends it unsealed and marked, and takes
 * a marked frame unchecked (ib_tx, rx_frame). A hardware HCA computes the
 * ICRC in its pipeline; in software it is most of a large message's cost
 * (4 KiB: ~1250 cycles to seal, as many to check, against ~250 for the
 * copy). Not with fault injection or a capture, whose frames must be
 * whole RoCEv2 frames, nor with icrc = on.
 */
static int
icrc_local(struct ib_dev *dev)
{
	static const struct rte_mbuf_dynflag unsealed = {
		.name = "dpib_icrc_unsealed",
	};
	int bit;

	if (!dev->ring_loop || dev->fault != NULL || dev->capture != NULL ||
	    dev->conf.icrc_on)
		return 0;
	bit = rte_mbuf_dynflag_register(&unsealed);
	if (bit < 0)
		return -rte_errno;
	ib_unsealed = RTE_BIT64(bit);
	dev->icrc_skip = 1;
	return 0;
}

int
ib_dev_create(const struct ib_dev_conf *conf, struct ib_dev **out)
{
	char name[RTE_MEMPOOL_NAMESIZE];
	struct ib_dev *dev;
	uint8_t *g;
	int ret;

	dev = rte_zmalloc("ib_dev", sizeof(*dev), RTE_CACHE_LINE_SIZE);
	if (dev == NULL)
		return -ENOMEM;
	dev->conf = *conf;
	rte_spinlock_init(&dev->ctl_lock);
	rte_spinlock_init(&dev->dbg_lock);
	rte_spinlock_init(&dev->neigh_lock);
	rte_spinlock_init(&dev->port_ev_lock);
	ret = -ENOMEM;
	dev->qp_tbl = rte_zmalloc("ib_qp_tbl", IB_MAX_QP * sizeof(void *), 0);
	dev->mr_tbl = rte_zmalloc("ib_mr_tbl", IB_MAX_MR * sizeof(void *), 0);
	dev->mr_gen = rte_zmalloc("ib_mr_gen", IB_MAX_MR, 0);
	if (dev->qp_tbl == NULL || dev->mr_tbl == NULL || dev->mr_gen == NULL)
		goto err;
	snprintf(name, sizeof(name), "ib_in_%.16s", conf->name);
	dev->inject = rte_ring_create(name, 1024, SOCKET_ID_ANY, RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "ib_mb_%.16s", conf->name);
	dev->pool = rte_pktmbuf_pool_create(name, IB_NB_MBUF, IB_MBUF_CACHE, 0,
					    IB_MBUF_DATA, SOCKET_ID_ANY);
	if (dev->pool == NULL || dev->inject == NULL)
		goto err;
	ret = port_open(conf->port, &dev->conf.mtu, &dev->port_id);
	if (ret != 0) {
		IB_LOG(ERR, "%s: cannot open port '%s'", conf->name, conf->port);
		goto err;
	}
	ib_dma_dev_init(dev);
	ret = port_start(dev);
	if (ret != 0) {
		IB_LOG(ERR, "%s: cannot start port %u: %s", conf->name,
		       dev->port_id, rte_strerror(-ret));
		goto err;
	}
	/* IPv6 headers are 20 bytes longer than IPv4's. */
	dev->active_mtu = ib_mtu_from_eth(dev->conf.mtu -
					  (dev->conf.has_ip6 ? 20 : 0));
	ret = shards_init(dev);
	if (ret != 0)
		goto err;
	if (conf->capture[0] != '\0' &&
	    (ret = ib_capture_open(dev, conf->capture)) != 0)
		goto err;
	ib_dcqcn_dev_init(dev);
	ret = ib_neigh_init(dev);
	if (ret == 0)
		ret = ib_fault_init(dev);
	if (ret != 0)
		goto err;
	/*
	 * UC completes on send, so its zero-copy frames must come back from
	 * the port soon: virtual ports free them in the burst (net_ring at
	 * the receiver), PCI PMDs when asked (rte_eth_tx_done_cleanup) or
	 * not until their ring fills (net_virtio): UC copies there.
	 */
	dev->tx_reclaims = !dev->dma_pci ||
		rte_eth_tx_done_cleanup(dev->port_id, 0, 0) != -ENOTSUP;
	dev->zc_min = zc_threshold(dev);
	ret = icrc_local(dev);
	if (ret != 0)
		goto err;
	ib_neigh_announce(dev);		/* gratuitous ARP: the port is up */
	ib_tx_flush(dev);

	/* The RoCEv2 GIDs: the IPv4 address IPv4-mapped (::ffff:a.b.c.d),
	 * then the IPv6 address.
	 */
	if (dev->conf.ip != 0) {
		dev->gid[0].raw[10] = dev->gid[0].raw[11] = 0xff;
		memcpy(&dev->gid[0].raw[12], &dev->conf.ip, 4);
		dev->ngid++;
	}
	if (dev->conf.has_ip6)
		memcpy(dev->gid[dev->ngid++].raw, dev->conf.ip6, 16);
	/* Node GUID: modified EUI-64 of the MAC (U/L bit flipped). */
	g = (uint8_t *)&dev->guid;
	memcpy(g, dev->mac.addr_bytes, 3);
	g[0] ^= 0x02;
	g[3] = 0xff;
	g[4] = 0xfe;
	memcpy(g + 5, dev->mac.addr_bytes + 3, 3);
	*out = dev;
	return 0;
err:
	ib_dev_destroy(dev);
	return ret;
}

/*
 * A ring of frames, and the frames still in it (a frame may point into an
 * MR it holds a reference on).
 */
static void
ring_free_frames(struct rte_ring *r)
{
	struct rte_mbuf *m;

	if (r == NULL)
		return;
	while (rte_ring_dequeue(r, (void **)&m) == 0)
		rte_pktmbuf_free(m);
	rte_ring_free(r);
}

void
ib_dev_destroy(struct ib_dev *dev)
{
	uint32_t i;

	ib_engine_detach(dev);
	if (dev->neigh != NULL)
		ib_neigh_fini(dev);
	if (dev->capture != NULL)
		fclose(dev->capture);
	ib_fault_fini(dev);
	for (i = 0; i < IB_MAX_ENGINES; i++) {
		ib_wake_close(&dev->sh[i]);
		rte_ring_free(dev->sh[i].db_ring);
		ring_free_frames(dev->sh[i].handoff);
		ring_free_frames(dev->sh[i].self);
		if (dev->sh[i].mc != NULL) {
			rte_mempool_cache_flush(dev->sh[i].mc, dev->pool);
			rte_mempool_cache_free(dev->sh[i].mc);
		}
	}
	ring_free_frames(dev->inject);
	rte_free(dev->qp_tbl);
	rte_free(dev->mr_tbl);
	rte_free(dev->mr_gen);
	/* The port and pool live until EAL cleanup: ports cannot be
	 * re-created under the same name within a process.
	 */
	rte_free(dev);
}

/*
 * Control path: what the port itself says it lost (frames it had no room
 * or no buffer for, receive and transmit errors), into the counters.
 */
void
ib_dev_port_stats(struct ib_dev *dev)
{
	struct rte_eth_stats s;

	if (rte_eth_stats_get(dev->port_id, &s) != 0)
		return;
	__atomic_store_n(&dev->sh[0].cnt[IB_CNT_PORT_RX_MISSED], s.imissed,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&dev->sh[0].cnt[IB_CNT_PORT_RX_NOMBUF], s.rx_nombuf,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&dev->sh[0].cnt[IB_CNT_PORT_RX_ERRORS], s.ierrors,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&dev->sh[0].cnt[IB_CNT_PORT_TX_ERRORS], s.oerrors,
			 __ATOMIC_RELAXED);
}

int
ib_dev_query(struct ib_dev *dev, struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "dpib 0.1.0");
	a->node_guid = dev->guid;
	a->sys_image_guid = dev->guid;
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = 0xfffff000;
	a->vendor_id = IB_VENDOR_ID;
	a->vendor_part_id = IB_PART_ID;
	a->hw_ver = 1;
	a->max_qp = IB_MAX_QP - IB_QPN_BASE;
	a->max_qp_wr = IB_MAX_QP_WR;
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SYS_IMAGE_GUID |
			      /* ibv_query_port counts them (rx drops). */
			      IBV_DEVICE_BAD_PKEY_CNTR |
			      IBV_DEVICE_BAD_QKEY_CNTR |
			      IBV_DEVICE_PORT_ACTIVE_EVENT |
			      IBV_DEVICE_CURR_QP_STATE_MOD |
			      /* Type 1 windows, and type 2 windows checked
			       * against both the QP and the PD (2B).
			       */
			      IBV_DEVICE_MEM_WINDOW |
			      IBV_DEVICE_MEM_WINDOW_TYPE_2B;
	a->max_sge = IB_MAX_SGE;
	a->max_sge_rd = IB_MAX_SGE;
	a->max_cq = 65536;
	a->max_cqe = IB_MAX_CQE;
	a->max_mr = IB_MAX_MR - 1;
	a->max_mw = IB_MAX_MR - 1;	/* MRs and MWs share the key table */
	a->max_pd = IB_MAX_PD;
	a->max_qp_rd_atom = IB_MAX_RD_ATOMIC;
	a->max_qp_init_rd_atom = IB_MAX_RD_ATOMIC;
	a->max_res_rd_atom = IB_MAX_RD_ATOMIC * (IB_MAX_QP - IB_QPN_BASE);
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_pkeys = 1;
	a->max_srq = 65536;
	a->max_srq_wr = IB_MAX_QP_WR;
	a->max_srq_sge = IB_MAX_SGE;
	a->max_ah = 1 << 20;
	a->max_mcast_grp = IB_MAX_MCAST_GRP;
	a->max_mcast_qp_attach = IB_MAX_MCAST_QPS;
	a->max_total_mcast_qp_attach = IB_MAX_MCAST_GRP * IB_MAX_MCAST_QPS;
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = 1;
	return 0;
}

/* The IB width x lane speed closest to the Ethernet link speed (Mb/s). */
static void
port_speed(uint32_t mbps, uint8_t *width, uint8_t *speed)
{
	static const struct { uint32_t mbps; uint8_t width, speed; } map[] = {
		{ 400000, 2, 128 },	/* 4X NDR */
		{ 200000, 2, 64 },	/* 4X HDR */
		{ 100000, 2, 32 },	/* 4X EDR */
		{ 50000, 16, 32 },	/* 2X EDR */
		{ 40000, 2, 8 },	/* 4X FDR10 */
		{ 25000, 1, 32 },	/* 1X EDR */
		{ 10000, 1, 8 },	/* 1X FDR10 */
		{ 0, 1, 1 },		/* 1X SDR */
	};
	unsigned int i;

	for (i = 0; i < RTE_DIM(map) - 1 && mbps < map[i].mbps; i++)
		;
	*width = map[i].width;
	*speed = map[i].speed;
}

int
ib_dev_query_port(struct ib_dev *dev, struct ibv_port_attr *a)
{
	struct rte_eth_link link;

	memset(a, 0, sizeof(*a));
	if (rte_eth_link_get_nowait(dev->port_id, &link) != 0) {
		link.link_status = RTE_ETH_LINK_DOWN;
		link.link_speed = 0;
	}
	a->state = link.link_status ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	a->phys_state = link.link_status ? 5 : 3;	/* LinkUp : Disabled */
	if (link.link_status)
		hca_port_linked(dev);
	else
		__atomic_store_n(&dev->linked, 0, __ATOMIC_RELEASE);
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = dev->active_mtu;
	a->gid_tbl_len = IB_GID_TBL_LEN;
	a->port_cap_flags = IBV_PORT_CM_SUP;
	a->max_msg_sz = IB_MAX_MSG_SZ;
	/* The port's 16-bit-wide counters of IBA 16.1 stop at their top. */
	a->bad_pkey_cntr = RTE_MIN(ib_count_read(dev, IB_CNT_RX_BAD_PKEY),
				   (uint64_t)UINT16_MAX);
	a->qkey_viol_cntr = RTE_MIN(ib_count_read(dev, IB_CNT_RX_BAD_QKEY),
				    (uint64_t)UINT16_MAX);
	a->pkey_tbl_len = 1;
	a->lid = 0;
	a->sm_lid = 0;
	a->lmc = 0;
	a->max_vl_num = 1;
	a->sm_sl = 0;
	a->subnet_timeout = 0;
	a->init_type_reply = 0;
	port_speed(link.link_speed, &a->active_width, &a->active_speed);
	a->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

/* ---- the device as the library sees it (hca_if.h) ---- */

const struct ib_dev_conf *
hca_conf(const struct ib_dev *dev)
{
	return &dev->conf;
}

/* GID @index of the table IB_GID_TBL_LEN long: 0, ENODATA for an empty
 * entry (*gid zeroed), EINVAL past the table.
 */
int
hca_gid(const struct ib_dev *dev, uint32_t index, union ibv_gid *gid)
{
	if (index >= IB_GID_TBL_LEN)
		return EINVAL;
	if (index >= dev->ngid) {
		memset(gid, 0, sizeof(*gid));
		return ENODATA;
	}
	*gid = dev->gid[index];
	return 0;
}

uint32_t
hca_gid_count(const struct ib_dev *dev)
{
	return dev->ngid;
}

__be64
hca_guid(const struct ib_dev *dev)
{
	return dev->guid;
}

void
hca_mac(const struct ib_dev *dev, uint8_t mac[6])
{
	memcpy(mac, dev->mac.addr_bytes, 6);
}

uint16_t
hca_port_id(const struct ib_dev *dev)
{
	return dev->port_id;
}

unsigned int
hca_mbufs_in_use(const struct ib_dev *dev)
{
	unsigned int n = rte_mempool_in_use_count(dev->pool), i, c = 0;

	/* Buffers in the shards' caches are free, as in an lcore's. */
	for (i = 0; i < IB_MAX_ENGINES; i++)
		if (dev->sh[i].mc != NULL)
			c += __atomic_load_n(&dev->sh[i].mc->len,
					     __ATOMIC_RELAXED);
	return n > c ? n - c : 0;
}

/* The active IB MTU in bytes. */
unsigned int
hca_active_mtu(const struct ib_dev *dev)
{
	return 128u << dev->active_mtu;
}

/* Whether its frames carry an ICRC (0: the in-memory loopback's). */
int
hca_icrc_computed(const struct ib_dev *dev)
{
	return !dev->icrc_skip;
}

/* DCQCN's line rate (Mbit/s), 0 until the first CNP asked the port. */
uint32_t
hca_cc_line_mbps(const struct ib_dev *dev)
{
	return (uint32_t)dev->dcqcn.line;
}

/*
 * The device's counters: their names (static) and up to @n values, each
 * read whole (the set is not a snapshot). Returns how many exist.
 */
uint32_t
hca_engines(const struct ib_dev *dev)
{
	return dev->nsh;
}

void
hca_engine_stats(const struct ib_dev *dev, uint32_t k,
		 struct hca_engine_stats *st)
{
	const struct ib_shard *sh = &dev->sh[k];

	st->qps = __atomic_load_n(&sh->nqp, __ATOMIC_RELAXED);
	st->queue = sh->queue;
	st->rx_packets = __atomic_load_n(&sh->cnt[IB_CNT_RX_PKTS],
					 __ATOMIC_RELAXED);
	st->tx_packets = __atomic_load_n(&sh->cnt[IB_CNT_TX_PKTS],
					 __ATOMIC_RELAXED);
	st->rx_handed = __atomic_load_n(&sh->cnt[IB_CNT_RX_HANDOFF],
					__ATOMIC_RELAXED);
	st->cycles = __atomic_load_n(&sh->cnt[IB_CNT_CYCLES_RECEIVE],
				     __ATOMIC_RELAXED) +
		     __atomic_load_n(&sh->cnt[IB_CNT_CYCLES_SEND],
				     __ATOMIC_RELAXED);
}

uint32_t
hca_qp_engine(struct ibv_qp *qp)
{
	return to_qp(qp)->sh->id;
}

int
hca_mr_dma(struct ibv_mr *mr)
{
	return to_mr(mr)->dma;
}

int
hca_counters(struct ib_dev *dev, const char *const **names, uint64_t *values,
	     int n)
{
	int i;

	if (names != NULL)
		*names = ib_counter_names;
	ib_dev_port_stats(dev);
	for (i = 0; values != NULL && i < n && i < IB_CNT_NUM; i++)
		values[i] = ib_count_read(dev, (enum ib_counter)i);
	return IB_CNT_NUM;
}
