/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * A program with two devices joined by memif in one process opens both and
 * exits while their link is up: dpib's exit handler stops the ports while
 * EAL's interrupt thread handles each peer's disconnect. exit_clean.sh runs
 * this many times: every run must end at once, cleanly, saying nothing
 * (seen before: a double free in memif, "EAL: Error: Invalid memory", and
 * a deadlock between exit's stdio flush and syslog from that thread).
 */
#include "memif_pair.h"

int
main(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx[2];

	memif_pair_config("exit");
	list = ibv_get_device_list(NULL);
	CHECK(list != NULL && list[0] != NULL && list[1] != NULL, "devices");
	ctx[0] = open_when_active(list[0]);
	ctx[1] = open_when_active(list[1]);
	CHECK(ctx[0] != NULL && ctx[1] != NULL, "open");
	CHECK_DONE();		/* exits with both open and linked */
}
