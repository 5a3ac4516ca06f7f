/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#include <errno.h>
#include <rte_malloc.h>

#include "ib_queue.h"

int
ib_queue_init(struct ib_queue *q, uint32_t min_entries, uint32_t stride,
	      int socket)
{
	uint32_t size = rte_align32pow2(RTE_MAX(min_entries, 1u));

	if (size == 0 || stride == 0)
		return -EINVAL;
	q->buf = rte_zmalloc_socket("ib_queue", (size_t)size * stride,
				    RTE_CACHE_LINE_SIZE, socket);
	if (q->buf == NULL)
		return -ENOMEM;
	q->prod = q->cons = q->cons_cache = q->prod_cache = 0;
	q->size = size;
	q->mask = size - 1;
	q->stride = stride;
	return 0;
}

void
ib_queue_free(struct ib_queue *q)
{
	rte_free(q->buf);
	q->buf = NULL;
}
