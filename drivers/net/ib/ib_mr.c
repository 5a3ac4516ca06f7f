/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Memory regions. A key is (table index << 8 | generation): the generation
 * changes at every registration of a slot, so a key that was deregistered
 * never matches again (until 255 re-registrations of the same slot later).
 * lkey and rkey are the same key; the access flags decide what it allows.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <rte_malloc.h>
#include <rte_memcpy.h>

#include "ib_hca.h"

/* Rights that let the HCA store into the region. */
#define MR_WRITE_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
	IBV_ACCESS_REMOTE_ATOMIC)

#define MR_VALID_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
	IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
	IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND | \
	IBV_ACCESS_HUGETLB | IBV_ACCESS_RELAXED_ORDERING)

/*
 * Registration rules for access flags (IBA 10.6.3.1 and verbs). Flags in
 * IBV_ACCESS_OPTIONAL_RANGE are best effort (verbs.h): those dpib does not
 * know are ignored, not refused; relaxed ordering changes nothing for a
 * CPU that copies in order.
 */
static int
access_ok(unsigned int access)
{
	if (access & ~(MR_VALID_ACCESS | IBV_ACCESS_OPTIONAL_RANGE))
		return EINVAL;
	/* Remote write or atomic needs local write. */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	if (access & (IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND))
		return EOPNOTSUPP;
	return 0;
}

/*
 * Give @k a slot of the key table and its first key, and publish it. MRs
 * and memory windows share the table: an rkey names either.
 */
static int
key_publish(struct ib_dev *dev, struct ib_mr *k)
{
	uint32_t i, idx;

	rte_spinlock_lock(&dev->ctl_lock);
	for (i = 0; i < IB_MAX_MR; i++) {
		idx = (dev->next_mr + i) % IB_MAX_MR;
		if (idx != 0 && dev->mr_tbl[idx] == NULL)
			break;
	}
	if (i == IB_MAX_MR) {
		rte_spinlock_unlock(&dev->ctl_lock);
		return ENOMEM;
	}
	dev->next_mr = idx + 1;
	dev->mr_gen[idx]++;
	k->key = idx << 8 | dev->mr_gen[idx];
	__atomic_store_n(&dev->mr_tbl[idx], k, __ATOMIC_RELEASE);
	rte_spinlock_unlock(&dev->ctl_lock);
	return 0;
}

static void
key_unpublish(struct ib_dev *dev, struct ib_mr *k)
{
	rte_spinlock_lock(&dev->ctl_lock);
	__atomic_store_n(&dev->mr_tbl[k->key >> 8], NULL, __ATOMIC_RELEASE);
	rte_spinlock_unlock(&dev->ctl_lock);
}

/* The key-table entry @key names now (an MR or a window), or NULL. */
static struct ib_mr *
key_lookup(struct ib_dev *dev, uint32_t key)
{
	struct ib_mr *k = __atomic_load_n(&dev->mr_tbl[(key >> 8) % IB_MAX_MR],
					  __ATOMIC_ACQUIRE);

	if (k == NULL || k->key != key)
		return NULL;
	return k;
}

int
ib_mr_reg(struct ib_dev *dev, struct ib_pd *pd, void *addr, size_t len,
	  uint64_t iova, unsigned int access, struct ib_mr **out)
{
	struct ib_mr *mr;

	int err = access_ok(access);

	if (err)
		return err;
	if (len > UINT64_MAX - iova || (addr == NULL && len != 0))
		return EINVAL;

	mr = rte_zmalloc("ib_mr", sizeof(*mr), 0);
	if (mr == NULL)
		return ENOMEM;
	mr->kind = IB_KEY_MR;
	mr->dev = dev;
	mr->addr = addr;
	mr->length = len;
	mr->iova = iova;
	mr->access = access;
	mr->ibv.pd = &pd->ibv;
	mr->ibv.addr = addr;
	mr->ibv.length = len;
	/*
	 * The memory must be there, writable if the MR writes (EFAULT, as
	 * kernel providers answer when they cannot pin it). Watched from
	 * before the check, so that an unmap racing it kills the MR.
	 */
	if (len != 0) {
		err = ib_mem_track(mr);
		if (err == 0 && !ib_mem_mapped((uintptr_t)addr,
					       (uintptr_t)addr + len,
					       access & MR_WRITE_ACCESS)) {
			ib_mem_untrack(mr);
			err = EFAULT;
		}
		if (err) {
			rte_free(mr);
			return err;
		}
	}
	ib_dma_mr_attach(mr);
	if (key_publish(dev, mr) != 0) {
		ib_dma_mr_detach(mr);
		if (len != 0)
			ib_mem_untrack(mr);
		rte_free(mr);
		return ENOMEM;
	}
	mr->ibv.lkey = mr->key;
	mr->ibv.rkey = mr->key;
	/*
	 * Not mlock()ed: the engine copies with the CPU through the
	 * application's mapping, which ib_memhook.c watches. (Locked pages
	 * made MADV_DONTNEED fail with EINVAL, where it works on kernel
	 * providers.)
	 */
	*out = mr;
	return 0;
}

struct mr_unpublish {
	struct ib_dev *dev;
	struct ib_mr *mr;
	int err;
};

/*
 * Engine: binds run there, so the count of windows bound is exact here
 * and no bind can slip in between the check and the removal.
 */
static void
mr_unpublish_apply(void *arg)
{
	struct mr_unpublish *u = arg;

	u->err = u->mr->nbound != 0 ? EBUSY : 0;
	if (u->err == 0)
		key_unpublish(u->dev, u->mr);
}

/* READ responses sent zero-copy point into the MR (ib_zc_settle). */
static int
zc_settled(struct ib_mr *mr)
{
	static int told;

	if (ib_zc_settle(&mr->zc, 1, 0))
		return 1;
	if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
		IB_LOG(NOTICE, "%s: MR %#x deregistered while its port still "
		       "holds sent READ responses: its %zu bytes of state stay "
		       "allocated (said once)", mr->dev->conf.name, mr->key,
		       sizeof(*mr));
	return 0;
}

/* ibv_dereg_mr(3): fails (EBUSY) while a memory window is bound to it. */
int
ib_mr_dereg(struct ib_dev *dev, struct ib_mr *mr)
{
	struct mr_unpublish u = { .dev = dev, .mr = mr };
	int err = ib_engine_exec(dev, mr_unpublish_apply, &u);

	if (err == 0)
		err = u.err;
	if (err)
		return err;
	/* Past a quiescent point of the engine no packet uses the MR. */
	ib_engine_quiesce(dev);
	ib_dma_mr_detach(mr);
	ib_mem_untrack(mr);
	if (zc_settled(mr))
		rte_free(mr);
	return 0;
}

/* The MR of an lkey or rkey; a window's key is never an lkey. */
struct ib_mr *
ib_mr_lookup(struct ib_dev *dev, uint32_t key)
{
	struct ib_mr *mr = key_lookup(dev, key);

	return mr != NULL && mr->kind == IB_KEY_MR ? mr : NULL;
}

/* PD, access rights and bounds of [va, va + len) against @mr. */
int
ib_mr_check(struct ib_mr *mr, struct ibv_pd *pd, uint64_t va, uint64_t len,
	    unsigned int access)
{
	if (mr == NULL || mr->ibv.pd != pd ||
	    __atomic_load_n(&mr->dead, __ATOMIC_ACQUIRE))
		return -EACCES;
	if ((mr->access & access) != access)
		return -EACCES;
	if (va < mr->iova || len > mr->length || va - mr->iova > mr->length - len)
		return -EACCES;
	return 0;
}

/*
 * Copy @len bytes between @buf and the SGE list, starting at @cur and
 * advancing it. Every SGE touched is checked against its MR: local writes
 * need IBV_ACCESS_LOCAL_WRITE. -EACCES on a protection error, -EMSGSIZE when
 * the list is too short.
 */
int
ib_sge_copy(struct ib_dev *dev, struct ibv_pd *pd, const struct ibv_sge *sge,
	    uint32_t nsge, struct ib_sge_cursor *cur, uint8_t *buf, uint32_t len,
	    int to_sge)
{
	unsigned int access = to_sge ? IBV_ACCESS_LOCAL_WRITE : 0;

	while (len > 0) {
		const struct ibv_sge *s;
		struct ib_mr *mr;
		uint32_t n;
		uint8_t *p;

		if (cur->idx >= nsge)
			return -EMSGSIZE;
		s = &sge[cur->idx];
		if (cur->off >= s->length) {
			cur->idx++;
			cur->off = 0;
			continue;
		}
		mr = ib_mr_lookup(dev, s->lkey);
		if (ib_mr_check(mr, pd, s->addr, s->length, access) != 0)
			return -EACCES;
		n = RTE_MIN(len, s->length - cur->off);
		p = mr->addr + (s->addr - mr->iova) + cur->off;
		if (to_sge)
			rte_memcpy(p, buf, n);
		else
			rte_memcpy(buf, p, n);
		buf += n;
		len -= n;
		cur->off += n;
	}
	return 0;
}

/*
 * The IOVA the port reaches [p, p + len) of @mr at, for a zero-copy frame:
 * any on a virtual port (its PMD copies with the CPU); on a PCI port only
 * for a DMA-registered MR and, with IOVA as PA, within one of its pages.
 * -1 when the frame must carry a copy.
 */
int
ib_mr_iova(const struct ib_dev *dev, struct ib_mr *mr, const uint8_t *p,
	   uint32_t len, rte_iova_t *iova)
{
	const struct rte_memseg_list *msl;
	const struct rte_memseg *ms;

	if (!dev->dma_pci || rte_eal_iova_mode() == RTE_IOVA_VA) {
		*iova = (rte_iova_t)(uintptr_t)p;
		return !dev->dma_pci ||
		       __atomic_load_n(&mr->dma, __ATOMIC_ACQUIRE) ? 0 : -1;
	}
	if (!__atomic_load_n(&mr->dma, __ATOMIC_ACQUIRE) ||
	    (((uintptr_t)p ^ ((uintptr_t)p + len - 1)) &
	     ~((uintptr_t)mr->dma_pgsz - 1)))
		return -1;	/* not registered, or two pages */
	/*
	 * The page's IOVA from its memseg (rte_mem_virt2iova would read
	 * /proc/self/pagemap: a system call per packet), through the MR's
	 * memseg list when it has one.
	 */
	msl = mr->dma_msl;
	if (msl != NULL && ((uintptr_t)p < (uintptr_t)msl->base_va ||
			    (uintptr_t)p >= (uintptr_t)msl->base_va + msl->len))
		msl = NULL;
	ms = rte_mem_virt2memseg(p, msl);
	if (ms == NULL || ms->iova == RTE_BAD_IOVA)
		return -1;
	*iova = ms->iova + (uintptr_t)(p - (const uint8_t *)ms->addr);
	return 0;
}

/*
 * Zero copy: where the next @len bytes of the SGE list are, when they lie
 * in one SGE of an MR the port can reach (on a PCI port, one registered
 * for DMA and, with IOVA as PA, within one of its pages), with their IOVA
 * in *iova; @cur advances over them. NULL otherwise, and on a protection
 * error, which the copy that follows then reports; @cur stays.
 */
uint8_t *
ib_sge_ref(struct ib_dev *dev, struct ibv_pd *pd, const struct ibv_sge *sge,
	   uint32_t nsge, struct ib_sge_cursor *cur, uint32_t len,
	   rte_iova_t *iova)
{
	struct ib_sge_cursor c = *cur;
	const struct ibv_sge *s;
	struct ib_mr *mr;
	uint8_t *p;

	while (c.idx < nsge && c.off >= sge[c.idx].length) {
		c.idx++;
		c.off = 0;
	}
	if (c.idx >= nsge || sge[c.idx].length - c.off < len)
		return NULL;
	s = &sge[c.idx];
	mr = ib_mr_lookup(dev, s->lkey);
	if (ib_mr_check(mr, pd, s->addr, s->length, 0) != 0)
		return NULL;
	p = mr->addr + (s->addr - mr->iova) + c.off;
	if (ib_mr_iova(dev, mr, p, len, iova) != 0)
		return NULL;
	c.off += len;
	*cur = c;
	return p;
}

/* Advance @cur by @len bytes of the SGE list without touching memory. */
void
ib_sge_seek(const struct ibv_sge *sge, uint32_t nsge,
	    struct ib_sge_cursor *cur, uint32_t len)
{
	while (len > 0 && cur->idx < nsge) {
		uint32_t n = RTE_MIN(len, sge[cur->idx].length - cur->off);

		cur->off += n;
		len -= n;
		if (cur->off == sge[cur->idx].length) {
			cur->idx++;
			cur->off = 0;
		}
	}
}

struct mr_rereg {
	struct ib_mr *mr;
	int flags;
	struct ib_pd *pd;
	uint8_t *addr;
	uint64_t length;
	unsigned int access;
	uint32_t deaths;	/* of the MR when the new range was checked */
	int err;
};

/*
 * Engine: the new attributes apply from the next packet on. A window bound
 * to the MR was checked against what it is now: while one is bound the MR
 * cannot change (EBUSY), as it cannot be deregistered.
 */
static void
mr_rereg_apply(void *arg)
{
	struct mr_rereg *r = arg;
	struct ib_mr *mr = r->mr;

	r->err = mr->nbound != 0 ? EBUSY : 0;
	if (r->err)
		return;

	if (r->flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		mr->addr = r->addr;
		mr->iova = (uintptr_t)r->addr;
		mr->length = r->length;
		/* Alive again, unless some part of the old or new range
		 * changed since the new one was found mapped.
		 */
		__atomic_store_n(&mr->dead, __atomic_load_n(&mr->deaths,
			__ATOMIC_ACQUIRE) != r->deaths, __ATOMIC_RELEASE);
	}
	if (r->flags & IBV_REREG_MR_CHANGE_PD)
		mr->ibv.pd = &r->pd->ibv;
	if (r->flags & IBV_REREG_MR_CHANGE_ACCESS)
		mr->access = r->access;
}

/*
 * The memory a re-registration asks for must be there, as at
 * registration. A new range is watched together with the old one until
 * the engine has switched over (ib_mem_retrack), so that no unmap of
 * either goes unnoticed in between.
 */
static int
rereg_check(struct ib_mr *mr, struct mr_rereg *r)
{
	unsigned int access = (r->flags & IBV_REREG_MR_CHANGE_ACCESS) ?
			      r->access : mr->access;
	uintptr_t lo = (uintptr_t)mr->addr, hi = lo + mr->length;

	if (r->flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		lo = (uintptr_t)r->addr;
		hi = lo + r->length;
		if (mr->length == 0)
			ib_mem_track(mr);
		ib_mem_retrack(mr, RTE_MIN(lo, mr->hook_lo),
			       RTE_MAX(hi, mr->hook_hi));
		r->deaths = __atomic_load_n(&mr->deaths, __ATOMIC_ACQUIRE);
	} else if (mr->length == 0 || mr->dead) {
		return 0;	/* nothing there to be checked */
	}
	if (ib_mem_mapped(lo, hi, access & MR_WRITE_ACCESS))
		return 0;
	if (r->flags & IBV_REREG_MR_CHANGE_TRANSLATION)
		ib_mem_retrack(mr, (uintptr_t)mr->addr,
			       (uintptr_t)mr->addr + mr->length);
	return EFAULT;
}

/*
 * ibv_rereg_mr(3): change translation, PD and/or access of @mr in place,
 * keys unchanged. Returns 0 or a positive errno (the MR is unchanged).
 */
int
ib_mr_rereg(struct ib_dev *dev, struct ib_mr *mr, int flags, struct ib_pd *pd,
	    void *addr, size_t len, unsigned int access)
{
	const int known = IBV_REREG_MR_CHANGE_TRANSLATION |
			  IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS;
	struct mr_rereg r = { .mr = mr, .flags = flags, .pd = pd,
			      .addr = addr, .length = len, .access = access };
	int err;

	if (flags == 0 || (flags & ~known))
		return EINVAL;
	if ((flags & IBV_REREG_MR_CHANGE_PD) && pd == NULL)
		return EINVAL;
	if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) &&
	    (addr == NULL || len == 0 || len > UINT64_MAX - (uintptr_t)addr))
		return EINVAL;
	if ((flags & IBV_REREG_MR_CHANGE_ACCESS) && (err = access_ok(access)))
		return err;
	err = rereg_check(mr, &r);
	if (err)
		return err;
	err = ib_engine_exec(dev, mr_rereg_apply, &r);
	if (err == 0)
		err = r.err;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION)
		ib_mem_retrack(mr, (uintptr_t)mr->addr,
			       (uintptr_t)mr->addr + mr->length);
	if (err)
		return err;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		mr->ibv.addr = addr;
		mr->ibv.length = len;
		/* Past a quiescent point no packet uses the old pages. */
		ib_engine_quiesce(dev);
		(void)zc_settled(mr);
		ib_dma_mr_detach(mr);
		ib_dma_mr_attach(mr);
	}
	return 0;
}

/*
 * Remote access through @rkey - an MR's, or a bound window's - to
 * [va, va + len) with @access for a request that arrived on @qp: the
 * address of the first byte, or NULL when any check fails (IBA 10.6.3.2:
 * key, PD, access rights, bounds; 10.6.7: a type 2 window answers only
 * the QP it is bound to).
 */
uint8_t *
ib_rkey_addr(struct ib_qp *qp, uint32_t rkey, uint64_t va, uint64_t len,
	     unsigned int access)
{
	struct ib_mr *mr;

	return ib_rkey_addr_mr(qp, rkey, va, len, access, &mr);
}

/* The same, and the MR whose memory it is (a window's MR) in *@mrp. */
uint8_t *
ib_rkey_addr_mr(struct ib_qp *qp, uint32_t rkey, uint64_t va, uint64_t len,
		unsigned int access, struct ib_mr **mrp)
{
	struct ib_mr *k = key_lookup(qp->dev, rkey);
	struct ib_mw *mw;

	if (ib_mr_check(k, qp->ibv.pd, va, len, access) != 0)
		return NULL;
	if (k->kind == IB_KEY_MR) {
		*mrp = k;
		return k->addr + (va - k->iova);
	}
	mw = container_of(k, struct ib_mw, k);
	if (!mw->valid || __atomic_load_n(&mw->mr->dead, __ATOMIC_ACQUIRE) ||
	    (mw->ibv.type == IBV_MW_TYPE_2 && mw->qpn != qp->ibv.qp_num))
		return NULL;
	*mrp = mw->mr;
	return mw->mr->addr + (mw->base - mw->mr->iova) + (va - k->iova);
}

/* ibv_alloc_mw(3): an unbound window of @type in @pd. */
int
ib_mw_alloc(struct ib_dev *dev, struct ib_pd *pd, enum ibv_mw_type type,
	    struct ib_mw **out)
{
	struct ib_mw *mw;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)
		return EINVAL;
	mw = rte_zmalloc("ib_mw", sizeof(*mw), 0);
	if (mw == NULL)
		return ENOMEM;
	mw->k.kind = IB_KEY_MW;
	mw->k.ibv.pd = &pd->ibv;
	if (key_publish(dev, &mw->k) != 0) {
		rte_free(mw);
		return ENOMEM;
	}
	__atomic_fetch_add(&dev->nmw, 1, __ATOMIC_RELAXED);
	mw->ibv.pd = &pd->ibv;
	mw->ibv.rkey = mw->k.key;
	mw->ibv.handle = mw->k.key >> 8;
	mw->ibv.type = type;
	*out = mw;
	return 0;
}

/* Engine: the window stops granting access and lets go of its MR. */
static void
mw_unbind(struct ib_mw *mw)
{
	if (!mw->valid)
		return;
	mw->valid = 0;
	mw->mr->nbound--;
	mw->mr = NULL;
	if (mw->qp != NULL) {	/* atomic: LOCAL_INV may be another engine's */
		__atomic_fetch_sub(&mw->qp->mw_bound, 1, __ATOMIC_RELAXED);
		mw->qp = NULL;
	}
}

struct mw_dealloc {
	struct ib_dev *dev;
	struct ib_mw *mw;
};

static void
mw_dealloc_apply(void *arg)
{
	struct mw_dealloc *d = arg;

	mw_unbind(d->mw);
	key_unpublish(d->dev, &d->mw->k);
}

/* ibv_dealloc_mw(3): unbinds (an invalidation) and frees. */
int
ib_mw_dealloc(struct ib_dev *dev, struct ib_mw *mw)
{
	struct mw_dealloc d = { .dev = dev, .mw = mw };
	int err = ib_engine_exec(dev, mw_dealloc_apply, &d);

	if (err)
		return err;
	ib_engine_quiesce(dev);
	__atomic_fetch_sub(&dev->nmw, 1, __ATOMIC_RELAXED);
	rte_free(mw);
	return 0;
}

/*
 * Engine, when @qp is destroyed: the type 2 windows bound to it are
 * invalidated, so that a later QP given the same number cannot use them.
 */
void
ib_mw_forget_qp(struct ib_qp *qp)
{
	struct ib_dev *dev = qp->dev;
	uint32_t i;

	/* Without the count, every destruction read the whole key table
	 * (512K entries) once a window existed anywhere: dpib-perf's 16K
	 * QPs took 10.2 s instead of 6.8.
	 */
	if (__atomic_load_n(&qp->mw_bound, __ATOMIC_RELAXED) == 0 ||
	    qp->ibv.qp_type == IBV_QPT_UD)
		return;
	for (i = 1; i < IB_MAX_MR &&
		    __atomic_load_n(&qp->mw_bound, __ATOMIC_RELAXED) != 0; i++) {
		struct ib_mr *k = __atomic_load_n(&dev->mr_tbl[i],
						  __ATOMIC_ACQUIRE);
		struct ib_mw *mw;

		if (k == NULL || k->kind != IB_KEY_MW)
			continue;
		mw = container_of(k, struct ib_mw, k);
		if (mw->ibv.type == IBV_MW_TYPE_2 && mw->valid &&
		    mw->qpn == qp->ibv.qp_num)
			mw_unbind(mw);
	}
}

#define MW_ACCESS (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | \
	IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ZERO_BASED)

/*
 * Engine, in SQ order: execute the bind WQE @w posted on @qp (IBA
 * 10.6.7.2 and ibv_bind_mw(3)). A type 1 window may be bound again, and a
 * bind without an MR invalidates it; a type 2 window must be free, takes
 * the rkey the WR names (same index, a tag other than its current one) and
 * serves only @qp. The MR
 * must allow binding, hold the whole window, and have local write when the
 * window grants remote write or atomics. A failed bind changes nothing.
 */
enum ibv_wc_status
ib_mw_bind_exec(struct ib_qp *qp, const struct ib_send_wqe *w)
{
	struct ib_dev *dev = qp->dev;
	struct ib_mr *k = __atomic_load_n(&dev->mr_tbl[w->bind.mw_index %
						       IB_MAX_MR],
					  __ATOMIC_ACQUIRE);
	uint32_t lkey = w->bind.lkey, access = w->bind_access;
	uint64_t addr = w->bind.addr, len = w->bind.length;
	struct ib_mw *mw;
	struct ib_mr *mr;

	if (k == NULL || k->kind != IB_KEY_MW ||
	    (w->rkey >> 8) != (k->key >> 8))
		return IBV_WC_MW_BIND_ERR;
	mw = container_of(k, struct ib_mw, k);
	/* Local rights mean nothing for a window: ignored, as rxe and mlx5
	 * do; only remote rights the MR cannot back are errors.
	 */
	access &= ~IBV_ACCESS_LOCAL_WRITE;
	if (mw->ibv.pd != qp->ibv.pd || (access & ~MW_ACCESS))
		return IBV_WC_MW_BIND_ERR;
	/* Type 2: free, with an MR, and a new tag, so that no reference to
	 * an earlier binding works again.
	 */
	if (mw->ibv.type == IBV_MW_TYPE_2 &&
	    (mw->valid || lkey == 0 || w->rkey == k->key))
		return IBV_WC_MW_BIND_ERR;
	if (lkey == 0) {
		if (addr != 0 || len != 0)
			return IBV_WC_MW_BIND_ERR;
		mw_unbind(mw);		/* type 1, zero length */
		k->key = w->rkey;
		return IBV_WC_SUCCESS;
	}
	mr = ib_mr_lookup(dev, lkey);
	if (mr == NULL || mr->ibv.pd != mw->ibv.pd ||
	    !(mr->access & IBV_ACCESS_MW_BIND))
		return IBV_WC_MW_BIND_ERR;
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & IBV_ACCESS_LOCAL_WRITE))
		return IBV_WC_MW_BIND_ERR;
	if (addr < mr->iova || len > mr->length ||
	    addr - mr->iova > mr->length - len)
		return IBV_WC_MW_BIND_ERR;
	mw_unbind(mw);
	mr->nbound++;
	mw->mr = mr;
	mw->base = addr;
	k->iova = (access & IBV_ACCESS_ZERO_BASED) ? 0 : addr;
	k->length = len;
	k->access = access & ~IBV_ACCESS_ZERO_BASED;
	k->key = w->rkey;
	mw->qpn = qp->ibv.qp_num;
	mw->valid = 1;
	if (mw->ibv.type == IBV_MW_TYPE_2) {
		mw->qp = qp;
		__atomic_fetch_add(&qp->mw_bound, 1, __ATOMIC_RELAXED);
	}
	return IBV_WC_SUCCESS;
}

/*
 * Engine: invalidate the type 2 window @rkey for @qp - LOCAL_INV, or (with
 * @remote) a SEND with Invalidate, which may only name a window bound to
 * the QP it arrives on (IBA 10.6.7.2.6). -EINVAL when @rkey is not a valid
 * type 2 window of the QP's PD: type 1 windows and MRs cannot be
 * invalidated (dpib has no fast-registration MRs).
 */
int
ib_mw_invalidate(struct ib_qp *qp, uint32_t rkey, int remote)
{
	struct ib_mr *k = key_lookup(qp->dev, rkey);
	struct ib_mw *mw;

	if (k == NULL || k->kind != IB_KEY_MW)
		return -EINVAL;
	mw = container_of(k, struct ib_mw, k);
	if (mw->ibv.type != IBV_MW_TYPE_2 || !mw->valid ||
	    mw->ibv.pd != qp->ibv.pd || (remote && mw->qpn != qp->ibv.qp_num))
		return -EINVAL;
	mw_unbind(mw);
	return 0;
}
