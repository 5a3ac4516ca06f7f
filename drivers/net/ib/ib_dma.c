/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Memory regions a NIC can DMA from. On a device whose port does DMA (a PCI
 * NIC, or `dma = on`), the pages of every MR are made known to DPDK as
 * external memory (rte_extmem_register: a memseg list with each page's
 * IOVA) and, where an IOMMU translates, mapped for the port's device
 * (rte_dev_dma_map, IOVA = VA). Memory DPDK allocated itself is known and
 * mapped already.
 *
 * DPDK wants each registration to be a whole number of pages, never
 * overlapping another, and unregistered exactly as registered. MRs overlap
 * freely, so the registrations are regions of their own: an MR takes a
 * reference on every region that intersects its pages and creates regions
 * for the gaps. A region created later only fills a gap, so at
 * deregistration the regions intersecting the MR are exactly those it
 * holds. Regions go when their last MR goes.
 *
 * A region is one registration and is never split: a page stays registered
 * while any MR holds its region. Each region is watched like an MR
 * (ib_memhook.c): once any of its memory is unmapped or replaced, its
 * IOVAs are stale and no new MR may use it (the MR works through the CPU
 * copy until the old MRs are deregistered).
 *
 * With IOVA as physical addresses (vfio no-IOMMU, uio) nothing translates:
 * the pages are locked so that they stay where the IOVAs say. A region
 * DPDK cannot take (its memseg lists are few: RTE_MAX_MEMSEG_LISTS) leaves
 * the MR working through the CPU copy, logged once.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/queue.h>
#include <unistd.h>
#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_memory.h>
#include <rte_tailq.h>

#include "ib_hca.h"

struct dma_region {
	TAILQ_ENTRY(dma_region) next;	/* sorted by address */
	uintptr_t lo, hi;		/* whole pages */
	size_t pgsz;
	uint32_t refs;			/* MRs holding it */
	uint32_t locked;		/* mlock()ed (IOVA as PA) */
	uint64_t ports;			/* ports it is DMA-mapped for */
	struct ib_mr track;		/* watched: .dead once changed */
};

static TAILQ_HEAD(, dma_region) regions = TAILQ_HEAD_INITIALIZER(regions);
static pthread_mutex_t dma_lock = PTHREAD_MUTEX_INITIALIZER;
static int fallback_told;	/* an MR left to the CPU copy was logged */

/* Does @dev's port need its MRs known to DPDK? */
void
ib_dma_dev_init(struct ib_dev *dev)
{
	struct rte_eth_dev_info info;
	const char *bus = NULL;

	dev->rte_dev = rte_eth_dev_info_get(dev->port_id, &info) == 0 ?
		       info.device : NULL;
	if (dev->rte_dev != NULL && rte_dev_bus(dev->rte_dev) != NULL)
		bus = rte_bus_name(rte_dev_bus(dev->rte_dev));
	dev->dma_pci = bus != NULL && strcmp(bus, "pci") == 0;
	dev->dma = dev->conf.dma == IB_DMA_ON ||
		   (dev->conf.dma == IB_DMA_AUTO && dev->dma_pci);
}

/*
 * The smallest page size backing [lo, hi), from /proc/self/smaps
 * (hugetlbfs and MAP_HUGETLB mappings say 2048 or 1048576 kB).
 */
static size_t
page_size_of(uintptr_t lo, uintptr_t hi)
{
	size_t sys = (size_t)sysconf(_SC_PAGESIZE), pgsz = 0, kb;
	FILE *f = fopen("/proc/self/smaps", "re");
	char *line = NULL;
	size_t cap = 0;
	uintptr_t a, b;
	int inside = 0;

	if (f == NULL)
		return sys;
	while (getline(&line, &cap, f) > 0) {
		/* A mapping's header line, then its "Name: value" lines. */
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &a, &b) == 2) {
			inside = a < hi && b > lo;
			continue;
		}
		if (inside && sscanf(line, "KernelPageSize: %zu kB", &kb) == 1 &&
		    (pgsz == 0 || kb * 1024 < pgsz))
			pgsz = kb * 1024;
	}
	free(line);
	fclose(f);
	return pgsz != 0 ? pgsz : sys;
}

/* Each page's IOVA: its address, or with IOVA as PA its physical one. */
static rte_iova_t *
page_iovas(uintptr_t lo, uintptr_t hi, size_t pgsz, int pa)
{
	size_t n = (hi - lo) / pgsz, i;
	rte_iova_t *iova = malloc(n * sizeof(*iova));

	if (iova == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		void *va = (void *)(lo + i * pgsz);

		iova[i] = pa ? rte_mem_virt2phy(va) : (rte_iova_t)(uintptr_t)va;
		if (iova[i] == RTE_BAD_IOVA) {
			free(iova);
			return NULL;
		}
	}
	return iova;
}

static struct rte_device *
port_device(uint16_t port)
{
	struct rte_eth_dev_info info;

	return rte_eth_dev_info_get(port, &info) == 0 ? info.device : NULL;
}

static void
region_destroy(struct dma_region *r)
{
	size_t len = r->hi - r->lo;
	uint16_t port;

	for (port = 0; port < 64; port++)
		if ((r->ports >> port & 1) &&
		    rte_dev_dma_unmap(port_device(port), (void *)r->lo, r->lo,
				      len) != 0)
			IB_LOG(WARNING, "DMA unmap of %#" PRIxPTR "+%zu for "
			       "port %u: %s", r->lo, len, port,
			       rte_strerror(rte_errno));
	if (rte_extmem_unregister((void *)r->lo, len) != 0)
		IB_LOG(WARNING, "external memory %#" PRIxPTR "+%zu: %s",
		       r->lo, len, rte_strerror(rte_errno));
	if (r->locked)
		munlock((void *)r->lo, len);
	ib_mem_untrack(&r->track);
	TAILQ_REMOVE(&regions, r, next);
	free(r);
}

/* A new region over the gap [lo, hi), inserted before @pos (or last). */
static int
region_create(uintptr_t lo, uintptr_t hi, size_t pgsz, struct dma_region *pos,
	      struct ib_dev *dev)
{
	int pa = rte_eal_iova_mode() == RTE_IOVA_PA;
	struct dma_region *r = calloc(1, sizeof(*r));
	rte_iova_t *iova;
	int err;

	if (r == NULL)
		return ENOMEM;
	r->lo = lo;
	r->hi = hi;
	r->pgsz = pgsz;
	r->track.kind = IB_KEY_REGION;
	r->track.dev = dev;
	r->track.addr = (uint8_t *)lo;
	r->track.length = hi - lo;
	/* Watched from before the IOVAs are read. */
	err = ib_mem_track(&r->track);
	if (err) {
		free(r);
		return err;
	}
	/* Physical addresses hold only while the pages cannot move. */
	if (pa && mlock((void *)lo, hi - lo) != 0) {
		err = errno;
		ib_mem_untrack(&r->track);
		free(r);
		return err;
	}
	r->locked = pa;
	iova = page_iovas(lo, hi, pgsz, pa);
	if (iova == NULL ||
	    rte_extmem_register((void *)lo, hi - lo, iova,
				(unsigned int)((hi - lo) / pgsz), pgsz) != 0) {
		err = iova == NULL ? EFAULT : rte_errno;
		free(iova);
		if (pa)
			munlock((void *)lo, hi - lo);
		ib_mem_untrack(&r->track);
		free(r);
		return err;
	}
	free(iova);
	if (pos != NULL)
		TAILQ_INSERT_BEFORE(pos, r, next);
	else
		TAILQ_INSERT_TAIL(&regions, r, next);
	return 0;
}

/*
 * Map @r for @dev's port where an IOMMU translates (IOVA = VA). With IOVA
 * as PA, or on a port that does no DMA of its own, there is nothing to map.
 */
static int
region_map(struct dma_region *r, struct ib_dev *dev)
{
	if (!dev->dma_pci || rte_eal_iova_mode() != RTE_IOVA_VA ||
	    dev->port_id >= 64 || (r->ports >> dev->port_id & 1))
		return 0;
	/* VFIO's error is not passed on: an IOMMU whose address width
	 * is below the buffer's address (39 bits on some) refuses it.
	 */
	if (rte_dev_dma_map(dev->rte_dev, (void *)r->lo, r->lo,
			    r->hi - r->lo) != 0)
		return ENXIO;
	r->ports |= UINT64_C(1) << dev->port_id;
	return 0;
}

/* Drop the references of [lo, hi) on its regions. Under dma_lock. */
static void
regions_put(uintptr_t lo, uintptr_t hi)
{
	struct dma_region *r, *tmp;

	RTE_TAILQ_FOREACH_SAFE(r, &regions, next, tmp)
		if (r->lo < hi && r->hi > lo && --r->refs == 0)
			region_destroy(r);
}

/* Gaps of [lo, hi) become regions, then it holds every region there. */
static int
regions_get(uintptr_t lo, uintptr_t hi, size_t pgsz, struct ib_dev *dev,
	    size_t *minpg)
{
	size_t sys = (size_t)sysconf(_SC_PAGESIZE);
	struct dma_region *r;
	uintptr_t cur = lo;
	int err = 0;

	TAILQ_FOREACH(r, &regions, next) {
		if (r->hi <= cur)
			continue;
		if (r->lo >= hi)
			break;
		if (r->lo > cur) {
			size_t ps = (cur | r->lo) & (pgsz - 1) ? sys : pgsz;

			err = region_create(cur, r->lo, ps, r, dev);
			if (err)
				break;
		}
		cur = r->hi;
	}
	if (err == 0 && cur < hi)
		err = region_create(cur, hi, (cur | hi) & (pgsz - 1) ? sys :
				    pgsz, r, dev);
	/* Every region of [lo, hi) now, the new ones at refs 0. */
	*minpg = pgsz;
	TAILQ_FOREACH(r, &regions, next)
		if (r->lo < hi && r->hi > lo) {
			r->refs++;
			*minpg = RTE_MIN(*minpg, r->pgsz);
			if (err == 0)
				err = region_map(r, dev);
		}
	if (err)
		regions_put(lo, hi);
	return err;
}

/* Has memory of a region of [lo, hi) changed since it was registered? */
static int
range_stale(uintptr_t lo, uintptr_t hi)
{
	struct dma_region *r;

	TAILQ_FOREACH(r, &regions, next)
		if (r->lo < hi && r->hi > lo &&
		    __atomic_load_n(&r->track.dead, __ATOMIC_ACQUIRE))
			return 1;
	return 0;
}

/*
 * Make @mr's memory DMA-able for its device's port (control path). When
 * that cannot be done the MR still works, through the CPU copy; this
 * says so once and counts it.
 */
void
ib_dma_mr_attach(struct ib_mr *mr)
{
	struct ib_dev *dev = mr->dev;
	uintptr_t a = (uintptr_t)mr->addr, b = a + mr->length, lo, hi;
	struct rte_memseg_list *msl;
	size_t pgsz;
	int err;

	mr->dma = 0;
	if (!dev->dma || mr->length == 0)
		return;
	/* Memory DPDK allocated (rte_malloc, mempools) is mapped already. */
	msl = rte_mem_virt2memseg_list((void *)a);
	if (msl != NULL && !msl->external &&
	    rte_mem_virt2memseg_list((void *)(b - 1)) == msl) {
		mr->dma_pgsz = (uint32_t)RTE_MIN(msl->page_sz,
						 (uint64_t)UINT32_MAX);
		mr->dma_msl = msl;
		mr->dma = 1;
		return;
	}
	pgsz = page_size_of(a, b);
	lo = RTE_ALIGN_FLOOR(a, pgsz);
	hi = RTE_ALIGN_CEIL(b, pgsz);
	pthread_mutex_lock(&dma_lock);
	err = range_stale(lo, hi) ? ESTALE :
	      regions_get(lo, hi, pgsz, dev, &pgsz);
	if (err == 0) {
		mr->dma_pgsz = (uint32_t)RTE_MIN(pgsz, (size_t)UINT32_MAX);
		/* One region: its memseg list, for the IOVA lookups. */
		msl = rte_mem_virt2memseg_list((void *)lo);
		mr->dma_msl = msl != NULL &&
			      (uintptr_t)msl->base_va + msl->len >= hi ?
			      msl : NULL;
		mr->dma_lo = lo;
		mr->dma_hi = hi;
		mr->dma = 1;
	} else if (!fallback_told) {
		fallback_told = 1;
		IB_LOG(WARNING, "%s: MR %#" PRIxPTR "+%" PRIu64 " is not "
		       "DMA-mapped (%s): it works through the CPU copy%s",
		       dev->conf.name, a, mr->length,
		       err == ESTALE ? "memory registered before was unmapped "
		       "under a live MR" : err == ENXIO ? "the IOMMU refused "
		       "to map it: its address width may be below the "
		       "buffer's address" : strerror(err),
		       err == ENOSPC || err == ENOMEM ?
		       "; DPDK takes at most RTE_MAX_MEMSEG_LISTS regions, "
		       "register fewer, larger MRs" : "");
	}
	pthread_mutex_unlock(&dma_lock);
}

/* Release what ib_dma_mr_attach took (deregistration, new translation). */
void
ib_dma_mr_detach(struct ib_mr *mr)
{
	mr->dma = 0;
	mr->dma_msl = NULL;
	if (mr->dma_hi == 0)
		return;
	pthread_mutex_lock(&dma_lock);
	regions_put(mr->dma_lo, mr->dma_hi);
	pthread_mutex_unlock(&dma_lock);
	mr->dma_lo = mr->dma_hi = 0;
}
