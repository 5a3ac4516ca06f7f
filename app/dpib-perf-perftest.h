/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef DPIB_PERF_PERFTEST_H
#define DPIB_PERF_PERFTEST_H

/* dpib-perf TEST ...: perftest's tests and options (issue 17). */
int pt_is_test(const char *name);
int pt_main(int argc, char **argv);

#endif /* DPIB_PERF_PERFTEST_H */
