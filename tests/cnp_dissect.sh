#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# DCQCN on the wire, judged by tshark (issue 14). test_congestion's WRITE
# stream runs behind the marking port with a capture of each device's
# transmitted frames (taken after the emulated switch port, so its CE marks
# show). Then:
#  - the requester's WRITEs are all ECN-capable: ECT(0), or CE where the
#    port marked them, and some were marked;
#  - the responder sent CNPs, and tshark decodes each as RoCEv2 with no
#    expert note and no malformed mark: BTH opcode 0x81, P_Key 0xFFFF, PSN 0,
#    the BECN bit set (the byte tshark calls reserved reads 0x40), 16
#    reserved bytes (UDP length 8 + 12 + 16 + 4), not ECN-capable, and
#    addressed to the QP the responder acknowledges (the sending QP).
#
# Usage: cnp_dissect.sh TEST_CONGESTION FAULTS
set -euo pipefail
prog=$1
faults=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
passed=0
failed=0

pass() { echo "ok - $1"; passed=$((passed + 1)); }
fail() { echo "FAIL - $1"; failed=$((failed + 1)); }

if ! DPIB_CAPTURE=$dir/cap.pcap DPIB_FAULTS=$faults timeout 120 \
	"$prog" 0.8 0.8 ecn write >"$dir/run" 2>&1; then
	sed 's/^/#   /' "$dir/run"
	fail "the WRITE stream behind the marking port"
	exit 1
fi
pass "the WRITE stream behind the marking port"
req=$dir/cap.pcap		# dpib0: the requester
resp=$dir/cap.pcap.dpib1	# dpib1: the responder

# ECN codepoints of the requester's RDMA WRITE packets (opcodes 6..10).
tshark -r "$req" -Y 'infiniband.bth.opcode >= 6 && infiniband.bth.opcode <= 10' \
	-T fields -e ip.dsfield.ecn 2>/dev/null | sort | uniq -c >"$dir/ecn"
sed 's/^/#   WRITE packets with ECN /' "$dir/ecn"
if awk '$2 != 2 && $2 != 3 { bad = 1 } END { exit bad }' "$dir/ecn" &&
   awk '$2 == 3 { ce = $1 } $2 == 2 { ect = $1 } END { exit !(ce > 0 && ect > 0) }' \
	"$dir/ecn"; then
	pass "WRITEs are ECT(0), some marked CE by the port"
else
	fail "WRITEs are ECT(0), some marked CE by the port"
fi

tshark -r "$resp" -Y 'infiniband.bth.opcode == 129' -T fields \
	-e infiniband.bth.p_key -e infiniband.bth.psn -e infiniband.reserved \
	-e udp.length -e ip.dsfield.ecn -e infiniband.bth.destqp \
	-e _ws.expert.severity -e _ws.malformed 2>/dev/null >"$dir/cnp"
n=$(wc -l <"$dir/cnp")
echo "# $n CNPs from the responder"
if [ "$n" -gt 0 ]; then
	pass "the responder sent CNPs"
else
	fail "the responder sent CNPs"
fi
bad=$(awk -F'\t' '!($1 == 65535 && $2 == 0 && $3 == 40 && $4 == 40 &&
		     $5 == 0 && $7 == "" && $8 == "")' "$dir/cnp" | head -3)
if [ -z "$bad" ]; then
	pass "every CNP: P_Key 0xFFFF, PSN 0, BECN, 16 reserved bytes, not-ECT, clean dissection"
else
	fail "every CNP: P_Key 0xFFFF, PSN 0, BECN, 16 reserved bytes, not-ECT, clean dissection"
	printf '#   %s\n' "$bad"
fi

# The responder's ACKs go to the requester's QP: so must its CNPs.
tshark -r "$resp" -Y 'infiniband.bth.opcode == 17' -T fields \
	-e infiniband.bth.destqp 2>/dev/null | sort -u >"$dir/ackqp"
cut -f6 "$dir/cnp" | sort -u >"$dir/cnpqp"
if [ -s "$dir/cnpqp" ] && [ -z "$(comm -23 "$dir/cnpqp" "$dir/ackqp")" ]; then
	pass "CNPs go to the sending QP ($(tr '\n' ' ' <"$dir/cnpqp"))"
else
	fail "CNPs go to the sending QP: CNPs to $(tr '\n' ' ' <"$dir/cnpqp"), ACKs to $(tr '\n' ' ' <"$dir/ackqp")"
fi

echo "# $passed passed, $failed failed"
[ "$failed" = 0 ]
