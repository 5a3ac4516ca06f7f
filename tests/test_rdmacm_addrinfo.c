/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * librdmacm's calls that need no device: rdma_getaddrinfo(3) against its
 * man page and struct rdma_addrinfo, and the rsocket(7) calls, which on
 * plain descriptors act as the system calls they are named after (rping
 * and its kin rpoll() the CM event channel's fd).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#include "check.h"

static const struct sockaddr_in *
sin_of(const struct sockaddr *sa)
{
	return (const struct sockaddr_in *)sa;
}

static const struct sockaddr_in6 *
sin6_of(const struct sockaddr *sa)
{
	return (const struct sockaddr_in6 *)sa;
}

static void
check_ipv4(const struct sockaddr *sa, socklen_t len, const char *ip,
	   uint16_t port)
{
	struct in_addr want;

	CHECK(sa != NULL && len == sizeof(struct sockaddr_in), "len %u", len);
	CHECK(sa->sa_family == AF_INET, "family %d", sa->sa_family);
	inet_pton(AF_INET, ip, &want);
	CHECK(sin_of(sa)->sin_addr.s_addr == want.s_addr, "not %s", ip);
	CHECK(ntohs(sin_of(sa)->sin_port) == port, "port %u",
	      ntohs(sin_of(sa)->sin_port));
}

/* Man page: node is the destination; TCP port space and RC by default. */
static void
numeric_ipv4_destination(void)
{
	struct rdma_addrinfo *res;

	CHECK(rdma_getaddrinfo("192.0.2.1", "7471", NULL, &res) == 0,
	      "errno %d", errno);
	CHECK(res->ai_family == AF_INET, "family %d", res->ai_family);
	check_ipv4(res->ai_dst_addr, res->ai_dst_len, "192.0.2.1", 7471);
	CHECK(res->ai_src_addr == NULL && res->ai_src_len == 0,
	      "a source no one asked for");
	CHECK(res->ai_port_space == RDMA_PS_TCP, "ps %#x", res->ai_port_space);
	CHECK(res->ai_qp_type == IBV_QPT_RC, "qp type %d", res->ai_qp_type);
	CHECK(res->ai_route == NULL && res->ai_route_len == 0, "route");
	CHECK(res->ai_connect == NULL && res->ai_connect_len == 0, "connect");
	CHECK(res->ai_next == NULL, "one address, one entry");
	rdma_freeaddrinfo(res);
}

/* RAI_PASSIVE: the address to bind; no node means the wildcard. */
static void
passive_wildcard(void)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE,
				       .ai_family = AF_INET };
	struct rdma_addrinfo *res;

	CHECK(rdma_getaddrinfo(NULL, "7471", &hints, &res) == 0,
	      "errno %d", errno);
	check_ipv4(res->ai_src_addr, res->ai_src_len, "0.0.0.0", 7471);
	CHECK(res->ai_dst_addr == NULL && res->ai_dst_len == 0,
	      "man page: ai_dst_len is 0 with RAI_PASSIVE");
	CHECK(res->ai_flags & RAI_PASSIVE, "rdma_create_ep reads the flag");
	rdma_freeaddrinfo(res);

	/* Any family: the resolver has 0.0.0.0 and ::, librdmacm gives the
	 * first alone.
	 */
	hints.ai_family = 0;
	CHECK(rdma_getaddrinfo(NULL, "7471", &hints, &res) == 0,
	      "errno %d", errno);
	CHECK(res->ai_src_addr != NULL && res->ai_next == NULL,
	      "one entry, as librdmacm gives");
	rdma_freeaddrinfo(res);
}

/* Port space and QP type go together, whichever the hints give. */
static void
udp_port_space_is_ud(void)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_UDP };
	struct rdma_addrinfo *res;

	CHECK(rdma_getaddrinfo("192.0.2.1", "7174", &hints, &res) == 0,
	      "errno %d", errno);
	CHECK(res->ai_port_space == RDMA_PS_UDP, "ps %#x", res->ai_port_space);
	CHECK(res->ai_qp_type == IBV_QPT_UD, "qp type %d", res->ai_qp_type);
	rdma_freeaddrinfo(res);

	hints.ai_port_space = 0;
	hints.ai_qp_type = IBV_QPT_UD;
	CHECK(rdma_getaddrinfo("192.0.2.1", "7174", &hints, &res) == 0,
	      "errno %d", errno);
	CHECK(res->ai_port_space == RDMA_PS_UDP, "ps %#x", res->ai_port_space);
	rdma_freeaddrinfo(res);

	hints.ai_port_space = RDMA_PS_TCP;
	errno = 0;
	CHECK(rdma_getaddrinfo("192.0.2.1", "7174", &hints, &res) == -1 &&
	      errno == EINVAL, "UD in the TCP port space was taken");
}

static void
numeric_ipv6(void)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_NUMERICHOST };
	struct rdma_addrinfo *res;
	struct in6_addr want;

	CHECK(rdma_getaddrinfo("2001:db8::1", "7471", &hints, &res) == 0,
	      "errno %d", errno);
	inet_pton(AF_INET6, "2001:db8::1", &want);
	CHECK(res->ai_family == AF_INET6, "family %d", res->ai_family);
	CHECK(res->ai_dst_len == sizeof(struct sockaddr_in6), "len %u",
	      res->ai_dst_len);
	CHECK(memcmp(&sin6_of(res->ai_dst_addr)->sin6_addr, &want,
		     sizeof(want)) == 0, "not 2001:db8::1");
	CHECK(ntohs(sin6_of(res->ai_dst_addr)->sin6_port) == 7471, "port");
	rdma_freeaddrinfo(res);
}

/* A name goes through the resolver, which also names it canonically. */
static void
named_localhost(void)
{
	struct rdma_addrinfo hints = { .ai_family = AF_INET };
	struct rdma_addrinfo *res;

	CHECK(rdma_getaddrinfo("localhost", "7471", &hints, &res) == 0,
	      "errno %d", errno);
	check_ipv4(res->ai_dst_addr, res->ai_dst_len, "127.0.0.1", 7471);
	CHECK(res->ai_dst_canonname != NULL, "no canonical name");
	rdma_freeaddrinfo(res);
}

/*
 * Man page: a failed lookup returns the resolver's EAI_* code, which
 * programs print with gai_strerror(); errno is set as well.
 */
static void
bad_name_fails(void)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_NUMERICHOST };
	struct rdma_addrinfo *res;
	int ret;

	errno = 0;
	ret = rdma_getaddrinfo("no-such-host", "7471", &hints, &res);
	CHECK(ret == EAI_NONAME && errno != 0,
	      "a name with RAI_NUMERICHOST: %d, errno %d", ret, errno);
	errno = 0;
	ret = rdma_getaddrinfo("no-such-host.invalid", "7471", NULL, &res);
	/* Without a name server the resolver may only say "try again". */
	CHECK(ret == EAI_NONAME || ret == EAI_NODATA || ret == EAI_AGAIN ||
	      ret == EAI_FAIL, "an .invalid name: %d", ret);
	CHECK(errno != 0, "errno not set");
	hints.ai_family = AF_IB;
	errno = 0;
	CHECK(rdma_getaddrinfo("192.0.2.1", "7471", &hints, &res) == -1 &&
	      errno == EAFNOSUPPORT, "AF_IB is not dpib's");
}

/* The hinted source is the one to bind to before resolving the address. */
static void
hinted_source_copied(void)
{
	struct sockaddr_in src = { .sin_family = AF_INET,
				   .sin_port = htons(4791) };
	struct rdma_addrinfo hints = { .ai_src_addr = (struct sockaddr *)&src,
				       .ai_src_len = sizeof(src) };
	struct rdma_addrinfo *res;

	inet_pton(AF_INET, "198.51.100.7", &src.sin_addr);
	CHECK(rdma_getaddrinfo("192.0.2.1", "7471", &hints, &res) == 0,
	      "errno %d", errno);
	check_ipv4(res->ai_src_addr, res->ai_src_len, "198.51.100.7", 4791);
	CHECK(res->ai_src_addr != hints.ai_src_addr, "not a copy");
	check_ipv4(res->ai_dst_addr, res->ai_dst_len, "192.0.2.1", 7471);
	rdma_freeaddrinfo(res);
	rdma_freeaddrinfo(NULL);
}

static void
rpoll_on_pipe(void)
{
	struct pollfd pfd = { .events = POLLIN };
	int fd[2];

	CHECK(pipe(fd) == 0, "pipe");
	pfd.fd = fd[0];
	CHECK(rpoll(&pfd, 1, 0) == 0, "readable before a write");
	CHECK(rwrite(fd[1], "x", 1) == 1, "rwrite");
	CHECK(rpoll(&pfd, 1, 1000) == 1 && (pfd.revents & POLLIN),
	      "not readable after a write");
	CHECK(rclose(fd[0]) == 0 && rclose(fd[1]) == 0, "rclose");
}

static void
rselect_on_pipe(void)
{
	struct timeval zero = { 0 };
	fd_set rd;
	char c;
	int fd[2];

	CHECK(pipe(fd) == 0, "pipe");
	FD_ZERO(&rd);
	FD_SET(fd[0], &rd);
	CHECK(rselect(fd[0] + 1, &rd, NULL, NULL, &zero) == 0,
	      "readable before a write");
	CHECK(write(fd[1], "y", 1) == 1, "write");
	FD_SET(fd[0], &rd);
	zero.tv_sec = 1;
	CHECK(rselect(fd[0] + 1, &rd, NULL, NULL, &zero) == 1 &&
	      FD_ISSET(fd[0], &rd), "not readable after a write");
	CHECK(rread(fd[0], &c, 1) == 1 && c == 'y', "rread");
	close(fd[0]);
	close(fd[1]);
}

/* dpib has no rsockets: say so rather than make a socket that is not one. */
static void
rsocket_not_implemented(void)
{
	errno = 0;
	CHECK(rsocket(AF_INET, SOCK_STREAM, 0) == -1 && errno == ENOSYS,
	      "errno %d", errno);
	errno = 0;
	CHECK(riomap(0, NULL, 0, PROT_WRITE, 0, -1) == -1 && errno == ENOSYS,
	      "errno %d", errno);
}

static void
rfcntl_on_pipe(void)
{
	int fd[2];
	int fl;

	CHECK(pipe(fd) == 0, "pipe");
	fl = rfcntl(fd[0], F_GETFL);
	CHECK(fl >= 0 && !(fl & O_NONBLOCK), "flags %#x", fl);
	CHECK(rfcntl(fd[0], F_SETFL, fl | O_NONBLOCK) == 0, "F_SETFL");
	CHECK(rfcntl(fd[0], F_GETFL) & O_NONBLOCK, "O_NONBLOCK not set");
	CHECK(fcntl(fd[0], F_GETFL) & O_NONBLOCK, "not the same descriptor");
	close(fd[0]);
	close(fd[1]);
}

int
main(void)
{
	RUN(numeric_ipv4_destination);
	RUN(passive_wildcard);
	RUN(udp_port_space_is_ud);
	RUN(numeric_ipv6);
	RUN(named_localhost);
	RUN(bad_name_fails);
	RUN(hinted_source_copied);
	RUN(rpoll_on_pipe);
	RUN(rselect_on_pipe);
	RUN(rsocket_not_implemented);
	RUN(rfcntl_on_pipe);
	CHECK_DONE();
}
