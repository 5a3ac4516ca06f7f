#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# dpib-perf's perftest mode (issue 17): every test type on the loopback
# device in one process (RC, plus UC and UD where perftest has them, -a,
# -D, --report_gbits, --json, --plot), then write_bw, send_bw, write_lat and
# read_lat between two processes over a memif link, the TCP exchange on
# the host's loopback. A run passes when it exits 0 and prints its result
# rows (on stdout) with every figure positive; a two-process client also
# the raw packet path between the same ports with a positive dpib/raw
# (and nothing of it with --no-raw). Then dpib-pktperf's ping-pong over the
# same link with one frame and with two each way (-f 2).
#
# Usage: dpib_perf_perftest.sh BUILD_DIR SOURCE_DIR
set -u
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
perf="$build/app/dpib-perf"
tmp=$(mktemp -d /tmp/dpib-pt.XXXXXX)
port=$((20000 + $$ % 20000))
T=60
passed=0
failed=0
trap 'rm -rf "$tmp"' EXIT

ok() { echo "ok   $*"; passed=$((passed + 1)); }
fail() { echo "FAIL $*"; failed=$((failed + 1)); }

# rows_ok LOG KIND WANT: WANT result rows of KIND (bw: 5 columns, lat: 9),
# each with a positive size, iteration count and figures.
rows_ok() {
	awk -v kind="$2" -v want="$3" '
		/^ #bytes/ { table = 1; next }
		/^-----/ { table = 0 }
		table && NF > 0 {
			cols = kind == "bw" ? 5 : 9
			if (NF != cols) { bad = 1; next }
			for (i = 1; i <= NF; i++)
				if ($i + 0 <= 0) bad = 1
			rows++
		}
		END { exit !(rows == want && !bad) }' "$1"
}

# loop KIND ROWS ARGS...: one run on the loopback device.
loop() {
	local kind=$1 want=$2 log="$tmp/loop.log"
	shift 2
	if DPIB_CONF= timeout $T "$perf" "$@" >"$log" 2>"$log.err" &&
	   rows_ok "$log" "$kind" "$want"; then
		ok "loopback: $*"
	else
		fail "loopback: $*"
		tail -5 "$log" "$log.err" | sed 's/^/  /'
	fi
}

loop bw 1 write_bw -n 2000
loop bw 1 write_bw -n 2000 -q 4 -t 64 --report_gbits -F
loop bw 1 write_bw -n 2000 -c UC
loop bw 1 read_bw -n 2000
loop bw 1 send_bw -n 2000
loop bw 1 send_bw -n 2000 -c UD -s 1024
loop bw 1 atomic_bw -n 2000
loop bw 1 write_bw -D 1 -s 4096
# -a: 2 .. 2^23, 23 rows (the loopback device takes 2^23-byte messages).
loop bw 23 write_bw -a -n 200 --json "$tmp/bw.json" --plot "$tmp/bw.svg"
loop lat 1 write_lat -n 2000
loop lat 1 write_lat -n 2000 -c UC -s 64
loop lat 1 read_lat -n 2000
loop lat 1 send_lat -n 2000
loop lat 1 send_lat -n 2000 -c UD
loop lat 1 atomic_lat -n 2000
loop lat 23 read_lat -a -n 100 --json "$tmp/lat.json"
if grep -q '"p50_us"' "$tmp/lat.json" 2>/dev/null &&
   grep -q '"bw_avg_Gbps"' "$tmp/bw.json" 2>/dev/null; then
	ok "--json: latency rows with p50, bandwidth rows"
else
	fail "--json"
fi
if grep -q '^<svg' "$tmp/bw.svg" 2>/dev/null &&
   [ "$(grep -c '<circle' "$tmp/bw.svg")" = 23 ]; then
	ok "--plot: an SVG with a point per size"
else
	fail "--plot"
fi
if DPIB_CONF= timeout $T "$perf" write_bw -n 200 --plot "$tmp/x.svg" \
	>/dev/null 2>&1; then
	fail "--plot without -a refused"
else
	ok "--plot without -a refused"
fi
if DPIB_CONF= timeout $T "$perf" read_bw -c UD >/dev/null 2>&1; then
	fail "read_bw -c UD refused (perftest: UD sends only)"
else
	ok "read_bw -c UD refused (perftest: UD sends only)"
fi

# The README's tables (dpib-perf without a test name): the raw path and
# dpib take turns on the engine's lcore (dpib_engine_lend) within each
# repetition; every table has its dpib/raw, every figure is positive.
if DPIB_CONF= timeout $T "$perf" -n 4000 -r 3 -S 512 --json "$tmp/base.json" \
	>"$tmp/base.log" 2>&1 &&
   python3 - "$tmp/base.json" <<'PY'
import json, math, sys
d = json.load(open(sys.argv[1]))
rows = [d['write_rate'], d['send_lat'], d['write_bw'],
        d['atomic_write_rate'], d['window_write_rate']] + d['size_sweep']
for r in rows:
    for k, v in r.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            assert math.isfinite(v) and v > 0, (k, v)
    assert 'ratio' in r, r
PY
then
	ok "dpib-perf's tables, each dpib/raw from pairs back to back"
else
	fail "dpib-perf's tables"
	tail -5 "$tmp/base.log" | sed 's/^/  /'
fi

# Two processes over memif: the server, then the client against it.
sed "s|/tmp/dpib-memif.sock|$tmp/memif.sock|" \
	"$src/config/memif-server.conf" >"$tmp/a.conf"
sed "s|/tmp/dpib-memif.sock|$tmp/memif.sock|" \
	"$src/config/memif-client.conf" >"$tmp/b.conf"

# raw_ok LOG: the raw path's line with a positive dpib/raw, once.
raw_ok() {
	[ "$(grep -c 'Raw DPDK path between the same two ports' "$1")" = 1 ] &&
		grep -Eq 'dpib/raw [0-9.]*[1-9]' "$1"
}

two() {
	local kind=$1 s="$tmp/server.log" c="$tmp/client.log" srv rc src raw=1
	shift
	case " $* " in *" --no-raw "*) raw=0 ;; esac
	rm -f "$tmp/memif.sock"
	DPIB_CONF="$tmp/a.conf" timeout $T "$perf" "$@" -p $port >"$s" \
		2>"$s.err" &
	srv=$!
	sleep 0.5
	DPIB_CONF="$tmp/b.conf" timeout $T "$perf" "$@" -p $port 127.0.0.1 \
		>"$c" 2>"$c.err"
	rc=$?
	wait $srv
	src=$?
	if [ $raw = 1 ] && ! raw_ok "$c"; then
		fail "memif, two processes: $*: no raw path beside it"
		tail -8 "$c" | sed 's/^/  client: /'
	elif [ $raw = 0 ] && grep -q 'Raw DPDK path' "$c"; then
		fail "memif, two processes: $*: a raw path despite --no-raw"
	elif [ $rc -eq 0 ] && [ $src -eq 0 ] && rows_ok "$s" "$kind" 1 &&
	   rows_ok "$c" "$kind" 1; then
		ok "memif, two processes: $* ($(grep -A1 '^ #bytes' "$c" |
			tail -1 | tr -s ' \t' ' '))"
	else
		fail "memif, two processes: $* (server rc $src, client rc $rc)"
		tail -5 "$s" "$s.err" | sed 's/^/  server: /'
		tail -5 "$c" "$c.err" | sed 's/^/  client: /'
	fi
}

two bw write_bw -n 2000
two bw send_bw -n 2000
two lat write_lat -n 2000
two lat read_lat -n 2000
two lat send_lat -n 2000 --no-raw

# dpib-pktperf, the raw path on its own, over the same memif link: the
# ping-pong with one frame each way and with an ACK-sized one behind each
# ping and echo (-f 2, each side answering once both are in).
pkt="$build/app/dpib-pktperf"
pkt_lat() {
	local f=$1 c="$tmp/pkt.json" srv rc src
	rm -f "$tmp/memif.sock"
	DPIB_CONF="$tmp/a.conf" timeout $T "$pkt" -p $port >"$tmp/pkt-s.log" \
		2>&1 &
	srv=$!
	sleep 0.5
	DPIB_CONF="$tmp/b.conf" timeout $T "$pkt" -t lat -n 2000 -f "$f" \
		--json -p $port 127.0.0.1 >"$c" 2>"$c.err"
	rc=$?
	wait $srv
	src=$?
	if [ $rc -eq 0 ] && [ $src -eq 0 ] && python3 -c "
import json, sys
d = json.loads(open('$c').readline())
sys.exit(not (d['frames'] == $f and d['iterations'] == 2000 and
	      0 < d['min_us'] <= d['typical_us'] <= d['max_us'] and
	      d['resends'] == 0))"; then
		ok "dpib-pktperf -t lat -f $f over memif ($(head -c 160 "$c"))"
	else
		fail "dpib-pktperf -t lat -f $f over memif (server rc $src," \
			"client rc $rc)"
		cat "$c" "$c.err" "$tmp/pkt-s.log" | tail -6 | sed 's/^/  /'
	fi
}
pkt_lat 1
pkt_lat 2
if DPIB_CONF= timeout $T "$pkt" -t lat -f 3 127.0.0.1 >/dev/null 2>&1; then
	fail "dpib-pktperf -f 3 refused"
else
	ok "dpib-pktperf -f 3 refused"
fi

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
