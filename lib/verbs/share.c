/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Shared objects (ibv_import_device(3), ibv_import_pd(3), ibv_import_mr(3)),
 * within one process. With a kernel HCA a context's cmd_fd is its uverbs
 * file: a program passes it (or a dup) to ibv_import_device and gets a
 * second context on the same file, in which the first one's PD and MR
 * handles name the same objects. Here each context's cmd_fd is a memfd of
 * its own, whose inode stands for the file: ibv_import_device finds the
 * open context with that inode and opens the device again as a context of
 * the same file. An imported PD stands for its original (object creation
 * uses the original: checks compare PDs by identity), which cannot be
 * deallocated while imported. A descriptor from another process names no
 * context here: dpib's objects live in the process that made them
 * (EOPNOTSUPP).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/queue.h>
#include <sys/stat.h>

#include "verbs_priv.h"

struct pd_ent {
	LIST_ENTRY(pd_ent) link;
	struct ibv_pd *pd;
	struct ibv_pd *orig;	/* an import: the PD it stands for */
	uint32_t imports;	/* an original: imports of it alive */
};

struct mr_imp {
	LIST_ENTRY(mr_imp) link;
	struct ibv_mr mr;
};

static pthread_mutex_t share_lock = PTHREAD_MUTEX_INITIALIZER;
static LIST_HEAD(, pd_ent) pds = LIST_HEAD_INITIALIZER(pds);
static LIST_HEAD(, mr_imp) mrs = LIST_HEAD_INITIALIZER(mrs);
static LIST_HEAD(, dpib_context) ctxs = LIST_HEAD_INITIALIZER(ctxs);
static uint32_t nimports;	/* PDs imported and not unimported */
static uint32_t next_handle;

/* The context's file: a memfd as cmd_fd, its inode the file's name. */
int
dpib_share_open(struct dpib_context *c, int fd)
{
	struct stat st;

	if (fd < 0)
		fd = memfd_create("dpib-verbs", MFD_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	c->vctx.context.cmd_fd = fd;
	c->file_dev = st.st_dev;
	c->file_ino = st.st_ino;
	pthread_mutex_lock(&share_lock);
	LIST_INSERT_HEAD(&ctxs, c, share_link);
	pthread_mutex_unlock(&share_lock);
	return 0;
}

void
dpib_share_close(struct dpib_context *c)
{
	pthread_mutex_lock(&share_lock);
	LIST_REMOVE(c, share_link);
	pthread_mutex_unlock(&share_lock);
	close(c->vctx.context.cmd_fd);
}

/* Are @a and @b contexts of one file (one of them imported from the other)? */
int
dpib_same_file(struct ibv_context *a, struct ibv_context *b)
{
	return a == b || (to_dctx(a)->file_ino == to_dctx(b)->file_ino &&
			  to_dctx(a)->file_dev == to_dctx(b)->file_dev);
}

struct ibv_context *
ibv_import_device(int cmd_fd)
{
	struct dpib_context *c, *found = NULL;
	struct ibv_context *ctx;
	struct stat st;

	if (fstat(cmd_fd, &st) != 0) {
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&share_lock);
	LIST_FOREACH(c, &ctxs, share_link)
		if (c->file_ino == st.st_ino && c->file_dev == st.st_dev)
			found = c;
	pthread_mutex_unlock(&share_lock);
	if (found == NULL) {
		errno = EOPNOTSUPP;	/* another process's, or no context */
		return NULL;
	}
	ctx = dpib_open_context(&found->dev->ibv, cmd_fd);
	return ctx;
}

/* A new PD: its handle, and its entry for ibv_import_pd. */
void
dpib_share_pd(struct ibv_pd *pd)
{
	struct pd_ent *e = calloc(1, sizeof(*e));

	pthread_mutex_lock(&share_lock);
	pd->handle = ++next_handle;
	if (e != NULL) {
		e->pd = pd;
		LIST_INSERT_HEAD(&pds, e, link);
	}
	pthread_mutex_unlock(&share_lock);
}

static struct pd_ent *
pd_entry(struct ibv_pd *pd)
{
	struct pd_ent *e;

	LIST_FOREACH(e, &pds, link)
		if (e->pd == pd)
			return e;
	return NULL;
}

/*
 * Before ibv_dealloc_pd: EBUSY while the PD is imported, EINVAL for an
 * import (ibv_unimport_pd releases it; the creator deallocates); 0 when
 * the PD may go (its entry then goes with dpib_share_pd_gone).
 */
int
dpib_share_pd_dealloc(struct ibv_pd *pd)
{
	struct pd_ent *e;
	int err = 0;

	pthread_mutex_lock(&share_lock);
	e = pd_entry(pd);
	if (e != NULL && e->orig != NULL)
		err = EINVAL;
	else if (e != NULL && e->imports != 0)
		err = EBUSY;
	pthread_mutex_unlock(&share_lock);
	return err;
}

void
dpib_share_pd_gone(struct ibv_pd *pd)
{
	struct pd_ent *e;

	pthread_mutex_lock(&share_lock);
	e = pd_entry(pd);
	if (e != NULL) {
		LIST_REMOVE(e, link);
		free(e);
	}
	pthread_mutex_unlock(&share_lock);
}

/* The PD objects are made in: an import's original, else @pd itself. */
struct ibv_pd *
dpib_pd(struct ibv_pd *pd)
{
	struct pd_ent *e;
	struct ibv_pd *orig = pd;

	if (pd == NULL || __atomic_load_n(&nimports, __ATOMIC_ACQUIRE) == 0)
		return pd;
	pthread_mutex_lock(&share_lock);
	e = pd_entry(pd);
	if (e != NULL && e->orig != NULL)
		orig = e->orig;
	pthread_mutex_unlock(&share_lock);
	return orig;
}

struct ibv_pd *
ibv_import_pd(struct ibv_context *ctx, uint32_t pd_handle)
{
	struct pd_ent *e, *orig = NULL, *imp;
	struct ibv_pd *pd;

	imp = calloc(1, sizeof(*imp));
	pd = calloc(1, sizeof(*pd));
	if (imp == NULL || pd == NULL) {
		free(imp);
		free(pd);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&share_lock);
	LIST_FOREACH(e, &pds, link)
		if (e->orig == NULL && e->pd->handle == pd_handle &&
		    dpib_same_file(e->pd->context, ctx))
			orig = e;
	if (orig != NULL) {
		orig->imports++;
		pd->context = ctx;
		pd->handle = pd_handle;
		imp->pd = pd;
		imp->orig = orig->pd;
		LIST_INSERT_HEAD(&pds, imp, link);
		__atomic_fetch_add(&nimports, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&share_lock);
	if (orig == NULL) {
		free(imp);
		free(pd);
		errno = EINVAL;		/* no such PD in this context's file */
		return NULL;
	}
	return pd;
}

void
ibv_unimport_pd(struct ibv_pd *pd)
{
	struct pd_ent *e, *o;

	pthread_mutex_lock(&share_lock);
	e = pd_entry(pd);
	if (e != NULL && e->orig != NULL) {
		o = pd_entry(e->orig);
		if (o != NULL && o->imports != 0)
			o->imports--;
		LIST_REMOVE(e, link);
		free(e);
		__atomic_fetch_sub(&nimports, 1, __ATOMIC_RELEASE);
		free(pd);
	}
	pthread_mutex_unlock(&share_lock);
}

/*
 * An MR's handle is its lkey (unique on the device while it lives). The
 * import is a copy of what the MR is, in @pd, without its address (as
 * rdma-core's): its keys work in every QP of the original PD.
 */
struct ibv_mr *
ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	struct ibv_mr *mr = hca_mr_of_key(ctx_hw(pd->context), mr_handle);
	struct mr_imp *m;

	if (mr == NULL || mr->pd != dpib_pd(pd) || mr->lkey != mr_handle) {
		errno = EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.length = mr->length;
	m->mr.handle = mr_handle;
	m->mr.lkey = mr->lkey;
	m->mr.rkey = mr->rkey;
	pthread_mutex_lock(&share_lock);
	LIST_INSERT_HEAD(&mrs, m, link);
	pthread_mutex_unlock(&share_lock);
	return &m->mr;
}

/* Is @mr an import (ibv_dereg_mr: EINVAL, ibv_unimport_mr frees it)? */
int
dpib_mr_imported(struct ibv_mr *mr)
{
	struct mr_imp *m;
	int found = 0;

	pthread_mutex_lock(&share_lock);
	LIST_FOREACH(m, &mrs, link)
		if (&m->mr == mr)
			found = 1;
	pthread_mutex_unlock(&share_lock);
	return found;
}

void
ibv_unimport_mr(struct ibv_mr *mr)
{
	struct mr_imp *m;

	pthread_mutex_lock(&share_lock);
	LIST_FOREACH(m, &mrs, link)
		if (&m->mr == mr)
			break;
	if (m != NULL)
		LIST_REMOVE(m, link);
	pthread_mutex_unlock(&share_lock);
	free(m);
}
