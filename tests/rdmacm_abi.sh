#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# dpib's librdmacm.so.1 stands in for Debian's (rdma-core 44), so it must
# define, at the same version, every symbol Debian's exports and every
# RDMACM_* symbol Debian's RDMA-CM programs import: a missing one makes the
# loader refuse the program. The lists come from the installed packages
# (rdmacm-utils, perftest), read with objdump -T, never from a copy kept
# here. Last, the loader itself binds rping against our library and dpib's
# libibverbs.so.1.
#
# Usage: rdmacm_abi.sh LIBRDMACM_SO_1 DPIB_LIBIBVERBS_SO_1_OR_ITS_DIR
set -u
lib=$1
verbs_dir=$2
[ -d "$verbs_dir" ] || verbs_dir=$(dirname "$verbs_dir")
debian=/usr/lib/x86_64-linux-gnu/librdmacm.so.1
passed=0
failed=0

. "$(dirname "$0")/abi_util.sh"

have=$(defined "$lib")
nodes_check "$lib" RDMACM_1.0 RDMACM_1.1 RDMACM_1.2 RDMACM_1.3

if [ -e "$debian" ]; then
	missing=$(defined "$debian" | comm -23 - <(echo "$have"))
	if [ -z "$missing" ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "FAIL - $debian exports what dpib lacks:"; echo "$missing" | sed 's/^/    /'
	fi
else
	failed=$((failed + 1)); echo "FAIL - no $debian (package librdmacm1 missing?)"
fi

programs="rping ucmatose udaddy cmtime mckey rdma_server rdma_client
	  riostream rstream ib_send_bw ib_write_lat"
files=$(for f in $programs; do [ -e "/usr/bin/$f" ] && echo "/usr/bin/$f"; done)
n=$(wc -w <<<"$files")
# shellcheck disable=SC2086
imports_check RDMACM "$have" $files
if [ $n -lt 8 ]; then
	failed=$((failed + 1)); echo "FAIL - only $n programs found (packages missing?)"
fi
echo "checked $n programs"

# BIND_NOW makes the loader resolve every symbol now, as it would at the
# first call of each; ldd -r prints what it could not. The check means
# something only if the loader took our two libraries, not Debian's.
out=$(LD_BIND_NOW=1 LD_LIBRARY_PATH="$(dirname "$lib"):$verbs_dir" \
	ldd -r /usr/bin/rping 2>&1)
bad=$(grep -E 'undefined symbol|version .* not found' <<<"$out")
for want in "librdmacm.so.1 => $(dirname "$lib")/" "libibverbs.so.1 => $verbs_dir/"; do
	grep -qF "$want" <<<"$out" || bad+=$'\n'"not loaded: $want"
done
if [ -z "$bad" ]; then
	passed=$((passed + 1))
else
	failed=$((failed + 1))
	echo "FAIL - the loader cannot bind rping to dpib's libraries:"
	echo "$bad" | sed '/^$/d; s/^/    /'
fi
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
