/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * Address handles: a UD destination resolved once into a header template.
 * The UDP source port is the sending QP's and is patched per packet.
 */
#include <errno.h>
#include <string.h>
#include <rte_malloc.h>

#include "ib_hca.h"

int
ib_ah_create(struct ib_dev *dev, struct ibv_ah_attr *attr, struct ib_ah **out)
{
	struct ib_ah *ah;
	int err;

	if (attr->port_num != 1 && attr->port_num != 0)
		return EINVAL;
	ah = rte_zmalloc("ib_ah", sizeof(*ah), RTE_CACHE_LINE_SIZE);
	if (ah == NULL)
		return ENOMEM;
	err = ib_path_set(dev, 0, attr, &ah->hdr);
	if (err) {
		rte_free(ah);
		return err;
	}
	ah->attr = *attr;
	*out = ah;
	return 0;
}
