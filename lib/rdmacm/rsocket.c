/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * rsocket(7) without rsockets: dpib does not implement the rsocket protocol,
 * so rsocket() and the riomap family fail with ENOSYS. No rsocket can then
 * exist, and every descriptor given to the other calls is a plain one; they
 * act as the system call they are named after. That is not idle: rping,
 * ucmatose, udaddy, mckey and cmtime wait on the CM event channel's fd with
 * rpoll(), and a program written for rsockets still runs over ordinary
 * sockets.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <unistd.h>
#include <sys/uio.h>

#include <rdma/rsocket.h>

static int
no_rsockets(void)
{
	errno = ENOSYS;
	return -1;
}

int
rsocket(int domain, int type, int protocol)
{
	(void)domain;
	(void)type;
	(void)protocol;
	return no_rsockets();
}

off_t
riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)prot;
	(void)flags;
	(void)offset;
	return no_rsockets();
}

int
riounmap(int socket, void *buf, size_t len)
{
	(void)socket;
	(void)buf;
	(void)len;
	return no_rsockets();
}

size_t
riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	(void)socket;
	(void)buf;
	(void)count;
	(void)offset;
	(void)flags;
	return (size_t)no_rsockets();
}

int
rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	return bind(socket, addr, addrlen);
}

int
rlisten(int socket, int backlog)
{
	return listen(socket, backlog);
}

int
raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	return accept(socket, addr, addrlen);
}

int
rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	return connect(socket, addr, addrlen);
}

int
rshutdown(int socket, int how)
{
	return shutdown(socket, how);
}

int
rclose(int socket)
{
	return close(socket);
}

ssize_t
rrecv(int socket, void *buf, size_t len, int flags)
{
	return recv(socket, buf, len, flags);
}

ssize_t
rrecvfrom(int socket, void *buf, size_t len, int flags,
	  struct sockaddr *src_addr, socklen_t *addrlen)
{
	return recvfrom(socket, buf, len, flags, src_addr, addrlen);
}

ssize_t
rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	return recvmsg(socket, msg, flags);
}

ssize_t
rsend(int socket, const void *buf, size_t len, int flags)
{
	return send(socket, buf, len, flags);
}

ssize_t
rsendto(int socket, const void *buf, size_t len, int flags,
	const struct sockaddr *dest_addr, socklen_t addrlen)
{
	return sendto(socket, buf, len, flags, dest_addr, addrlen);
}

ssize_t
rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	return sendmsg(socket, msg, flags);
}

ssize_t
rread(int socket, void *buf, size_t count)
{
	return read(socket, buf, count);
}

ssize_t
rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	return readv(socket, iov, iovcnt);
}

ssize_t
rwrite(int socket, const void *buf, size_t count)
{
	return write(socket, buf, count);
}

ssize_t
rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	return writev(socket, iov, iovcnt);
}

int
rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return poll(fds, nfds, timeout);
}

int
rselect(int nfds, fd_set *readfds, fd_set *writefds,
	fd_set *exceptfds, struct timeval *timeout)
{
	return select(nfds, readfds, writefds, exceptfds, timeout);
}

int
rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	return getpeername(socket, addr, addrlen);
}

int
rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	return getsockname(socket, addr, addrlen);
}

int
rsetsockopt(int socket, int level, int optname,
	    const void *optval, socklen_t optlen)
{
	return setsockopt(socket, level, optname, optval, optlen);
}

int
rgetsockopt(int socket, int level, int optname,
	    void *optval, socklen_t *optlen)
{
	return getsockopt(socket, level, optname, optval, optlen);
}

int
rfcntl(int socket, int cmd, ... /* arg */)
{
	va_list ap;
	void *arg;

	/*
	 * The argument is an int or a pointer, or absent, as cmd says; read
	 * as a pointer it passes either unchanged on the ABIs we build for,
	 * which is how libc's own fcntl forwards it.
	 */
	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl(socket, cmd, arg);
}
