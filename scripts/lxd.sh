#!/usr/bin/env bash
# Runs an LXD daemon of a benchmark's own, for BenchmarkChangeToEvent's
# side-by-side rows (e2e/lxd_bench_test.go).
#
#   lxd.sh install          install Debian's lxd package when missing (root)
#   lxd.sh start DIR [PID]  run lxd with LXD_DIR=DIR inside a new network
#                           namespace that has only loopback (lxd reaches for
#                           its image server at start), initialized by a
#                           preseed with no network and no storage pool; its
#                           socket is DIR/unix.socket. With PID, a watchdog
#                           stops it when process PID ends, so a benchmark
#                           killed before its cleanup leaks nothing.
#   lxd.sh stop DIR         kill that daemon, delete its namespace, unmount
#                           whatever it mounted under DIR.
#
# DIR/netns and DIR/lxd.pid record what start made, for stop.
set -euo pipefail

install() {
	command -v lxd >/dev/null && return
	if [ "$(id -u)" != 0 ]; then
		echo "lxd.sh: lxd missing and not root: install Debian's lxd package" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq lxd
}

stop() {
	local dir=$1
	if [ -f "$dir/lxd.pid" ]; then
		local pid
		pid=$(cat "$dir/lxd.pid")
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
		rm -f "$dir/lxd.pid"
	fi
	if [ -f "$dir/netns" ]; then
		ip netns delete "$(cat "$dir/netns")" 2>/dev/null || true
		rm -f "$dir/netns"
	fi
	# Deepest first, so nested mounts go before their parents.
	awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
		umount -l "$m" || true
	done
	# Last: the watchdog itself may be what runs this stop.
	if [ -f "$dir/watchdog.pid" ]; then
		local w
		w=$(cat "$dir/watchdog.pid")
		rm -f "$dir/watchdog.pid"
		[ "$w" = $$ ] || kill "$w" 2>/dev/null || true
	fi
}

start() {
	local dir=$1 parent=${2:-}
	command -v lxd >/dev/null || { echo "lxd.sh: lxd is not installed (lxd.sh install)" >&2; exit 1; }
	[ "$(id -u)" = 0 ] || { echo "lxd.sh: running lxd takes root" >&2; exit 1; }
	mkdir -p "$dir"
	trap 'stop "$dir"' ERR
	# Unique per run: the pid of this script and a random number.
	local ns="bc-lxd-$$-$RANDOM"
	ip netns add "$ns"
	echo "$ns" >"$dir/netns"
	ip -n "$ns" link set lo up
	# ip netns exec execs lxd itself, so $! is the daemon's pid; setsid
	# keeps it out of the caller's process group and signals.
	LXD_DIR=$dir setsid ip netns exec "$ns" lxd --logfile "$dir/lxd.log" >"$dir/lxd.out" 2>&1 </dev/null &
	echo $! >"$dir/lxd.pid"
	if ! LXD_DIR=$dir timeout 60 lxd waitready --timeout 60; then
		echo "lxd.sh: lxd did not become ready:" >&2
		tail -n 20 "$dir/lxd.out" >&2
		false
	fi
	# The least it needs: no network, no storage pool, the default profile.
	LXD_DIR=$dir lxd init --preseed <<-EOF
		config: {}
		networks: []
		storage_pools: []
		profiles:
		- name: default
		  description: benchmark
		  devices: {}
	EOF
	if [ -n "$parent" ]; then
		setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; exec "$2" stop "$3"' watchdog "$parent" "$0" "$dir" \
			>/dev/null 2>&1 </dev/null &
		echo $! >"$dir/watchdog.pid"
	fi
	trap - ERR
}

case "${1:-}" in
install) install ;;
start) start "${2:?lxd.sh start DIR [PID]}" "${3:-}" ;;
stop) stop "${2:?lxd.sh stop DIR}" ;;
*)
	echo "usage: lxd.sh install | start DIR [PID] | stop DIR" >&2
	exit 2
	;;
esac
