/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Lazy, once-per-process EAL bring-up and device creation.
 *
 * EAL gets a unique file prefix, hugepages when a hugetlbfs is mounted with
 * free pages (in-memory mode, no files), else --no-huge. The main lcore
 * floats over the caller's CPUs so the application thread that happens to
 * make the first verbs call keeps its affinity; the engine lcore is pinned
 * to one CPU. At exit the engine stops, EAL is cleaned up and its runtime
 * directory removed.
 */
#include <dirent.h>
#include <errno.h>
#include <execinfo.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_log.h>

#include "verbs_priv.h"

RTE_LOG_REGISTER(dpib_logtype, lib.dpib, NOTICE);

/* The arguments dpib chooses (at most 10), the user's, and NULL. */
#define MAX_ARGS (16 + 2 * DPIB_MAX_DEVICES + DPIB_MAX_EAL_ARGS)

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_err;
static pid_t init_pid;
static struct dpib_config config;
static struct dpib_device devices[DPIB_MAX_DEVICES];
static unsigned int ndevices;
static char runtime_dir[PATH_MAX];

static int
hugepages_usable(void)
{
	char line[256];
	long free_pages = 0;
	int mounted = 0;
	FILE *f;

	f = fopen("/proc/mounts", "r");
	if (f != NULL) {
		while (fgets(line, sizeof(line), f) != NULL)
			if (strstr(line, " hugetlbfs ") != NULL)
				mounted = 1;
		fclose(f);
	}
	f = fopen("/proc/meminfo", "r");
	if (f != NULL) {
		while (fgets(line, sizeof(line), f) != NULL)
			sscanf(line, "HugePages_Free: %ld", &free_pages);
		fclose(f);
	}
	/* 2 MiB pages: the mbuf pools and queues need about 128 MiB. */
	return mounted && free_pages >= 128;
}

/*
 * "--lcores" keeping the caller's CPUs for lcore 0, engine k on lcore 1 + k:
 * on the CPUs [engine] cpu lists, else on the last CPUs of the affinity
 * mask (engine 0 on the last), or, in inline mode, floating over them all.
 */
static void
lcores_arg(char *buf, size_t len)
{
	int cpus[CPU_SETSIZE], ncpus = 0, cpu;
	char list[1024];
	cpu_set_t set;
	uint32_t k;
	size_t n;

	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		CPU_SET(0, &set);
	n = 0;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		n += snprintf(list + n, sizeof(list) - n, "%s%d",
			      ncpus ? "," : "", cpu);
		cpus[ncpus++] = cpu;
	}
	n = snprintf(buf, len, "--lcores=0@(%s)", list);
	for (k = 0; k < config.engines && n < len; k++) {
		/* Inline mode: the engine loops mostly sleep and share the
		 * CPUs with the program, so they float over them too.
		 */
		if (config.engine_mode == IB_ENGINE_INLINE && config.ncpu == 0)
			n += snprintf(buf + n, len - n, ",%u@(%s)", 1 + k, list);
		else
			n += snprintf(buf + n, len - n, ",%u@%d", 1 + k,
				      config.ncpu ?
				      config.lcore_cpu[k % config.ncpu] :
				      cpus[(ncpus - 1 - (int)(k % ncpus))]);
	}
}

static void
remove_dir(const char *dir)
{
	struct dirent *e;
	DIR *d;

	d = opendir(dir);
	if (d != NULL) {
		while ((e = readdir(d)) != NULL) {
			char path[2 * PATH_MAX];

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
		closedir(d);
	}
	rmdir(dir);
}

/*
 * A process killed by a signal cannot clean up after itself: remove the
 * runtime directories of dpib processes that no longer exist.
 */
static void
sweep_stale_runtime_dirs(const char *parent)
{
	struct dirent *e;
	DIR *d = opendir(parent);

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		char path[PATH_MAX + 256];
		int pid;

		if (sscanf(e->d_name, "dpib_%d", &pid) != 1 || pid <= 0 ||
		    kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(path, sizeof(path), "%s/%s", parent, e->d_name);
		remove_dir(path);
	}
	closedir(d);
}

static void
remove_runtime_dir(void)
{
	if (runtime_dir[0] == '\0')
		return;
	remove_dir(runtime_dir);
	/* The parent (/var/run/dpdk or $XDG_RUNTIME_DIR/dpdk) if now empty. */
	if (strrchr(runtime_dir, '/') != NULL)
		*strrchr(runtime_dir, '/') = '\0';
	rmdir(runtime_dir);
}

static int
is_memif(uint16_t port)
{
	struct rte_eth_dev_info info;

	return rte_eth_dev_info_get(port, &info) == 0 &&
	       info.driver_name != NULL &&
	       strcmp(info.driver_name, "net_memif") == 0;
}

#define MEMIF_CLOSE_WAIT_MS	2000

/*
 * Stops and closes this process's memif ports; runs on EAL's interrupt
 * thread (hca_run_on_intr_thread), the thread that handles a memif peer's
 * disconnect. Both tear the connection down (memif_disconnect: its
 * regions, its queue descriptors) and DPDK 22.11 does not lock against
 * itself there: a peer that left while this process exited freed them
 * twice at once ("Invalid memory", or a segfault in exit). On one thread
 * the two take turns.
 */
static void
memif_close_all(void *arg)
{
	uint16_t port;

	RTE_SET_USED(arg);
	RTE_ETH_FOREACH_DEV(port) {
		if (!is_memif(port))
			continue;
		rte_eth_dev_stop(port);
		rte_eth_dev_close(port);
	}
}

static void
memif_close(void)
{
	uint16_t port;
	int any = 0;

	RTE_ETH_FOREACH_DEV(port)
		any |= is_memif(port);
	if (any)
		hca_run_on_intr_thread(memif_close_all, NULL,
				       MEMIF_CLOSE_WAIT_MS);
}

/*
 * DPIB_EXIT_COUNTERS=FILE ("-": stderr): each device's counters that are
 * not zero, as "device counter value" lines, when the process exits - what
 * an unmodified program (perftest) did to the device, for tests and users
 * without a telemetry client.
 */
static void
exit_counters(void)
{
	const char *path = getenv("DPIB_EXIT_COUNTERS");
	const char *const *names;
	uint64_t v[256];
	unsigned int i;
	FILE *f;
	int n, k;

	if (path == NULL || *path == '\0')
		return;
	f = strcmp(path, "-") == 0 ? stderr : fopen(path, "a");
	if (f == NULL) {
		DPIB_LOG(ERR, "DPIB_EXIT_COUNTERS=%s: %s", path,
			strerror(errno));
		return;
	}
	for (i = 0; i < ndevices; i++) {
		if (devices[i].hw == NULL)
			continue;
		n = hca_counters(devices[i].hw, &names, v, 256);
		for (k = 0; k < n && k < 256; k++)
			if (v[k] != 0)
				fprintf(f, "%s %s %" PRIu64 "\n",
					devices[i].ibv.name, names[k], v[k]);
	}
	if (f != stderr)
		fclose(f);
}

static void
dpib_exit(void)
{
	uint16_t port;

	if (getpid() != init_pid)	/* a forked child: not ours */
		return;
	ib_engine_shutdown();
	exit_counters();
	ib_mem_exiting();
	hca_port_watch_stop();
	memif_close();
	RTE_ETH_FOREACH_DEV(port) {
		rte_eth_dev_stop(port);
		rte_eth_dev_close(port);
	}
	/*
	 * No rte_eal_cleanup(): EAL runs in memory (no files to remove but the
	 * runtime directory, handled below), and tearing its memory down races
	 * with its interrupt thread, which may still be handling a memif
	 * peer's disconnect - a crash seen in DPDK 22.11.
	 */
	remove_runtime_dir();
}

/*
 * DPIB_BACKTRACE=1: a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL,
 * SIGABRT) in any thread prints that thread's stack to stderr before the
 * process dies of it as it would have - what a test's log needs when an
 * unmodified program crashes on a machine that keeps no core files. Off
 * unless asked for: the program's own handlers stay its own.
 */
static void
backtrace_handler(int sig)
{
	static const char head[] = "dpib: fatal signal, stack:\n";
	void *frames[64];
	int n;

	if (write(STDERR_FILENO, head, sizeof(head) - 1) < 0)
		goto out;
	n = backtrace(frames, 64);
	backtrace_symbols_fd(frames, n, STDERR_FILENO);
out:
	signal(sig, SIG_DFL);
	raise(sig);
}

static void
backtrace_on_crash(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
	const char *on = getenv("DPIB_BACKTRACE");
	struct sigaction sa;
	void *warm[1];
	unsigned int i;

	if (on == NULL || strcmp(on, "1") != 0)
		return;
	backtrace(warm, 1);	/* loads libgcc now, not in the handler */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = backtrace_handler;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < RTE_DIM(sigs); i++)
		sigaction(sigs[i], &sa, NULL);
}

/* Do the [eal] args pick PCI devices themselves (-a, -b, --allow ...)? */
static int
eal_args_choose_pci(void)
{
	const char *a = config.eal_args;

	return strstr(a, "-a ") != NULL || strstr(a, "-b ") != NULL ||
	       strstr(a, "--allow") != NULL || strstr(a, "--block") != NULL ||
	       strstr(a, "-a\t") != NULL || strstr(a, "-b\t") != NULL;
}

static int
eal_start(void)
{
	static char prefix[64], lcores[4096], mem[32];
	char *argv[MAX_ARGS], *tok, *save = NULL;
	static char user[sizeof(config.eal_args)];
	int argc = 0, pci = 0, ret;
	unsigned int i;

	for (i = 0; i < config.ndev; i++)
		if (strncmp(config.dev[i].port, "net_", 4) != 0)
			pci = 1;
	snprintf(prefix, sizeof(prefix), "--file-prefix=dpib_%d", getpid());
	lcores_arg(lcores, sizeof(lcores));
	argv[argc++] = "dpib";
	argv[argc++] = prefix;
	argv[argc++] = lcores;
	argv[argc++] = "--log-level=lib.*:error";
	argv[argc++] = "--log-level=pmd.*:error";
	/* dpib's own stay at notice (a memory hook that failed says so). */
	argv[argc++] = "--log-level=pmd.net.ib.*:notice";
	argv[argc++] = "--log-level=lib.dpib:notice";
	if (!pci)
		argv[argc++] = "--no-pci";
	/*
	 * Only the configured PCI functions: EAL would otherwise take every
	 * device bound to vfio-pci on the machine, other programs' too.
	 */
	for (i = 0; pci && !eal_args_choose_pci() && i < config.ndev &&
	     argc < MAX_ARGS - 2; i++) {
		if (strncmp(config.dev[i].port, "net_", 4) == 0)
			continue;
		argv[argc++] = "-a";
		argv[argc++] = config.dev[i].port;
	}
	if (config.hugepages == 1 ||
	    (config.hugepages == -1 && hugepages_usable())) {
		argv[argc++] = "--in-memory";
	} else {
		snprintf(mem, sizeof(mem), "%u", config.memory_mb);
		argv[argc++] = "--no-huge";
		argv[argc++] = "--no-shconf";
		argv[argc++] = "-m";
		argv[argc++] = mem;
	}
	snprintf(user, sizeof(user), "%s", config.eal_args);
	for (tok = strtok_r(user, " \t", &save); tok != NULL && argc < MAX_ARGS - 1;
	     tok = strtok_r(NULL, " \t", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;

	/*
	 * DPDK's own log stream writes to stdout and syslog. syslog() from
	 * EAL's interrupt thread (a memif peer going away) while the program
	 * exits deadlocks in glibc: exit holds stdio's list lock and flushes
	 * into syslog, whose lock the interrupt thread holds while it opens
	 * /etc/localtime, which needs the list lock (seen as a test that
	 * never ends). Diagnostics go to stderr, unbuffered, and no further.
	 */
	rte_openlog_stream(stderr);
	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		DPIB_LOG(ERR, "EAL initialisation failed: %s",
			rte_strerror(rte_errno));
		return rte_errno ? rte_errno : EINVAL;
	}
	snprintf(runtime_dir, sizeof(runtime_dir), "%s",
		 rte_eal_get_runtime_dir());
	if (strrchr(runtime_dir, '/') != NULL) {
		char parent[PATH_MAX];

		snprintf(parent, sizeof(parent), "%.*s",
			 (int)(strrchr(runtime_dir, '/') - runtime_dir),
			 runtime_dir);
		sweep_stale_runtime_dirs(parent);
	}
	init_pid = getpid();
	atexit(dpib_exit);
	backtrace_on_crash();
	return 0;
}

static void
init_once_fn(void)
{
	unsigned int i;
	int ret;

	ret = dpib_config_load(&config);
	if (ret != 0) {
		init_err = -ret;
		return;
	}
	init_err = eal_start();
	if (init_err)
		return;
	for (i = 0; i < config.ndev; i++) {
		struct dpib_device *d = &devices[ndevices];
		struct ib_dev_conf *c = &config.dev[i];

		c->lcore = 1;
		ret = ib_dev_create(c, &d->hw);
		if (ret != 0) {
			DPIB_LOG(ERR, "device %s on '%s': %s",
				c->name, c->port, strerror(-ret));
			continue;
		}
		d->ibv.node_type = IBV_NODE_CA;
		d->ibv.transport_type = IBV_TRANSPORT_IB;
		snprintf(d->ibv.name, sizeof(d->ibv.name), "%s", c->name);
		snprintf(d->ibv.dev_name, sizeof(d->ibv.dev_name), "uverbs%u",
			 ndevices);
		snprintf(d->ibv.dev_path, sizeof(d->ibv.dev_path),
			 "/dev/infiniband/dpib/%s", c->name);
		snprintf(d->ibv.ibdev_path, sizeof(d->ibv.ibdev_path),
			 "/sys/class/infiniband/%s", c->name);
		ndevices++;
	}
	dpib_telemetry_register();
	dpib_sysfs_write();
}

int
dpib_global_init(void)
{
	pthread_once(&init_once, init_once_fn);
	return init_err;
}

struct dpib_device *
dpib_devices(unsigned int *n)
{
	*n = ndevices;
	return devices;
}

int
dpib_init(void)
{
	return dpib_global_init();
}
