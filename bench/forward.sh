#!/usr/bin/env bash
# Measures the TCP forwarder (protocol "tcp") with one pinned worker:
# throughput through it with relay method splice and copy, beside iperf3
# straight to the server, and the worker's CPU time per GiB moved (the
# number that matters on a shared core). iperf3 client and server run on
# the other CPU. Prints one Markdown table of medians over RUNS runs.
#
#   bench/forward.sh [PORTICO] [RUNS] [SECONDS]
#
# Needs iperf3 (Debian package iperf3) and two CPUs.
set -eu
portico=${1:-./portico}
runs=${2:-3}
secs=${3:-5}
pcpu=0 lcpu=1
dir=$(mktemp -d)
sport=$((20000 + RANDOM % 20000)) pport=$((sport + 1))
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT

command -v iperf3 >/dev/null || { echo "needs iperf3" >&2; exit 1; }

iperf() {	# port, write size -> "MiB/s"
	taskset -c $lcpu iperf3 -c 127.0.0.1 -p "$1" -t "$secs" -l "$2" -J |
	    python3 -c 'import json,sys; j=json.load(sys.stdin); print("%.0f" % (j["end"]["sum_received"]["bits_per_second"] / 8 / 2**20))'
}

cputime() {	# pid -> seconds of user+system time
	awk '{ printf "%.2f", ($14 + $15) / 100 }' "/proc/$1/stat"
}

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

taskset -c $lcpu iperf3 -s -p "$sport" >/dev/null 2>&1 &
sleep 0.5

echo "| path | write size | MiB/s (median of $runs) | worker CPU s per GiB |"
echo "|---|---|---|---|"
for size in 128K 16K 1K; do
	for i in $(seq "$runs"); do iperf "$sport" "$size"; done | median |
	    { read -r m; echo "| direct (no proxy) | $size | $m | - |"; }
	for method in splice copy; do
		cat > "$dir/p.conf" <<CONF
workers = 1;
cpu_affinity = [$pcpu];
error_log = "$dir/error.log";
relay = { method = "$method"; };
listeners = ( { address = "127.0.0.1:$pport"; protocol = "tcp"; to = "127.0.0.1:$sport"; } );
CONF
		"$portico" -f -c "$dir/p.conf" & master=$!
		sleep 0.5
		worker=$(pgrep -P $master)
		rates= cpus=
		for i in $(seq "$runs"); do
			c0=$(cputime "$worker")
			r=$(iperf "$pport" "$size")
			c1=$(cputime "$worker")
			rates="$rates $r"
			cpus="$cpus $(python3 -c "print('%.3f' % (($c1 - $c0) / ($r * $secs / 1024)))")"
		done
		kill $master; wait $master || true
		m=$(echo $rates | tr ' ' '\n' | median)
		c=$(echo $cpus | tr ' ' '\n' | median)
		echo "| portico $method | $size | $m | $c |"
	done
done
