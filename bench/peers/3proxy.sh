#!/usr/bin/env bash
# bench/peers/3proxy.sh: builds 3proxy from its source and writes the
# configuration bench/fairness runs it with, then prints the --peer
# argument. Debian has no 3proxy package, so this is how it becomes a peer.
#
#   bench/peers/3proxy.sh [--splice] [--ports HTTP,SOCKS] [--cache DIR] SOURCE
#
# SOURCE: a 3proxy git directory (bare, or a clone: HEAD is built) or an
# unpacked source tree (holding Makefile.Linux). Nothing is built in it:
# the tree is exported to DIR/src-COMMIT and built there with 3proxy's own
# Makefile.Linux (only the 3proxy binary, make -j1 under nice), into
# DIR/3proxy-COMMIT/3proxy; a later call with the same commit reuses it.
# DIR defaults to bench/.cache/3proxy (ignored by git). 3proxy's licence
# is its own: its code is only built here, never copied into our tree.
#
# Build: Makefile.Linux's own flags (-O3 -flto), plus -DWITHSPLICE so the
# one binary can relay either way; OpenSSL, wolfSSL, PCRE and PAM are left
# out (OPENSSL_CHECK=false and so on): a CONNECT or SOCKS tunnel uses none
# of them, and the build then does not depend on which -dev packages the
# machine has. Plugins are not built.
#
# Configuration (DIR/3proxy-COMMIT/3proxy.cfg, or 3proxy-splice.cfg):
# foreground (no "daemon"), no "log" line (3proxy then logs nothing), no
# nserver (targets are address literals), "auth none", "maxconn 20000"
# (default 100), TCP_NODELAY on the client and server legs (-oc, -os), as
# portico sets it on both. The proxy service on 127.0.0.1:HTTP (3129) and
# the socks service on 127.0.0.1:SOCKS (1081). --splice adds -s to both:
# 3proxy's splice() relay, off by default even when built (its man page:
# "the read/write path is faster for most traffic"); without it, 3proxy
# copies through its 64 KiB buffer (TCPBUFSIZE). One process, a thread per
# connection: bench/fairness pins them all to the proxy CPU.
#
# Output: the last line is the --peer argument, e.g.
#   --peer '3proxy:/work/main/bench/.cache/3proxy/3proxy-f6963ea3/3proxy
#           /work/main/bench/.cache/3proxy/3proxy-f6963ea3/3proxy.cfg:3129:1081'
# (one line), the peer named 3proxy, or 3proxy-splice with --splice.
# Exit status: 0, 1 on a failed export or build, 2 on bad usage.
set -euo pipefail

usage() {
	echo "usage: bench/peers/3proxy.sh [--splice] [--ports HTTP,SOCKS]" \
	    "[--cache DIR] SOURCE" >&2
	exit 2
}

splice=0 ports=3129,1081 cache=
src=
while [ $# -gt 0 ]; do
	case $1 in
	--splice) splice=1 ;;
	--ports) [ $# -ge 2 ] || usage; ports=$2; shift ;;
	--cache) [ $# -ge 2 ] || usage; cache=$2; shift ;;
	-h|--help) usage ;;
	-*) usage ;;
	*) [ -z "$src" ] || usage; src=$1 ;;
	esac
	shift
done
if [ -z "$src" ] || [ ! -d "$src" ]; then usage; fi
case $ports in
*,*) http_port=${ports%,*} socks_port=${ports#*,} ;;
*) usage ;;
esac
case $http_port$socks_port in *[!0-9]*|'') usage ;; esac
here=$(cd "$(dirname "$0")/.." && pwd)
cache=${cache:-$here/.cache/3proxy}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

# Which commit, and how to export it.
if commit=$(git --git-dir="$src" rev-parse --verify -q HEAD 2>/dev/null); then
	export_tree() { git --git-dir="$src" archive HEAD | tar -x -C "$1"; }
elif [ -e "$src/.git" ] &&
    commit=$(git -C "$src" rev-parse --verify -q HEAD 2>/dev/null); then
	export_tree() { git -C "$src" archive HEAD | tar -x -C "$1"; }
elif [ -f "$src/Makefile.Linux" ]; then
	commit=unknown-$(cd "$src" && find . -type f -name '*.[ch]' -print0 |
	    sort -z | xargs -0 cat | sha256sum | cut -c1-12)
	export_tree() { cp -a "$src/." "$1"; }
else
	echo "3proxy.sh: $src: neither a git directory nor a 3proxy tree" >&2
	exit 1
fi
short=${commit:0:12}
out=$cache/3proxy-$short
bin=$out/3proxy

if [ ! -x "$bin" ]; then
	build=$cache/src-$short
	rm -rf "$build"
	mkdir -p "$build" "$out"
	export_tree "$build" || { echo "3proxy.sh: export failed" >&2; exit 1; }
	[ -f "$build/Makefile.Linux" ] || {
		echo "3proxy.sh: no Makefile.Linux in $src" >&2; exit 1; }
	echo "3proxy.sh: building 3proxy $commit in $build" >&2
	# What Makefile.inc's "all" does, for the 3proxy binary alone.
	cp "$build/Makefile.Linux" "$build/src/Makefile.var"
	if ! (cd "$build/src" && nice -n 19 make -j1 -f Makefile \
	    EXTRA_CFLAGS=-DWITHSPLICE OPENSSL_CHECK=false \
	    WOLFSSL_CHECK=false PCRE_CHECK=false PAM_CHECK=false \
	    PLUGINS= ../bin/3proxy) > "$out/build.log" 2>&1; then
		tail -20 "$out/build.log" >&2
		echo "3proxy.sh: build failed, log in $out/build.log" >&2
		exit 1
	fi
	cp "$build/bin/3proxy" "$bin"
	echo "$commit" > "$out/COMMIT"
	rm -rf "$build"
fi

name=3proxy cfg=$out/3proxy.cfg opt=
if [ $splice = 1 ]; then
	name=3proxy-splice cfg=$out/3proxy-splice.cfg opt=" -s"
fi
cat > "$cfg" <<EOF
# bench/peers/3proxy.sh for bench/fairness: 3proxy $commit
# Foreground (no daemon), no log line (nothing logged), no auth, limit
# raised, TCP_NODELAY on both legs. 3proxy skips a line that starts with
# a blank: every directive starts its line.
maxconn 20000
auth none
proxy -p$http_port -i127.0.0.1 -ocTCP_NODELAY -osTCP_NODELAY$opt
socks -p$socks_port -i127.0.0.1 -ocTCP_NODELAY -osTCP_NODELAY$opt
EOF
echo "3proxy.sh: 3proxy $commit, configuration $cfg" >&2
echo "--peer '$name:$bin $cfg:$http_port:$socks_port'"
