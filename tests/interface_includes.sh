#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# The verbs library knows the driver only through the HCA interface
# (issue 16): of the driver's headers, lib/verbs includes hca_if.h alone,
# and hca_if.h brings in nothing of the driver but the configuration
# layout (ib_conf.h), which includes nothing of the driver at all. The CM
# library (lib/rdmacm) is a verbs consumer: no driver header at all, and of
# lib/verbs only the public dpib.h.
#
# Usage: interface_includes.sh SOURCE_ROOT
set -uo pipefail
root=$1
failed=0

driver_headers() {	# the driver headers FILE includes, one a line
	sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$1" |
		while read -r h; do
			[ -e "$root/drivers/net/ib/$h" ] && echo "$h"
		done
}

for f in "$root"/lib/verbs/*.[ch]; do
	bad=$(driver_headers "$f" | grep -vx 'hca_if.h')
	if [ -n "$bad" ]; then
		echo "FAIL - ${f#$root/} includes the driver's $(echo $bad)"
		failed=$((failed + 1))
	fi
done
bad=$(driver_headers "$root/drivers/net/ib/hca_if.h" | grep -vx 'ib_conf.h')
if [ -n "$bad" ]; then
	echo "FAIL - hca_if.h includes $(echo $bad)"
	failed=$((failed + 1))
fi
bad=$(driver_headers "$root/drivers/net/ib/ib_conf.h")
if [ -n "$bad" ]; then
	echo "FAIL - ib_conf.h includes $(echo $bad)"
	failed=$((failed + 1))
fi
for f in "$root"/lib/rdmacm/*.[ch]; do
	bad=$(driver_headers "$f")
	bad+=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
		while read -r h; do
			[ "$h" != dpib.h ] && [ -e "$root/lib/verbs/$h" ] && echo " $h"
		done)
	if [ -n "$bad" ]; then
		echo "FAIL - ${f#$root/} includes $(echo $bad), not a verbs consumer's"
		failed=$((failed + 1))
	fi
done
n=$(ls "$root"/lib/verbs/*.[ch] | wc -l)
m=$(ls "$root"/lib/rdmacm/*.[ch] | wc -l)
if [ "$failed" = 0 ]; then
	echo "ok - $n files of lib/verbs reach the driver through hca_if.h only"
	echo "ok - $m files of lib/rdmacm include no driver header, of lib/verbs dpib.h only"
fi
[ "$failed" = 0 ]
