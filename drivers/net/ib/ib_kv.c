/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * "name=value,name=value" lists as the configuration writes them (faults,
 * dcqcn): each item to a callback that checks and takes it, with one
 * message for whatever is wrong.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ib_hca.h"

#define KV_MAX	1024	/* characters in a list */

int
ib_kv_walk(const char *spec, ib_kv_fn fn, void *arg, char *why, size_t len)
{
	char buf[KV_MAX], *item, *save = NULL;
	int ret;

	if (snprintf(buf, sizeof(buf), "%s", spec) >= (int)sizeof(buf)) {
		snprintf(why, len, "longer than %zu characters",
			 sizeof(buf) - 1);
		return -EINVAL;
	}
	for (item = strtok_r(buf, ",", &save); item != NULL;
	     item = strtok_r(NULL, ",", &save)) {
		char *val = strchr(item, '=');

		if (val == NULL) {
			snprintf(why, len, "'%s' must be name=value", item);
			return -EINVAL;
		}
		*val++ = '\0';
		ret = fn(item, val, arg, why, len);
		if (ret != 0)
			return ret;
	}
	return 0;
}
