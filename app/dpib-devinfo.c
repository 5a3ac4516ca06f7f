/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * dpib-devinfo: the device, port and GID attributes in the layout of
 * rdma-core's "ibv_devinfo -v", read only through the verbs API, so the
 * output of a dpib device can be set side by side with a kernel RDMA device's.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#define DIM(a)		(sizeof(a) / sizeof((a)[0]))
#define STR(tbl, v, dflt)	lookup(tbl, DIM(tbl), v, dflt)

/* ibv_devinfo indents device lines by one tab and port lines by three. */
#define DEV_LEVEL	1
#define PORT_LEVEL	3

struct opts {
	const char *dev;	/* NULL: every device */
	unsigned int port;	/* 0: every port */
	int verbose;
	int list;
};

struct flag_name {
	uint64_t bit;
	const char *name;
};

#define DEV_FLAG(n)	{ IBV_DEVICE_ ## n, #n }
#define PORT_FLAG(n)	{ IBV_PORT_ ## n, #n }

static const struct flag_name dev_flags[] = {
	DEV_FLAG(RESIZE_MAX_WR), DEV_FLAG(BAD_PKEY_CNTR),
	DEV_FLAG(BAD_QKEY_CNTR), DEV_FLAG(RAW_MULTI),
	DEV_FLAG(AUTO_PATH_MIG), DEV_FLAG(CHANGE_PHY_PORT),
	DEV_FLAG(UD_AV_PORT_ENFORCE), DEV_FLAG(CURR_QP_STATE_MOD),
	DEV_FLAG(SHUTDOWN_PORT), DEV_FLAG(INIT_TYPE),
	DEV_FLAG(PORT_ACTIVE_EVENT), DEV_FLAG(SYS_IMAGE_GUID),
	DEV_FLAG(RC_RNR_NAK_GEN), DEV_FLAG(SRQ_RESIZE),
	DEV_FLAG(N_NOTIFY_CQ), DEV_FLAG(MEM_WINDOW),
	DEV_FLAG(UD_IP_CSUM), DEV_FLAG(XRC),
	DEV_FLAG(MEM_MGT_EXTENSIONS), DEV_FLAG(MEM_WINDOW_TYPE_2A),
	DEV_FLAG(MEM_WINDOW_TYPE_2B), DEV_FLAG(RC_IP_CSUM),
	DEV_FLAG(RAW_IP_CSUM), DEV_FLAG(MANAGED_FLOW_STEERING),
};

/*
 * device_cap_flags_ex bits past the classic 32: rdma-core 44's headers do
 * not name them yet; the values are those of Linux 6.2's ib_user_verbs.h.
 */
static const struct flag_name dev_flags_ex[] = {
	{ 1ULL << 38, "FLUSH_GLOBAL" },
	{ 1ULL << 39, "FLUSH_PERSISTENT" },
	{ 1ULL << 40, "ATOMIC_WRITE" },
};

static const struct flag_name port_flags[] = {
	PORT_FLAG(SM), PORT_FLAG(NOTICE_SUP), PORT_FLAG(TRAP_SUP),
	PORT_FLAG(OPT_IPD_SUP), PORT_FLAG(AUTO_MIGR_SUP),
	PORT_FLAG(SL_MAP_SUP), PORT_FLAG(MKEY_NVRAM), PORT_FLAG(PKEY_NVRAM),
	PORT_FLAG(LED_INFO_SUP), PORT_FLAG(SYS_IMAGE_GUID_SUP),
	PORT_FLAG(PKEY_SW_EXT_PORT_TRAP_SUP), PORT_FLAG(EXTENDED_SPEEDS_SUP),
	PORT_FLAG(CAP_MASK2_SUP), PORT_FLAG(CM_SUP),
	PORT_FLAG(SNMP_TUNNEL_SUP), PORT_FLAG(REINIT_SUP),
	PORT_FLAG(DEVICE_MGMT_SUP), PORT_FLAG(VENDOR_CLASS_SUP),
	PORT_FLAG(DR_NOTICE_SUP), PORT_FLAG(CAP_MASK_NOTICE_SUP),
	PORT_FLAG(BOOT_MGMT_SUP), PORT_FLAG(LINK_LATENCY_SUP),
	PORT_FLAG(CLIENT_REG_SUP), PORT_FLAG(IP_BASED_GIDS),
};

static const char *
lookup(const char *const *tbl, size_t n, unsigned int v, const char *dflt)
{
	return v < n && tbl[v] != NULL ? tbl[v] : dflt;
}

/* Values of one level share a column, so ibv_devinfo's tab stops. */
static unsigned int
value_col(unsigned int level)
{
	return level == DEV_LEVEL ? 40 : 48;
}

static void field(unsigned int level, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Labels differ in length; counting tab stops here rather than writing them
 * into each format keeps every value in its column.
 */
static void
field(unsigned int level, const char *name, const char *fmt, ...)
{
	unsigned int col = level * 8 + strlen(name) + 1;
	va_list ap;

	printf("%.*s%s:", (int)level, "\t\t\t", name);
	do {
		putchar('\t');
		col = (col / 8 + 1) * 8;
	} while (col < value_col(level));
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static void
print_flags(unsigned int level, uint64_t flags, const struct flag_name *tbl,
	    size_t n)
{
	unsigned int tabs = value_col(level) / 8;
	size_t i;

	for (i = 0; i < n; i++) {
		if (flags & tbl[i].bit)
			printf("%.*s%s\n", (int)tabs, "\t\t\t\t\t\t", tbl[i].name);
		flags &= ~tbl[i].bit;
	}
	if (flags != 0)
		printf("%.*sUnknown flags: 0x%" PRIX64 "\n", (int)tabs,
		       "\t\t\t\t\t\t", flags);
}

static const char *
guid_str(__be64 guid, char *buf, size_t len)
{
	uint64_t g = be64toh(guid);

	snprintf(buf, len, "%04x:%04x:%04x:%04x",
		 (unsigned int)(g >> 48) & 0xffff,
		 (unsigned int)(g >> 32) & 0xffff,
		 (unsigned int)(g >> 16) & 0xffff, (unsigned int)g & 0xffff);
	return buf;
}

static const char *
transport_str(enum ibv_transport_type t)
{
	static const char *const names[] = {
		[IBV_TRANSPORT_IB] = "InfiniBand",
		[IBV_TRANSPORT_IWARP] = "iWARP",
		[IBV_TRANSPORT_USNIC] = "usNIC",
		[IBV_TRANSPORT_USNIC_UDP] = "usNIC UDP",
		[IBV_TRANSPORT_UNSPECIFIED] = "unspecified",
	};

	return STR(names, t, "invalid transport");
}

/*
 * Not ibv_port_state_str(): that gives the lower-case phrase ("active"),
 * while ibv_devinfo shows the IBA state names.
 */
static const char *
port_state_str(enum ibv_port_state s)
{
	static const char *const names[] = {
		[IBV_PORT_DOWN] = "PORT_DOWN",
		[IBV_PORT_INIT] = "PORT_INIT",
		[IBV_PORT_ARMED] = "PORT_ARMED",
		[IBV_PORT_ACTIVE] = "PORT_ACTIVE",
	};

	return STR(names, s, "invalid state");
}

/* PortPhysicalState of the IBA PortInfo attribute. */
static const char *
phys_state_str(uint8_t s)
{
	static const char *const names[] = {
		[1] = "SLEEP", [2] = "POLLING", [3] = "DISABLED",
		[4] = "PORT_CONFIGURATION TRAINING", [5] = "LINK_UP",
		[6] = "LINK_ERROR_RECOVERY", [7] = "PHY TEST",
	};

	return STR(names, s, "invalid physical state");
}

static const char *
atomic_str(enum ibv_atomic_cap a)
{
	static const char *const names[] = {
		[IBV_ATOMIC_NONE] = "ATOMIC_NONE",
		[IBV_ATOMIC_HCA] = "ATOMIC_HCA",
		[IBV_ATOMIC_GLOB] = "ATOMIC_GLOB",
	};

	return STR(names, a, "invalid atomic capability");
}

static const char *
mtu_str(enum ibv_mtu m)
{
	static const char *const names[] = {
		[IBV_MTU_256] = "256", [IBV_MTU_512] = "512",
		[IBV_MTU_1024] = "1024", [IBV_MTU_2048] = "2048",
		[IBV_MTU_4096] = "4096",
	};

	return STR(names, m, "invalid MTU");
}

/* ActiveLinkWidth is a one-hot code, not a lane count. */
static const char *
width_str(uint8_t w)
{
	static const char *const names[] = {
		[1] = "1X", [2] = "4X", [4] = "8X", [8] = "12X", [16] = "2X",
	};

	return STR(names, w, "invalid width");
}

/* ActiveLinkSpeed, per lane: SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR. */
static const char *
speed_str(uint8_t s)
{
	static const char *const names[] = {
		[1] = "2.5 Gbps", [2] = "5.0 Gbps", [4] = "10.0 Gbps",
		[8] = "10.0 Gbps", [16] = "14.0 Gbps", [32] = "25.0 Gbps",
		[64] = "50.0 Gbps", [128] = "100.0 Gbps",
	};

	return STR(names, s, "invalid speed");
}

/* VLCap counts data VLs in a code, 1..5 for 1, 2, 4, 8 or 15 VLs. */
static const char *
vl_str(uint8_t v)
{
	static const char *const names[] = {
		[1] = "1", [2] = "2", [3] = "4", [4] = "8", [5] = "15",
	};

	return STR(names, v, "invalid value");
}

static const char *
link_layer_str(uint8_t l)
{
	static const char *const names[] = {
		[IBV_LINK_LAYER_UNSPECIFIED] = "Unspecified",
		[IBV_LINK_LAYER_INFINIBAND] = "InfiniBand",
		[IBV_LINK_LAYER_ETHERNET] = "Ethernet",
	};

	return STR(names, l, "Unknown");
}

static const char *
gid_type_str(uint32_t t)
{
	static const char *const names[] = {
		[IBV_GID_TYPE_IB] = "IB",
		[IBV_GID_TYPE_ROCE_V1] = "RoCE v1",
		[IBV_GID_TYPE_ROCE_V2] = "RoCE v2",
	};

	return STR(names, t, "invalid GID type");
}

static void
print_dev_basic(struct ibv_device *dev, const struct ibv_device_attr *a)
{
	char buf[32];

	printf("hca_id:\t%s\n", ibv_get_device_name(dev));
	field(DEV_LEVEL, "transport", "%s (%d)",
	      transport_str(dev->transport_type), dev->transport_type);
	if (a->fw_ver[0] != '\0')
		field(DEV_LEVEL, "fw_ver", "%s", a->fw_ver);
	field(DEV_LEVEL, "node_guid", "%s",
	      guid_str(a->node_guid, buf, sizeof(buf)));
	field(DEV_LEVEL, "sys_image_guid", "%s",
	      guid_str(a->sys_image_guid, buf, sizeof(buf)));
	field(DEV_LEVEL, "vendor_id", "0x%04x", a->vendor_id);
	field(DEV_LEVEL, "vendor_part_id", "%u", a->vendor_part_id);
	field(DEV_LEVEL, "hw_ver", "0x%X", a->hw_ver);
	field(DEV_LEVEL, "phys_port_cnt", "%u", a->phys_port_cnt);
}

/* Most limits are plain ints; the label is the struct member's name. */
#define DEV_INT(a, f)	field(DEV_LEVEL, #f, "%d", (int)(a)->f)

static void
print_dev_limits(const struct ibv_device_attr *a)
{
	field(DEV_LEVEL, "max_mr_size", "0x%" PRIx64, a->max_mr_size);
	field(DEV_LEVEL, "page_size_cap", "0x%" PRIx64, a->page_size_cap);
	DEV_INT(a, max_qp);
	DEV_INT(a, max_qp_wr);
	field(DEV_LEVEL, "device_cap_flags", "0x%08x", a->device_cap_flags);
	print_flags(DEV_LEVEL, a->device_cap_flags, dev_flags,
		    DIM(dev_flags));
	DEV_INT(a, max_sge);
	DEV_INT(a, max_sge_rd);
	DEV_INT(a, max_cq);
	DEV_INT(a, max_cqe);
	DEV_INT(a, max_mr);
	DEV_INT(a, max_pd);
	DEV_INT(a, max_qp_rd_atom);
	DEV_INT(a, max_ee_rd_atom);
	DEV_INT(a, max_res_rd_atom);
	DEV_INT(a, max_qp_init_rd_atom);
	DEV_INT(a, max_ee_init_rd_atom);
}

/* The FMR and SRQ sub-limits mean nothing, and are not shown, without FMRs
 * or SRQs.
 */
static void
print_dev_other(const struct ibv_device_attr *a)
{
	field(DEV_LEVEL, "atomic_cap", "%s (%d)", atomic_str(a->atomic_cap),
	      a->atomic_cap);
	DEV_INT(a, max_ee);
	DEV_INT(a, max_rdd);
	DEV_INT(a, max_mw);
	DEV_INT(a, max_raw_ipv6_qp);
	DEV_INT(a, max_raw_ethy_qp);
	DEV_INT(a, max_mcast_grp);
	DEV_INT(a, max_mcast_qp_attach);
	DEV_INT(a, max_total_mcast_qp_attach);
	DEV_INT(a, max_ah);
	DEV_INT(a, max_fmr);
	if (a->max_fmr != 0)
		DEV_INT(a, max_map_per_fmr);
	DEV_INT(a, max_srq);
	if (a->max_srq != 0) {
		DEV_INT(a, max_srq_wr);
		DEV_INT(a, max_srq_sge);
	}
	DEV_INT(a, max_pkeys);
	DEV_INT(a, local_ca_ack_delay);
}

/* What ibv_query_device_ex adds: the completion clock and 64-bit caps. */
static void
print_dev_ex(struct ibv_context *ctx)
{
	struct ibv_device_attr_ex x;
	int rc = ibv_query_device_ex(ctx, NULL, &x);

	if (rc != 0) {
		field(DEV_LEVEL, "device_attr_ex", "unavailable (%s)",
		      strerror(rc));
		return;
	}
	field(DEV_LEVEL, "completion_timestamp_mask", "0x%016" PRIx64,
	      x.completion_timestamp_mask);
	field(DEV_LEVEL, "hca_core_clock", "%" PRIu64 "kHZ", x.hca_core_clock);
	field(DEV_LEVEL, "device_cap_flags_ex", "0x%" PRIX64,
	      x.device_cap_flags_ex);
	print_flags(DEV_LEVEL, x.device_cap_flags_ex &
		    ~(uint64_t)x.orig_attr.device_cap_flags, dev_flags_ex,
		    DIM(dev_flags_ex));
}

static void
print_port_basic(const struct ibv_port_attr *p)
{
	field(PORT_LEVEL, "state", "%s (%d)", port_state_str(p->state),
	      p->state);
	field(PORT_LEVEL, "max_mtu", "%s (%d)", mtu_str(p->max_mtu),
	      p->max_mtu);
	field(PORT_LEVEL, "active_mtu", "%s (%d)", mtu_str(p->active_mtu),
	      p->active_mtu);
	field(PORT_LEVEL, "sm_lid", "%u", p->sm_lid);
	field(PORT_LEVEL, "port_lid", "%u", p->lid);
	field(PORT_LEVEL, "port_lmc", "0x%02x", p->lmc);
	field(PORT_LEVEL, "link_layer", "%s", link_layer_str(p->link_layer));
}

/* A physical state is an InfiniBand link notion; iWARP ports have none. */
static void
print_port_verbose(const struct ibv_port_attr *p, enum ibv_transport_type t)
{
	field(PORT_LEVEL, "max_msg_sz", "0x%x", p->max_msg_sz);
	field(PORT_LEVEL, "port_cap_flags", "0x%08x", p->port_cap_flags);
	print_flags(PORT_LEVEL, p->port_cap_flags, port_flags,
		    DIM(port_flags));
	field(PORT_LEVEL, "port_cap_flags2", "0x%04x", p->port_cap_flags2);
	field(PORT_LEVEL, "max_vl_num", "%s (%d)", vl_str(p->max_vl_num),
	      p->max_vl_num);
	field(PORT_LEVEL, "bad_pkey_cntr", "0x%x", p->bad_pkey_cntr);
	field(PORT_LEVEL, "qkey_viol_cntr", "0x%x", p->qkey_viol_cntr);
	field(PORT_LEVEL, "sm_sl", "%u", p->sm_sl);
	field(PORT_LEVEL, "pkey_tbl_len", "%u", p->pkey_tbl_len);
	field(PORT_LEVEL, "gid_tbl_len", "%d", p->gid_tbl_len);
	field(PORT_LEVEL, "subnet_timeout", "%u", p->subnet_timeout);
	field(PORT_LEVEL, "init_type_reply", "%u", p->init_type_reply);
	field(PORT_LEVEL, "active_width", "%s (%d)",
	      width_str(p->active_width), p->active_width);
	field(PORT_LEVEL, "active_speed", "%s (%d)",
	      speed_str(p->active_speed), p->active_speed);
	if (t == IBV_TRANSPORT_IB)
		field(PORT_LEVEL, "phys_state", "%s (%d)",
		      phys_state_str(p->phys_state), p->phys_state);
}

/*
 * A RoCE v2 GID is an IPv6 (or v4-mapped) address, so it reads best in that
 * notation; other GIDs are shown as eight raw 16-bit groups.
 */
static void
print_gid(const struct ibv_gid_entry *e, uint8_t link_layer)
{
	char text[INET6_ADDRSTRLEN], name[16];
	const uint8_t *r = e->gid.raw;
	int i, n = 0;

	if (e->gid_type == IBV_GID_TYPE_ROCE_V2)
		inet_ntop(AF_INET6, r, text, sizeof(text));
	else
		for (i = 0; i < 16; i += 2)
			n += snprintf(text + n, sizeof(text) - n, "%s%02x%02x",
				      i ? ":" : "", r[i], r[i + 1]);
	snprintf(name, sizeof(name), "GID[%3u]", e->gid_index);
	if (link_layer == IBV_LINK_LAYER_ETHERNET)
		field(PORT_LEVEL, name, "%s, %s", text,
		      gid_type_str(e->gid_type));
	else
		field(PORT_LEVEL, name, "%s", text);
}

/* Unused slots either report ENODATA or hold a GID with no interface ID. */
static int
print_gids(struct ibv_context *ctx, uint8_t port, const struct ibv_port_attr *p)
{
	struct ibv_gid_entry e;
	int i, rc;

	for (i = 0; i < p->gid_tbl_len; i++) {
		rc = ibv_query_gid_ex(ctx, port, i, &e, 0);
		if (rc == ENODATA)
			continue;
		if (rc != 0) {
			fprintf(stderr, "%s: port %u: GID %d query failed: %s\n",
				ibv_get_device_name(ctx->device), port, i,
				strerror(rc));
			return 1;
		}
		if (e.gid.global.interface_id != 0)
			print_gid(&e, p->link_layer);
	}
	return 0;
}

static int
print_port(struct ibv_context *ctx, uint8_t port, int verbose)
{
	struct ibv_port_attr p;
	int rc = ibv_query_port(ctx, port, &p);

	if (rc != 0) {
		fprintf(stderr, "%s: port %u query failed: %s\n",
			ibv_get_device_name(ctx->device), port, strerror(rc));
		return 1;
	}
	printf("\t\tport:\t%u\n", port);
	print_port_basic(&p);
	if (verbose) {
		print_port_verbose(&p, ctx->device->transport_type);
		if (print_gids(ctx, port, &p) != 0)
			return 1;
	}
	putchar('\n');
	return 0;
}

static int
print_context(struct ibv_context *ctx, const struct opts *o)
{
	const char *name = ibv_get_device_name(ctx->device);
	struct ibv_device_attr a;
	unsigned int port;
	int rc = ibv_query_device(ctx, &a);

	if (rc != 0) {
		fprintf(stderr, "%s: device query failed: %s\n", name,
			strerror(rc));
		return 1;
	}
	if (o->port > a.phys_port_cnt) {
		fprintf(stderr, "%s: no port %u (the device has %u)\n", name,
			o->port, a.phys_port_cnt);
		return 1;
	}
	print_dev_basic(ctx->device, &a);
	if (o->verbose) {
		print_dev_limits(&a);
		print_dev_other(&a);
		print_dev_ex(ctx);
	}
	for (port = 1; port <= a.phys_port_cnt; port++)
		if (o->port == 0 || o->port == port)
			rc |= print_port(ctx, port, o->verbose);
	return rc;
}

static int
print_device(struct ibv_device *dev, const struct opts *o)
{
	struct ibv_context *ctx = ibv_open_device(dev);
	int rc;

	if (ctx == NULL) {
		fprintf(stderr, "%s: cannot open: %s\n",
			ibv_get_device_name(dev), strerror(errno));
		return 1;
	}
	rc = print_context(ctx, o);
	if (ibv_close_device(ctx) != 0) {
		fprintf(stderr, "%s: close failed\n", ibv_get_device_name(dev));
		rc = 1;
	}
	return rc;
}

/* An empty list is an answer, not an error, as with ibv_devinfo -l. */
static int
list_devices(struct ibv_device **list, int n)
{
	int i;

	printf("%d HCA%s found:\n", n, n == 1 ? "" : "s");
	for (i = 0; i < n; i++)
		printf("\t%s\n", ibv_get_device_name(list[i]));
	putchar('\n');
	return 0;
}

static int
print_devices(struct ibv_device **list, int n, const struct opts *o)
{
	int i, rc = 0;

	if (n == 0) {
		fprintf(stderr, "dpib-devinfo: no RDMA device found\n");
		return 1;
	}
	for (i = 0; i < n; i++)
		if (o->dev == NULL ||
		    strcmp(ibv_get_device_name(list[i]), o->dev) == 0)
			rc |= print_device(list[i], o);
	return rc;
}

static int
find_device(struct ibv_device **list, int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (strcmp(ibv_get_device_name(list[i]), name) == 0)
			return i;
	return -1;
}

static void
usage(FILE *f, const char *prog)
{
	fprintf(f, "Usage: %s [-d DEVICE] [-i PORT] [-v] [-l] [-h]\n"
		"Print the attributes of RDMA devices, as ibv_devinfo does.\n"
		"  -d, --ib-dev=DEVICE  only this device (default: all)\n"
		"  -i, --ib-port=PORT   only this port (default: all)\n"
		"  -v, --verbose        also device limits, port details, GIDs\n"
		"  -l, --list           print device names only\n"
		"  -h, --help           print this help\n", prog);
}

/* Returns 0 to go on, 1 on a bad option, -1 after -h. */
static int
parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longs[] = {
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "list", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long v;
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "d:i:vlh", longs, NULL)) != -1) {
		switch (c) {
		case 'd':
			o->dev = optarg;
			break;
		case 'i':
			errno = 0;
			v = strtoul(optarg, &end, 0);
			/* Port numbers are 8 bits and start at 1. */
			if (errno != 0 || *end != '\0' || v < 1 || v > 255) {
				fprintf(stderr, "%s: bad port '%s'\n", argv[0],
					optarg);
				return 1;
			}
			o->port = v;
			break;
		case 'v':
			o->verbose = 1;
			break;
		case 'l':
			o->list = 1;
			break;
		case 'h':
			usage(stdout, argv[0]);
			return -1;
		default:
			usage(stderr, argv[0]);
			return 1;
		}
	}
	if (optind < argc) {
		usage(stderr, argv[0]);
		return 1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct opts o = { 0 };
	struct ibv_device **list;
	int n, rc = parse_args(argc, argv, &o);

	if (rc != 0)
		return rc > 0 ? EXIT_FAILURE : EXIT_SUCCESS;
	list = ibv_get_device_list(&n);
	if (list == NULL) {
		fprintf(stderr, "%s: cannot list RDMA devices: %s\n", argv[0],
			strerror(errno));
		return EXIT_FAILURE;
	}
	if (o.list) {
		rc = list_devices(list, n);
	} else if (o.dev != NULL && find_device(list, n, o.dev) < 0) {
		fprintf(stderr, "%s: no RDMA device named '%s'\n", argv[0],
			o.dev);
		rc = 1;
	} else {
		rc = print_devices(list, n, &o);
	}
	ibv_free_device_list(list);
	return rc ? EXIT_FAILURE : EXIT_SUCCESS;
}
