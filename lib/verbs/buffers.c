/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * dpib_alloc_buf(): hugepage memory for MRs a NIC DMAs from. Hugepages
 * make few, large external-memory registrations (DPDK has a fixed number
 * of memseg lists) and few IOMMU entries; populated at once, they are
 * there when ibv_reg_mr looks.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dpib.h"
#include "verbs_priv.h"

struct buf {
	struct buf *next;
	void *addr;
	size_t len;		/* mapped */
};

static struct buf *bufs;
static pthread_mutex_t bufs_lock = PTHREAD_MUTEX_INITIALIZER;

/* The default hugepage size from /proc/meminfo, 0 when there is none. */
static size_t
hugepage_size(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[128];
	size_t kb = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "Hugepagesize: %zu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

void *
dpib_alloc_buf(size_t len, size_t *page_size)
{
	static int warned;
	size_t huge = hugepage_size(), pg = (size_t)sysconf(_SC_PAGESIZE);
	struct buf *b;
	void *p = MAP_FAILED;

	if (len == 0 || len > SIZE_MAX / 2) {
		errno = EINVAL;
		return NULL;
	}
	b = malloc(sizeof(*b));
	if (b == NULL)
		return NULL;
	if (huge != 0) {
		b->len = RTE_ALIGN_CEIL(len, huge);
		p = mmap(NULL, b->len, PROT_READ | PROT_WRITE, MAP_PRIVATE |
			 MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
	}
	if (p == MAP_FAILED) {
		if (huge != 0 && !__atomic_exchange_n(&warned, 1,
						      __ATOMIC_RELAXED))
			DPIB_LOG(NOTICE, "no free %zu kB hugepages for %zu "
				"bytes: ordinary pages (reserve some with "
				"dpib-setup --hugepages)", huge / 1024, len);
		huge = pg;
		b->len = RTE_ALIGN_CEIL(len, pg);
		p = mmap(NULL, b->len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (p == MAP_FAILED) {
			free(b);
			return NULL;
		}
	}
	b->addr = p;
	pthread_mutex_lock(&bufs_lock);
	b->next = bufs;
	bufs = b;
	pthread_mutex_unlock(&bufs_lock);
	if (page_size != NULL)
		*page_size = huge;
	return p;
}

int
dpib_free_buf(void *buf)
{
	struct buf **pp, *b = NULL;

	pthread_mutex_lock(&bufs_lock);
	for (pp = &bufs; *pp != NULL; pp = &(*pp)->next)
		if ((*pp)->addr == buf) {
			b = *pp;
			*pp = b->next;
			break;
		}
	pthread_mutex_unlock(&bufs_lock);
	if (b == NULL) {
		errno = EINVAL;
		return -1;
	}
	munmap(b->addr, b->len);
	free(b);
	return 0;
}
