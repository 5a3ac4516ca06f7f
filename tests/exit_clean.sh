#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# Exit with two in-process memif devices linked (test_exit), 20 times: each
# run ends within 20 s with status 0 and nothing on stderr.
#
# Usage: exit_clean.sh TEST_EXIT
set -uo pipefail
prog=$1
err=$(mktemp)
trap 'rm -f "$err"' EXIT
failed=0
for i in $(seq 1 20); do
	DPIB_FAULTS= DPIB_CAPTURE= timeout 20 "$prog" >/dev/null 2>"$err"
	rc=$?
	if [ "$rc" != 0 ] || [ -s "$err" ]; then
		echo "FAIL - run $i: exit status $rc$([ "$rc" = 124 ] && echo ' (hung)')"
		sed 's/^/#   /' "$err"
		failed=$((failed + 1))
	fi
done
echo "# $((20 - failed)) of 20 runs exited cleanly"
[ "$failed" = 0 ]
