/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * rdma_getaddrinfo(3) over libc's getaddrinfo(3). dpib carries RDMA over
 * UDP/IP (RoCE v2), so an RDMA address is an IP address: each address the
 * resolver gives becomes one rdma_addrinfo, with the port space and QP type
 * the caller's hints ask for. There is no routing data to hand out (RoCE
 * resolves the path when the connection is made) and no AF_IB.
 *
 * Return values follow the man page: a failed name lookup returns the
 * resolver's EAI_* code, because programs print it with gai_strerror();
 * every other failure returns -1 with errno set. errno is set in both cases
 * for programs that print strerror(errno) instead.
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <rdma/rdma_cma.h>

#define RAI_KNOWN	(RAI_PASSIVE | RAI_NUMERICHOST | RAI_NOROUTE | RAI_FAMILY)

static int
fail(int err)
{
	errno = err;
	return -1;
}

static int
gai_fail(int eai)
{
	switch (eai) {
	case EAI_SYSTEM:
		break;			/* the resolver set errno */
	case EAI_MEMORY:
		errno = ENOMEM;
		break;
	case EAI_AGAIN:
		errno = EAGAIN;
		break;
	case EAI_FAMILY:
	case EAI_ADDRFAMILY:
		errno = EAFNOSUPPORT;
		break;
	case EAI_BADFLAGS:
		errno = EINVAL;
		break;
	default:
		errno = ENOENT;		/* no such name or service */
		break;
	}
	return eai;
}

/* The length of an address, from its family: callers often leave *_len 0. */
static socklen_t
addr_len(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		return 0;
	}
}

/*
 * The port space and QP type go together (TCP: RC, UDP: UD, IB: either);
 * a caller may give one, both or neither (RDMA_PS_TCP, as rdma-core does).
 */
static int
pick_service(struct rdma_addrinfo *want)
{
	if (want->ai_port_space == 0)
		want->ai_port_space = want->ai_qp_type == IBV_QPT_UD ?
				      RDMA_PS_UDP : RDMA_PS_TCP;
	if (want->ai_qp_type == 0)
		want->ai_qp_type = want->ai_port_space == RDMA_PS_UDP ?
				   IBV_QPT_UD : IBV_QPT_RC;
	switch (want->ai_port_space) {
	case RDMA_PS_TCP:
		return want->ai_qp_type == IBV_QPT_RC ? 0 : fail(EINVAL);
	case RDMA_PS_UDP:
		return want->ai_qp_type == IBV_QPT_UD ? 0 : fail(EINVAL);
	case RDMA_PS_IB:
		return want->ai_qp_type == IBV_QPT_RC ||
		       want->ai_qp_type == IBV_QPT_UD ? 0 : fail(EINVAL);
	default:
		return fail(EINVAL);
	}
}

/*
 * The family of the answer: the hint's, else that of a given address, so
 * that a source and a destination can be used together. A hinted address
 * must be IP, of that family.
 */
static int
pick_family(struct rdma_addrinfo *want)
{
	const struct sockaddr *given[] = { want->ai_src_addr, want->ai_dst_addr };
	unsigned int i;

	if (want->ai_family == AF_IB)
		return fail(EAFNOSUPPORT);
	for (i = 0; i < 2; i++) {
		if (given[i] == NULL)
			continue;
		if (addr_len(given[i]) == 0)
			return fail(EAFNOSUPPORT);
		if (want->ai_family == AF_UNSPEC)
			want->ai_family = given[i]->sa_family;
		if (given[i]->sa_family != want->ai_family)
			return fail(EINVAL);
	}
	if (want->ai_family != AF_UNSPEC && want->ai_family != AF_INET &&
	    want->ai_family != AF_INET6)
		return gai_fail(EAI_FAMILY);
	return 0;
}

/* Returns what rdma_getaddrinfo returns when the hints are unusable. */
static int
check_hints(struct rdma_addrinfo *want)
{
	int ret;

	if (want->ai_flags & ~RAI_KNOWN)
		return gai_fail(EAI_BADFLAGS);
	ret = pick_family(want);
	if (ret != 0)
		return ret;
	return pick_service(want);
}

static int
dup_addr(struct sockaddr **to, socklen_t *to_len, const struct sockaddr *from)
{
	socklen_t len = addr_len(from);

	*to = malloc(len);
	if (*to == NULL)
		return -1;
	memcpy(*to, from, len);
	*to_len = len;
	return 0;
}

static int
dup_name(char **to, const char *from)
{
	if (from == NULL)
		return 0;
	*to = strdup(from);
	return *to == NULL ? -1 : 0;
}

/*
 * One answer: the resolved address is the one to bind on the passive side,
 * else the destination, with the hinted source (if any) to bind to first.
 * Each entry owns its copies, so that freeing one never reaches another.
 */
static struct rdma_addrinfo *
make_one(const struct rdma_addrinfo *want, const struct sockaddr *addr,
	 const char *canon)
{
	struct rdma_addrinfo *rai = calloc(1, sizeof(*rai));
	int ret;

	if (rai == NULL)
		return NULL;
	rai->ai_flags = want->ai_flags;
	rai->ai_family = addr->sa_family;
	rai->ai_qp_type = want->ai_qp_type;
	rai->ai_port_space = want->ai_port_space;
	if (want->ai_flags & RAI_PASSIVE) {
		ret = dup_addr(&rai->ai_src_addr, &rai->ai_src_len, addr);
		ret = ret ? ret : dup_name(&rai->ai_src_canonname, canon);
	} else {
		ret = dup_addr(&rai->ai_dst_addr, &rai->ai_dst_len, addr);
		ret = ret ? ret : dup_name(&rai->ai_dst_canonname, canon);
		if (ret == 0 && want->ai_src_addr != NULL)
			ret = dup_addr(&rai->ai_src_addr, &rai->ai_src_len,
				       want->ai_src_addr);
	}
	if (ret != 0) {
		rdma_freeaddrinfo(rai);
		return NULL;
	}
	return rai;
}

/* Neither node nor service: the addresses the hints carry (the man page). */
static int
from_hints(const struct rdma_addrinfo *want, struct rdma_addrinfo **res)
{
	const struct sockaddr *addr = want->ai_flags & RAI_PASSIVE ?
				      want->ai_src_addr : want->ai_dst_addr;

	if (addr == NULL)
		return gai_fail(EAI_NONAME);
	*res = make_one(want, addr, NULL);
	return *res == NULL ? fail(ENOMEM) : 0;
}

static void
to_gai_hints(const struct rdma_addrinfo *want, const char *node,
	     struct addrinfo *hints)
{
	memset(hints, 0, sizeof(*hints));
	hints->ai_family = want->ai_family;
	/*
	 * The socket type picks the protocol a service name is looked up in,
	 * and makes the resolver give each address once, not once per type.
	 */
	hints->ai_socktype = want->ai_port_space == RDMA_PS_UDP ?
			     SOCK_DGRAM : SOCK_STREAM;
	if (want->ai_flags & RAI_PASSIVE)
		hints->ai_flags |= AI_PASSIVE;
	if (want->ai_flags & RAI_NUMERICHOST)
		hints->ai_flags |= AI_NUMERICHOST;
	/* rdma_addrinfo has room for the name and no flag to ask for it. */
	if (node != NULL)
		hints->ai_flags |= AI_CANONNAME;
}

/*
 * The resolver's first address, as librdmacm gives it (one entry, never
 * a list: a program that binds or connects to res->ai_next's would find
 * none there with rdma-core).
 */
static int
from_resolver(const struct rdma_addrinfo *want, const struct addrinfo *ai,
	      struct rdma_addrinfo **res)
{
	*res = make_one(want, ai->ai_addr, ai->ai_canonname);
	return *res == NULL ? fail(ENOMEM) : 0;
}

int
rdma_getaddrinfo(const char *node, const char *service,
		 const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	struct rdma_addrinfo want = { 0 };
	struct addrinfo gai_hints, *ai;
	int ret;

	if (res == NULL)
		return fail(EINVAL);
	if (hints != NULL) {
		want.ai_flags = hints->ai_flags;
		want.ai_family = hints->ai_family;
		want.ai_qp_type = hints->ai_qp_type;
		want.ai_port_space = hints->ai_port_space;
		want.ai_src_addr = hints->ai_src_addr;
		want.ai_dst_addr = hints->ai_dst_addr;
	}
	ret = check_hints(&want);
	if (ret != 0)
		return ret;
	if (node == NULL && service == NULL)
		return from_hints(&want, res);
	to_gai_hints(&want, node, &gai_hints);
	ret = getaddrinfo(node, service, &gai_hints, &ai);
	if (ret != 0)
		return gai_fail(ret);
	ret = from_resolver(&want, ai, res);
	freeaddrinfo(ai);
	return ret;
}

void
rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	struct rdma_addrinfo *next;

	for (; res != NULL; res = next) {
		next = res->ai_next;
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
	}
}
