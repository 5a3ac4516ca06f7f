/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * dpib-setup: what a PCI NIC needs before dpib can drive it (the NIC on a
 * DPDK-compatible driver, hugepages reserved and mounted, a configuration
 * naming the NIC) and a report of where the machine stands on each, with
 * the flags and habits of DPDK's dpdk-devbind.py and dpdk-hugepages.py.
 *
 * Every /sys and /proc path goes through rpath(), so that --root can put a
 * fixture tree in the machine's place; --pci-dump does the same for the
 * PCI functions libpci finds.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <net/if.h>
#include <net/route.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pci/pci.h>

#define PROG		"dpib-setup"
#define DIM(a)		(sizeof(a) / sizeof((a)[0]))

/* PCI base class of network controllers. */
#define PCI_BASE_NETWORK	0x02

/* linux/ipv6_route.h: a route of the local table (the host's own address). */
#ifndef RTF_LOCAL
#define RTF_LOCAL	0x80000000
#endif

/* Drivers that hand a PCI function to userspace, as dpdk-devbind.py counts. */
static const char *const dpdk_drivers[] = {
	"vfio-pci", "uio_pci_generic", "igb_uio",
};

enum mode { MODE_NONE, MODE_BIND, MODE_UNBIND, MODE_CONFIG };

struct iface {
	char *name;
	bool up;		/* IFF_UP: administratively up */
	char oper[32];		/* operstate: "up", "down", "unknown", ... */
	long mtu;		/* -1: unknown */
};

struct func {
	char addr[24];		/* DDDD:BB:DD.F; the domain may be 32 bits */
	unsigned int domain, bus, dev, fn;
	unsigned int vendor, device, class;
	char vendor_name[128];
	char device_name[256];
	char *driver;		/* NULL: no driver bound */
	int numa;		/* -1: no NUMA affinity */
	char *iommu;		/* NULL: in no IOMMU group */
	struct iface *ifs;
	size_t n_ifs;
};

struct route {
	char *ifname;
	char *text;		/* "default via 192.0.2.1", "fd00::/64" */
};

struct setup {
	const char *root;	/* "" unless --root */
	const char *pci_dump;
	bool dry_run;
	bool force;
	bool noiommu;
	bool status;
	enum mode mode;
	const char *driver;
	char **args;
	int n_args;
	const char *hugepages;
	const char *pagesize;
	int node;		/* -1: every node (the global pool) */
	const char *output;

	const char *loaded;	/* the driver modprobe has been run for */
	struct func *fns;
	size_t n_fns;
	struct route *routes;
	size_t n_routes;
};

/* What libpci's fatal errors should tell the user to do (a callback has no
 * context argument). */
static const char *pci_fix = "is sysfs mounted?";

static void
oom(void)
{
	fprintf(stderr, PROG ": out of memory\n");
	exit(EXIT_FAILURE);
}

static char *xasprintf(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static char *
xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		oom();
	return s;
}

static char *
xstrdup(const char *s)
{
	char *d = strdup(s);

	if (d == NULL)
		oom();
	return d;
}

static void *
xgrow(void *p, size_t n, size_t size)
{
	p = reallocarray(p, n, size);
	if (p == NULL)
		oom();
	return p;
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints one error line and returns -1, so "return fail(...)" reads well. */
static int
fail(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

/* The machine's path, or the fixture's under --root. */
static char *rpath(const struct setup *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static char *
rpath(const struct setup *s, const char *fmt, ...)
{
	va_list ap;
	char *tail, *p;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&tail, fmt, ap);
	va_end(ap);
	if (n < 0)
		oom();
	p = xasprintf("%s%s", s->root, tail);
	free(tail);
	return p;
}

/* The fix an errno from sysfs or procfs usually calls for. */
static const char *
fix_for(int e)
{
	switch (e) {
	case EACCES:
	case EPERM:
		return "run as root";
	case EROFS:
		return "sysfs is read-only here (a container?); run it on the host";
	case ENOENT:
		return "this kernel has no such file (is sysfs mounted?)";
	default:
		return "the kernel refused it; see dmesg";
	}
}

/* The first line of a small file, without its newline; 0 or -errno. */
static int
read_line(const char *path, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;
	int fd, e;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (got < len - 1) {
		n = read(fd, buf + got, len - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = errno;
			close(fd);
			return -e;
		}
		if (n == 0)
			break;
		got += n;
	}
	close(fd);
	buf[got] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int
read_long(const char *path, int base, long *v)
{
	char buf[64], *end;
	int rc = read_line(path, buf, sizeof(buf));

	if (rc != 0)
		return rc;
	errno = 0;
	*v = strtol(buf, &end, base);
	if (errno != 0 || end == buf)
		return -EINVAL;
	return 0;
}

/* The last component of a symlink's target (a driver, an IOMMU group),
 * or NULL with errno set. */
static char *
link_base(const char *path)
{
	size_t size = 128;
	char *buf = NULL, *base;
	ssize_t n;

	for (;;) {
		buf = xgrow(buf, size, 1);
		n = readlink(path, buf, size);
		if (n < 0) {
			free(buf);
			return NULL;
		}
		if ((size_t)n < size)
			break;
		size *= 2;
	}
	buf[n] = '\0';
	base = strrchr(buf, '/');
	base = xstrdup(base != NULL ? base + 1 : buf);
	free(buf);
	return base;
}

static bool
exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Entries of a directory, "." and ".." aside; -errno if it cannot be read. */
static long
count_entries(const char *path)
{
	struct dirent *de;
	long n = 0;
	DIR *d = opendir(path);

	if (d == NULL)
		return -errno;
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

/*
 * A sysfs write, or under --dry-run the line saying which. Sysfs takes the
 * whole value in one write; the loop is for the fixture's plain files.
 */
static int
put(const struct setup *s, const char *path, const char *val)
{
	const char *shown = strcmp(val, "\n") == 0 ? "\\n" : val;
	size_t len = strlen(val), off = 0;
	ssize_t n;
	int fd, e;

	if (s->dry_run) {
		printf("would write '%s' to %s\n", shown, path);
		return 0;
	}
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		goto err;
	while (off < len) {
		n = write(fd, val + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = errno;
			close(fd);
			errno = e;
			goto err;
		}
		off += n;
	}
	if (close(fd) != 0)
		goto err;
	return 0;
err:
	e = errno;
	return fail("cannot write '%s' to %s: %s; %s", shown, path,
		    strerror(e), fix_for(e));
}

/* Runs a program (modprobe) and waits for it; under --root or --dry-run
 * only says which. */
static int
run(const struct setup *s, char *const argv[])
{
	char *cmd = xstrdup(argv[0]), *t;
	int i, status, rc = 0;
	pid_t pid;

	for (i = 1; argv[i] != NULL; i++) {
		t = xasprintf("%s %s", cmd, argv[i]);
		free(cmd);
		cmd = t;
	}
	if (s->dry_run || s->root[0] != '\0') {
		printf("%s %s\n", s->dry_run ? "would run" :
		       "not run under --root:", cmd);
		goto out;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		rc = fail("cannot run %s: fork: %s", cmd, strerror(errno));
		goto out;
	}
	if (pid == 0) {
		/* A user's PATH may lack /sbin, where Debian keeps modprobe. */
		execvp(argv[0], argv);
		t = xasprintf("/sbin/%s", argv[0]);
		execv(t, argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			rc = fail("%s: waitpid: %s", cmd, strerror(errno));
			goto out;
		}
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		rc = fail("cannot run %s: not found; install kmod", argv[0]);
	else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		rc = fail("%s failed (status %d)", cmd,
			  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
out:
	free(cmd);
	return rc;
}

static bool
is_dpdk_driver(const char *drv)
{
	size_t i;

	for (i = 0; drv != NULL && i < DIM(dpdk_drivers); i++)
		if (strcmp(drv, dpdk_drivers[i]) == 0)
			return true;
	return false;
}

/* Root-only actions fail up front, before half of them is done. */
static int
need_root(const struct setup *s, const char *what)
{
	if (s->dry_run || s->root[0] != '\0' || geteuid() == 0)
		return 0;
	return fail("%s needs root: run as root, or add -n to see what it "
		    "would do", what);
}

/* ---- Routes ---- */

static void
add_route(struct setup *s, const char *ifname, char *text)
{
	s->routes = xgrow(s->routes, s->n_routes + 1, sizeof(*s->routes));
	s->routes[s->n_routes].ifname = xstrdup(ifname);
	s->routes[s->n_routes].text = text;
	s->n_routes++;
}

/* The kernel prints each address as a host-order u32 of network-order
 * bytes, so copying the u32 gives the bytes back. */
static void
load_routes4(struct setup *s)
{
	char *path = rpath(s, "/proc/net/route"), line[512], ifname[32];
	char dst[INET_ADDRSTRLEN], gw[INET_ADDRSTRLEN];
	unsigned int d, g, flags, mask;
	struct in_addr a;
	FILE *f = fopen(path, "re");

	if (f == NULL) {
		if (errno != ENOENT)
			fail("cannot read %s: %s; routes are not shown", path,
			     strerror(errno));
		free(path);
		return;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%31s %x %x %x %*d %*d %*d %x", ifname, &d,
			   &g, &flags, &mask) != 5 || !(flags & RTF_UP))
			continue;
		/* dpdk-devbind.py leaves link-local 169.254/16 out too. */
		a.s_addr = d;
		if ((ntohl(a.s_addr) >> 16) == 0xa9fe)
			continue;
		inet_ntop(AF_INET, &a, dst, sizeof(dst));
		a.s_addr = g;
		inet_ntop(AF_INET, &a, gw, sizeof(gw));
		if (mask == 0 && d == 0)
			add_route(s, ifname, flags & RTF_GATEWAY ?
				  xasprintf("default via %s", gw) :
				  xstrdup("default"));
		else
			add_route(s, ifname, flags & RTF_GATEWAY ?
				  xasprintf("%s/%d via %s", dst,
					    __builtin_popcount(mask), gw) :
				  xasprintf("%s/%d", dst,
					    __builtin_popcount(mask)));
	}
	fclose(f);
	free(path);
}

static bool
hex_addr6(const char *hex, struct in6_addr *a)
{
	unsigned int b;
	int i;

	if (strlen(hex) != 32)
		return false;
	for (i = 0; i < 16; i++) {
		if (sscanf(hex + 2 * i, "%2x", &b) != 1)
			return false;
		a->s6_addr[i] = b;
	}
	return true;
}

/*
 * Link-local and multicast routes exist on every interface that is up, and
 * local-table ones are the host's own addresses: none says the interface
 * carries traffic, so only the others count.
 */
static void
load_routes6(struct setup *s)
{
	char *path = rpath(s, "/proc/net/ipv6_route"), line[512];
	char dhex[40], nhex[40], ifname[32];
	char dst[INET6_ADDRSTRLEN], gw[INET6_ADDRSTRLEN];
	unsigned int plen, flags;
	struct in6_addr d, g;
	FILE *f = fopen(path, "re");

	if (f == NULL) {
		if (errno != ENOENT)
			fail("cannot read %s: %s; routes are not shown", path,
			     strerror(errno));
		free(path);
		return;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%39s %x %*s %*x %39s %*x %*x %*x %x %31s",
			   dhex, &plen, nhex, &flags, ifname) != 5 ||
		    !hex_addr6(dhex, &d) || !hex_addr6(nhex, &g))
			continue;
		if (!(flags & RTF_UP) || (flags & (RTF_LOCAL | RTF_REJECT)) ||
		    strcmp(ifname, "lo") == 0 || IN6_IS_ADDR_LINKLOCAL(&d) ||
		    IN6_IS_ADDR_MULTICAST(&d))
			continue;
		inet_ntop(AF_INET6, &d, dst, sizeof(dst));
		inet_ntop(AF_INET6, &g, gw, sizeof(gw));
		if (plen == 0)
			add_route(s, ifname, flags & RTF_GATEWAY ?
				  xasprintf("default via %s", gw) :
				  xstrdup("default"));
		else
			add_route(s, ifname, flags & RTF_GATEWAY ?
				  xasprintf("%s/%u via %s", dst, plen, gw) :
				  xasprintf("%s/%u", dst, plen));
	}
	fclose(f);
	free(path);
}

/* The first route over an interface and how many there are. */
static const char *
first_route(const struct setup *s, const char *ifname, size_t *count)
{
	const char *first = NULL;
	size_t i;

	*count = 0;
	for (i = 0; i < s->n_routes; i++) {
		if (strcmp(s->routes[i].ifname, ifname) != 0)
			continue;
		if (first == NULL)
			first = s->routes[i].text;
		(*count)++;
	}
	return first;
}

/* The first interface of a function that carries a route, or NULL. */
static const struct iface *
active_iface(const struct setup *s, const struct func *f)
{
	size_t i, n;

	for (i = 0; i < f->n_ifs; i++)
		if (first_route(s, f->ifs[i].name, &n) != NULL)
			return &f->ifs[i];
	return NULL;
}

/* ---- PCI functions ---- */

static void pci_fatal(char *msg, ...)
	__attribute__((format(printf, 1, 2), noreturn));

static void
pci_fatal(char *msg, ...)
{
	va_list ap;

	fputs(PROG ": libpci: ", stderr);
	va_start(ap, msg);
	vfprintf(stderr, msg, ap);
	va_end(ap);
	fprintf(stderr, "; %s\n", pci_fix);
	exit(EXIT_FAILURE);
}

static void pci_warn(char *msg, ...) __attribute__((format(printf, 1, 2)));

static void
pci_warn(char *msg, ...)
{
	va_list ap;

	fputs(PROG ": libpci: ", stderr);
	va_start(ap, msg);
	vfprintf(stderr, msg, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void
add_iface(struct func *f, const char *dir, const char *name)
{
	char *p = xasprintf("%s/%s/flags", dir, name);
	struct iface *i;
	long v;

	f->ifs = xgrow(f->ifs, f->n_ifs + 1, sizeof(*f->ifs));
	i = &f->ifs[f->n_ifs++];
	i->name = xstrdup(name);
	i->up = read_long(p, 16, &v) == 0 && (v & IFF_UP);
	free(p);
	p = xasprintf("%s/%s/operstate", dir, name);
	if (read_line(p, i->oper, sizeof(i->oper)) != 0)
		strcpy(i->oper, "unknown");
	free(p);
	p = xasprintf("%s/%s/mtu", dir, name);
	if (read_long(p, 10, &i->mtu) != 0)
		i->mtu = -1;
	free(p);
}

/*
 * The kernel interfaces of a function: in its net/ directory, or one level
 * below for NICs whose netdev hangs off a bus device of their own (virtio's
 * virtioN). Symlinks (driver, subsystem) lead out of the device: skipped.
 */
static void
find_ifaces(struct func *f, const char *dir, int depth)
{
	char *net = xasprintf("%s/net", dir), *sub;
	struct dirent *de;
	struct stat st;
	DIR *d = opendir(net);

	if (d != NULL) {
		while ((de = readdir(d)) != NULL)
			if (de->d_name[0] != '.')
				add_iface(f, net, de->d_name);
		closedir(d);
		free(net);
		return;
	}
	free(net);
	if (depth == 0 || (d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL && f->n_ifs == 0) {
		if (de->d_name[0] == '.')
			continue;
		sub = xasprintf("%s/%s", dir, de->d_name);
		if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
			find_ifaces(f, sub, depth - 1);
		free(sub);
	}
	closedir(d);
}

/* What sysfs says of a network function beyond what libpci knows. */
static void
fill_sysfs(const struct setup *s, struct func *f)
{
	char *dir = rpath(s, "/sys/bus/pci/devices/%s", f->addr), *p;
	long v;

	p = xasprintf("%s/driver", dir);
	f->driver = link_base(p);
	free(p);
	p = xasprintf("%s/numa_node", dir);
	f->numa = read_long(p, 10, &v) == 0 ? (int)v : -1;
	free(p);
	p = xasprintf("%s/iommu_group", dir);
	f->iommu = link_base(p);
	free(p);
	find_ifaces(f, dir, 1);
	free(dir);
}

static int
cmp_func(const void *a, const void *b)
{
	const struct func *x = a, *y = b;

	if (x->domain != y->domain)
		return x->domain < y->domain ? -1 : 1;
	if (x->bus != y->bus)
		return x->bus < y->bus ? -1 : 1;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->fn < y->fn ? -1 : x->fn > y->fn;
}

static void
copy_name(char *dst, size_t len, const char *name)
{
	snprintf(dst, len, "%s", name != NULL ? name : "unknown");
}

static void
scan_pci(struct setup *s)
{
	struct pci_access *pa = pci_alloc();
	struct pci_dev *d;
	struct func *f;
	char buf[256], *p;

	pa->error = pci_fatal;
	pa->warning = pci_warn;
	if (s->pci_dump != NULL) {
		pa->method = PCI_ACCESS_DUMP;
		if (pci_set_param(pa, "dump.name", (char *)s->pci_dump) != 0)
			pci_fatal("no dump access method");
		pci_fix = "--pci-dump takes the output of lspci -x";
	} else if (s->root[0] != '\0') {
		p = rpath(s, "/sys/bus/pci");
		pa->method = PCI_ACCESS_SYS_BUS_PCI;
		if (pci_set_param(pa, "sysfs.path", p) != 0)
			pci_fatal("no sysfs access method");
		free(p);
		pci_fix = "a --root tree needs each function's vendor, device "
			"and class files, or --pci-dump";
	}
	pci_init(pa);
	pci_scan_bus(pa);
	for (d = pa->devices; d != NULL; d = d->next) {
		pci_fill_info(d, PCI_FILL_IDENT | PCI_FILL_CLASS);
		s->fns = xgrow(s->fns, s->n_fns + 1, sizeof(*s->fns));
		f = &s->fns[s->n_fns++];
		memset(f, 0, sizeof(*f));
		f->domain = d->domain;
		f->bus = d->bus;
		f->dev = d->dev;
		f->fn = d->func;
		f->vendor = d->vendor_id;
		f->device = d->device_id;
		f->class = d->device_class;
		f->numa = -1;
		snprintf(f->addr, sizeof(f->addr), "%04x:%02x:%02x.%x",
			 f->domain, f->bus, f->dev, f->fn);
		copy_name(f->vendor_name, sizeof(f->vendor_name),
			  pci_lookup_name(pa, buf, sizeof(buf),
					  PCI_LOOKUP_VENDOR, f->vendor));
		copy_name(f->device_name, sizeof(f->device_name),
			  pci_lookup_name(pa, buf, sizeof(buf),
					  PCI_LOOKUP_DEVICE, f->vendor,
					  f->device));
	}
	pci_cleanup(pa);
	qsort(s->fns, s->n_fns, sizeof(*s->fns), cmp_func);
	for (f = s->fns; f < s->fns + s->n_fns; f++)
		if ((f->class >> 8) == PCI_BASE_NETWORK)
			fill_sysfs(s, f);
}

/*
 * A function named by its address (0000:03:00.0 or 03:00.0, as lspci and
 * dpdk-devbind.py take it) or by one of its kernel interfaces (eth1).
 */
static struct func *
find_func(struct setup *s, const char *arg)
{
	unsigned int dom = 0, bus, dev, fn;
	int n = -1;
	size_t i, j;
	char *p;

	if (sscanf(arg, "%x:%x:%x.%x%n", &dom, &bus, &dev, &fn, &n) != 4 ||
	    arg[n] != '\0') {
		n = -1;
		dom = 0;
		if (sscanf(arg, "%x:%x.%x%n", &bus, &dev, &fn, &n) != 3 ||
		    arg[n] != '\0')
			n = -1;
	}
	if (n < 0) {
		for (i = 0; i < s->n_fns; i++)
			for (j = 0; j < s->fns[i].n_ifs; j++)
				if (strcmp(s->fns[i].ifs[j].name, arg) == 0)
					return &s->fns[i];
		fail("'%s' is neither a PCI address (like 0000:03:00.0) nor "
		     "the interface of a PCI NIC; dpib-setup --status lists "
		     "the NICs", arg);
		return NULL;
	}
	if (bus > 0xff || dev > 0x1f || fn > 7) {
		fail("'%s' is no PCI address: bus 00-ff, device 00-1f, "
		     "function 0-7, as in 0000:03:00.0", arg);
		return NULL;
	}
	for (i = 0; i < s->n_fns; i++) {
		if (s->fns[i].domain != dom || s->fns[i].bus != bus ||
		    s->fns[i].dev != dev || s->fns[i].fn != fn)
			continue;
		if ((s->fns[i].class >> 8) != PCI_BASE_NETWORK) {
			fail("%s is no network device (%s, class %04x); "
			     "dpib-setup handles NICs only; dpib-setup "
			     "--status lists them", s->fns[i].addr,
			     s->fns[i].device_name, s->fns[i].class);
			return NULL;
		}
		p = rpath(s, "/sys/bus/pci/devices/%s", s->fns[i].addr);
		if (!exists(p)) {
			fail("%s is not in %s: %s; is sysfs mounted?",
			     s->fns[i].addr, p, strerror(errno));
			free(p);
			return NULL;
		}
		free(p);
		return &s->fns[i];
	}
	fail("no PCI function %04x:%02x:%02x.%x on this machine; dpib-setup "
	     "--status lists the NICs", dom, bus, dev, fn);
	return NULL;
}

/* ---- Status ---- */

static void
heading(const char *title)
{
	size_t n = strlen(title);

	printf("\n%s\n", title);
	while (n-- > 0)
		putchar('=');
	putchar('\n');
}

static void
print_func(const struct setup *s, const struct func *f)
{
	const struct iface *act = active_iface(s, f);
	const char *route;
	size_t i, n;

	printf("%s '%s' [%04x:%04x] %s\n", f->addr, f->device_name, f->vendor,
	       f->device, f->vendor_name);
	printf("    drv=%s", f->driver != NULL ? f->driver : "none");
	if (f->numa >= 0)
		printf(" numa=%d", f->numa);
	else
		printf(" numa=none");
	printf(" iommu_group=%s", f->iommu != NULL ? f->iommu : "none");
	for (i = 0; i < f->n_ifs; i++) {
		const struct iface *ifc = &f->ifs[i];

		printf("%s%s(%s)", i == 0 ? " if=" : ",", ifc->name,
		       !ifc->up ? "down" :
		       strcmp(ifc->oper, "up") == 0 ||
		       strcmp(ifc->oper, "unknown") == 0 ? "up" : "up, no link");
	}
	if (act != NULL) {
		route = first_route(s, act->name, &n);
		printf(" *Active* (%s: %s", act->name,
		       route != NULL ? route : "?");
		if (n > 1)
			printf(", and %zu more route%s", n - 1,
			       n > 2 ? "s" : "");
		putchar(')');
	}
	putchar('\n');
}

/* dpdk-devbind.py's three groups: on a DPDK driver, on a kernel driver,
 * on none. */
static void
status_nics(const struct setup *s)
{
	static const char *const titles[] = {
		"Network devices using DPDK-compatible driver",
		"Network devices using kernel driver",
		"Other network devices",
	};
	const struct func *f;
	int group, g, shown;

	for (group = 0; group < 3; group++) {
		heading(titles[group]);
		shown = 0;
		for (f = s->fns; f < s->fns + s->n_fns; f++) {
			if ((f->class >> 8) != PCI_BASE_NETWORK)
				continue;
			g = f->driver == NULL ? 2 :
				is_dpdk_driver(f->driver) ? 0 : 1;
			if (g != group)
				continue;
			print_func(s, f);
			shown++;
		}
		if (shown == 0)
			printf("<none>\n");
	}
}

/* "2M", "1G", or kB when neither fits. */
static const char *
size_str(unsigned long kb, char *buf, size_t len)
{
	if (kb % (1024 * 1024) == 0)
		snprintf(buf, len, "%luG", kb / (1024 * 1024));
	else if (kb % 1024 == 0)
		snprintf(buf, len, "%luM", kb / 1024);
	else
		snprintf(buf, len, "%lukB", kb);
	return buf;
}

/* A size as SIZE arguments and hugetlbfs's pagesize= give it: 2M, 1G,
 * 2048k, 2MB; in kB, 0 if it is none. */
static unsigned long
parse_size(const char *arg)
{
	unsigned long v, unit;
	char *end;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno != 0 || end == arg || v == 0)
		return 0;
	switch (*end) {
	case 'k': case 'K':
		unit = 1;
		break;
	case 'm': case 'M':
		unit = 1024;
		break;
	case 'g': case 'G':
		unit = 1024 * 1024;
		break;
	default:
		return 0;
	}
	end++;
	if (*end == 'i')
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end != '\0' || v > ~0UL / 1024 / unit)
		return 0;
	return v * unit;
}

/* /proc/meminfo's Hugepagesize: the size a pagesize-less mount and a
 * SIZE-less --hugepages mean; 0 if unknown. */
static unsigned long
default_size(const struct setup *s)
{
	char *path = rpath(s, "/proc/meminfo"), line[256];
	unsigned long kb = 0;
	FILE *f = fopen(path, "re");

	free(path);
	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "Hugepagesize: %lu kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static int
cmp_ulong(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a;
	unsigned long y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

/* The hugepage sizes of a hugepages/ directory, in kB, ascending. */
static size_t
list_sizes(const char *dir, unsigned long **out)
{
	unsigned long kb, *v = NULL;
	struct dirent *de;
	size_t n = 0;
	DIR *d = opendir(dir);

	if (d != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (sscanf(de->d_name, "hugepages-%lukB", &kb) != 1)
				continue;
			v = xgrow(v, n + 1, sizeof(*v));
			v[n++] = kb;
		}
		closedir(d);
	}
	qsort(v, n, sizeof(*v), cmp_ulong);
	*out = v;
	return n;
}

/* The NUMA node numbers that have a hugepages/ directory, ascending. */
static size_t
list_nodes(const struct setup *s, unsigned long **out)
{
	char *dir = rpath(s, "/sys/devices/system/node"), *p;
	unsigned long node, *v = NULL;
	struct dirent *de;
	size_t n = 0;
	DIR *d = opendir(dir);
	char c;

	if (d != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (sscanf(de->d_name, "node%lu%c", &node, &c) != 1)
				continue;
			p = xasprintf("%s/%s/hugepages", dir, de->d_name);
			if (exists(p)) {
				v = xgrow(v, n + 1, sizeof(*v));
				v[n++] = node;
			}
			free(p);
		}
		closedir(d);
	}
	free(dir);
	qsort(v, n, sizeof(*v), cmp_ulong);
	*out = v;
	return n;
}

static void
hp_row(const char *dir, unsigned long kb, const char *node)
{
	char *p, size[32], total[24], free_[24];
	long v;

	p = xasprintf("%s/hugepages-%lukB/nr_hugepages", dir, kb);
	snprintf(total, sizeof(total), "?");
	if (read_long(p, 10, &v) == 0)
		snprintf(total, sizeof(total), "%ld", v);
	free(p);
	p = xasprintf("%s/hugepages-%lukB/free_hugepages", dir, kb);
	snprintf(free_, sizeof(free_), "?");
	if (read_long(p, 10, &v) == 0)
		snprintf(free_, sizeof(free_), "%ld", v);
	free(p);
	printf("%-6s %-5s %7s %7s\n", size_str(kb, size, sizeof(size)), node,
	       total, free_);
}

/* A hugetlbfs line of /proc/mounts: where, and its page size in kB. */
static bool
hugetlbfs_mount(const char *line, unsigned long dflt, char *dir,
		size_t len, unsigned long *kb)
{
	char type[32], opts[256], *o;
	int n = 0;

	if (sscanf(line, "%*s %n%*s %31s %255s", &n, type, opts) != 2 ||
	    strcmp(type, "hugetlbfs") != 0)
		return false;
	snprintf(dir, len, "%.*s", (int)strcspn(line + n, " "), line + n);
	*kb = dflt;
	o = strstr(opts, "pagesize=");
	if (o != NULL) {
		o[strcspn(o, ",")] = '\0';
		*kb = parse_size(o + strlen("pagesize="));
	}
	return true;
}

static void
status_hugepages(const struct setup *s)
{
	char *dir = rpath(s, "/sys/kernel/mm/hugepages"), *p, line[512];
	char mnt[256], size[32], name[24];
	unsigned long dflt = default_size(s), *sizes, *nodes, kb;
	size_t n_sizes = list_sizes(dir, &sizes), n_nodes, i, j, shown = 0;
	FILE *f;

	n_nodes = list_nodes(s, &nodes);
	p = xasprintf("Hugepages (default size %s)",
		      dflt != 0 ? size_str(dflt, size, sizeof(size)) :
		      "unknown");
	heading(p);
	free(p);
	if (n_sizes == 0)
		printf("none: the kernel has no hugepage support "
		       "(CONFIG_HUGETLBFS)\n");
	else
		printf("%-6s %-5s %7s %7s\n", "size", "node", "total", "free");
	for (i = 0; i < n_sizes; i++) {
		hp_row(dir, sizes[i], "all");
		for (j = 0; j < n_nodes; j++) {
			p = rpath(s, "/sys/devices/system/node/node%lu/"
				  "hugepages", nodes[j]);
			snprintf(name, sizeof(name), "%lu", nodes[j]);
			hp_row(p, sizes[i], name);
			free(p);
		}
	}
	free(dir);
	free(sizes);
	free(nodes);
	p = rpath(s, "/proc/mounts");
	f = fopen(p, "re");
	if (f == NULL) {
		printf("hugetlbfs mounts: unknown (cannot read %s: %s)\n", p,
		       strerror(errno));
		free(p);
		return;
	}
	free(p);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (!hugetlbfs_mount(line, dflt, mnt, sizeof(mnt), &kb))
			continue;
		printf("hugetlbfs mounted on %s, pagesize %s\n", mnt,
		       kb != 0 ? size_str(kb, size, sizeof(size)) : "unknown");
		shown++;
	}
	fclose(f);
	if (shown == 0)
		printf("hugetlbfs mounts: none (dpib-setup --hugepages N "
		       "mounts one)\n");
}

static long
iommu_groups(const struct setup *s)
{
	char *p = rpath(s, "/sys/kernel/iommu_groups");
	long n = count_entries(p);

	free(p);
	return n == -ENOENT ? 0 : n;
}

static void
status_vfio(const struct setup *s)
{
	char *p, val[16];
	long groups = iommu_groups(s);
	size_t i;
	int rc, shown = 0;

	heading("VFIO");
	if (groups > 0)
		printf("IOMMU: %ld groups\n", groups);
	else if (groups == 0)
		printf("IOMMU: none (/sys/kernel/iommu_groups is empty): "
		       "vfio-pci needs no-IOMMU mode (--noiommu)\n");
	else
		printf("IOMMU: unknown (%s)\n", strerror(-groups));
	p = rpath(s, "/sys/module/vfio/parameters/"
		  "enable_unsafe_noiommu_mode");
	rc = read_line(p, val, sizeof(val));
	if (rc == 0)
		printf("no-IOMMU mode: %s%s\n", val,
		       val[0] == 'Y' ? " (unsafe: no DMA protection)" : "");
	else if (rc == -ENOENT)
		printf("no-IOMMU mode: unavailable (vfio is not loaded)\n");
	else
		printf("no-IOMMU mode: unknown (%s: %s)\n", p, strerror(-rc));
	free(p);
	printf("DPDK-compatible drivers loaded:");
	for (i = 0; i < DIM(dpdk_drivers); i++) {
		p = rpath(s, "/sys/bus/pci/drivers/%s", dpdk_drivers[i]);
		if (exists(p))
			printf("%s%s", shown++ ? ", " : " ", dpdk_drivers[i]);
		free(p);
	}
	printf("%s\n", shown ? "" : " none (dpib-setup --bind loads one)");
}

static void
status(const struct setup *s)
{
	status_nics(s);
	status_hugepages(s);
	status_vfio(s);
}

/* ---- Binding ---- */

/* A NIC whose interface carries routes holds this machine's traffic. */
static int
check_routes(const struct setup *s, const struct func *f, const char *what)
{
	const struct iface *act = active_iface(s, f);
	const char *route;
	size_t n;

	if (act == NULL)
		return 0;
	route = first_route(s, act->name, &n);
	if (s->force) {
		printf("warning: %s: %s carries route %s%s; going on "
		       "(--force)\n", f->addr, act->name, route,
		       n > 1 ? " and more" : "");
		return 0;
	}
	return fail("%s: its interface %s carries route %s%s, so %s would "
		    "cut this machine's traffic over %s; take the routes "
		    "away (ip link set %s down) or add --force", f->addr,
		    act->name, route, n > 1 ? " and more" : "", what,
		    act->name, act->name);
}

/* The driver registered with the PCI bus, loading DPDK's by modprobe. */
static int
load_driver(struct setup *s, const char *drv)
{
	char *p = rpath(s, "/sys/bus/pci/drivers/%s", drv);
	char *argv[] = { "modprobe", (char *)drv, NULL };
	int rc = 0;

	if (exists(p) || (s->loaded != NULL && strcmp(s->loaded, drv) == 0))
		goto out;
	if (!is_dpdk_driver(drv)) {
		rc = fail("no driver '%s' in %s: check the name, or load its "
			  "module (modprobe %s); DPDK's drivers are vfio-pci, "
			  "uio_pci_generic and igb_uio", drv, p, drv);
		goto out;
	}
	if (run(s, argv) != 0) {
		if (strcmp(drv, "igb_uio") == 0)
			rc = fail("cannot load igb_uio: it is not part of "
				  "Linux; build it from dpdk-kmods, or use "
				  "vfio-pci");
		else
			rc = fail("cannot load %s: is the module installed "
				  "for this kernel (uname -r)?", drv);
		goto out;
	}
	s->loaded = drv;
	if (!s->dry_run && s->root[0] == '\0' && !exists(p))
		rc = fail("modprobe %s left no %s; see dmesg", drv, p);
out:
	free(p);
	return rc;
}

/* Under --root the fixture does not change as the kernel would: nothing
 * to check; under --dry-run nothing was done. */
static bool
can_verify(const struct setup *s)
{
	return !s->dry_run && s->root[0] == '\0';
}

/*
 * vfio-pci refuses a device in no IOMMU group unless vfio's no-IOMMU mode is
 * on, and that mode gives the device the run of all memory: so it is only
 * switched on when asked (--noiommu), and never silently.
 */
static int
check_iommu(struct setup *s)
{
	char *p = rpath(s, "/sys/module/vfio/parameters/"
			"enable_unsafe_noiommu_mode");
	char val[16] = "";
	long groups = iommu_groups(s);
	int rc = 0;

	read_line(p, val, sizeof(val));
	if (groups != 0 || val[0] == 'Y') {
		if (s->noiommu && groups > 0)
			printf("note: this machine has an IOMMU (%ld groups); "
			       "--noiommu is not needed, and not applied\n",
			       groups);
		goto out;
	}
	if (!s->noiommu) {
		rc = fail("this machine has no IOMMU (%s is empty), and "
			  "vfio-pci binds no device without one: enable it "
			  "(intel_iommu=on or amd_iommu=on on the kernel "
			  "command line), or add --noiommu for vfio's no-IOMMU "
			  "mode, which gives the NIC DMA to all memory (no DMA "
			  "protection) and taints the kernel",
			  "/sys/kernel/iommu_groups");
		goto out;
	}
	fprintf(stderr, PROG ": WARNING: switching vfio to no-IOMMU mode: a "
		"device bound to vfio-pci can then read and write all of "
		"this machine's memory (no DMA protection), and the kernel "
		"is tainted. Use it only where every user of the device is "
		"trusted, such as a VM without a virtual IOMMU.\n");
	/* vfio-pci brings vfio, which owns the parameter. */
	rc = load_driver(s, "vfio-pci");
	if (rc == 0 && can_verify(s) && !exists(p))
		rc = fail("this kernel's vfio has no no-IOMMU mode "
			  "(CONFIG_VFIO_NOIOMMU): enable the IOMMU, or bind "
			  "uio_pci_generic instead");
	if (rc == 0)
		rc = put(s, p, "Y");
out:
	free(p);
	return rc;
}

/* What the kernel did with a function after drivers_probe; NULL: none. */
static char *
current_driver(const struct setup *s, const struct func *f)
{
	char *p = rpath(s, "/sys/bus/pci/devices/%s/driver", f->addr);
	char *drv = link_base(p);

	free(p);
	return drv;
}

/*
 * driver_override makes the next probe pick DRIVER and no other, so the
 * function is unbound, then reprobed: the steps dpdk-devbind.py takes.
 * An empty override ("\n") lets the kernel pick by ID table again.
 */
static int
rebind(const struct setup *s, const struct func *f, const char *override)
{
	char *p;
	int rc;

	p = rpath(s, "/sys/bus/pci/devices/%s/driver_override", f->addr);
	if (!s->dry_run && !exists(p)) {
		fail("%s does not exist: this kernel lacks driver_override "
		     "(Linux 3.16 or later has it)", p);
		free(p);
		return -1;
	}
	rc = put(s, p, override);
	free(p);
	if (rc == 0 && f->driver != NULL) {
		p = rpath(s, "/sys/bus/pci/devices/%s/driver/unbind", f->addr);
		rc = put(s, p, f->addr);
		free(p);
	}
	if (rc == 0) {
		p = rpath(s, "/sys/bus/pci/drivers_probe");
		rc = put(s, p, f->addr);
		free(p);
	}
	return rc;
}

static int
bind_one(const struct setup *s, const struct func *f, const char *drv)
{
	char *now;
	int rc;

	if (f->driver != NULL && strcmp(f->driver, drv) == 0) {
		printf("%s: already bound to %s\n", f->addr, drv);
		return 0;
	}
	rc = rebind(s, f, drv);
	if (rc != 0 || !can_verify(s)) {
		if (rc == 0 && !s->dry_run)
			printf("%s: bind to %s requested (not checked under "
			       "--root)\n", f->addr, drv);
		return rc;
	}
	now = current_driver(s, f);
	if (now != NULL && strcmp(now, drv) == 0) {
		printf("%s: bound to %s (was %s)\n", f->addr, drv,
		       f->driver != NULL ? f->driver : "none");
		free(now);
		return 0;
	}
	free(now);
	fail("%s: %s did not take it; see dmesg%s", f->addr, drv,
	     strcmp(drv, "vfio-pci") == 0 ?
	     " (no IOMMU group? then --noiommu)" : "");
	/* Give it back to the kernel rather than leave it driverless. */
	if (f->driver != NULL && rebind(s, f, "\n") == 0) {
		now = current_driver(s, f);
		fprintf(stderr, PROG ": %s: back on %s\n", f->addr,
			now != NULL ? now : "no driver");
		free(now);
	}
	return -1;
}

static int
unbind_one(const struct setup *s, const struct func *f)
{
	char *now;
	int rc = rebind(s, f, "\n");

	if (rc != 0 || !can_verify(s)) {
		if (rc == 0 && !s->dry_run)
			printf("%s: unbind from %s requested (not checked "
			       "under --root)\n", f->addr,
			       f->driver != NULL ? f->driver : "no driver");
		return rc;
	}
	now = current_driver(s, f);
	if (now != NULL)
		printf("%s: unbound from %s, now on %s\n", f->addr,
		       f->driver != NULL ? f->driver : "no driver", now);
	else
		printf("%s: unbound from %s; no kernel driver took it (load "
		       "its module, then dpib-setup --unbind %s again)\n",
		       f->addr, f->driver != NULL ? f->driver : "no driver",
		       f->addr);
	free(now);
	return 0;
}

/* Every function named is checked before any is touched. */
static int
resolve_all(struct setup *s, struct func **fs)
{
	int i, rc = 0;

	for (i = 0; i < s->n_args; i++) {
		fs[i] = find_func(s, s->args[i]);
		if (fs[i] == NULL)
			rc = -1;
	}
	return rc;
}

static int
do_bind(struct setup *s)
{
	struct func **fs = xgrow(NULL, s->n_args, sizeof(*fs));
	int i, rc;

	rc = resolve_all(s, fs);
	for (i = 0; rc == 0 && i < s->n_args; i++)
		if (fs[i]->driver == NULL ||
		    strcmp(fs[i]->driver, s->driver) != 0)
			rc = check_routes(s, fs[i], "rebinding it");
	if (rc == 0)
		rc = need_root(s, "--bind");
	if (rc == 0 && strcmp(s->driver, "vfio-pci") == 0)
		rc = check_iommu(s);
	if (rc == 0)
		rc = load_driver(s, s->driver);
	for (i = 0; rc == 0 && i < s->n_args; i++)
		rc = bind_one(s, fs[i], s->driver);
	free(fs);
	return rc;
}

static int
do_unbind(struct setup *s)
{
	struct func **fs = xgrow(NULL, s->n_args, sizeof(*fs));
	int i, rc;

	rc = resolve_all(s, fs);
	for (i = 0; rc == 0 && i < s->n_args; i++)
		rc = check_routes(s, fs[i], "unbinding it");
	if (rc == 0)
		rc = need_root(s, "--unbind");
	for (i = 0; rc == 0 && i < s->n_args; i++)
		rc = unbind_one(s, fs[i]);
	free(fs);
	return rc;
}

/* ---- Hugepages ---- */

static int
parse_count(const char *arg, unsigned long *count, const char **size)
{
	char *end;

	errno = 0;
	*count = strtoul(arg, &end, 10);
	if (errno != 0 || end == arg || (*end != '\0' && *end != ',') ||
	    arg[0] == '-' || *count > 0x7fffffff)
		return fail("bad --hugepages '%s': want a page count, "
			    "optionally with a size, as 512 or 4,1G", arg);
	*size = *end == ',' ? end + 1 : NULL;
	return 0;
}

/* hugetlbfs of that size mounted: the first free of /dev/hugepages and
 * /dev/hugepages-SIZE otherwise. */
static int
mount_hugetlbfs(const struct setup *s, unsigned long kb)
{
	char *p = rpath(s, "/proc/mounts"), line[512], mnt[256], size[32];
	unsigned long dflt = default_size(s), mkb;
	bool dev_taken = false;
	char *target, *opts;
	int rc = 0;
	FILE *f = fopen(p, "re");

	if (f == NULL) {
		rc = fail("cannot read %s: %s; is /proc mounted?", p,
			  strerror(errno));
		free(p);
		return rc;
	}
	free(p);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (!hugetlbfs_mount(line, dflt, mnt, sizeof(mnt), &mkb))
			continue;
		if (mkb == kb) {
			printf("hugetlbfs with pagesize %s already mounted on "
			       "%s\n", size_str(kb, size, sizeof(size)), mnt);
			fclose(f);
			return 0;
		}
		if (strcmp(mnt, "/dev/hugepages") == 0)
			dev_taken = true;
	}
	fclose(f);
	size_str(kb, size, sizeof(size));
	target = dev_taken ? xasprintf("/dev/hugepages-%s", size) :
		xstrdup("/dev/hugepages");
	opts = xasprintf("pagesize=%s", size);
	if (s->dry_run || s->root[0] != '\0') {
		printf("%s mount -t hugetlbfs -o %s nodev %s\n",
		       s->dry_run ? "would run" : "not run under --root:",
		       opts, target);
		goto out;
	}
	if (mkdir(target, 0755) != 0 && errno != EEXIST) {
		rc = fail("cannot create %s: %s; %s", target, strerror(errno),
			  fix_for(errno));
		goto out;
	}
	if (mount("nodev", target, "hugetlbfs", 0, opts) != 0) {
		rc = fail("cannot mount hugetlbfs (%s) on %s: %s; %s", opts,
			  target, strerror(errno), errno == EPERM ?
			  "run as root" : "see dmesg");
		goto out;
	}
	printf("hugetlbfs with %s mounted on %s\n", opts, target);
out:
	free(target);
	free(opts);
	return rc;
}

/*
 * The kernel gives what contiguous memory it finds, which may be fewer
 * pages than asked for: what it gave is read back and told.
 */
static int
do_hugepages(struct setup *s)
{
	unsigned long count, kb, *sizes;
	char *dir, *p, val[24], size[32];
	const char *sz = NULL;
	size_t n, i;
	long got;
	int rc;

	if (parse_count(s->hugepages, &count, &sz) != 0)
		return -1;
	if (sz != NULL && s->pagesize != NULL && strcmp(sz, s->pagesize) != 0)
		return fail("--hugepages %s and --pagesize %s disagree: give "
			    "the size once", s->hugepages, s->pagesize);
	if (sz == NULL)
		sz = s->pagesize;
	kb = sz != NULL ? parse_size(sz) : default_size(s);
	if (kb == 0 && sz != NULL)
		return fail("bad page size '%s': want one such as 2M or 1G",
			    sz);
	if (kb == 0)
		return fail("no Hugepagesize in %s/proc/meminfo: give the size, "
			    "as --hugepages %lu,2M", s->root, count);
	if (s->node < 0)
		dir = rpath(s, "/sys/kernel/mm/hugepages");
	else
		dir = rpath(s, "/sys/devices/system/node/node%d/hugepages",
			    s->node);
	p = xasprintf("%s/hugepages-%lukB/nr_hugepages", dir, kb);
	if (!exists(p)) {
		n = list_sizes(dir, &sizes);
		fprintf(stderr, PROG ": no %s hugepages in %s: the sizes there "
			"are", size_str(kb, size, sizeof(size)), dir);
		for (i = 0; i < n; i++)
			fprintf(stderr, " %s", size_str(sizes[i], size,
							 sizeof(size)));
		fprintf(stderr, "%s\n", n == 0 ? " none (no such NUMA node?)" :
			"");
		free(sizes);
		rc = -1;
		goto out;
	}
	rc = need_root(s, "--hugepages");
	snprintf(val, sizeof(val), "%lu", count);
	if (rc == 0)
		rc = put(s, p, val);
	if (rc != 0 || s->dry_run)
		goto mount;
	rc = read_long(p, 10, &got);
	if (rc != 0) {
		rc = fail("cannot read back %s: %s", p, strerror(-rc));
		goto out;
	}
	size_str(kb, size, sizeof(size));
	printf("%s hugepages", size);
	if (s->node >= 0)
		printf(" on node %d", s->node);
	printf(": asked for %lu, the kernel gave %ld (%lu MiB)\n", count, got,
	       (unsigned long)got * kb / 1024);
	if ((unsigned long)got < count)
		rc = fail("only %ld of %lu %s pages: memory is too fragmented; "
			  "free some and retry, or reserve them at boot "
			  "(hugepages=%lu%s on the kernel command line)", got,
			  count, size, count, kb == 1024 * 1024 ?
			  " hugepagesz=1G" : "");
mount:
	if (rc == 0 && count > 0)
		rc = mount_hugetlbfs(s, kb);
out:
	free(p);
	free(dir);
	return rc;
}

/* ---- Configuration ---- */

/* dpib takes unicast addresses only (docs/configuration.md). */
static int
check_ip(const char *ip, bool *v6)
{
	struct in6_addr a6;
	struct in_addr a4;
	uint32_t h;

	*v6 = false;
	if (inet_pton(AF_INET, ip, &a4) == 1) {
		h = ntohl(a4.s_addr);
		if (h == 0 || h == 0xffffffff || (h >> 28) == 0xe)
			return fail("ip %s is not a unicast address", ip);
		return 0;
	}
	if (inet_pton(AF_INET6, ip, &a6) == 1) {
		*v6 = true;
		if (IN6_IS_ADDR_UNSPECIFIED(&a6) || IN6_IS_ADDR_MULTICAST(&a6) ||
		    IN6_IS_ADDR_V4MAPPED(&a6))
			return fail("ip %s is not a unicast IPv6 address (nor "
				    "an IPv4-mapped one)", ip);
		return 0;
	}
	return fail("'%s' is not an IP address: want one such as 192.0.2.10 "
		    "or 2001:db8::10", ip);
}

/* Free hugepages of the default size, as dpib's hugepages = auto counts. */
static long
free_hugepages(const struct setup *s)
{
	char *p = rpath(s, "/sys/kernel/mm/hugepages/hugepages-%lukB/"
			"free_hugepages", default_size(s));
	long v;

	if (read_long(p, 10, &v) != 0)
		v = 0;
	free(p);
	return v;
}

static void
print_config(const struct setup *s, FILE *out, const struct func *f,
	     const char *ip, bool v6)
{
	const struct iface *ifc = f->n_ifs > 0 ? &f->ifs[0] : NULL;
	long mtu = 1500;

	fprintf(out, "# dpib configuration for %s (%s %s),\n"
		"# written by dpib-setup. Use it as DPIB_CONF=<this file>;\n"
		"# docs/configuration.md explains each key.\n",
		f->addr, f->vendor_name, f->device_name);
	if (!is_dpdk_driver(f->driver))
		fprintf(out, "# The NIC is on %s now; bind it first:\n"
			"#   dpib-setup --bind vfio-pci %s\n",
			f->driver != NULL ? f->driver : "no driver", f->addr);
	fprintf(out, "\n[eal]\nargs =\n");
	if (free_hugepages(s) == 0)
		fprintf(out, "# No hugepages are free yet: "
			"dpib-setup --hugepages 512\n");
	fprintf(out, "hugepages = yes\n\n[engine]\ncpu = auto\nmode = poll\n\n"
		"[device dpib0]\nport = %s\n%s = %s\n", f->addr,
		v6 ? "ip6" : "ip", ip);
	if (ifc != NULL && ifc->mtu >= 328 && ifc->mtu <= 9000) {
		mtu = ifc->mtu;
		fprintf(out, "# The MTU of %s, the NIC's kernel interface.\n",
			ifc->name);
	} else if (ifc != NULL && ifc->mtu > 9000) {
		mtu = 9000;
		fprintf(out, "# %s's MTU is %ld; dpib takes 9000 at most.\n",
			ifc->name, ifc->mtu);
	}
	fprintf(out, "mtu = %ld\n", mtu);
}

static int
do_config(struct setup *s)
{
	struct func *f = find_func(s, s->args[0]);
	bool v6;
	FILE *out;

	if (f == NULL || check_ip(s->args[1], &v6) != 0)
		return -1;
	if (s->output == NULL) {
		print_config(s, stdout, f, s->args[1], v6);
		return 0;
	}
	if (s->dry_run) {
		printf("would write to %s:\n", s->output);
		print_config(s, stdout, f, s->args[1], v6);
		return 0;
	}
	out = fopen(s->output, "we");
	if (out == NULL)
		return fail("cannot write %s: %s; %s", s->output,
			    strerror(errno), errno == EACCES ?
			    "pick a writable place, or run as root" :
			    "check the directory exists");
	print_config(s, out, f, s->args[1], v6);
	if (ferror(out) | (fclose(out) != 0))
		return fail("cannot write %s: %s", s->output, strerror(errno));
	printf("wrote %s; use it with DPIB_CONF=%s\n", s->output, s->output);
	return 0;
}

/* ---- Command line ---- */

static void
usage(FILE *f)
{
	fprintf(f, "Usage: " PROG " [-s] [-n] [--root DIR] [--pci-dump FILE]\n"
		"       " PROG " -b DRIVER [--force] [--noiommu] ADDR...\n"
		"       " PROG " -u [--force] ADDR...\n"
		"       " PROG " --hugepages N[,SIZE] [-p SIZE] [--node NODE]\n"
		"       " PROG " -w ADDR IP [-o FILE]\n"
		"Prepare a PCI NIC for dpib: its driver, hugepages, a "
		"configuration.\n"
		"  -s, --status          list NICs by driver, hugepages and "
		"VFIO state\n"
		"                        (the default)\n"
		"  -b, --bind=DRIVER     bind the NICs (address or interface) "
		"to DRIVER,\n"
		"                        e.g. vfio-pci, loading it if needed\n"
		"  -u, --unbind          hand the NICs back to their kernel "
		"driver\n"
		"      --force           also a NIC whose interface carries "
		"routes\n"
		"      --noiommu         allow vfio's no-IOMMU mode (unsafe: "
		"no DMA\n"
		"                        protection) where there is no IOMMU\n"
		"      --hugepages=N[,SIZE]  reserve N pages of SIZE (2M, 1G; "
		"default the\n"
		"                        system's) and mount hugetlbfs for "
		"them\n"
		"  -p, --pagesize=SIZE   the SIZE of --hugepages\n"
		"      --node=NODE       reserve on that NUMA node only\n"
		"  -w, --write-config    write a dpib configuration for NIC "
		"ADDR, address IP\n"
		"  -o, --output=FILE     ... to FILE instead of stdout\n"
		"  -n, --dry-run         print each action instead of doing "
		"it\n"
		"      --root=DIR        read and write /sys and /proc under "
		"DIR (tests);\n"
		"                        modprobe and mount are then only "
		"shown\n"
		"      --pci-dump=FILE   find PCI functions in FILE "
		"(lspci -x output)\n"
		"  -h, --help            print this help\n");
}

enum {
	OPT_FORCE = 256, OPT_NOIOMMU, OPT_HUGEPAGES, OPT_NODE, OPT_ROOT,
	OPT_PCI_DUMP,
};

static int
set_mode(struct setup *s, enum mode m)
{
	if (s->mode != MODE_NONE && s->mode != m)
		return fail("give one of --bind, --unbind and --write-config");
	s->mode = m;
	return 0;
}

/* Returns 0 to go on, 1 on a bad command line, -1 after --help. */
static int
parse_args(int argc, char **argv, struct setup *s)
{
	static const struct option longs[] = {
		{ "status", no_argument, NULL, 's' },
		{ "bind", required_argument, NULL, 'b' },
		{ "unbind", no_argument, NULL, 'u' },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "noiommu", no_argument, NULL, OPT_NOIOMMU },
		{ "hugepages", required_argument, NULL, OPT_HUGEPAGES },
		{ "pagesize", required_argument, NULL, 'p' },
		{ "node", required_argument, NULL, OPT_NODE },
		{ "write-config", no_argument, NULL, 'w' },
		{ "output", required_argument, NULL, 'o' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "root", required_argument, NULL, OPT_ROOT },
		{ "pci-dump", required_argument, NULL, OPT_PCI_DUMP },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	long v;
	int c;

	while ((c = getopt_long(argc, argv, "sb:up:wo:nh", longs, NULL)) != -1) {
		switch (c) {
		case 's':
			s->status = true;
			break;
		case 'b':
			s->driver = optarg;
			if (set_mode(s, MODE_BIND) != 0)
				return 1;
			break;
		case 'u':
			if (set_mode(s, MODE_UNBIND) != 0)
				return 1;
			break;
		case 'w':
			if (set_mode(s, MODE_CONFIG) != 0)
				return 1;
			break;
		case OPT_FORCE:
			s->force = true;
			break;
		case OPT_NOIOMMU:
			s->noiommu = true;
			break;
		case OPT_HUGEPAGES:
			s->hugepages = optarg;
			break;
		case 'p':
			s->pagesize = optarg;
			break;
		case OPT_NODE:
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || v < 0 || v > 1023) {
				fail("bad --node '%s': want a NUMA node "
				     "number; --status lists them", optarg);
				return 1;
			}
			s->node = v;
			break;
		case 'o':
			s->output = optarg;
			break;
		case 'n':
			s->dry_run = true;
			break;
		case OPT_ROOT:
			/* "/" would double every path's slash; harmless,
			 * but the messages read better without. */
			s->root = strcmp(optarg, "/") == 0 ? "" : optarg;
			break;
		case OPT_PCI_DUMP:
			s->pci_dump = optarg;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			usage(stderr);
			return 1;
		}
	}
	s->args = argv + optind;
	s->n_args = argc - optind;
	if ((s->mode == MODE_BIND || s->mode == MODE_UNBIND) &&
	    s->n_args == 0) {
		fail("%s needs at least one PCI address, as 0000:03:00.0",
		     s->mode == MODE_BIND ? "--bind" : "--unbind");
		return 1;
	}
	if (s->mode == MODE_CONFIG && s->n_args != 2) {
		fail("--write-config takes a PCI address and an IP address, "
		     "as -w 0000:03:00.0 192.0.2.10");
		return 1;
	}
	if (s->mode == MODE_NONE && s->n_args != 0) {
		fail("'%s': an address needs --bind, --unbind or "
		     "--write-config", s->args[0]);
		return 1;
	}
	if (s->output != NULL && s->mode != MODE_CONFIG) {
		fail("-o names the file of --write-config");
		return 1;
	}
	if ((s->pagesize != NULL || s->node >= 0) && s->hugepages == NULL) {
		fail("--pagesize and --node go with --hugepages N");
		return 1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct setup s = { .root = "", .node = -1 };
	int rc = parse_args(argc, argv, &s);

	if (rc != 0)
		return rc > 0 ? EXIT_FAILURE : EXIT_SUCCESS;
	scan_pci(&s);
	load_routes4(&s);
	load_routes6(&s);
	if (s.hugepages != NULL)
		rc = do_hugepages(&s);
	if (rc == 0 && s.noiommu && s.mode != MODE_BIND)
		rc = need_root(&s, "--noiommu");
	if (rc == 0 && s.noiommu && s.mode != MODE_BIND)
		rc = check_iommu(&s);
	if (rc == 0 && s.mode == MODE_BIND)
		rc = do_bind(&s);
	else if (rc == 0 && s.mode == MODE_UNBIND)
		rc = do_unbind(&s);
	else if (rc == 0 && s.mode == MODE_CONFIG)
		rc = do_config(&s);
	if (s.status || (s.mode == MODE_NONE && s.hugepages == NULL &&
			 !s.noiommu))
		status(&s);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, PROG ": cannot write the output: %s\n",
			strerror(errno));
		rc = -1;
	}
	return rc != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
