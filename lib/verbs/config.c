/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * The configuration file (docs/configuration.md): sections [eal], [engine]
 * and one [device NAME] per HCA, "key = value" lines, '#' comments. Without
 * DPIB_CONF, one embedded loopback device dpib0 is configured.
 *
 * Every value is read whole and checked against what the device supports
 * before EAL starts. The first line that cannot be used refuses the whole
 * configuration with one line on stderr, "dpib: FILE:LINE: key = value:
 * what is allowed": a device half configured would fail later, further from
 * the cause, or run with a value nobody wrote.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "verbs_priv.h"

#define LOOPBACK_PORT	"net_ring_dpib_lo"
#define LOOPBACK_IP	"127.0.0.1"
#define LOOPBACK_MTU	9000	/* active MTU 4096 */

/*
 * The smallest Ethernet MTU that carries the smallest IB MTU, 256: the
 * RoCEv2 overhead ib_mtu_from_eth allows for is IPv4 20 + UDP 8 + BTH 12 +
 * extension headers 28 + ICRC 4 = 72 bytes, and an IPv6 header is 20 more.
 * Below it the device would announce IB MTU 256 and send larger frames.
 */
#define MTU_MIN		(256u + 72)
#define MTU_MIN_IP6	(MTU_MIN + 20u)
/*
 * The largest: jumbo frames as NICs commonly take them (and the loopback
 * default). The active IB MTU stops growing at 4096 + 72 anyway.
 */
#define MTU_MAX		9000u
/*
 * MiB for EAL without hugepages, per device: its mbuf pool of 8192 mbufs
 * (ib_dev.c) takes about 40 of them, queues and tables the rest.
 */
#define MEMORY_PER_DEV	64u
#define MEMORY_MAX	(1024u * 1024)
/* The driver names its rings and mbuf pool after 16 characters of it. */
#define DEV_NAME_MAX	16u
#define FAULT_DELAY_MAX	1000000u	/* µs: one second */
/* ib_fault_parse reads numbers as doubles: integers up to here are exact. */
#define FAULT_SEED_MAX	UINT32_MAX
#define FAULT_NAK_DROP_MAX	1000000u	/* requests lost after a NAK */
#define FAULT_RATE_MAX		400000u		/* Mbit/s of the bottleneck */
#define FAULT_QUEUE_MAX		65536u		/* its queue, frames */

/* Where the parser is, for messages naming the file and line. */
struct parser {
	struct dpib_config *cfg;
	const char *path;
	unsigned int line;
	unsigned int dev_line[DPIB_MAX_DEVICES];	/* its [device] line */
	unsigned int mtu_line[DPIB_MAX_DEVICES];	/* 0: mtu not given */
	unsigned int memory_line;			/* 0: memory not given */
	char why[512];		/* what a refused value must be */
};

/* One key of a section: its setter and whether it may be left empty. */
struct key {
	const char *name;
	int (*set)(struct parser *p, const char *val);
	int empty_ok;
};

static int refuse(struct parser *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int
refuse(struct parser *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->why, sizeof(p->why), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static char *
trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/*
 * A decimal number in lo..hi, and nothing else: strtoul alone takes a
 * sign, a base prefix, trailing text and wraps on overflow.
 */
static int
parse_uint(const char *val, unsigned long lo, unsigned long hi,
	   unsigned long *out)
{
	unsigned long v;
	char *end;

	if (!isdigit((unsigned char)*val))
		return -EINVAL;
	errno = 0;
	v = strtoul(val, &end, 10);
	if (errno != 0 || *end != '\0' || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "yes" or "no" into *out. */
static int
parse_bool(struct parser *p, const char *val, int *out)
{
	if (strcmp(val, "yes") == 0)
		*out = 1;
	else if (strcmp(val, "no") == 0)
		*out = 0;
	else
		return refuse(p, "must be yes or no");
	return 0;
}

/* A keyword of the configuration and the value it stands for. */
struct word {
	const char *name;
	int value;
};

/* @val among @words (NULL-terminated): its value into *@out, or -EINVAL. */
static int
parse_word(const char *val, const struct word *words, int *out)
{
	for (; words->name != NULL; words++)
		if (strcmp(val, words->name) == 0) {
			*out = words->value;
			return 0;
		}
	return -EINVAL;
}

static int
parse_mode(const char *val, int *mode)
{
	static const struct word modes[] = {
		{ "poll", IB_ENGINE_POLL }, { "adaptive", IB_ENGINE_ADAPTIVE },
		{ "inline", IB_ENGINE_INLINE }, { NULL, 0 },
	};

	return parse_word(val, modes, mode);
}

/* The CPUs of @set as ranges, "0-3,6". */
static void
cpu_list(const cpu_set_t *set, char *buf, size_t len)
{
	size_t n = 0;
	int cpu, last;

	buf[0] = '\0';
	for (cpu = 0; cpu < CPU_SETSIZE && n < len; cpu++) {
		if (!CPU_ISSET(cpu, set))
			continue;
		for (last = cpu; last + 1 < CPU_SETSIZE &&
		     CPU_ISSET(last + 1, set); last++)
			;
		if (last == cpu)
			n += snprintf(buf + n, len - n, "%s%d", n ? "," : "",
				      cpu);
		else
			n += snprintf(buf + n, len - n, "%s%d-%d",
				      n ? "," : "", cpu, last);
		cpu = last;
	}
}

/* The process's CPUs, as eal.c's --lcores will see them. */
static void
cpus_allowed(cpu_set_t *set)
{
	CPU_ZERO(set);
	if (sched_getaffinity(0, sizeof(*set), set) != 0)
		CPU_SET(0, set);
}

/*
 * ib_fault_parse takes whatever strtod reads ("nan", "", 1e30 for an
 * integer); each item is checked here first so that such a value is
 * refused with the reason rather than read wrong.
 */
static int
check_fault(const char *item, const char *val, void *arg, char *why,
	    size_t len)
{
	static const char *const rates[] = {
		"drop", "dup", "reorder", "corrupt", "delay", "ecn_pmax", NULL,
	};
	static const struct {
		const char *name;
		unsigned long min, max;
	} ints[] = {
		{ "delay_us", 1, FAULT_DELAY_MAX },
		{ "seed", 0, FAULT_SEED_MAX },
		{ "nak_drop", 1, FAULT_NAK_DROP_MAX },
		{ "rate_mbps", 1, FAULT_RATE_MAX },
		{ "queue", 1, FAULT_QUEUE_MAX },
		{ "ecn_kmin", 1, FAULT_QUEUE_MAX },
		{ "ecn_kmax", 1, FAULT_QUEUE_MAX },
	};
	unsigned long u;
	unsigned int i;
	char *end;
	double v;

	(void)arg;
	for (i = 0; rates[i] != NULL; i++)
		if (strcmp(item, rates[i]) == 0)
			break;
	if (rates[i] != NULL) {
		v = strtod(val, &end);
		if ((isdigit((unsigned char)*val) || *val == '.') &&
		    *end == '\0' && v >= 0 && v <= 1)
			return 0;
		snprintf(why, len, "%s must be 0..1", item);
		return -EINVAL;
	}
	for (i = 0; i < RTE_DIM(ints); i++) {
		if (strcmp(item, ints[i].name) != 0)
			continue;
		if (parse_uint(val, ints[i].min, ints[i].max, &u) == 0)
			return 0;
		snprintf(why, len, "%s must be %lu..%lu", item, ints[i].min,
			 ints[i].max);
		return -EINVAL;
	}
	snprintf(why, len, "unknown '%s'; known are drop, dup, reorder, "
		 "corrupt, delay, delay_us, seed, nak_drop, rate_mbps, "
		 "queue, ecn_kmin, ecn_kmax, ecn_pmax", item);
	return -EINVAL;
}

static int
check_faults(const char *spec, char *why, size_t len)
{
	return ib_kv_walk(spec, check_fault, NULL, why, len);
}

static struct ib_dev_conf *
cur_dev(struct parser *p)
{
	return &p->cfg->dev[p->cfg->ndev - 1];
}

static int
set_args(struct parser *p, const char *val)
{
	char buf[sizeof(p->cfg->eal_args)], *save = NULL;
	unsigned int n = 0;

	if (snprintf(buf, sizeof(buf), "%s", val) >= (int)sizeof(buf))
		return refuse(p, "longer than %zu characters", sizeof(buf) - 1);
	if (strtok_r(buf, " \t", &save) != NULL)
		for (n = 1; strtok_r(NULL, " \t", &save) != NULL; n++)
			;
	if (n > DPIB_MAX_EAL_ARGS)
		return refuse(p, "%u arguments, at most %d", n,
			      DPIB_MAX_EAL_ARGS);
	snprintf(p->cfg->eal_args, sizeof(p->cfg->eal_args), "%s", val);
	return 0;
}

static int
set_memory(struct parser *p, const char *val)
{
	unsigned long v;

	if (parse_uint(val, MEMORY_PER_DEV, MEMORY_MAX, &v) != 0)
		return refuse(p, "must be %u..%u (MiB)", MEMORY_PER_DEV,
			      MEMORY_MAX);
	p->cfg->memory_mb = v;
	/* Devices (perhaps on later lines) each need their share. */
	p->memory_line = p->line;
	return 0;
}

static int
set_hugepages(struct parser *p, const char *val)
{
	if (strcmp(val, "auto") == 0)
		p->cfg->hugepages = -1;
	else if (strcmp(val, "yes") == 0)
		p->cfg->hugepages = 1;
	else if (strcmp(val, "no") == 0)
		p->cfg->hugepages = 0;
	else
		return refuse(p, "must be auto, yes or no");
	return 0;
}

/*
 * Checked here because EAL, given a CPU outside the affinity mask, prints
 * its whole usage text and no reason.
 */
static int
set_cpu(struct parser *p, const char *val)
{
	char list[256], buf[256], *tok, *save = NULL;
	unsigned long v;
	cpu_set_t set;
	uint32_t n = 0;

	if (strcmp(val, "auto") == 0) {
		p->cfg->lcore_cpu[0] = -1;
		p->cfg->ncpu = 0;
		return 0;
	}
	cpus_allowed(&set);
	if (val[0] == '\0' || val[0] == ',' || val[strlen(val) - 1] == ',' ||
	    strstr(val, ",,") != NULL)
		goto bad;	/* an empty entry */
	snprintf(buf, sizeof(buf), "%s", val);
	for (tok = strtok_r(buf, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n == IB_MAX_ENGINES || parse_uint(tok, 0, CPU_SETSIZE - 1,
						      &v) != 0 ||
		    !CPU_ISSET(v, &set))
			goto bad;
		p->cfg->lcore_cpu[n++] = (int)v;
	}
	if (n == 0)
		goto bad;
	p->cfg->ncpu = n;
	return 0;
bad:
	cpu_list(&set, list, sizeof(list));
	return refuse(p, "must be auto or up to %d CPUs this process may run "
		      "on, comma-separated: %s", IB_MAX_ENGINES, list);
}

static int
parse_engines(const char *val, uint32_t *out)
{
	unsigned long v;

	if (parse_uint(val, 1, IB_MAX_ENGINES, &v) != 0)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int
set_engines(struct parser *p, const char *val)
{
	if (parse_engines(val, &p->cfg->engines) != 0)
		return refuse(p, "must be 1..%d", IB_MAX_ENGINES);
	return 0;
}

static int
parse_placement(const char *val, int *out)
{
	static const struct word placements[] = {
		{ "cq", IB_PLACE_CQ }, { "spread", IB_PLACE_SPREAD },
		{ NULL, 0 },
	};

	return parse_word(val, placements, out);
}

static int
set_placement(struct parser *p, const char *val)
{
	if (parse_placement(val, &p->cfg->placement) != 0)
		return refuse(p, "must be cq or spread");
	return 0;
}

static int
set_mode(struct parser *p, const char *val)
{
	if (parse_mode(val, &p->cfg->engine_mode) != 0)
		return refuse(p, "must be adaptive, poll or inline");
	return 0;
}

/* Engine timings in µs: up to a second. */
static int
parse_us(const char *val, uint32_t *out)
{
	unsigned long v;

	if (parse_uint(val, 1, 1000000, &v) != 0)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int
set_us(struct parser *p, const char *val, uint32_t *out)
{
	if (parse_us(val, out) != 0)
		return refuse(p, "must be 1..1000000 (µs)");
	return 0;
}

static int
set_spin_us(struct parser *p, const char *val)
{
	return set_us(p, val, &p->cfg->spin_us);
}

/* "never": inline mode without the loop, every pass on a verbs call. */
static int
parse_takeover(const char *val, uint32_t *out)
{
	if (strcmp(val, "never") == 0) {
		*out = IB_TAKEOVER_NEVER;
		return 0;
	}
	return parse_us(val, out);
}

static int
set_takeover_us(struct parser *p, const char *val)
{
	if (parse_takeover(val, &p->cfg->takeover_us) != 0)
		return refuse(p, "must be never or 1..1000000 (µs)");
	return 0;
}

/* The inline loop's scheduling: realtime (SCHED_FIFO 1) or normal. */
static int
parse_loop_priority(const char *val, int *rt)
{
	static const struct word priorities[] = {
		{ "realtime", 1 }, { "normal", 0 }, { NULL, 0 },
	};

	return parse_word(val, priorities, rt);
}

static int
set_loop_priority(struct parser *p, const char *val)
{
	if (parse_loop_priority(val, &p->cfg->loop_rt) != 0)
		return refuse(p, "must be realtime or normal");
	return 0;
}

static int
set_port(struct parser *p, const char *val)
{
	struct ib_dev_conf *d = cur_dev(p);

	if (strlen(val) >= sizeof(d->port))
		return refuse(p, "longer than %zu characters",
			      sizeof(d->port) - 1);
	snprintf(d->port, sizeof(d->port), "%s", val);
	return 0;
}

static int
set_ip(struct parser *p, const char *val)
{
	struct ib_dev_conf *d = cur_dev(p);
	uint32_t ip;

	/* 0 means "no IPv4 address"; multicast and class E are no host's. */
	if (inet_pton(AF_INET, val, &ip) != 1 || ip == 0 ||
	    (ntohl(ip) >> 28) >= 0xe)
		return refuse(p, "must be a unicast IPv4 address");
	d->ip = ip;
	return 0;
}

static int
set_ip6(struct parser *p, const char *val)
{
	struct ib_dev_conf *d = cur_dev(p);
	struct in6_addr a;

	/* Unspecified, multicast and IPv4-mapped are no host address. */
	if (inet_pton(AF_INET6, val, &a) != 1 || a.s6_addr[0] == 0xff ||
	    IN6_IS_ADDR_UNSPECIFIED(&a) || IN6_IS_ADDR_V4MAPPED(&a))
		return refuse(p, "must be a unicast IPv6 address, not "
			      "IPv4-mapped");
	memcpy(d->ip6, &a, sizeof(d->ip6));
	d->has_ip6 = 1;
	return 0;
}

static int
set_vlan(struct parser *p, const char *val)
{
	unsigned long v;

	/* 0 is priority tagging and 4095 reserved (802.1Q 9.6). */
	if (parse_uint(val, 1, 4094, &v) != 0)
		return refuse(p, "must be 1..4094");
	cur_dev(p)->vlan = (uint16_t)v;
	return 0;
}

static int
set_mtu(struct parser *p, const char *val)
{
	unsigned long v;

	if (parse_uint(val, MTU_MIN, MTU_MAX, &v) != 0)
		return refuse(p, "must be %u..%u", MTU_MIN, MTU_MAX);
	cur_dev(p)->mtu = v;
	/* With ip6 (perhaps on a later line) the minimum is higher. */
	p->mtu_line[p->cfg->ndev - 1] = p->line;
	return 0;
}

/* A bound in ms on the wait for the link at open: up to ten minutes. */
static int
set_link_wait_ms(struct parser *p, const char *val)
{
	unsigned long v;

	if (parse_uint(val, 0, 600000, &v) != 0)
		return refuse(p, "must be 0..600000 (ms)");
	cur_dev(p)->link_wait_ms = (uint32_t)v;
	return 0;
}

/* dma = auto | on | off: MRs registered with DPDK for the port's DMA. */
static int
parse_dma(const char *val, int *out)
{
	if (strcmp(val, "auto") == 0)
		*out = IB_DMA_AUTO;
	else if (strcmp(val, "on") == 0 || strcmp(val, "yes") == 0)
		*out = IB_DMA_ON;
	else if (strcmp(val, "off") == 0 || strcmp(val, "no") == 0)
		*out = IB_DMA_OFF;
	else
		return -EINVAL;
	return 0;
}

static int
set_dma(struct parser *p, const char *val)
{
	if (parse_dma(val, &cur_dev(p)->dma) != 0)
		return refuse(p, "must be auto, on or off");
	return 0;
}

/* zero_copy = auto | off | BYTES: payloads from this size not copied. */
static int
parse_zero_copy(const char *val, int32_t *out)
{
	unsigned long v;

	if (strcmp(val, "auto") == 0)
		*out = 0;
	else if (strcmp(val, "off") == 0 || strcmp(val, "no") == 0)
		*out = -1;
	else if (parse_uint(val, 1, 65536, &v) == 0)
		*out = (int32_t)v;
	else
		return -EINVAL;
	return 0;
}

static int
set_zero_copy(struct parser *p, const char *val)
{
	if (parse_zero_copy(val, &cur_dev(p)->zero_copy) != 0)
		return refuse(p, "must be auto, off or 1..65536 (bytes)");
	return 0;
}

/* icrc = auto | on: on computes it even where frames stay in memory. */
static int
parse_icrc(const char *val, int *on)
{
	static const struct word icrc[] = {
		{ "auto", 0 }, { "on", 1 }, { NULL, 0 },
	};

	return parse_word(val, icrc, on);
}

static int
set_icrc(struct parser *p, const char *val)
{
	if (parse_icrc(val, &cur_dev(p)->icrc_on) != 0)
		return refuse(p, "must be auto or on");
	return 0;
}

static int
set_loopback(struct parser *p, const char *val)
{
	return parse_bool(p, val, &cur_dev(p)->loopback);
}

/* Fault rates of the current device, @dir 0 requests, 1 responses. */
static int
set_fault_dir(struct parser *p, const char *val, int dir)
{
	struct ib_dev_conf *d = cur_dev(p);

	if (check_faults(val, p->why, sizeof(p->why)) != 0)
		return -EINVAL;
	if ((dir != 1 && ib_fault_parse(val, &d->fault[0]) != 0) ||
	    (dir != 0 && ib_fault_parse(val, &d->fault[1]) != 0))
		return refuse(p, "not understood");
	return 0;
}

static int
set_faults(struct parser *p, const char *val)
{
	return set_fault_dir(p, val, -1);
}

static int
set_faults_req(struct parser *p, const char *val)
{
	return set_fault_dir(p, val, 0);
}

static int
set_faults_resp(struct parser *p, const char *val)
{
	return set_fault_dir(p, val, 1);
}

/* cc = dcqcn | none: RoCEv2 congestion control of the device. */
static int
set_cc(struct parser *p, const char *val)
{
	struct ib_dev_conf *d = cur_dev(p);

	if (strcmp(val, "dcqcn") == 0)
		d->dcqcn.disabled = 0;
	else if (strcmp(val, "none") == 0)
		d->dcqcn.disabled = 1;
	else
		return refuse(p, "must be dcqcn or none");
	return 0;
}

/* dcqcn = name=value,...: its parameters (docs/configuration.md). */
static int
set_dcqcn(struct parser *p, const char *val)
{
	return ib_dcqcn_parse(val, &cur_dev(p)->dcqcn, p->why,
			      sizeof(p->why));
}

static const struct key eal_keys[] = {
	{ "args", set_args, 1 },
	{ "memory", set_memory, 0 },
	{ "hugepages", set_hugepages, 0 },
	{ NULL, NULL, 0 },
};

static const struct key engine_keys[] = {
	{ "cpu", set_cpu, 0 },
	{ "engines", set_engines, 0 },
	{ "placement", set_placement, 0 },
	{ "mode", set_mode, 0 },
	{ "spin_us", set_spin_us, 0 },
	{ "takeover_us", set_takeover_us, 0 },
	{ "loop_priority", set_loop_priority, 0 },
	{ NULL, NULL, 0 },
};

static const struct key device_keys[] = {
	{ "port", set_port, 0 },
	{ "ip", set_ip, 0 },
	{ "ip6", set_ip6, 0 },
	{ "vlan", set_vlan, 0 },
	{ "mtu", set_mtu, 0 },
	{ "loopback", set_loopback, 0 },
	{ "link_wait_ms", set_link_wait_ms, 0 },
	{ "dma", set_dma, 0 },
	{ "zero_copy", set_zero_copy, 0 },
	{ "icrc", set_icrc, 0 },
	{ "faults", set_faults, 0 },
	{ "faults_req", set_faults_req, 0 },
	{ "faults_resp", set_faults_resp, 0 },
	{ "cc", set_cc, 0 },
	{ "dcqcn", set_dcqcn, 0 },
	{ NULL, NULL, 0 },
};

static int line_error(const struct parser *p, const char *what,
		      const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* "dpib: FILE:LINE: WHAT: WHY", the one line a refused file gets. */
static int
line_error(const struct parser *p, const char *what, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	DPIB_LOG(ERR, "%s:%u: %s: %s", p->path, p->line, what, why);
	return -EINVAL;
}

/* "[device NAME]": a new device, within the limits the driver has. */
static int
new_device(struct parser *p, const char *hdr, char *name)
{
	struct dpib_config *cfg = p->cfg;
	struct ib_dev_conf *d;
	unsigned int i;
	size_t len;

	name = trim(name);
	len = strlen(name);
	if (len == 0 || len > DEV_NAME_MAX ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyz"
			 "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != len)
		return line_error(p, hdr, "NAME must be 1..%u letters, digits, "
				  "'_', '-' or '.'", DEV_NAME_MAX);
	for (i = 0; i < cfg->ndev; i++)
		if (strcmp(cfg->dev[i].name, name) == 0)
			return line_error(p, hdr, "name already used on line %u",
					  p->dev_line[i]);
	if (cfg->ndev == DPIB_MAX_DEVICES)
		return line_error(p, hdr, "at most %d [device] sections",
				  DPIB_MAX_DEVICES);
	p->dev_line[cfg->ndev] = p->line;
	d = &cfg->dev[cfg->ndev++];
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->mtu = 1500;
	d->lcore = 1;
	ib_dcqcn_conf_default(&d->dcqcn);
	return 0;
}

/* @what is the line as "key = val", for messages. */
static int
set_key(struct parser *p, const struct key *keys, const char *sect,
	const char *key, const char *val, const char *what)
{
	char names[256];
	size_t n = 0;
	unsigned int i;

	for (i = 0; keys[i].name != NULL; i++) {
		if (strcmp(keys[i].name, key) != 0)
			continue;
		if (*val == '\0' && !keys[i].empty_ok)
			return line_error(p, key, "value missing");
		if (keys[i].set(p, val) != 0)
			return line_error(p, what, "%s", p->why);
		return 0;
	}
	names[0] = '\0';
	for (i = 0; keys[i].name != NULL && n < sizeof(names); i++)
		n += snprintf(names + n, sizeof(names) - n, "%s%s",
			      i ? ", " : "", keys[i].name);
	return line_error(p, what, "unknown key; %s has %s", sect, names);
}

/* A [section] header: the keys that follow are looked up in its table. */
static int
section(struct parser *p, char *s, const struct key **keys, const char **sect)
{
	size_t len = strlen(s);
	char name[256];

	if (strcmp(s, "[eal]") == 0) {
		*keys = eal_keys;
		*sect = "[eal]";
	} else if (strcmp(s, "[engine]") == 0) {
		*keys = engine_keys;
		*sect = "[engine]";
	} else if (strncmp(s, "[device", 7) == 0 &&
		   (s[7] == ']' || isspace((unsigned char)s[7])) &&
		   s[len - 1] == ']' && len - 8 < sizeof(name)) {
		snprintf(name, sizeof(name), "%.*s", (int)(len - 8), s + 7);
		if (new_device(p, s, name) != 0)
			return -EINVAL;
		*keys = device_keys;
		*sect = "[device]";
	} else {
		return line_error(p, s, "unknown section; sections are [eal], "
				  "[engine], [device NAME]");
	}
	return 0;
}

static int
parse_line(struct parser *p, char *s, const struct key **keys,
	   const char **sect)
{
	char what[1024], *eq, *key, *val;

	if ((eq = strchr(s, '#')) != NULL)
		*eq = '\0';
	s = trim(s);
	if (*s == '\0')
		return 0;
	if (*s == '[')
		return section(p, s, keys, sect);
	if ((eq = strchr(s, '=')) == NULL)
		return line_error(p, s, "must be key = value or [section]");
	*eq = '\0';
	key = trim(s);
	val = trim(eq + 1);
	if (*key == '\0') {
		snprintf(what, sizeof(what), "= %s", val);
		return line_error(p, what, "key missing");
	}
	snprintf(what, sizeof(what), "%s = %s", key, val);
	if (*keys == NULL)
		return line_error(p, what, "outside any section; keys belong "
				  "under [eal], [engine] or [device NAME]");
	return set_key(p, *keys, *sect, key, val, what);
}

static int
parse(struct parser *p, FILE *f)
{
	const struct key *keys = NULL;
	const char *sect = NULL;
	char line[1024];
	int ret;

	for (;;) {
		errno = 0;
		if (fgets(line, sizeof(line), f) == NULL)
			break;
		p->line++;
		if (strchr(line, '\n') == NULL && !feof(f))
			return line_error(p, "line", "longer than %zu characters",
					  sizeof(line) - 2);
		ret = parse_line(p, line, &keys, &sect);
		if (ret != 0)
			return ret;
	}
	if (ferror(f)) {
		ret = errno ? errno : EIO;
		DPIB_LOG(ERR, "DPIB_CONF=%s: cannot read: %s",
			p->path, strerror(ret));
		return -ret;
	}
	return 0;
}

/* What can only be judged once a device's section is complete. */
static int
check_devices(struct parser *p)
{
	struct dpib_config *cfg = p->cfg;
	char what[128];
	unsigned int i;

	if (cfg->ndev == 0) {
		DPIB_LOG(ERR, "%s: no [device NAME] section", p->path);
		return -EINVAL;
	}
	if (cfg->memory_mb < cfg->ndev * MEMORY_PER_DEV) {
		p->line = p->memory_line;
		snprintf(what, sizeof(what), "memory = %u", cfg->memory_mb);
		return line_error(p, what, "must be at least %u for %u devices "
				  "(%u MiB each)", cfg->ndev * MEMORY_PER_DEV,
				  cfg->ndev, MEMORY_PER_DEV);
	}
	for (i = 0; i < cfg->ndev; i++) {
		struct ib_dev_conf *d = &cfg->dev[i];

		p->line = p->dev_line[i];
		snprintf(what, sizeof(what), "[device %s]", d->name);
		if (d->port[0] == '\0')
			return line_error(p, what, "port missing");
		if (d->ip == 0 && !d->has_ip6)
			return line_error(p, what, "needs ip or ip6");
		if (d->has_ip6 && d->mtu < MTU_MIN_IP6) {
			p->line = p->mtu_line[i];
			snprintf(what, sizeof(what), "mtu = %u", d->mtu);
			return line_error(p, what, "must be %u..%u with ip6",
					  MTU_MIN_IP6, MTU_MAX);
		}
	}
	return 0;
}

static void
loopback_default(struct dpib_config *cfg)
{
	struct ib_dev_conf *d = &cfg->dev[0];

	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "dpib0");
	snprintf(d->port, sizeof(d->port), "%s", LOOPBACK_PORT);
	inet_pton(AF_INET, LOOPBACK_IP, &d->ip);
	d->mtu = LOOPBACK_MTU;
	d->lcore = 1;
	d->loopback = 1;
	ib_dcqcn_conf_default(&d->dcqcn);
	cfg->ndev = 1;
}

static int
load_file(struct dpib_config *cfg, const char *path)
{
	struct parser p = { .cfg = cfg, .path = path };
	FILE *f;
	int ret;

	f = fopen(path, "r");
	if (f == NULL) {
		ret = errno;
		DPIB_LOG(ERR, "DPIB_CONF=%s: cannot read: %s", path,
			strerror(ret));
		return -ret;
	}
	ret = parse(&p, f);
	fclose(f);
	return ret != 0 ? ret : check_devices(&p);
}

/*
 * Checked before EAL starts so that a path that cannot be written is
 * reported as such, not as the port failing. Not truncated here: the
 * device does that when it opens the file.
 */
static int
check_capture(const char *env, const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
	int ret = errno;

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (strcmp(env, path) == 0)
		DPIB_LOG(ERR, "DPIB_CAPTURE=%s: cannot write: %s",
			env, strerror(ret));
	else
		DPIB_LOG(ERR, "DPIB_CAPTURE=%s: cannot write %s: %s",
			env, path, strerror(ret));
	return -ret;
}

/* The environment's additions to each device: capture file and faults. */
static int
apply_env(struct dpib_config *cfg)
{
	const char *cap = getenv("DPIB_CAPTURE");
	const char *faults = getenv("DPIB_FAULTS");
	const char *dma = getenv("DPIB_DMA");
	const char *zc = getenv("DPIB_ZERO_COPY");
	const char *icrc = getenv("DPIB_ICRC");
	int32_t zc_val = 0;
	int icrc_on = 0;
	char why[256];
	unsigned int i;
	int ret, dma_mode = -1;

	if (faults != NULL && *faults != '\0' &&
	    check_faults(faults, why, sizeof(why)) != 0) {
		DPIB_LOG(ERR, "DPIB_FAULTS=%s: %s", faults, why);
		return -EINVAL;
	}
	if (dma != NULL && *dma != '\0' && parse_dma(dma, &dma_mode) != 0) {
		DPIB_LOG(ERR, "DPIB_DMA=%s: must be auto, on or off", dma);
		return -EINVAL;
	}
	if (zc != NULL && *zc != '\0' && parse_zero_copy(zc, &zc_val) != 0) {
		DPIB_LOG(ERR, "DPIB_ZERO_COPY=%s: must be auto, off or "
			"1..65536 (bytes)", zc);
		return -EINVAL;
	}
	if (icrc != NULL && *icrc != '\0' && parse_icrc(icrc, &icrc_on) != 0) {
		DPIB_LOG(ERR, "DPIB_ICRC=%s: must be auto or on", icrc);
		return -EINVAL;
	}
	for (i = 0; i < cfg->ndev; i++) {
		struct ib_dev_conf *d = &cfg->dev[i];

		if (icrc != NULL && *icrc != '\0')
			d->icrc_on = icrc_on;
		if (dma_mode >= 0)
			d->dma = dma_mode;
		if (zc != NULL && *zc != '\0')
			d->zero_copy = zc_val;
		/* Tests inject faults into any configuration this way. */
		if (faults != NULL && *faults != '\0' &&
		    (ib_fault_parse(faults, &d->fault[0]) != 0 ||
		     ib_fault_parse(faults, &d->fault[1]) != 0)) {
			DPIB_LOG(ERR, "DPIB_FAULTS=%s: not understood",
				faults);
			return -EINVAL;
		}
		d->engine_mode = cfg->engine_mode;
		d->engines = cfg->engines;
		d->placement = cfg->placement;
		d->spin_us = cfg->spin_us;
		d->takeover_us = cfg->takeover_us;
		d->loop_rt = cfg->loop_rt;
		if (cap == NULL || *cap == '\0')
			continue;
		/* One file per device: the first keeps the name given. */
		if (snprintf(d->capture, sizeof(d->capture), i ? "%s.%s" : "%s",
			     cap, d->name) >= (int)sizeof(d->capture)) {
			DPIB_LOG(ERR, "DPIB_CAPTURE=%s: longer than %zu "
				"characters", cap, sizeof(d->capture) - 1 -
				(i ? strlen(d->name) + 1 : 0));
			return -ENAMETOOLONG;
		}
		ret = check_capture(cap, d->capture);
		if (ret != 0)
			return ret;
	}
	return 0;
}

int
dpib_config_load(struct dpib_config *cfg)
{
	const char *path = getenv("DPIB_CONF");
	const char *mode = getenv("DPIB_ENGINE_MODE");
	const char *engines = getenv("DPIB_ENGINES");
	const char *place = getenv("DPIB_PLACEMENT");
	const char *prio = getenv("DPIB_LOOP_PRIORITY");
	const char *takeover = getenv("DPIB_TAKEOVER_US");
	int ret;

	memset(cfg, 0, sizeof(*cfg));
	cfg->memory_mb = 512;
	cfg->hugepages = -1;
	cfg->lcore_cpu[0] = -1;
	cfg->engines = 1;
	if (path == NULL || *path == '\0') {
		loopback_default(cfg);
	} else {
		ret = load_file(cfg, path);
		if (ret != 0)
			return ret;
	}
	/* The environment overrides the file (benchmarks want polling). */
	if (mode != NULL && *mode != '\0' &&
	    parse_mode(mode, &cfg->engine_mode) != 0) {
		DPIB_LOG(ERR, "DPIB_ENGINE_MODE=%s: must be adaptive, "
			"poll or inline", mode);
		return -EINVAL;
	}
	if (engines != NULL && *engines != '\0' &&
	    parse_engines(engines, &cfg->engines) != 0) {
		DPIB_LOG(ERR, "DPIB_ENGINES=%s: must be 1..%d", engines,
			IB_MAX_ENGINES);
		return -EINVAL;
	}
	if (place != NULL && *place != '\0' &&
	    parse_placement(place, &cfg->placement) != 0) {
		DPIB_LOG(ERR, "DPIB_PLACEMENT=%s: must be cq or spread", place);
		return -EINVAL;
	}
	if (prio != NULL && *prio != '\0' &&
	    parse_loop_priority(prio, &cfg->loop_rt) != 0) {
		DPIB_LOG(ERR, "DPIB_LOOP_PRIORITY=%s: must be realtime or "
			"normal", prio);
		return -EINVAL;
	}
	if (takeover != NULL && *takeover != '\0' &&
	    parse_takeover(takeover, &cfg->takeover_us) != 0) {
		DPIB_LOG(ERR, "DPIB_TAKEOVER_US=%s: must be never or "
			"1..1000000 (µs)", takeover);
		return -EINVAL;
	}
	return apply_env(cfg);
}
