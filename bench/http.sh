#!/usr/bin/env bash
# 1 KiB GET requests per second through an HTTP proxy pinned to one core,
# for portico, Tinyproxy and Squid, measured in the same run with the same
# load generator (wrk, keep-alive, absolute-form requests through a Lua
# script), against nginx as the origin; plus wrk straight to nginx.
#
#   bench/http.sh [PORTICO] [RUNS] [SECONDS] [CONNECTIONS]
#
# Proxy on CPU 0; wrk and nginx on CPU 1. Prints a Markdown table of
# medians. Needs wrk, nginx-light, tinyproxy and squid (Debian packages);
# a missing peer is reported as such, never as zero.
set -u
portico=$(readlink -f "${1:-./portico}")
runs=${2:-3}
secs=${3:-5}
conns=${4:-50}
pcpu=0 lcpu=1
dir=$(mktemp -d /tmp/portico-bench.XXXXXX)
chmod 755 "$dir"
# Four ports the kernel says are free right now.
read -r oport pport tport sport < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(4)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

head -c 1024 /dev/zero | tr '\0' 'x' > "$dir/1k"
cat > "$dir/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $dir/nginx.pid;
error_log $dir/nginx.err;
events { worker_connections 4096; }
http {
	access_log off;
	keepalive_requests 1000000;
	server {
		listen 127.0.0.1:$oport;
		root $dir;
	}
}
CONF
taskset -c $lcpu nginx -c "$dir/nginx.conf" & pids+=($!)

cat > "$dir/proxy.lua" <<LUA
wrk.path = "http://127.0.0.1:$oport/1k"
wrk.headers["Host"] = "127.0.0.1:$oport"
LUA

wrk_rate() {	# port [script] -> requests/s, or "error"
	local out
	if [ -n "${2:-}" ]; then
		out=$(taskset -c $lcpu wrk -t1 -c"$conns" -d"${secs}s" -s "$2" "http://127.0.0.1:$1/" 2>&1)
	else
		out=$(taskset -c $lcpu wrk -t1 -c"$conns" -d"${secs}s" "http://127.0.0.1:$1/1k" 2>&1)
	fi
	# A run with non-2xx answers, or with connect, write or timeout
	# errors, does not count. Read errors alone are a peer closing the
	# connection after each response (Tinyproxy does): wrk reconnects,
	# the requests did complete, and the table says so.
	if echo "$out" | grep -q "Non-2xx" ||
	    echo "$out" | grep -qE "Socket errors: connect [1-9]|write [1-9]|timeout [1-9]"; then
		echo error
		return
	fi
	if echo "$out" | grep -qE "Socket errors: .*read [1-9]"; then
		touch "$dir/closes.$1"
	fi
	echo "$out" | awk '/Requests\/sec/ { printf "%d\n", $2 }'
}

measure() {	# name port [script]
	local rates="" r i
	wrk_rate "$2" "${3:-}" >/dev/null	# warm-up
	for i in $(seq "$runs"); do
		r=$(wrk_rate "$2" "${3:-}")
		[ "$r" = error ] && { echo "| $1 | errors in run $i |"; return; }
		rates="$rates $r"
	done
	echo "$1 $(echo $rates | tr ' ' '\n' | median) ($rates )"
}

wait_port() {
	for _ in $(seq 50); do
		ss -ltn | grep -q "127.0.0.1:$1 " && return 0
		sleep 0.1
	done
	return 1
}

wait_port $oport || { echo "nginx did not start"; exit 1; }
results=()
results+=("$(measure "direct (no proxy)" $oport)")

cat > "$dir/portico.conf" <<CONF
workers = 1;
cpu_affinity = [$pcpu];
error_log = "$dir/portico.err";
log_level = "error";
listeners = ( { address = "127.0.0.1:$pport"; protocol = "http"; } );
CONF
"$portico" -f -c "$dir/portico.conf" & pp=$!; pids+=($pp)
wait_port $pport && results+=("$(measure portico $pport "$dir/proxy.lua")")
kill $pp; wait $pp 2>/dev/null

if command -v tinyproxy >/dev/null; then
	cat > "$dir/tinyproxy.conf" <<CONF
Port $tport
Listen 127.0.0.1
Timeout 600
MaxClients 1000
LogLevel Critical
DisableViaHeader Yes
CONF
	taskset -c $pcpu tinyproxy -d -c "$dir/tinyproxy.conf" >/dev/null 2>&1 & tp=$!; pids+=($tp)
	wait_port $tport && results+=("$(measure "tinyproxy" $tport "$dir/proxy.lua")")
	kill $tp; wait $tp 2>/dev/null
else
	results+=("tinyproxy not-installed")
fi

if command -v squid >/dev/null; then
	mkdir -p "$dir/squid"
	chown proxy "$dir/squid" 2>/dev/null
	cat > "$dir/squid.conf" <<CONF
http_port 127.0.0.1:$sport
workers 1
http_access allow all
cache deny all
cache_mem 0 MB
access_log none
cache_log $dir/squid/cache.log
pid_filename $dir/squid/squid.pid
coredump_dir $dir/squid
max_filedescriptors 65536
CONF
	taskset -c $pcpu squid -N -f "$dir/squid.conf" >/dev/null 2>&1 & sq=$!; pids+=($sq)
	wait_port $sport && results+=("$(measure "squid" $sport "$dir/proxy.lua")")
	kill $sq; wait $sq 2>/dev/null
else
	results+=("squid not-installed")
fi

echo "| path | requests/s (median of $runs) | runs | ratio to portico |"
echo "|---|---|---|---|"
pr=$(printf '%s\n' "${results[@]}" | awk '$1 == "portico" { print $2 }')
for line in "${results[@]}"; do
	case "$line" in
	"|"*) echo "$line"; continue ;;
	esac
	name=${line% * (*}
	rest=${line#"$name "}
	rate=${rest%% *}
	runsl=${rest#* }
	if [ "$rate" = not-installed ]; then
		echo "| $name | not installed | - | - |"
		continue
	fi
	ratio=$(awk -v a="$rate" -v b="${pr:-0}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
	note=
	for f in "$dir"/closes.*; do
		[ -e "$f" ] || continue
		[ "${name}" = tinyproxy ] && [ "$f" = "$dir/closes.$tport" ] && note=" (closes the client connection after every response)"
	done
	echo "| $name$note | $rate | $runsl | $ratio |"
done
