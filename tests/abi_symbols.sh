#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# dpib's libibverbs.so.1 must define, at the same version, every
# IBVERBS_* symbol that Debian's rdma-core programs and libraries import
# (RDMA-CORE-NOTES.md): a missing one makes the loader refuse the program
# (BIND_NOW libraries: at start). The lists come from the installed
# packages, read with objdump -T, never from a copy kept here.
#
# Usage: abi_symbols.sh LIBIBVERBS_SO_1
set -u
lib=$1
passed=0
failed=0
. "$(dirname "$0")/abi_util.sh"

importers() {
	ls /usr/bin/ibv_* /usr/bin/ib_write_bw /usr/bin/ib_read_lat \
		/usr/bin/ib_send_bw /usr/bin/ib_atomic_bw 2>/dev/null
	dpkg -L python3-pyverbs 2>/dev/null | grep '\.so$'
	for l in libmlx5.so.1 libefa.so.1 librdmacm.so.1; do
		ls /usr/lib/x86_64-linux-gnu/$l 2>/dev/null
	done
}

have=$(defined "$lib")
nodes_check "$lib" IBVERBS_1.0 IBVERBS_1.1 IBVERBS_1.5 IBVERBS_1.6 \
	IBVERBS_1.7 IBVERBS_1.8 IBVERBS_1.9 IBVERBS_1.10 IBVERBS_1.11 \
	IBVERBS_1.12 IBVERBS_1.13 IBVERBS_1.14 IBVERBS_PRIVATE_34

files=$(importers)
n=$(wc -w <<<"$files")
# shellcheck disable=SC2086
imports_check IBVERBS "$have" $files
[ $n -ge 12 ] || { failed=$((failed + 1)); echo "FAIL - only $n importers found (packages missing?)"; }
echo "checked $n programs and libraries"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
