#!/bin/sh
# Runs the libFuzzer targets of a --enable-fuzzing build, one at a time,
# each for a bounded time, starting from its corpus in the source tree
# (t/fuzz/corpus/<target>/, only read) and its dictionary. New inputs go
# to <builddir>/t/fuzz/work/<target>/, crashes and other findings to
# <builddir>/t/fuzz/work/<target>-crash-* (replay one with
# t/fuzz/<target>-replay FILE). Prints one line per target in automake's
# result format ("PASS: t/fuzz/<target> - ..." or FAIL), with the runs,
# exec/s and coverage libFuzzer reported on the line before; exits 1 when
# a target failed.
#
#   t/fuzz/run.sh [-t SECONDS] [-r RSS_MB] [-j LANES] BUILDDIR [TARGET...]
#
# SECONDS per target (default 8); RSS_MB is libFuzzer's -rss_limit_mb
# (default 1024); LANES targets run at once (default 1: one per CPU is
# what CI uses, each target still gets its SECONDS of one CPU). Without
# TARGETs, every t/fuzz/* program BUILDDIR has.
# Extra libFuzzer options go in FUZZ_ARGS (e.g. FUZZ_ARGS=-jobs=2).
set -u
secs=8
rss=1024
lanes=1
usage="usage: $0 [-t SECONDS] [-r RSS_MB] [-j LANES] BUILDDIR [TARGET...]"
while getopts t:r:j: o; do
	case $o in
	t) secs=$OPTARG ;;
	r) rss=$OPTARG ;;
	j) lanes=$OPTARG ;;
	*) echo "$usage" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "$usage" >&2; exit 2; }
build=$(cd "$1" && pwd) || exit 2
shift
src=$(cd "$(dirname "$0")/../.." && pwd)
if [ $# -eq 0 ]; then
	set --
	for t in http_request http_response http_chunked http_head socks5 \
	    socks4 socks_udp conf userlist acl hostset accesslog host h2_head \
	    h2_conn proxy_header; do
		[ -x "$build/t/fuzz/$t" ] && set -- "$@" "$t"
	done
fi
[ $# -gt 0 ] || { echo "FAIL: t/fuzz - no fuzz target in $build (configure --enable-fuzzing; make fuzz)"; exit 1; }

# Lanes: the targets dealt round-robin to LANES copies of this script,
# run at once; their reports are printed lane by lane once all are done.
if [ "$lanes" -gt 1 ]; then
	out=$(mktemp -d) || exit 2
	lane=0
	while [ $lane -lt "$lanes" ]; do
		list= i=0
		for t in "$@"; do
			[ $((i % lanes)) -eq $lane ] && list="$list $t"
			i=$((i + 1))
		done
		# shellcheck disable=SC2086
		[ -n "$list" ] && sh "$0" -t "$secs" -r "$rss" "$build" $list \
		    >"$out/$lane" 2>&1 &
		lane=$((lane + 1))
	done
	wait
	cat "$out"/*
	failed=0
	grep -q "^FAIL: " "$out"/* && failed=1
	rm -rf "$out"
	exit $failed
fi

failed=0
for t in "$@"; do
	bin=$build/t/fuzz/$t
	work=$build/t/fuzz/work/$t
	log=$build/t/fuzz/work/$t.log
	mkdir -p "$work"
	case $t in
	http_*) dict="-dict=$src/t/fuzz/http.dict" ;;
	socks*) dict="-dict=$src/t/fuzz/socks.dict" ;;
	proxy_header) dict="-dict=$src/t/fuzz/proxy_header.dict" ;;
	*) dict= ;;
	esac
	if [ ! -x "$bin" ]; then
		echo "FAIL: t/fuzz/$t - not built ($bin)"
		failed=1
		continue
	fi
	# -timeout: one input taking seconds is a finding too (a parser
	# that loops); -print_final_stats for the numbers reported below.
	# shellcheck disable=SC2086
	"$bin" -max_total_time="$secs" -rss_limit_mb="$rss" -timeout=10 \
	    -print_final_stats=1 -artifact_prefix="$work-" $dict \
	    ${FUZZ_ARGS:-} "$work" "$src/t/fuzz/corpus/$t" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	cov=$(grep -aE '^#[0-9]+' "$log" | tail -1 | sed -n 's/.* cov: \([0-9]*\).* ft: \([0-9]*\).*/cov \1, ft \2/p')
	echo "# t/fuzz/$t: ${runs:-?} runs, ${speed:-?} exec/s, ${cov:-cov ?} (log $log)"
	if [ $rc -eq 0 ] && ! grep -aqE '^(==[0-9]+==ERROR|SUMMARY: |.*property violated)' "$log"; then
		echo "PASS: t/fuzz/$t - ${secs} s of libFuzzer found nothing"
	else
		grep -aE 'property violated|ERROR: |SUMMARY: |Test unit written|^input:' "$log" | head -8 | sed 's/^/#   /'
		echo "FAIL: t/fuzz/$t - libFuzzer found an input that fails (exit $rc), see $log"
		failed=1
	fi
done
exit $failed
