/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * The configuration file (docs/configuration.md): sections [eal], [engine]
 * and one [device NAME] per HCA, "key = value" lines, '#' comments. Without
 * DPIB_CONF, one embedded loopback device dpib0 is configured.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "verbs_priv.h"

#define LOOPBACK_PORT	"net_ring_dpib_lo"
#define LOOPBACK_IP	"127.0.0.1"
#define LOOPBACK_MTU	9000	/* active MTU 4096 */

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

static void
dev_defaults(struct ib_dev_conf *d, const char *name)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->mtu = 1500;
	d->lcore = 1;
}

static void
loopback_default(struct dpib_config *cfg)
{
	struct ib_dev_conf *d = &cfg->dev[0];

	dev_defaults(d, "dpib0");
	snprintf(d->port, sizeof(d->port), "%s", LOOPBACK_PORT);
	inet_pton(AF_INET, LOOPBACK_IP, &d->ip);
	d->mtu = LOOPBACK_MTU;
	d->loopback = 1;
	cfg->ndev = 1;
}

static int
set_eal(struct dpib_config *cfg, const char *key, const char *val)
{
	if (strcmp(key, "args") == 0)
		snprintf(cfg->eal_args, sizeof(cfg->eal_args), "%s", val);
	else if (strcmp(key, "memory") == 0)
		cfg->memory_mb = strtoul(val, NULL, 0);
	else if (strcmp(key, "hugepages") == 0)
		cfg->hugepages = strcmp(val, "auto") == 0 ? -1 :
				 strcmp(val, "yes") == 0 ? 1 : 0;
	else
		return -EINVAL;
	return 0;
}

static int
set_engine(struct dpib_config *cfg, const char *key, const char *val)
{
	if (strcmp(key, "cpu") == 0)
		cfg->lcore_cpu = strcmp(val, "auto") == 0 ? -1 :
				 (int)strtol(val, NULL, 0);
	else if (strcmp(key, "mode") == 0) {
		if (strcmp(val, "poll") == 0)
			cfg->engine_mode = IB_ENGINE_POLL;
		else if (strcmp(val, "adaptive") == 0)
			cfg->engine_mode = IB_ENGINE_ADAPTIVE;
		else if (strcmp(val, "inline") == 0)
			cfg->engine_mode = IB_ENGINE_INLINE;
		else
			return -EINVAL;
	} else
		return -EINVAL;
	return 0;
}

static int
set_device(struct ib_dev_conf *d, const char *key, const char *val)
{
	if (strcmp(key, "port") == 0)
		snprintf(d->port, sizeof(d->port), "%s", val);
	else if (strcmp(key, "ip") == 0)
		return inet_pton(AF_INET, val, &d->ip) == 1 ? 0 : -EINVAL;
	else if (strcmp(key, "ip6") == 0) {
		d->has_ip6 = inet_pton(AF_INET6, val, d->ip6) == 1;
		/* Unspecified, multicast and IPv4-mapped are no host address. */
		if (!d->has_ip6 || d->ip6[0] == 0xff ||
		    IN6_IS_ADDR_UNSPECIFIED((struct in6_addr *)d->ip6) ||
		    IN6_IS_ADDR_V4MAPPED((struct in6_addr *)d->ip6))
			return -EINVAL;
	} else if (strcmp(key, "vlan") == 0) {
		char *end;
		unsigned long v = strtoul(val, &end, 10);

		if (*val == '\0' || *end != '\0' || v < 1 || v > 4094)
			return -EINVAL;
		d->vlan = (uint16_t)v;
	} else if (strcmp(key, "mtu") == 0)
		d->mtu = strtoul(val, NULL, 0);
	else if (strcmp(key, "loopback") == 0)
		d->loopback = strcmp(val, "yes") == 0;
	else if (strcmp(key, "faults") == 0)
		return ib_fault_parse(val, &d->fault[0]) ||
		       ib_fault_parse(val, &d->fault[1]) ? -EINVAL : 0;
	else if (strcmp(key, "faults_req") == 0)
		return ib_fault_parse(val, &d->fault[0]) ? -EINVAL : 0;
	else if (strcmp(key, "faults_resp") == 0)
		return ib_fault_parse(val, &d->fault[1]) ? -EINVAL : 0;
	else
		return -EINVAL;
	return 0;
}

static int
parse(struct dpib_config *cfg, FILE *f, const char *path)
{
	enum { S_NONE, S_EAL, S_ENGINE, S_DEVICE } sect = S_NONE;
	char line[1024], name[64];
	unsigned int lineno = 0;

	while (fgets(line, sizeof(line), f) != NULL) {
		char *s = trim(line), *eq, *key, *val;
		int ret = 0;

		lineno++;
		if ((eq = strchr(s, '#')) != NULL)
			*eq = '\0';
		s = trim(s);
		if (*s == '\0')
			continue;
		if (*s == '[') {
			if (strcmp(s, "[eal]") == 0)
				sect = S_EAL;
			else if (strcmp(s, "[engine]") == 0)
				sect = S_ENGINE;
			else if (sscanf(s, "[device %63[^]]]", name) == 1 &&
				 cfg->ndev < DPIB_MAX_DEVICES) {
				sect = S_DEVICE;
				dev_defaults(&cfg->dev[cfg->ndev++], trim(name));
			} else
				ret = -EINVAL;
		} else if ((eq = strchr(s, '=')) == NULL) {
			ret = -EINVAL;
		} else {
			*eq = '\0';
			key = trim(s);
			val = trim(eq + 1);
			if (sect == S_EAL)
				ret = set_eal(cfg, key, val);
			else if (sect == S_ENGINE)
				ret = set_engine(cfg, key, val);
			else if (sect == S_DEVICE)
				ret = set_device(&cfg->dev[cfg->ndev - 1], key, val);
			else
				ret = -EINVAL;
		}
		if (ret != 0) {
			fprintf(stderr, "dpib: %s:%u: cannot use '%s'\n", path,
				lineno, s);
			return -EINVAL;
		}
	}
	return 0;
}

int
dpib_config_load(struct dpib_config *cfg)
{
	const char *path = getenv("DPIB_CONF");
	unsigned int i;
	FILE *f;
	int ret;

	const char *mode = getenv("DPIB_ENGINE_MODE");

	memset(cfg, 0, sizeof(*cfg));
	cfg->memory_mb = 512;
	cfg->hugepages = -1;
	cfg->lcore_cpu = -1;
	if (path == NULL || *path == '\0') {
		loopback_default(cfg);
		goto done;
	}
	f = fopen(path, "r");
	if (f == NULL) {
		fprintf(stderr, "dpib: cannot open DPIB_CONF=%s: %s\n", path,
			strerror(errno));
		return -errno;
	}
	ret = parse(cfg, f, path);
	fclose(f);
	if (ret != 0)
		return ret;
	for (i = 0; i < cfg->ndev; i++) {
		if (cfg->dev[i].port[0] == '\0' ||
		    (cfg->dev[i].ip == 0 && !cfg->dev[i].has_ip6)) {
			fprintf(stderr, "dpib: %s: device %s needs port and ip or ip6\n",
				path, cfg->dev[i].name);
			return -EINVAL;
		}
	}
done:
	/* The environment overrides the file (benchmarks want polling). */
	if (mode != NULL && set_engine(cfg, "mode", mode) != 0) {
		fprintf(stderr, "dpib: DPIB_ENGINE_MODE=%s: poll, adaptive or inline\n",
			mode);
		return -EINVAL;
	}
	for (i = 0; i < cfg->ndev; i++) {
		const char *cap = getenv("DPIB_CAPTURE");
		const char *faults = getenv("DPIB_FAULTS");

		/* Tests inject faults into any configuration this way. */
		if (faults != NULL && *faults != '\0' &&
		    (ib_fault_parse(faults, &cfg->dev[i].fault[0]) != 0 ||
		     ib_fault_parse(faults, &cfg->dev[i].fault[1]) != 0)) {
			fprintf(stderr, "dpib: DPIB_FAULTS=%s: not understood\n",
				faults);
			return -EINVAL;
		}

		cfg->dev[i].engine_mode = cfg->engine_mode;
		/* One file per device: the first keeps the name given. */
		if (cap != NULL && *cap != '\0')
			snprintf(cfg->dev[i].capture, sizeof(cfg->dev[i].capture),
				 i ? "%s.%s" : "%s", cap, cfg->dev[i].name);
	}
	return 0;
}
