#!/usr/bin/env bash
# Makes sure what the tests use is running: Postgres on 127.0.0.1:5432,
# Redis on 127.0.0.1:6379, and libvirtd with the QEMU driver (socket
# /var/run/libvirt/libvirt-sock), and Chromium for the console's tests.
# Starts them when installed but stopped, and installs Debian's packages
# first when they are missing and we are root.
set -euo pipefail

pg_up() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

install() {
	if [ "$(id -u)" != 0 ]; then
		echo "services.sh: $* missing and not root: install Debian's $* packages" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "$@"
}

if ! pg_up; then
	command -v pg_ctlcluster >/dev/null || install postgresql postgresql-client
	if [ -z "$(ls /etc/postgresql 2>/dev/null)" ]; then
		pg_createcluster "$(ls /usr/lib/postgresql | sort -n | tail -1)" main
	fi
	version=$(ls /etc/postgresql | sort -n | tail -1)
	conf=/etc/postgresql/$version/main
	# Trust local connections, as the tests connect as postgres without a password.
	if ! grep -q '^host all all 127.0.0.1/32 trust' "$conf/pg_hba.conf"; then
		sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\nlocal all all trust' "$conf/pg_hba.conf"
	fi
	pg_ctlcluster --skip-systemctl-redirect "$version" main start || pg_ctlcluster --skip-systemctl-redirect "$version" main restart
	for _ in $(seq 1 50); do pg_up && break; sleep 0.2; done
	pg_up || { echo "services.sh: Postgres did not come up" >&2; exit 1; }
fi

# The fault campaign (e2e/campaign_test.go) runs a Postgres cluster of its
# own, with initdb and pg_ctl of Debian's server package, which a machine
# using a Postgres elsewhere may lack.
if ! command -v pg_ctl >/dev/null && ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
	install postgresql
fi

if ! redis_up; then
	command -v redis-server >/dev/null || install redis-server
	mkdir -p /var/lib/redis /var/log/redis
	redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
		--dir /var/lib/redis --logfile /var/log/redis/ci.log
	for _ in $(seq 1 50); do redis_up && break; sleep 0.2; done
	redis_up || { echo "services.sh: Redis did not come up" >&2; exit 1; }
fi
libvirt_up() { virsh -c qemu:///system version >/dev/null 2>&1; }

# What the libvirt driver and the real-guest test run: each installed when
# missing, whether or not libvirtd already runs.
command -v genisoimage >/dev/null || install genisoimage
# promtool checks the example alert rules (docs/alerts.yml); Debian ships it
# in the prometheus package.
command -v promtool >/dev/null || install prometheus
command -v qemu-system-x86_64 >/dev/null || install qemu-system-x86
command -v qemu-img >/dev/null || install qemu-utils
command -v virsh >/dev/null || install libvirt-clients
# As udev sets it up on a Debian host: the QEMU user may open /dev/kvm.
# Without it, libvirt finds the QEMU capabilities it cached outdated and
# probes QEMU again on every domain definition (some 30 s each). It comes
# after the installs, which make the kvm group on a fresh machine.
if [ -e /dev/kvm ] && [ "$(id -u)" = 0 ]; then
	getent group kvm >/dev/null || groupadd --system kvm
	chgrp kvm /dev/kvm && chmod 0660 /dev/kvm
fi
if ! libvirt_up; then
	command -v libvirtd >/dev/null || install libvirt-daemon-system libvirt-daemon-driver-qemu
	mkdir -p /var/run/libvirt /var/log/libvirt
	pgrep -x virtlogd >/dev/null || virtlogd -d
	pgrep -x libvirtd >/dev/null || libvirtd -d
	for _ in $(seq 1 50); do libvirt_up && break; sleep 0.2; done
	libvirt_up || { echo "services.sh: libvirtd did not come up" >&2; exit 1; }
fi
# The console's end-to-end tests (e2e/console_test.go) drive Debian's
# headless Chromium; they fail, loudly, without it.
command -v chromium >/dev/null || install chromium
# The packaging tests (packaging/): systemd-analyze verifies the units,
# podman builds and runs the container image, with runc (crun refuses the
# hybrid cgroup hierarchy some machines have).
command -v systemd-analyze >/dev/null || install systemd
# The README test (e2e/readme_test.go) runs the README's commands, which
# use jq, curl and ssh-keygen.
command -v jq >/dev/null || install jq
command -v curl >/dev/null || install curl
command -v ssh-keygen >/dev/null || install openssh-client
command -v podman >/dev/null || install podman
command -v runc >/dev/null || install runc
# The real-guest test builds its image from Debian packages (scripts/guest).
if [ "$(id -u)" = 0 ] && ! ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1; then
	apt-get update -qq
fi
echo "services: Postgres, Redis and libvirtd are up; chromium, podman and systemd-analyze are installed"
