#!/usr/bin/env bash
# Checks OUTDIR/guest.qcow2 without libvirt: boots it under QEMU (TCG) as
# the libvirt driver attaches it (virtio disk, seed on a SATA CD-ROM, virtio
# NIC), with a NoCloud seed in the format of drivers/runtime/nocloud/seed.go,
# runs `uname -a` over SSH, prints the time from QEMU's start to that login,
# then presses the ACPI power button and waits for the guest to power off.
# QEMU user networking: the seed gives 10.0.2.15/24 via 10.0.2.2 and
# 127.0.0.1:$SSH_PORT (default 2222) is forwarded to the guest's port 22.
#
# Usage: scripts/guest/smoke.sh OUTDIR [MEMORY_MB]
set -euo pipefail

[ $# -ge 1 ] || { echo "usage: $0 OUTDIR [MEMORY_MB]" >&2; exit 2; }
out=$(cd "$1" && pwd)
mem=${2:-256}
port=${SSH_PORT:-2222}
mac=52:54:00:12:34:56
dir=$(mktemp -d)
qemu=
# shellcheck disable=SC2317 # run by the trap
cleanup() {
	[ -z "$qemu" ] || kill "$qemu" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT

ssh-keygen -q -t ed25519 -N '' -C smoke@bc -f "$dir/key"
mkdir "$dir/seed"
cat >"$dir/seed/meta-data" <<EOF
instance-id: "ins_smoke"
local-hostname: "smoke-vm"
public-keys:
  - "$(cat "$dir/key.pub")"
EOF
printf '#cloud-config\n' >"$dir/seed/user-data"
cat >"$dir/seed/network-config" <<EOF
version: 2
ethernets:
  eth0:
    match:
      macaddress: "$mac"
    set-name: eth0
    addresses:
      - "10.0.2.15/24"
    routes:
      - to: "0.0.0.0/0"
        via: "10.0.2.2"
    nameservers:
      addresses:
        - "10.0.2.3"
EOF
genisoimage -quiet -output "$dir/seed.iso" -volid cidata -joliet -rock "$dir/seed"/*
qemu-img create -q -f qcow2 -F qcow2 -b "$out/guest.qcow2" "$dir/disk.qcow2" 1G

mkfifo "$dir/monitor"
rm -f "$out/smoke-console.log"
start=$(date +%s%N)
qemu-system-x86_64 -accel tcg -m "$mem" -display none -no-reboot \
	-drive "file=$dir/disk.qcow2,if=virtio" \
	-drive "file=$dir/seed.iso,media=cdrom,if=none,id=cd,readonly=on" \
	-device ahci,id=ahci -device ide-cd,drive=cd,bus=ahci.0 \
	-nic "user,model=virtio-net-pci,mac=$mac,hostfwd=tcp:127.0.0.1:$port-:22" \
	-serial "file:$out/smoke-console.log" -monitor stdio <"$dir/monitor" >/dev/null 2>"$dir/qemu.err" &
qemu=$!
exec 3>"$dir/monitor"

ssh=(ssh -i "$dir/key" -p "$port" -o BatchMode=yes -o ConnectTimeout=5
	-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR root@127.0.0.1)
ms() { echo $((($(date +%s%N) - start) / 1000000)); }
for _ in $(seq 1200); do # the console says when sshd is up
	grep -q '^bc-guest: ready' "$out/smoke-console.log" 2>/dev/null && break
	grep -q 'Kernel panic' "$out/smoke-console.log" 2>/dev/null && break
	kill -0 "$qemu" 2>/dev/null || { echo "smoke.sh: QEMU exited: $(cat "$dir/qemu.err")" >&2; exit 1; }
	sleep 0.1
done
grep -q '^bc-guest: ready' "$out/smoke-console.log" || { echo "smoke.sh: not ready; console: $out/smoke-console.log" >&2; exit 1; }
ready=$(ms)
for _ in $(seq 20); do
	if uname=$("${ssh[@]}" uname -a 2>/dev/null); then
		echo "$uname"
		echo "boot: $ready ms to the ready line, $(ms) ms to a done ssh login (console: $out/smoke-console.log)"
		echo system_powerdown >&3
		off=$(date +%s%N)
		for _ in $(seq 100); do
			kill -0 "$qemu" 2>/dev/null || { echo "powered off $((($(date +%s%N) - off) / 1000000)) ms after the ACPI power button"; qemu=; exit 0; }
			sleep 0.1
		done
		echo "smoke.sh: the guest did not power off in 10s" >&2
		exit 1
	fi
	sleep 0.5
done
echo "smoke.sh: no SSH login; console: $out/smoke-console.log" >&2
exit 1
