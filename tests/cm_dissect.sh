#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# The CM's MADs on the wire, judged by tshark's InfiniBand dissector
# against IBA chapter 12 (issue 20). test_rdmacm's connect scenario runs
# with DPIB_CAPTURE set (two connections on the loopback device, each with
# a SEND, WRITE or READ between its RTU and its DREQ); then, for every
# connection (the MADs of one REQ's comm ID, resends set aside):
#  - every CM MAD: BTH to QP 1, DETH Q_Key 0x80010000 from QP 1 (IBA
#    13.5.1), MAD base version 1, class 7, class version 2, method Send;
#  - the messages come in order REQ, REP, RTU, DREQ, DREP;
#  - REP, RTU, DREQ and DREP carry the REQ's and the REP's local comm IDs
#    as their local and remote comm IDs, each from its own side;
#  - REP and RTU keep the REQ's transaction ID, DREP the DREQ's (Linux's
#    ib_cm answers so; rxe's capture shows it);
#  - the REQ's service ID is RDMA_PS_TCP (0x0106) and the listener's port,
#    7471 for the first connection;
#  - the REQ's private data starts with RDMA-CM's header: version 0.0, IP
#    version 4, source and destination 127.0.0.1 - the REQ's own;
#  - the DREQ's remote QPN is the receiver's QPN (the REQ's or the REP's);
#  - the starting PSNs are those of the RC frames between RTU and DREQ:
#    the active side sends from the REP's starting PSN and the passive side
#    from the REQ's (Linux's ib_cm: ib_send_cm_req takes the REQ's as the
#    active side's rq_psn, cm_req_handler as the passive side's sq_psn,
#    cm_rep_handler the REP's as the active side's sq_psn);
#  - no frame of the capture is malformed or carries expert information.
# The judge first reads a real Linux connection the same way
# ($DPIB_SHARED/vectors/rxe/rdma_cm.pcap, 10.77.0.3 to 10.77.0.2:7174) and
# must find nothing wrong there.
#
# Usage: cm_dissect.sh TEST_RDMACM [SHARED_DIR]
set -euo pipefail
prog=$1
shared=${2:-${DPIB_SHARED:-}}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
passed=0
failed=0

pass() { echo "ok - $1"; passed=$((passed + 1)); }
fail() { echo "FAIL - $1"; failed=$((failed + 1)); }

if ! command -v tshark >/dev/null; then
	echo "SKIP: no tshark"
	exit 77
fi

# One line per CM MAD, tab-separated (awk's $1 .. $34 below).
cm_fields=(frame.number ip.src ip.dst
	infiniband.bth.destqp infiniband.deth.q_key infiniband.deth.srcqp
	infiniband.mad.baseversion infiniband.mad.mgmtclass
	infiniband.mad.classversion infiniband.mad.method
	infiniband.mad.attributeid infiniband.mad.transactionid
	infiniband.cm.req infiniband.cm.req.serviceid
	infiniband.cm.req.localqpn infiniband.cm.req.startpsn
	infiniband.cm.req.ip_cm.majv infiniband.cm.req.ip_cm.minv
	infiniband.cm.req.ip_cm.ipv infiniband.cm.req.ip_cm.sip4
	infiniband.cm.req.ip_cm.dip4
	infiniband.cm.rep infiniband.cm.rep.remotecommid
	infiniband.cm.rep.localqpn infiniband.cm.rep.startpsn
	infiniband.cm.rtu.localcommid infiniband.cm.rtu.remotecommid
	infiniband.cm.dreq.localcommid infiniband.cm.dreq.remotecommid
	infiniband.cm.req.remoteqpneecn
	infiniband.cm.drsp.localcommid infiniband.cm.drsp.remotecommid
	_ws.malformed _ws.expert.severity)
# One line per RC frame (not QP 1).
rc_fields=(frame.number ip.src ip.dst infiniband.bth.opcode
	infiniband.bth.destqp infiniband.bth.psn)

fields() {
	local f out=()

	for f in "$@"; do
		out+=(-e "$f")
	done
	printf '%s\n' "${out[@]}"
}

# judge NAME CAPTURE SOURCE_IP DESTINATION_IP FIRST_PORT: the rules above,
# one ok/FAIL line each.
judge() {
	local name=$1 cap=$2 sip=$3 dip=$4 port=$5 out

	mapfile -t cmf < <(fields "${cm_fields[@]}")
	mapfile -t rcf < <(fields "${rc_fields[@]}")
	tshark -r "$cap" -Y 'infiniband.mad.mgmtclass == 0x07' -T fields \
		-E occurrence=f "${cmf[@]}" 2>/dev/null >"$dir/$name.cm"
	tshark -r "$cap" -Y 'infiniband.bth.destqp != 1' -T fields \
		-E occurrence=f "${rcf[@]}" 2>/dev/null >"$dir/$name.rc"
	tshark -r "$cap" -T fields -e frame.number -e _ws.malformed \
		-e _ws.expert.severity 2>/dev/null >"$dir/$name.all"
	echo "# $name: $(wc -l <"$dir/$name.cm") CM MADs," \
	     "$(wc -l <"$dir/$name.rc") RC frames"
	out=$(awk -F'\t' -v sip="$sip" -v dip="$dip" -v port="$port" \
		-v name="$name" -f - "$dir/$name.cm" "$dir/$name.rc" <<'EOF'
function hex(s,   i, c, v) {
	s = tolower(s)
	sub(/^0x/, "", s)
	v = 0
	for (i = 1; i <= length(s); i++) {
		c = index("0123456789abcdef", substr(s, i, 1)) - 1
		if (c < 0)
			return -1
		v = v * 16 + c
	}
	return v
}
function bad(rule, msg) {
	if (nbad[rule]++ < 3)
		why[rule] = why[rule] "\n#   frame " frame ": " msg
}
# A connection: c = the REQ's local comm ID (hex); fields as c SUBSEP key.
FNR == NR {
	frame = $1
	attr = hex($11)
	if ($4 != "0x000001" || tolower($5) != "0x0000000080010000" ||
	    $6 != "0x00000001" || hex($7) != 1 || hex($8) != 7 ||
	    hex($9) != 2 || hex($10) != 3)
		bad("hdr", sprintf("destqp %s qkey %s srcqp %s base %s " \
			"class %s version %s method %s", $4, $5, $6, $7, $8,
			$9, $10))
	key = attr SUBSEP $13 SUBSEP $22 SUBSEP $23 SUBSEP $26 SUBSEP $27 \
	      SUBSEP $28 SUBSEP $29 SUBSEP $31 SUBSEP $32
	if (key in seen) {		# a resend of a MAD already judged
		resends++
		next
	}
	seen[key] = 1
	tid = tolower($12)
	if (attr == 16) {		# REQ
		c = $13
		if (c in conn) {
			bad("ids", "a second REQ with comm ID " c)
			next
		}
		conn[c] = ++nconn
		order[c] = "REQ"
		req_tid[c] = tid
		req_qpn[c] = hex($15)
		req_psn[c] = hex($16)
		act_ip[c] = $2
		pas_ip[c] = $3
		svc = tolower($14)
		if (substr(svc, 1, 14) != "0x000000000106" ||
		    (nconn == 1 && hex(substr(svc, 15)) != port))
			bad("svc", "service ID " $14)
		if (hex($17) != 0 || hex($18) != 0 || hex($19) != 4 ||
		    $20 != sip || $21 != dip || $20 != $2 || $21 != $3)
			bad("ipcm", sprintf("version %s.%s IP version %s " \
				"%s -> %s, frame %s -> %s", $17, $18, $19,
				$20, $21, $2, $3))
	} else if (attr == 19) {	# REP
		c = $23
		if (!(c in conn)) {
			bad("ids", "REP for no REQ (remote comm ID " c ")")
			next
		}
		order[c] = order[c] " REP"
		pas[c] = $22
		by_pas[$22] = c
		rep_qpn[c] = hex($24)
		rep_psn[c] = hex($25)
		if (tid != req_tid[c])
			bad("tid", "REP TID " tid ", the REQ's " req_tid[c])
	} else if (attr == 20) {	# RTU
		c = $26
		if (!(c in conn) || pas[c] != $27) {
			bad("ids", "RTU " $26 " " $27 " names no connection")
			next
		}
		order[c] = order[c] " RTU"
		rtu_frame[c] = frame
		if (tid != req_tid[c])
			bad("tid", "RTU TID " tid ", the REQ's " req_tid[c])
	} else if (attr == 21) {	# DREQ
		if (($28 in conn) && pas[$28] == $29) {
			c = $28		# from the active side
			want = rep_qpn[c]
		} else if (($28 in by_pas) && by_pas[$28] == $29) {
			c = $29		# from the passive side
			want = req_qpn[c]
		} else {
			bad("ids", "DREQ " $28 " " $29 " names no connection")
			next
		}
		order[c] = order[c] " DREQ"
		dreq_frame[c] = frame
		dreq_tid[c] = tid
		dreq_from[c] = $28
		if (hex($30) != want)
			bad("qpn", sprintf("DREQ remote QPN %s, the receiver's " \
				"%#x", $30, want))
	} else if (attr == 22) {	# DREP
		c = ($31 in conn) ? $31 : by_pas[$31]
		if (c == "" || dreq_from[c] == "" || $32 != dreq_from[c] ||
		    ($31 != c && $31 != pas[c])) {
			bad("ids", "DREP " $31 " " $32 " answers no DREQ")
			next
		}
		order[c] = order[c] " DREP"
		if (tid != dreq_tid[c])
			bad("tid", "DREP TID " tid ", the DREQ's " dreq_tid[c])
	} else {
		bad("order", "unexpected attribute " $11)
	}
	next
}
# RC frames: PSNs of each connection's first requests and responses
{
	frame = $1
	op = $4 + 0
	resp = op >= 13 && op <= 18
	for (c in conn) {
		if (!(c in rtu_frame) || frame <= rtu_frame[c] ||
		    ((c in dreq_frame) && frame >= dreq_frame[c]))
			continue
		if (hex($5) == rep_qpn[c] && $3 == pas_ip[c])
			to = "pas"
		else if (hex($5) == req_qpn[c] && $3 == act_ip[c])
			to = "act"
		else
			continue
		k = c SUBSEP to SUBSEP resp
		if (k in first)
			continue
		first[k] = 1
		# requests to the passive side and the responses they get
		# count from the REP's PSN; the other way from the REQ's
		from = ((to == "pas") == !resp) ? "REP" : "REQ"
		want = (from == "REP") ? rep_psn[c] : req_psn[c]
		what = resp ? "response" : "request"
		side = (to == "pas") ? "passive" : "active"
		if ($6 + 0 != want)
			bad("psn", sprintf("%s %s to the %s side: PSN %#x, " \
				"want the %s's %#x", what, $4, side, $6, from,
				want))
		if (!resp)
			requests[c]++
	}
}
END {
	frame = "-"
	if (nconn == 0)
		bad("order", "no REQ in the capture")
	for (c in conn) {
		if (order[c] != "REQ REP RTU DREQ DREP")
			bad("order", "connection " c ": " order[c])
		if (requests[c] == 0)
			bad("psn", "connection " c ": no request between " \
				"RTU and DREQ")
	}
	printf "# %s: %d connections, %d resent MADs\n", name, nconn, resends
	r["hdr"] = "every CM MAD: BTH to QP 1, DETH Q_Key 0x80010000 from " \
		   "QP 1, base version 1, class 7, class version 2, Send"
	r["order"] = "each connection: REQ, REP, RTU, DREQ, DREP in order"
	r["ids"] = "REP, RTU, DREQ, DREP name the REQ's and the REP's " \
		   "comm IDs"
	r["tid"] = "REP and RTU keep the REQ's TID, DREP the DREQ's"
	r["svc"] = "REQ service ID: RDMA_PS_TCP, the first on port " port
	r["ipcm"] = "REQ private data: RDMA-CM header 0.0, IPv4, " sip \
		    " -> " dip
	r["qpn"] = "DREQ's remote QPN is the receiver's"
	r["psn"] = "active side sends from the REP's starting PSN, passive " \
		   "from the REQ's"
	split("hdr order ids tid svc ipcm qpn psn", list, " ")
	for (i = 1; i <= 8; i++)
		printf "%s %s: %s%s\n", nbad[list[i]] ? "FAIL" : "ok", name,
		       r[list[i]], why[list[i]]
}
EOF
	)
	while IFS= read -r line; do
		case $line in
		ok\ *) pass "${line#ok }" ;;
		FAIL\ *) fail "${line#FAIL }" ;;
		*) echo "$line" ;;
		esac
	done <<<"$out"
	if awk -F'\t' '$2 != "" || $3 != "" { bad = 1 } END { exit bad }' \
		"$dir/$name.all"; then
		pass "$name: no frame malformed or with expert information"
	else
		fail "$name: no frame malformed or with expert information"
		awk -F'\t' '$2 != "" || $3 != ""' "$dir/$name.all" | head -3 |
			sed 's/^/#   frame /'
	fi
}

# The judge on Linux's own connection first.
vec=$shared/vectors/rxe/rdma_cm.pcap
if [ -n "$shared" ] && [ -r "$vec" ]; then
	judge rxe "$vec" 10.77.0.3 10.77.0.2 7174
else
	fail "rxe's capture $vec: not readable (DPIB_SHARED?)"
fi

if DPIB_CONF= DPIB_CAPTURE=$dir/cm.pcap timeout 60 "$prog" connect \
	>"$dir/run" 2>&1; then
	pass "test_rdmacm connect, captured"
else
	sed 's/^/#   /' "$dir/run"
	fail "test_rdmacm connect, captured"
fi
if [ -s "$dir/cm.pcap" ]; then
	judge dpib "$dir/cm.pcap" 127.0.0.1 127.0.0.1 7471
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
