#!/usr/bin/env bash
# Connections lost to reloads: bench/loadgen http-close (a new connection
# per 1 KiB GET, 32 at a time) through portico while the master gets
# HUPS SIGHUPs spread over SECONDS; every error loadgen counts (reset,
# closed without a response, wrong size) is a connection a reload lost.
# With "workers" as MODE the reloads alternate workers = 1 and 2, so half
# of them remove a slot (net.ipv4.tcp_migrate_req matters there).
#
#   bench/reload.sh [PORTICO] [RUNS] [HUPS] [SECONDS] [MODE] [OTHER_PORTICO]
#
# MODE: "pinned" (one worker pinned to CPU 0, the default) or "workers".
# OTHER_PORTICO, if given, is run alternately with PORTICO (before/after
# in one session, under the same load). Load generator and origin on
# CPU 1. Prints one line per run and a Markdown table of medians.
set -u
portico=$(readlink -f "${1:-./portico}")
runs=${2:-3}
hups=${3:-10}
secs=${4:-12}
mode=${5:-pinned}
other=${6:+$(readlink -f "$6")}
here=$(dirname "$(readlink -f "$0")")
loadgen=${LOADGEN:-$here/loadgen}
dir=$(mktemp -d /tmp/portico-reload.XXXXXX)
read -r oport pport < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

conf() {	# conf WORKERS
	local pin="cpu_affinity = [0];"
	[ "$mode" = workers ] && pin="cpu_affinity = [0, 1];"
	cat > "$dir/portico.conf" <<EOF
workers = $1;
$pin
error_log = "$dir/error.log";
pid_file = "$dir/portico.pid";
shutdown_timeout = 30;
listeners = ( { address = "127.0.0.1:$pport"; protocol = "http"; } );
EOF
}

taskset -c 1 "$loadgen" serve --http "$oport" > "$dir/origin.out" 2>&1 &
pids+=($!)

# one_run BINARY: prints "errors resets requests/s reloads"
one_run() {
	local bin=$1 m lg i n
	: > "$dir/error.log"
	conf 1
	"$bin" -f -c "$dir/portico.conf" > "$dir/portico.out" 2>&1 &
	m=$!
	for i in 1 2 3 4 5 6 7 8 9 10; do
		grep -q 'started:' "$dir/error.log" 2>/dev/null && break
		sleep 0.2
	done
	if ! grep -q 'started:' "$dir/error.log"; then
		echo "reload.sh: $bin did not start:" >&2
		cat "$dir/error.log" "$dir/portico.out" >&2
		exit 1
	fi
	taskset -c 1 "$loadgen" http-close --proxy "127.0.0.1:$pport" \
	    --proxy-type http --target "127.0.0.1:$oport" \
	    --path /bytes/1024 --expect-size 1024 --connections 32 \
	    --duration "$secs" --warmup 0 --json > "$dir/lg.json" 2>&1 &
	lg=$!
	for ((i = 0; i < hups; i++)); do
		sleep "$(python3 -c "print(($secs - 1) / ($hups + 1))")"
		if [ "$mode" = workers ]; then
			conf $(( i % 2 == 0 ? 2 : 1 ))
		fi
		kill -HUP "$m"
	done
	wait "$lg"
	kill -TERM "$m"
	wait "$m" 2>/dev/null
	n=$(grep -c 'reloaded ' "$dir/error.log")
	if [ "$n" != "$hups" ]; then
		echo "only $n reloads; log kept in $dir.log" >&2
		cp "$dir/error.log" "$dir.log"
	fi
	python3 - "$dir/lg.json" "$n" <<'EOF'
import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
e = d.get("errors", {})
total = sum(e.values()) if isinstance(e, dict) else e
print(total, e.get("reset", 0) if isinstance(e, dict) else "?",
      round(d.get("rate", 0)), sys.argv[2])
EOF
}

declare -A res
bins=("$portico")
[ -n "$other" ] && bins+=("$other")
for ((r = 1; r <= runs; r++)); do
	for b in "${bins[@]}"; do
		out=$(one_run "$b") || exit 1
		echo "run $r $b: errors resets req/s reloads = $out"
		res[$b]+="$out;"
	done
done
echo
echo "| binary | mode | runs | HUPs | errors (median) | resets (median) | req/s (median) |"
echo "|---|---|---|---|---|---|---|"
for b in "${bins[@]}"; do
	python3 - "$b" "$mode" "$runs" "$hups" "${res[$b]}" <<'EOF'
import statistics, sys
b, mode, runs, hups, rows = sys.argv[1:]
rows = [r.split() for r in rows.split(";") if r]
med = lambda i: statistics.median(float(r[i]) for r in rows)
print("| %s | %s | %s | %s | %g | %g | %g |" % (
    b, mode, runs, hups, med(0), med(1), med(2)))
EOF
done
