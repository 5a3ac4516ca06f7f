#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 dpib authors
#
# Configuration errors (issue 21): a bad file, DPIB_CONF naming what cannot
# be read or DPIB_CAPTURE naming what cannot be written must refuse the
# configuration (no device comes up) and say why in exactly one line that
# names the file and line, the value and what is allowed - nothing else on
# stderr but dpib-devinfo's own complaint, no EAL usage text. A valid file
# must still bring its device up.
#
# Usage: config_errors.sh DPIB_DEVINFO [DPIB_RUN]
set -euo pipefail
devinfo=$1
run=${2:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
passed=0
failed=0

# Nothing from the caller's environment may change what a case means.
unset DPIB_CAPTURE DPIB_FAULTS DPIB_ENGINE_MODE DPIB_ENGINES DPIB_PLACEMENT \
	DPIB_LOOP_PRIORITY DPIB_TAKEOVER_US

pass() { echo "ok - $1"; passed=$((passed + 1)); }
fail() { echo "FAIL - $1: $2"; sed 's/^/#   /' "$dir/err"; failed=$((failed + 1)); }

# A device section that on its own is valid.
device() {	# name [ip]
	printf '[device %s]\nport = net_ring_%s\nip = %s\n' "$1" "$1" \
		"${2:-192.0.2.1}"
}

# Run dpib-devinfo with the environment given; stdout, stderr to files.
devinfo_run() {
	local rc=0

	env "$@" timeout 60 "$devinfo" >"$dir/out" 2>"$dir/err" || rc=$?
	echo "$rc"
}

# refused NAME PATTERN ENV...: no device, and the one dpib line matches
# PATTERN (an extended regex; the caller escapes what it quotes).
refused() {
	local name=$1 pattern=$2 rc n
	shift 2

	rc=$(devinfo_run "$@")
	if [ "$rc" = 124 ]; then
		fail "$name" "dpib-devinfo timed out"
		return
	fi
	if [ "$rc" = 0 ] && ! grep -q 'no RDMA device' "$dir/err"; then
		fail "$name" "accepted: $(head -1 "$dir/out")"
		return
	fi
	n=$(grep -c '^dpib: ' "$dir/err" || true)
	if [ "$n" != 1 ]; then
		fail "$name" "$n lines from dpib, want 1"
		return
	fi
	if ! grep -Eq "^dpib: $pattern\$" "$dir/err"; then
		fail "$name" "message does not match '$pattern'"
		return
	fi
	if grep -v -e '^dpib: ' -e 'dpib-devinfo: ' "$dir/err" | grep -q .; then
		fail "$name" "more than the one line on stderr"
		return
	fi
	pass "$name: $(grep '^dpib: ' "$dir/err")"
}

# A regex matching $1 literally.
re() {
	printf '%s' "$1" | sed 's/[][\.*^$+?(){}|]/\\&/g'
}

# bad_file NAME LINE VALUE_RE WHY_RE: the file $dir/NAME.conf is refused,
# the message naming it, line LINE, and the value.
bad_file() {
	local conf=$dir/$1.conf

	refused "$1" "$(re "$conf"):$2: $3: $4" "DPIB_CONF=$conf"
}

# --- mtu: whole decimal numbers in the range the device supports.
for v in 0 100 99999999999 abc 1500x 0x5dc -1500; do
	{ device m; echo "mtu = $v"; } >"$dir/mtu_$v.conf"
	bad_file "mtu_$v" 4 "mtu = $(re "$v")" 'must be [0-9]+\.\.9000'
done
{ device m; echo 'ip6 = 2001:db8::1'; echo 'mtu = 330'; } >"$dir/mtu_ip6.conf"
bad_file mtu_ip6 5 'mtu = 330' 'must be [0-9]+\.\.9000 with ip6'

# --- other keys and the file's structure.
{ device v; echo 'vlan = 4095'; } >"$dir/vlan.conf"
bad_file vlan 4 'vlan = 4095' 'must be 1\.\.4094'
{ device k; echo 'colour = blue'; } >"$dir/unknown_key.conf"
bad_file unknown_key 4 'colour = blue' 'unknown key; \[device\] has port, .*'
{ echo '[engine]'; echo 'cpu = 9999'; device c; } >"$dir/cpu.conf"
bad_file cpu 2 'cpu = 9999' 'must be auto or up to 8 CPUs this process may run on, comma-separated: [0-9].*'
{ echo '[engine]'; echo 'cpu = 0,'; device c; } >"$dir/cpu_list.conf"
bad_file cpu_list 2 'cpu = 0,' 'must be auto or up to 8 CPUs .*'
{ echo '[engine]'; echo 'engines = 9'; device c; } >"$dir/engines.conf"
bad_file engines 2 'engines = 9' 'must be 1\.\.8'
{ echo '[engine]'; echo 'placement = random'; device c; } >"$dir/placement.conf"
bad_file placement 2 'placement = random' 'must be cq or spread'
{ echo '[engine]'; echo 'loop_priority = high'; device c; } >"$dir/loop_priority.conf"
bad_file loop_priority 2 'loop_priority = high' 'must be realtime or normal'
for v in soon 0 1000001; do
	{ echo '[engine]'; echo "takeover_us = $v"; device c; } \
		>"$dir/takeover_$v.conf"
	bad_file "takeover_$v" 2 "takeover_us = $v" \
		'must be never or 1\.\.1000000 \(µs\)'
done
{ echo '[eal]'; echo 'memory = 64k'; device e; } >"$dir/memory.conf"
bad_file memory 2 'memory = 64k' 'must be [0-9]+\.\.[0-9]+ \(MiB\)'
{ echo '[eal]'; echo 'hugepages = maybe'; device e; } >"$dir/hugepages.conf"
bad_file hugepages 2 'hugepages = maybe' 'must be auto, yes or no'
{ device d; echo 'dma = maybe'; } >"$dir/dma.conf"
bad_file dma 4 'dma = maybe' 'must be auto, on or off'
{ device z; echo 'zero_copy = 0'; } >"$dir/zero_copy.conf"
bad_file zero_copy 4 'zero_copy = 0' 'must be auto, off or 1\.\.65536 \(bytes\)'
{ device i; echo 'icrc = off'; } >"$dir/icrc.conf"
bad_file icrc 4 'icrc = off' 'must be auto or on'
{ device f; echo 'faults = drop=nan'; } >"$dir/faults.conf"
bad_file faults 4 'faults = drop=nan' 'drop must be 0\.\.1'
{ device f; echo 'faults = rate_mbps=100,ecn_kmin=0'; } >"$dir/ecn.conf"
bad_file ecn 4 'faults = rate_mbps=100,ecn_kmin=0' 'ecn_kmin must be 1\.\.[0-9]+'
{ device c; echo 'cc = dctcp'; } >"$dir/cc.conf"
bad_file cc 4 'cc = dctcp' 'must be dcqcn or none'
{ device c; echo 'dcqcn = ai_mbps=0'; } >"$dir/dcqcn.conf"
bad_file dcqcn 4 'dcqcn = ai_mbps=0' 'ai_mbps must be 1\.\.[0-9]+'
{ device c; echo 'dcqcn = t_us=55,speed=9'; } >"$dir/dcqcn_key.conf"
bad_file dcqcn_key 4 'dcqcn = t_us=55,speed=9' "unknown parameter 'speed'"
{ echo '[nic]'; device s; } >"$dir/unknown_section.conf"
bad_file unknown_section 1 '\[nic\]' 'unknown section; .*'
{ echo 'mtu = 1500'; device o; } >"$dir/outside.conf"
bad_file outside 1 'mtu = 1500' 'outside any section.*'
{ device n; echo 'mtu ='; } >"$dir/no_value.conf"
bad_file no_value 4 'mtu' 'value missing'
{ echo '[device p]'; echo 'ip = 192.0.2.1'; } >"$dir/no_port.conf"
bad_file no_port 1 '\[device p\]' 'port missing'

# --- more [device] sections than dpib has devices: the first one over the
# limit is named, with the limit.
conf=$dir/devices.conf
for i in $(seq 0 40); do device "d$i" "192.0.2.$((i + 1))"; done >"$conf"
refused devices_41 \
	"$(re "$conf"):[0-9]+: \\[device d[0-9]+\\]: at most [0-9]+ \\[device\\] sections" \
	"DPIB_CONF=$conf"
if [ -s "$dir/err" ]; then
	# Three lines a section: the limit's section starts at 3 * limit + 1.
	msg=$(grep '^dpib: ' "$dir/err" || true)
	line=$(echo "$msg" | sed -n 's/^dpib: [^:]*:\([0-9]*\): .*/\1/p')
	idx=$(echo "$msg" | sed -n 's/.*\[device d\([0-9]*\)\].*/\1/p')
	limit=$(echo "$msg" | sed -n 's/.*at most \([0-9]*\) .*/\1/p')
	if [ -n "$line" ] && [ "$idx" = "$limit" ] &&
	   [ "$line" = $((3 * limit + 1)) ]; then
		pass "devices_41: refused at the first section over the limit"
	else
		fail "devices_41" "not the first section over the limit"
	fi
fi

# --- DPIB_CONF that cannot be read: the path and the reason.
refused conf_directory \
	"DPIB_CONF=$(re "$dir"): cannot read: Is a directory" "DPIB_CONF=$dir"
refused conf_missing \
	"DPIB_CONF=$(re "$dir/none.conf"): cannot read: No such file or directory" \
	"DPIB_CONF=$dir/none.conf"
if [ "$(id -u)" != 0 ]; then	# root reads any file
	device r >"$dir/unreadable.conf"
	chmod 000 "$dir/unreadable.conf"
	refused conf_unreadable \
		"DPIB_CONF=$(re "$dir/unreadable.conf"): cannot read: Permission denied" \
		"DPIB_CONF=$dir/unreadable.conf"
fi

# --- A refused configuration as an unmodified program sees it (with
# dpib-run, the second argument): ibv_get_device_list returns NULL with
# errno set and the count zeroed, as rdma-core does, and perftest, which
# reads the count before the list, says it found no device rather than
# dying on the NULL list.
if [ -n "$run" ]; then
	DPIB_CONF="$dir/none.conf" timeout 60 "$run" /usr/bin/python3 -c '
import ctypes, sys
lib = ctypes.CDLL("libibverbs.so.1", use_errno=True)
lib.ibv_get_device_list.restype = ctypes.c_void_p
n = ctypes.c_int(7)
p = lib.ibv_get_device_list(ctypes.byref(n))
print(p, n.value, ctypes.get_errno())
sys.exit(0 if p is None and n.value == 0 and ctypes.get_errno() != 0 else 1)
' >"$dir/out" 2>"$dir/err" && rc=0 || rc=$?
	if [ "$rc" = 0 ]; then
		pass "refused: ibv_get_device_list NULL, errno set, count 0"
	else
		fail "refused: ibv_get_device_list" "exit $rc: $(cat "$dir/out")"
	fi
	rc=0
	DPIB_CONF="$dir/none.conf" timeout 60 "$run" ib_write_bw \
		>"$dir/out" 2>"$dir/err" || rc=$?
	if [ "$rc" != 0 ] && [ "$rc" -lt 124 ] &&
	   grep -q "Did not detect devices" "$dir/err"; then
		pass "refused: perftest says it found no device (exit $rc)"
	else
		fail "refused: perftest" "exit $rc"
	fi
fi

# --- DPIB_TAKEOVER_US, as the key above (dpib-perf -E sets it).
refused takeover_env \
	"DPIB_TAKEOVER_US=soon: must be never or 1\\.\\.1000000 \\(µs\\)" \
	DPIB_CONF= DPIB_TAKEOVER_US=soon

# --- DPIB_CAPTURE that cannot be written, with the default device.
refused capture \
	"DPIB_CAPTURE=/proc/nonexistent/x\\.pcap: cannot write: No such file or directory" \
	DPIB_CONF= DPIB_CAPTURE=/proc/nonexistent/x.pcap

# --- a valid file still brings its device up, on a CPU it may run on.
conf=$dir/valid.conf
cpu=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*\([0-9]*\).*/\1/p' /proc/self/status)
{
	echo '# SPDX-License-Identifier: BSD-3-Clause'
	printf '[eal]\nargs =\nmemory = 256\nhugepages = no\n'
	printf '[engine]\ncpu = %s\nmode = adaptive\n' "$cpu"
	device good
	printf 'mtu = 1500\nvlan = 7\nloopback = yes\n'
	printf 'faults = drop=0,seed=7\n'
	printf 'cc = dcqcn\ndcqcn = ai_mbps=40,t_us=300,cnp_us=4\n'
} >"$conf"
rc=$(devinfo_run "DPIB_CONF=$conf")
if [ "$rc" = 0 ] && grep -q "^hca_id:[[:space:]]*good\$" "$dir/out" &&
   grep -q 'active_mtu:[[:space:]]*1024' "$dir/out" &&
   ! grep -q '^dpib: ' "$dir/err"; then
	pass "valid file: device good, active MTU 1024"
else
	fail "valid file" "exit $rc, device not listed as expected"
fi

echo "# $passed passed, $failed failed"
[ "$failed" = 0 ]
