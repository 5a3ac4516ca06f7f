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

#define MR_VALID_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
	IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
	IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND | \
	IBV_ACCESS_HUGETLB | IBV_ACCESS_RELAXED_ORDERING)

/* Registration rules for access flags (IBA 10.6.3.1 and verbs). */
static int
access_ok(unsigned int access)
{
	if (access & ~MR_VALID_ACCESS)
		return EINVAL;
	/* Remote write or atomic needs local write. */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	if (access & (IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND))
		return EOPNOTSUPP;
	return 0;
}

int
ib_mr_reg(struct ib_dev *dev, struct ib_pd *pd, void *addr, size_t len,
	  uint64_t iova, unsigned int access, struct ib_mr **out)
{
	struct ib_mr *mr;
	uint32_t i, idx;

	int err = access_ok(access);

	if (err)
		return err;
	if (len > UINT64_MAX - iova || (addr == NULL && len != 0))
		return EINVAL;

	mr = rte_zmalloc("ib_mr", sizeof(*mr), 0);
	if (mr == NULL)
		return ENOMEM;
	rte_spinlock_lock(&dev->ctl_lock);
	for (i = 0; i < IB_MAX_MR; i++) {
		idx = (dev->next_mr + i) % IB_MAX_MR;
		if (idx != 0 && dev->mr_tbl[idx] == NULL)
			break;
	}
	if (i == IB_MAX_MR) {
		rte_spinlock_unlock(&dev->ctl_lock);
		rte_free(mr);
		return ENOMEM;
	}
	dev->next_mr = idx + 1;
	dev->mr_gen[idx]++;
	mr->key = idx << 8 | dev->mr_gen[idx];
	mr->addr = addr;
	mr->length = len;
	mr->iova = iova;
	mr->access = access;
	mr->ibv.pd = &pd->ibv;
	mr->ibv.addr = addr;
	mr->ibv.length = len;
	mr->ibv.lkey = mr->key;
	mr->ibv.rkey = mr->key;
	__atomic_store_n(&dev->mr_tbl[idx], mr, __ATOMIC_RELEASE);
	rte_spinlock_unlock(&dev->ctl_lock);

	/*
	 * Pinning is what lets a NIC DMA into the region; the engine itself
	 * copies with the CPU, so an unprivileged process over its memlock
	 * limit still works on virtual ports.
	 */
	if (len != 0)
		(void)mlock(addr, len);
	*out = mr;
	return 0;
}

int
ib_mr_dereg(struct ib_dev *dev, struct ib_mr *mr)
{
	uint32_t idx = mr->key >> 8;

	rte_spinlock_lock(&dev->ctl_lock);
	__atomic_store_n(&dev->mr_tbl[idx], NULL, __ATOMIC_RELEASE);
	rte_spinlock_unlock(&dev->ctl_lock);
	/* Past a quiescent point of the engine no packet uses the MR. */
	ib_engine_quiesce(dev);
	if (mr->length != 0)
		(void)munlock(mr->addr, mr->length);
	rte_free(mr);
	return 0;
}

struct ib_mr *
ib_mr_lookup(struct ib_dev *dev, uint32_t key)
{
	struct ib_mr *mr = __atomic_load_n(&dev->mr_tbl[(key >> 8) %
					   IB_MAX_MR], __ATOMIC_ACQUIRE);

	if (mr == NULL || mr->key != key)
		return NULL;
	return mr;
}

/* PD, access rights and bounds of [va, va + len) against @mr. */
int
ib_mr_check(struct ib_mr *mr, struct ibv_pd *pd, uint64_t va, uint64_t len,
	    unsigned int access)
{
	if (mr == NULL || mr->ibv.pd != pd)
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
		if (cur->off >= ib_sge_len(s)) {
			cur->idx++;
			cur->off = 0;
			continue;
		}
		mr = ib_mr_lookup(dev, s->lkey);
		if (ib_mr_check(mr, pd, s->addr, ib_sge_len(s), access) != 0)
			return -EACCES;
		n = RTE_MIN(len, ib_sge_len(s) - cur->off);
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

/* Advance @cur by @len bytes of the SGE list without touching memory. */
void
ib_sge_seek(const struct ibv_sge *sge, uint32_t nsge,
	    struct ib_sge_cursor *cur, uint32_t len)
{
	while (len > 0 && cur->idx < nsge) {
		uint32_t n = RTE_MIN(len, ib_sge_len(&sge[cur->idx]) - cur->off);

		cur->off += n;
		len -= n;
		if (cur->off == ib_sge_len(&sge[cur->idx])) {
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
};

/* Engine: the new attributes apply from the next packet on. */
static void
mr_rereg_apply(void *arg)
{
	struct mr_rereg *r = arg;
	struct ib_mr *mr = r->mr;

	if (r->flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		mr->addr = r->addr;
		mr->iova = (uintptr_t)r->addr;
		mr->length = r->length;
	}
	if (r->flags & IBV_REREG_MR_CHANGE_PD)
		mr->ibv.pd = &r->pd->ibv;
	if (r->flags & IBV_REREG_MR_CHANGE_ACCESS)
		mr->access = r->access;
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
	void *old_addr = mr->addr;
	uint64_t old_len = mr->length;
	int err;

	if (flags == 0 || (flags & ~known))
		return EINVAL;
	if ((flags & IBV_REREG_MR_CHANGE_PD) && pd == NULL)
		return EINVAL;
	if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) &&
	    (addr == NULL || len == 0))
		return EINVAL;
	if ((flags & IBV_REREG_MR_CHANGE_ACCESS) && (err = access_ok(access)))
		return err;
	err = ib_engine_exec(dev, mr_rereg_apply, &r);
	if (err)
		return err;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		if (len != 0)
			(void)mlock(addr, len);
		if (old_len != 0)
			(void)munlock(old_addr, old_len);
		mr->ibv.addr = addr;
		mr->ibv.length = len;
	}
	return 0;
}
