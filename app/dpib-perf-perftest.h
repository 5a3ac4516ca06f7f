/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
#ifndef DPIB_PERF_PERFTEST_H
#define DPIB_PERF_PERFTEST_H

#include <stdint.h>

/* dpib-perf TEST ...: perftest's tests and options (issue 17). */
int pt_is_test(const char *name);
int pt_main(int argc, char **argv);

/* An SVG line plot over a log2 x axis (dpib-perf.c). */
struct plot {
	const char *title, *xlabel, *ylabel;
	const uint32_t *x;
	uint32_t n, ns;
	const double *y[2];	/* series, already in the unit of ylabel */
	const char *name[2];
};

void svg_plot(const char *path, const struct plot *pl);

#endif /* DPIB_PERF_PERFTEST_H */
