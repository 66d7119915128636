#!/usr/bin/env bash
# Builds the test guest: OUTDIR/guest.qcow2, a small BIOS-bootable disk (a
# FAT filesystem with syslinux, Debian's kernel and an initramfs whose /init
# reads the NoCloud seed and starts dropbear), from Debian packages only.
# The packages are cached in OUTDIR/debs; when OUTDIR/guest.stamp says the
# image was built by these scripts, it exits at once.
# Needs apt (with current lists), dpkg-deb, qemu-img, gzip, flock; not root.
#
# Usage: scripts/guest/build.sh OUTDIR
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
cache=$out/debs
mkdir -p "$cache"

die() { echo "build.sh: $*" >&2; exit 1; }
for tool in apt-get apt-cache dpkg-deb qemu-img gzip sha256sum flock; do
	command -v "$tool" >/dev/null || die "$tool is missing"
done

exec 9>"$out/.lock"
flock 9 # one build at a time per OUTDIR

# Up to date: built by these very scripts. The packages are not looked up
# again (apt is slow, and may be offline): remove OUTDIR/guest.stamp to
# rebuild with the newest packages of the apt lists.
stamp=$(cd "$here" && find build.sh syslinux.cfg rootfs -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d ' ' -f 1)
if [ -f "$out/guest.qcow2" ] && [ "$(head -n 1 "$out/guest.stamp" 2>/dev/null)" = "$stamp" ]; then
	exit 0
fi

# The packages: Debian's generic kernel (its cloud kernel has no AHCI
# driver, and the seed is a SATA CD-ROM), busybox, dropbear and the libraries
# dropbear links, syslinux and the mtools it drives.
kernel=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[^ ]*\)$/\1/p' | head -n 1)
[ -n "$kernel" ] || die "linux-image-amd64 is not in the apt lists: run apt-get update"
wanted="$kernel busybox-static dropbear-bin libc6 libcrypt1 libtomcrypt1 libtommath1 libgmp10 zlib1g syslinux syslinux-common mtools"
# shellcheck disable=SC2086
uris=$(apt-get download --print-uris $wanted 2>/dev/null) || die "apt cannot find $wanted: run apt-get update"
debs=$(echo "$uris" | awk '{print $2, $4}') # file SHA256:sum

log=$out/build.log
: >"$log"
trap 'echo "build.sh: failed; its log, $log:" >&2; tail -n 30 "$log" >&2' ERR

# Download what the cache lacks, check every file against the apt lists,
# and drop what is no longer wanted.
fresh() { [ -f "$cache/$1" ] && [ "${2%%:*}" = SHA256 ] && echo "${2#SHA256:}  $cache/$1" | sha256sum -c --status; }
missing=
while read -r file sum; do
	fresh "$file" "$sum" || missing="$missing ${file%%_*}"
done <<<"$debs"
if [ -n "$missing" ]; then
	# shellcheck disable=SC2086
	(cd "$cache" && apt-get download -o APT::Sandbox::User=root $missing) >>"$log" 2>&1
	while read -r file sum; do
		fresh "$file" "$sum" || die "$file: bad download"
	done <<<"$debs"
fi
for f in "$cache"/*.deb; do
	grep -qxF "${f##*/}" <<<"$(echo "$debs" | cut -d ' ' -f 1)" || rm -f "$f"
done
deb() { echo "$cache/$(echo "$debs" | awk -v p="$1" 'index($1, p "_") == 1 {print $1}')"; }

work=$out/work
rm -rf "$work"
mkdir -p "$work/kernel" "$work/pkgs"
trap 'rm -rf "$work"' EXIT
dpkg-deb -x "$(deb "$kernel")" "$work/kernel"
for p in busybox-static dropbear-bin libc6 libcrypt1 libtomcrypt1 libtommath1 libgmp10 zlib1g syslinux syslinux-common mtools; do
	dpkg-deb -x "$(deb "$p")" "$work/pkgs"
done
pkgs=$work/pkgs
bb=$pkgs/bin/busybox

# The initramfs.
root=$work/root
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,run,tmp,root,etc,lib/modules,lib64,lib/x86_64-linux-gnu,var/log}
ln -s /run "$root/var/run"
touch "$root/run/utmp" "$root/var/log/wtmp" "$root/var/log/lastlog" # for dropbear's login records
cp "$bb" "$root/bin/busybox"
for applet in $("$bb" --list-full); do
	[ -e "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
done
cp "$pkgs/usr/sbin/dropbear" "$root/usr/sbin/"
cp "$pkgs/usr/bin/dropbearkey" "$root/usr/bin/"
# The libraries they link, as the loader of the libc6 package resolves them.
loader=$pkgs/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
libpath=$pkgs/lib/x86_64-linux-gnu:$pkgs/usr/lib/x86_64-linux-gnu
for bin in "$root/usr/sbin/dropbear" "$root/usr/bin/dropbearkey"; do
	"$loader" --library-path "$libpath" --list "$bin" >"$work/libs"
	! grep 'not found' "$work/libs" || die "${bin##*/}: a library is missing"
	awk '$2 == "=>" && $3 ~ /^\// {print $3}' "$work/libs" | while read -r lib; do
		cp -L "$lib" "$root/lib/x86_64-linux-gnu/"
	done
done
cp "$loader" "$root/lib/x86_64-linux-gnu/"
ln -s /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$root/lib64/ld-linux-x86-64.so.2"

# The modules (those the kernel has as =m), each after what it depends on.
kver=$(ls "$work/kernel/lib/modules")
mods=$work/kernel/lib/modules/$kver
find "$mods/kernel" -name '*.ko' >"$work/modules"
: >"$root/lib/modules/order"
declare -A added
add_module() {
	local m=$1 f dep
	[ -z "${added[$m]:-}" ] || return 0
	added[$m]=1
	f=$(grep -E "/(${m}|${m//_/-})\.ko$" "$work/modules" | head -n 1) || true
	if [ -z "$f" ]; then
		grep -qE "/(${m}|${m//_/-})\.ko$" "$mods/modules.builtin" || die "module $m not found"
		return 0 # built in
	fi
	for dep in $(tr '\0' '\n' <"$f" | sed -n 's/^depends=//p' | head -n 1 | tr , ' '); do
		add_module "$dep"
	done
	cp "$f" "$root/lib/modules/$m.ko"
	echo "$m" >>"$root/lib/modules/order"
}
# AHCI and the CD-ROM for the seed, virtio for the NIC, the virtio disk and
# its FAT filesystem (/data), the power button.
for m in ahci sr_mod isofs virtio_pci virtio_net virtio_blk vfat nls_cp437 nls_ascii button evdev; do
	add_module "$m"
done

cp -R "$here/rootfs/." "$root/"
chmod 755 "$root/init" "$root/etc/acpi/PWRF/00000080" "$root/usr/share/udhcpc/default.script"
chmod 700 "$root/root"
chmod 1777 "$root/tmp"
(cd "$root" && find . | LC_ALL=C sort | "$bb" cpio -o -H newc -R 0:0 2>>"$log") | gzip -9n >"$work/initrd.img"

# The disk: one FAT filesystem, no partition table, syslinux in its boot
# sector; then qcow2.
cp "$work/kernel/boot/vmlinuz-$kver" "$work/vmlinuz"
mb=$(($(stat -c %s "$work/vmlinuz") / 1048576 + $(stat -c %s "$work/initrd.img") / 1048576 + 3))
export PATH=$pkgs/usr/bin:$PATH MTOOLS_SKIP_CHECK=1 MTOOLSRC=/dev/null
img=$work/guest.raw
{
	mformat -i "$img" -C -T $((mb * 2048)) -h 64 -s 32 -v BCGUEST ::
	mcopy -i "$img" "$work/vmlinuz" "$work/initrd.img" "$here/syslinux.cfg" ::
	"$pkgs/usr/bin/syslinux" --install "$img"
} >>"$log" 2>&1
qemu-img convert -q -c -O qcow2 "$img" "$out/guest.qcow2.tmp"
mv "$out/guest.qcow2.tmp" "$out/guest.qcow2"
{ echo "$stamp"; echo "$debs" | cut -d " " -f 1; } >"$out/guest.stamp" # and what it was built from
rm -f "$log"
