/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Where an inline engine's loop runs: off a CPU that another busy thread
 * shares with it.
 *
 * The loop floats over the process's CPUs and sleeps between bursts of
 * work. A frame that wakes it is a wake-up from the sender's CPU, and the
 * kernel puts the woken loop beside the waker unless the loop's previous
 * CPU is idle at that moment; with the CPUs busy on average it does not
 * look for an idle one either. A perftest target's loop that once ran on
 * the CPU of the program sending to it then stays there, turn about with
 * that program, while the other CPU idles, until the load balancer moves
 * one of them (on the two-CPU machine, perf sched: the first ~60 ms of
 * each ib_write_bw -s 65536 run over veth, at two thirds of the rate).
 *
 * So a loop that serves traffic looks, every window, at how its CPU was
 * spent: its own CPU time (CLOCK_THREAD_CPUTIME_ID), the CPU's idle time
 * (cpuidle's per-state residency, in µs; /proc/stat's, in 10 ms ticks,
 * with a longer window, where the kernel has no cpuidle driver) and the
 * rest, which other threads took. When others took more than
 * PLACE_SHARED_PCT of it, the loop moves to the next CPU it may use
 * (pinned there for PLACE_PIN_US, then free again: the kernel keeps a
 * woken thread on its previous CPU while that one is idle). Each move
 * within PLACE_RECENT_US of the last doubles the window, up to
 * PLACE_WINDOW_MAX_US, until PLACE_CALM_US pass without one: where more
 * threads are busy than there are CPUs (a QEMU guest's vCPUs beside the
 * programs) every CPU is shared, and the loop then moves about once a
 * second, not every few milliseconds.
 */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "ib_hca.h"

#define PLACE_WINDOW_US		2000	/* with cpuidle's µs residency */
#define PLACE_WINDOW_STAT_US	40000	/* with /proc/stat's 10 ms ticks */
#define PLACE_WINDOW_MAX_US	1000000
#define PLACE_SHARED_PCT	40	/* of a window others took: move */
#define PLACE_PIN_US		20000
#define PLACE_RECENT_US		1000000	/* a move this soon after the last
					 * one doubles the window */
#define PLACE_CALM_US		5000000	/* ... and this long without one
					 * brings it back */

static uint64_t
thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t
read_u64(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strtoull(buf, NULL, 10);
}

/* /proc/stat's idle and iowait of CPU @cpu, in µs; UINT64_MAX: unknown. */
static uint64_t
stat_idle_us(struct ib_place *p, int cpu)
{
	char buf[8192];		/* the cpuN lines come first */
	unsigned long long v[5];
	char key[16];
	ssize_t n;
	char *s;

	n = pread(p->statfd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return UINT64_MAX;
	buf[n] = '\0';
	snprintf(key, sizeof(key), "\ncpu%d ", cpu);
	s = strstr(buf, key);
	if (s == NULL || sscanf(s + strlen(key), "%llu %llu %llu %llu %llu",
				&v[0], &v[1], &v[2], &v[3], &v[4]) != 5)
		return UINT64_MAX;
	return (uint64_t)(v[3] + v[4]) * (1000000u / (uint64_t)p->hz);
}

/* CPU @cpu's idle time so far (µs), UINT64_MAX: unknown. */
static uint64_t
idle_us(struct ib_place *p, int cpu)
{
	char path[96];
	uint64_t t = 0;
	int *fd, k;

	if (p->statfd >= 0)
		return stat_idle_us(p, cpu);
	if (cpu < 0 || cpu >= IB_PLACE_MAX_CPUS)
		return UINT64_MAX;
	fd = p->idlefd[cpu];
	if (fd[0] == -2) {
		for (k = 0; k < IB_PLACE_MAX_STATES; k++) {
			snprintf(path, sizeof(path), "/sys/devices/system/cpu/"
				 "cpu%d/cpuidle/state%d/time", cpu, k);
			fd[k] = open(path, O_RDONLY | O_CLOEXEC);
		}
	}
	if (fd[0] < 0)
		return UINT64_MAX;
	for (k = 0; k < IB_PLACE_MAX_STATES && fd[k] >= 0; k++)
		t += read_u64(fd[k]);
	return t;
}

/* At the loop's start: its CPUs, and where idle times come from. */
void
ib_place_init(struct ib_place *p)
{
	char path[64];
	int cpu, k, fd;

	memset(p, 0, sizeof(*p));
	p->statfd = -1;
	p->cpu = -1;
	for (cpu = 0; cpu < IB_PLACE_MAX_CPUS; cpu++)
		for (k = 0; k < IB_PLACE_MAX_STATES; k++)
			p->idlefd[cpu][k] = -2;
	if (sched_getaffinity(0, sizeof(p->allowed), &p->allowed) != 0 ||
	    CPU_COUNT(&p->allowed) < 2)
		return;		/* pinned: nowhere to go */
	cpu = sched_getcpu();
	snprintf(path, sizeof(path),
		 "/sys/devices/system/cpu/cpu%d/cpuidle/state0/time", cpu);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	p->window_us = PLACE_WINDOW_US;
	if (fd >= 0) {
		close(fd);
	} else {
		p->statfd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
		p->hz = sysconf(_SC_CLK_TCK);
		if (p->statfd < 0 || p->hz <= 0 || 1000000 % p->hz != 0)
			return;
		p->window_us = PLACE_WINDOW_STAT_US;
	}
	p->on = 1;
}

void
ib_place_fini(struct ib_place *p)
{
	int cpu, k;

	if (p->pinned)
		sched_setaffinity(0, sizeof(p->allowed), &p->allowed);
	for (cpu = 0; cpu < IB_PLACE_MAX_CPUS; cpu++)
		for (k = 0; k < IB_PLACE_MAX_STATES; k++)
			if (p->idlefd[cpu][k] >= 0)
				close(p->idlefd[cpu][k]);
	if (p->statfd >= 0)
		close(p->statfd);
	p->on = 0;
}

/* The next CPU after @cpu that the loop may use. */
static int
next_cpu(const struct ib_place *p, int cpu)
{
	int i, c;

	for (i = 1; i < CPU_SETSIZE; i++) {
		c = (cpu + i) % CPU_SETSIZE;
		if (CPU_ISSET(c, &p->allowed))
			return c;
	}
	return cpu;
}

static int
move(struct ib_place *p, int cpu, uint64_t now)
{
	cpu_set_t one;
	int to = next_cpu(p, cpu);

	CPU_ZERO(&one);
	CPU_SET(to, &one);
	if (sched_setaffinity(0, sizeof(one), &one) != 0)
		return 0;
	p->pinned = 1;
	p->unpin = now + rte_get_tsc_hz() / 1000000 * PLACE_PIN_US;
	return 1;
}

static uint64_t
window_us(const struct ib_place *p)
{
	return RTE_MIN(p->window_us << p->backoff,
		       (uint64_t)PLACE_WINDOW_MAX_US);
}

/*
 * The loop found work at TSC @now: close the window if it is due, move if
 * others took the CPU, and open the next one. Returns 1 when it moved.
 */
int
ib_place_look(struct ib_place *p, uint64_t now)
{
	const uint64_t us = rte_get_tsc_hz() / 1000000;
	uint64_t wall, mine, idle, ns = 0, t = UINT64_MAX;
	int cpu, closed = 0, moved = 0;

	if (p->pinned && now >= p->unpin) {
		sched_setaffinity(0, sizeof(p->allowed), &p->allowed);
		p->pinned = 0;
	}
	cpu = sched_getcpu();
	/* A window the kernel moved the loop in, or one that spans a long
	 * sleep (whatever else ran meanwhile), says nothing.
	 */
	if (p->cpu == cpu && now - p->t0 < 4 * window_us(p) * us) {
		closed = 1;
		wall = (now - p->t0) / us;
		ns = thread_ns();
		mine = (ns - p->cpu_ns0) / 1000;
		t = idle_us(p, cpu);
		idle = t == UINT64_MAX || p->idle0 == UINT64_MAX ? wall :
		       t - p->idle0;
		if (mine + idle < wall &&
		    (wall - mine - idle) * 100 > wall * PLACE_SHARED_PCT) {
			if (p->last_move != 0 &&
			    now - p->last_move < PLACE_RECENT_US * us)
				p->backoff = RTE_MIN(p->backoff + 1, 9u);
			moved = move(p, cpu, now);
			p->last_move = now;
		} else if (p->backoff != 0 &&
			   now - p->last_move > PLACE_CALM_US * us) {
			p->backoff = 0;
		}
	}
	/* The next window starts from this one's end readings unless the
	 * loop is on another CPU now.
	 */
	if (moved || !closed) {
		cpu = sched_getcpu();
		ns = thread_ns();
		t = idle_us(p, cpu);
	}
	p->cpu = cpu;
	p->t0 = now;
	p->cpu_ns0 = ns;
	p->idle0 = t;
	p->next = now + window_us(p) * us;
	return moved;
}
