/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * DPIB_SYSFS=DIR: the sysfs files a kernel RDMA device has under
 * /sys/class/infiniband/<name>/, written into DIR for each dpib device
 * when the devices come up. Programs that look there beside calling verbs
 * (UCX for GID types and netdevs, pyverbs, scripts) find what they expect.
 * dpib-run mounts a private tmpfs over /sys/class/infiniband and sets the
 * variable (docs/configuration.md); the values are the live device's at
 * start (a port state that changes later is not rewritten).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "verbs_priv.h"

static int
put(const char *dir, const char *file, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* @a/@b into @out; -ENAMETOOLONG when it does not fit. */
static int
join(char *out, size_t len, const char *a, const char *b)
{
	int n = snprintf(out, len, "%s/%s", a, b);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* @dir/@file holds the formatted line. */
static int
put(const char *dir, const char *file, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	FILE *f;
	int ret;

	if (join(path, sizeof(path), dir, file) != 0)
		return -ENAMETOOLONG;
	f = fopen(path, "we");
	if (f == NULL)
		return -errno;
	va_start(ap, fmt);
	ret = vfprintf(f, fmt, ap) < 0 ? -EIO : 0;
	va_end(ap);
	if (fclose(f) != 0 && ret == 0)
		ret = -errno;
	return ret;
}

static int
mkdirs(const char *dir, const char *sub)
{
	char path[PATH_MAX];

	if (join(path, sizeof(path), dir, sub) != 0)
		return -ENAMETOOLONG;
	return mkdir(path, 0755) == 0 || errno == EEXIST ? 0 : -errno;
}

/* "fe80:0000:...", 8 groups of 4 hex digits, as the kernel prints GIDs. */
static void
gid_str(const union ibv_gid *g, char *out, size_t len)
{
	size_t o = 0;
	int i;

	for (i = 0; i < 16 && o < len; i += 2)
		o += (size_t)snprintf(out + o, len - o, "%s%02x%02x",
				      i ? ":" : "", g->raw[i], g->raw[i + 1]);
}

/* The port's rate as the kernel words it: "100 Gb/sec (4X EDR)". */
static void
rate_str(const struct ibv_port_attr *a, char *out, size_t len)
{
	static const struct { uint8_t code; double gbps; const char *name; }
	speeds[] = {
		{ 1, 2.5, "SDR" }, { 2, 5, "DDR" }, { 4, 10, "QDR" },
		{ 8, 10, "FDR10" }, { 16, 14, "FDR" }, { 32, 25, "EDR" },
		{ 64, 50, "HDR" }, { 128, 100, "NDR" },
	};
	static const struct { uint8_t code; int lanes; } widths[] = {
		{ 1, 1 }, { 2, 4 }, { 4, 8 }, { 8, 12 }, { 16, 2 },
	};
	double gbps = 2.5;
	const char *name = "SDR";
	int lanes = 1;
	size_t i;

	for (i = 0; i < RTE_DIM(speeds); i++)
		if (speeds[i].code == a->active_speed) {
			gbps = speeds[i].gbps;
			name = speeds[i].name;
		}
	for (i = 0; i < RTE_DIM(widths); i++)
		if (widths[i].code == a->active_width)
			lanes = widths[i].lanes;
	snprintf(out, len, "%g Gb/sec (%dX %s)\n", gbps * lanes, lanes, name);
}

/* The kernel interface an af_packet or tap port rides on, or "". */
static void
netdev_of(const char *port, char *out, size_t len)
{
	const char *p = strstr(port, "iface=");

	out[0] = '\0';
	if (p == NULL)
		return;
	p += strlen("iface=");
	snprintf(out, len, "%.*s", (int)strcspn(p, ","), p);
}

static int
port_tree(const char *dir, struct ib_dev *hw)
{
	const struct ib_dev_conf *c = hca_conf(hw);
	static const char *const state[] = {
		"0: NOP", "1: DOWN", "2: INIT", "3: ARMED", "4: ACTIVE",
		"5: ACTIVE_DEFER",
	};
	char p[PATH_MAX], s[64], ndev[64];
	struct ibv_port_attr a;
	union ibv_gid g;
	uint32_t i;
	int ret;

	memset(&a, 0, sizeof(a));
	ret = ib_dev_query_port(hw, &a) ?: join(p, sizeof(p), dir, "ports/1");
	if (ret == 0)
		ret = mkdirs(dir, "ports");
	if (ret == 0)
		ret = mkdirs(p, "") ?: mkdirs(p, "gids") ?: mkdirs(p, "pkeys") ?:
		      mkdirs(p, "gid_attrs") ?: mkdirs(p, "gid_attrs/types") ?:
		      mkdirs(p, "gid_attrs/ndevs");
	if (ret != 0)
		return ret;
	rate_str(&a, s, sizeof(s));
	netdev_of(c->port, ndev, sizeof(ndev));
	ret = put(p, "state", "%s\n", state[a.state < 6 ? a.state : 1]) ?:
	      put(p, "phys_state", "%s\n", a.phys_state == 5 ?
		  "5: LinkUp" : "3: Disabled") ?:
	      put(p, "link_layer", "Ethernet\n") ?:
	      put(p, "rate", "%s", s) ?:
	      put(p, "lid", "0x0\n") ?: put(p, "sm_lid", "0x0\n") ?:
	      put(p, "lid_mask_count", "0\n") ?: put(p, "sm_sl", "0\n") ?:
	      put(p, "cap_mask", "0x%08x\n", a.port_cap_flags);
	for (i = 0; ret == 0 && i < (uint32_t)a.gid_tbl_len; i++) {
		char name[32], gs[48];

		memset(&g, 0, sizeof(g));
		(void)hca_gid(hw, i, &g);
		gid_str(&g, gs, sizeof(gs));
		snprintf(name, sizeof(name), "gids/%u", i);
		ret = put(p, name, "%s\n", gs);
		if (ret != 0 || i >= hca_gid_count(hw))
			continue;	/* no attributes for an empty GID */
		snprintf(name, sizeof(name), "gid_attrs/types/%u", i);
		ret = put(p, name, "RoCE v2\n");
		snprintf(name, sizeof(name), "gid_attrs/ndevs/%u", i);
		if (ret == 0 && ndev[0] != '\0')
			ret = put(p, name, "%s\n", ndev);
	}
	for (i = 0; ret == 0 && i < (uint32_t)a.pkey_tbl_len; i++) {
		char name[32];

		snprintf(name, sizeof(name), "pkeys/%u", i);
		ret = put(p, name, "0x%04x\n", i == 0 ? 0xffff : 0);
	}
	return ret;
}

static int
device_tree(const char *root, struct dpib_device *d)
{
	const struct ib_dev_conf *c = hca_conf(d->hw);
	uint64_t guid = be64toh(hca_guid(d->hw));
	char dir[PATH_MAX], link[PATH_MAX], devlink[PATH_MAX], g[32];
	int ret;

	if (join(dir, sizeof(dir), root, d->ibv.name) != 0 ||
	    join(devlink, sizeof(devlink), dir, "device") != 0)
		return -ENAMETOOLONG;
	snprintf(g, sizeof(g), "%04x:%04x:%04x:%04x",
		 (unsigned int)(guid >> 48), (unsigned int)(guid >> 32) & 0xffff,
		 (unsigned int)(guid >> 16) & 0xffff,
		 (unsigned int)guid & 0xffff);
	ret = mkdirs(dir, "");
	if (ret == 0)
		ret = put(dir, "node_guid", "%s\n", g) ?:
		      put(dir, "sys_image_guid", "%s\n", g) ?:
		      put(dir, "node_type", "1: CA\n") ?:
		      put(dir, "node_desc", "dpib %s\n", d->ibv.name) ?:
		      put(dir, "fw_ver", "0.1.0\n") ?:
		      put(dir, "hw_rev", "0x0\n") ?:
		      put(dir, "hca_type", "dpib\n");
	if (ret != 0)
		return ret;
	/* A PCI NIC's own function; a virtual port has no NUMA affinity. */
	if (join(link, sizeof(link), "/sys/bus/pci/devices", c->port) != 0)
		return -ENAMETOOLONG;
	if (strncmp(c->port, "net_", 4) != 0 && access(link, F_OK) == 0) {
		ret = symlink(link, devlink) == 0 || errno == EEXIST ? 0 : -errno;
	} else {
		ret = mkdirs(dir, "device") ?:
		      put(dir, "device/numa_node", "-1\n");
	}
	return ret ?: port_tree(dir, d->hw);
}

void
dpib_sysfs_write(void)
{
	const char *root = getenv("DPIB_SYSFS");
	struct dpib_device *devs;
	unsigned int n, i;
	int ret;

	if (root == NULL || *root == '\0')
		return;
	devs = dpib_devices(&n);
	for (i = 0; i < n; i++) {
		ret = device_tree(root, &devs[i]);
		if (ret != 0)
			DPIB_LOG(ERR, "DPIB_SYSFS=%s: %s: %s", root,
				devs[i].ibv.name, strerror(-ret));
	}
}
