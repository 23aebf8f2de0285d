#!/usr/bin/env bash
# SOCKS5 through one pinned core, for portico, Dante and microsocks, measured
# in the same run with the same load generator (bench/socksload):
#
#  - connection setups per second: 50 clients (CONNECTIONS) each loop over
#    connect, no-auth greeting, CONNECT to an IPv4 target, 10-byte reply,
#    close with SO_LINGER 0 (a RST, so the client side leaves no TIME_WAIT
#    and the ephemeral port range is not what is measured);
#  - UDP round trips per second: one UDP ASSOCIATE, a window of 32
#    (WINDOW) 512-byte datagrams in flight to a UDP echo target through
#    the relay, and the share delivered.
#
#   bench/socks.sh [PORTICO] [RUNS] [SECONDS] [CONNECTIONS] [WINDOW]
#
# Each proxy is started fresh, pinned to CPU 0 (taskset; portico also with
# workers = 1 and cpu_affinity = [0]); socksload and the targets run on
# CPU 1. The targets are socksload --serve-tcp (accepts and closes at once)
# and --serve-udp (echo), one process. Every run counts only after a
# one-second warm-up inside socksload; the table shows medians of RUNS runs
# of SECONDS each, then a second table with each run, the failures, and
# how busy each CPU was (from /proc/stat) so a reader can tell which side
# was the limit.
#
# Peers: danted (Debian package dante-server) and microsocks (package
# microsocks); a missing one is reported as "not installed", never zero.
# microsocks has no UDP ASSOCIATE (it answers REP 7): "unsupported".
# Dante is several processes (mother, negotiate, request and io children;
# a request child serves one request at a time and more are forked on
# demand); they all inherit the CPU 0 pinning, so every proxy gets the
# same single core. child.maxrequests is 0 (children are never recycled
# during a run), logging goes to a file in the temporary directory and
# logs nothing per connection. microsocks prints a line per connection on
# stderr, which goes to /dev/null.
#
# SOCKSLOAD=path overrides bench/socksload (an out-of-tree build).
set -u
portico=$(readlink -f "${1:-./portico}")
runs=${2:-3}
secs=${3:-5}
conns=${4:-50}
window=${5:-32}
payload=512
warm=1
pcpu=0 lcpu=1
here=$(cd "$(dirname "$0")" && pwd)
load=$(readlink -f "${SOCKSLOAD:-$here/socksload}")
[ -x "$load" ] || { echo "no $load: run make first" >&2; exit 1; }
dir=$(mktemp -d /tmp/portico-socks.XXXXXX)
chmod 755 "$dir"
# Four ports the kernel says are free right now, the first for TCP and UDP.
read -r tport pport dport mport < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(4)]
for s in ss: s.bind(("127.0.0.1", 0))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("127.0.0.1", ss[0].getsockname()[1]))
print(*[s.getsockname()[1] for s in ss])')
[ -n "${mport:-}" ] || { echo "no free ports" >&2; exit 1; }
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

wait_port() {
	for _ in $(seq 50); do
		ss -ltn | grep -q "127.0.0.1:$1 " && return 0
		sleep 0.1
	done
	return 1
}

cpu_ticks() {	# cpu -> "total idle" jiffies
	awk -v c="cpu$1" '$1 == c { t = 0; for (i = 2; i <= 9; i++) t += $i
	    print t, $5 + $6 }' /proc/stat
}

busy() {	# "t0 i0" "t1 i1" -> percent busy
	echo "$1 $2" | awk '{ dt = $3 - $1; di = $4 - $2; b = 0
	    if (dt > 0) b = 100 * (dt - di) / dt
	    printf "%d", b }'
}

tree_cpu() {	# pid -> CPU seconds used by it and its descendants, reaped
		# ones included (the cutime/cstime of their parents)
	python3 -c '
import os, sys
root, par, ticks = int(sys.argv[1]), {}, {}
for d in os.listdir("/proc"):
	if not d.isdigit():
		continue
	try:
		s = open("/proc/%s/stat" % d).read()
	except OSError:
		continue
	f = s[s.rindex(")") + 2:].split()
	par[int(d)], ticks[int(d)] = int(f[1]), sum(map(int, f[11:15]))
total = 0
for p in ticks:
	q = p
	while q > 1 and q != root:
		q = par.get(q, 0)
	if q == root:
		total += ticks[p]
print("%.3f" % (total / os.sysconf("SC_CLK_TCK")))' "$1"
}

now() { date +%s.%N; }

field() {	# json name -> value
	python3 -c 'import json, sys; print(json.loads(sys.argv[1]).get(sys.argv[2], ""))' "$1" "$2"
}

# Results, by proxy name: rates (medians), run lists and details.
declare -A hs_rate hs_runs hs_detail udp_rate udp_runs udp_detail

run_load() {	# mode port proxy-pid [socksload options...]
		# -> $out (one line of JSON, empty on failure), $cpu ("proxy
		# CPU % of one core / CPU 0 busy % / CPU 1 busy %")
	local mode=$1 port=$2 ppid=$3 a0 a1 b0 b1 c0 c1 t0 t1
	shift 3
	a0=$(cpu_ticks $pcpu) b0=$(cpu_ticks $lcpu)
	c0=$(tree_cpu "$ppid") t0=$(now)
	out=$(taskset -c $lcpu "$load" "$mode" --json \
	    --proxy "127.0.0.1:$port" --target "127.0.0.1:$tport" \
	    --duration "$secs" --warmup $warm "$@")
	c1=$(tree_cpu "$ppid") t1=$(now)
	a1=$(cpu_ticks $pcpu) b1=$(cpu_ticks $lcpu)
	cpu="$(awk -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" \
	    'BEGIN { printf "%d", 100 * (c1 - c0) / (t1 - t0) }')"
	cpu="$cpu/$(busy "$a0" "$a1")/$(busy "$b0" "$b1")"
}

measure() {	# name port proxy-pid
	local name=$1 port=$2 ppid=$3 out cpu i rates="" lats="" fails=0
	local refused=0 cpus="" pct=""
	for i in $(seq "$runs"); do
		run_load handshakes "$port" "$ppid" --connections "$conns"
		if [ -z "$out" ]; then
			hs_rate[$name]="socksload failed in run $i"
			break
		fi
		rates="$rates $(field "$out" setups_per_s | cut -d. -f1)"
		lats="$lats $(field "$out" lat_p50_us)"
		fails=$((fails + $(field "$out" socket_failures)))
		refused=$((refused + $(field "$out" refused) + \
		    $(field "$out" protocol_errors)))
		cpus="$cpus $cpu"
	done
	if [ -z "${hs_rate[$name]:-}" ]; then
		hs_rate[$name]=$(echo $rates | tr ' ' '\n' | median)
		hs_runs[$name]="$rates"
		hs_detail[$name]="$fails / $refused | $(echo $lats | tr ' ' '\n' | median) us | $cpus"
	fi

	rates="" lats="" cpus=""
	for i in $(seq "$runs"); do
		run_load udp "$port" "$ppid" --window "$window" \
		    --payload $payload
		if [ -z "$out" ]; then
			udp_rate[$name]="socksload failed in run $i"
			break
		fi
		if [ -n "$(field "$out" error)" ]; then
			if [ "$(field "$out" reply_code)" = 7 ]; then
				udp_rate[$name]=unsupported
			else
				udp_rate[$name]="error: $(field "$out" error) $(field "$out" reason)"
			fi
			break
		fi
		rates="$rates $(field "$out" round_trips_per_s | cut -d. -f1)"
		lats="$lats $(field "$out" rtt_p50_us)"
		pct="$pct $(field "$out" delivered_pct)"
		cpus="$cpus $cpu"
	done
	if [ -z "${udp_rate[$name]:-}" ]; then
		udp_rate[$name]=$(echo $rates | tr ' ' '\n' | median)
		udp_runs[$name]="$rates"
		udp_detail[$name]="$(echo $pct | tr ' ' '\n' | sort -n | head -1)% | $(echo $lats | tr ' ' '\n' | median) us | $cpus"
	fi
}

stopped() {	# name pid log: reports a proxy that died during the runs
	if ! kill -0 "$2" 2>/dev/null; then
		echo "$1 exited during the runs; last lines of its log:" >&2
		tail -20 "$3" >&2
		hs_rate[$1]="exited during the runs"
	fi
}

logged() {	# name log [pattern of lines to ignore]: shows what a proxy
		# logged beyond starting and stopping, on stderr
	local n
	n=$(grep -cvE "${3:-^\$}" "$2" 2>/dev/null)
	if [ "${n:-0}" -gt 0 ]; then
		echo "$1 logged $n lines, the first:" >&2
		grep -vE "${3:-^\$}" "$2" | head -5 >&2
	fi
}

taskset -c $lcpu "$load" --serve-tcp $tport --serve-udp $tport & pids+=($!)
wait_port $tport || { echo "target did not start" >&2; exit 1; }

cat > "$dir/portico.conf" <<CONF
workers = 1;
cpu_affinity = [$pcpu];
error_log = "$dir/portico.err";
log_level = "error";
listeners = ( { address = "127.0.0.1:$pport"; protocol = "socks5"; } );
CONF
taskset -c $pcpu "$portico" -f -c "$dir/portico.conf" & pp=$!; pids+=($pp)
if wait_port $pport; then
	measure portico $pport $pp
	stopped portico $pp "$dir/portico.err"
else
	hs_rate[portico]="did not start"
	tail -20 "$dir/portico.err" >&2
fi
kill $pp 2>/dev/null; wait $pp 2>/dev/null
logged portico "$dir/portico.err"

if command -v danted >/dev/null; then
	cat > "$dir/danted.conf" <<CONF
logoutput: $dir/danted.log
internal: 127.0.0.1 port = $dport
external: 127.0.0.1
clientmethod: none
socksmethod: none
user.privileged: root
user.unprivileged: nobody
child.maxrequests: 0
client pass { from: 127.0.0.0/8 to: 0.0.0.0/0 }
socks pass { from: 127.0.0.0/8 to: 0.0.0.0/0 command: connect udpassociate }
socks pass { from: 0.0.0.0/0 to: 127.0.0.0/8 command: udpreply }
CONF
	taskset -c $pcpu danted -f "$dir/danted.conf" -p "$dir/danted.pid" \
	    >/dev/null 2>&1 & dp=$!; pids+=($dp)
	if wait_port $dport; then
		measure dante $dport $dp
		stopped dante $dp "$dir/danted.log"
	else
		hs_rate[dante]="did not start"
		tail -20 "$dir/danted.log" >&2
	fi
	# The mother takes its children with it.
	kill $dp 2>/dev/null; wait $dp 2>/dev/null
	logged dante "$dir/danted.log" 'running$|exiting on signal|shutting down'
else
	hs_rate[dante]="not installed"
fi

if command -v microsocks >/dev/null; then
	# It prints a line per connection on stderr and has no switch
	# against it; /dev/null is the cheapest place for them (and its
	# only other output, perror() text, goes there too).
	taskset -c $pcpu microsocks -i 127.0.0.1 -p $mport \
	    >/dev/null 2>&1 & mp=$!; pids+=($mp)
	if wait_port $mport; then
		measure microsocks $mport $mp
		stopped microsocks $mp /dev/null
	else
		hs_rate[microsocks]="did not start"
	fi
	kill $mp 2>/dev/null; wait $mp 2>/dev/null
else
	hs_rate[microsocks]="not installed"
fi

ratio() {	# value base -> value/base, or "-"
	awk -v a="$1" -v b="$2" 'BEGIN {
	    if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0)
		printf "%.2f", a / b
	    else
		print "-" }'
}

names="portico dante microsocks"
echo "| proxy | SOCKS5 setups/s (median of $runs) | ratio to portico | UDP round trips/s, $payload B (median of $runs) | ratio to portico |"
echo "|---|---|---|---|---|"
for n in $names; do
	h=${hs_rate[$n]:-}
	u=${udp_rate[$n]:-}
	case "$h" in
	"not installed"|"did not start"|"exited during the runs")
		u=${u:-$h} ;;
	esac
	echo "| $n | $h | $(ratio "$h" "${hs_rate[portico]:-}") | $u | $(ratio "$u" "${udp_rate[portico]:-}") |"
done
echo
echo "| proxy | test | runs | failures: socket / refused | delivered (lowest run) | latency p50 (median) | proxy CPU % / CPU 0 busy % / CPU 1 busy %, per run |"
echo "|---|---|---|---|---|---|---|"
for n in $names; do
	if [ -n "${hs_runs[$n]:-}" ]; then
		d=${hs_detail[$n]}
		echo "| $n | setups | (${hs_runs[$n]} ) | ${d%% |*} | - | ${d#* | } |"
	fi
	if [ -n "${udp_runs[$n]:-}" ]; then
		d=${udp_detail[$n]}
		echo "| $n | UDP | (${udp_runs[$n]} ) | - | $d |"
	fi
done
