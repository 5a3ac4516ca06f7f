# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# Sourced by abi_symbols.sh and rdmacm_abi.sh: the checks of a library
# standing in for one of Debian's, read with objdump -T. Each adds to the
# caller's `passed` and `failed` counts.

# defined LIB: its defined functions, one "VERSION name" a line.
defined() {
	objdump -T "$1" | awk '$4 == ".text" { print $(NF-1) " " $NF }' | sort -u
}

# nodes_check LIB NODE...: LIB defines each version node.
nodes_check() {
	local lib=$1 want nodes
	shift
	nodes=$(objdump -p "$lib" | sed -n '/Version definitions/,/Version References/p')
	for want in "$@"; do
		if grep -qw "$want" <<<"$nodes"; then
			passed=$((passed + 1))
		else
			failed=$((failed + 1)); echo "FAIL - version node $want missing"
		fi
	done
}

# imports_check NODE HAVE FILE...: every symbol each FILE imports at a
# version naming NODE (IBVERBS, RDMACM) is among HAVE (defined's output).
imports_check() {
	local node=$1 have=$2 f missing
	shift 2
	for f in "$@"; do
		missing=$(objdump -T "$f" | awk -v p="$node" '/\*UND\*/ &&
				index($0, p) {
				gsub(/[()]/, "", $(NF-1)); print $(NF-1) " " $NF }' |
			sort -u | comm -23 - <(echo "$have"))
		if [ -z "$missing" ]; then
			passed=$((passed + 1))
		else
			failed=$((failed + 1))
			echo "FAIL - $f imports what dpib lacks:"
			echo "$missing" | sed 's/^/    /'
		fi
	done
}
