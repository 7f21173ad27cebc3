#!/bin/bash
# Boots a Debian kernel with Soft-RoCE (rdma_rxe) in qemu and runs a script inside it.
# The guest's root is the host's own / shared read-only over virtio-9p, so binaries built
# on the host run there unchanged, against a real ibv_context on rxe0.
# (Adapted from shared/testbeds/softroce/run.sh; self-contained for a clean clone.)
#
# Usage: softroce.sh GUEST_SCRIPT [KEY=VALUE...]
#   The KEY=VALUE pairs go to /mnt/env in the guest (the script sources it); /mnt is a
#   writable share, also left on the host in $WORK/share afterwards.
# Exit: the guest script's exit code; 1 when the guest did not boot or did not finish;
#   77 (skip) only when qemu is absent and cannot be installed here (1 under CI=true).
# Env: WORK (cache + scratch, default /tmp/chorus-softroce-$UID), KVER (kernel; default the
#   newest linux-image-*-amd64-unsigned), MEM (2G), SMP (2), TIMEOUT (600 s),
#   ACCEL (tcg; kvm where hardware virtualisation really works), HOST_PATHS (host
#   directories the guest must see at the same path although the guest mounts tmpfs on
#   /tmp, /run and /dev/shm: e.g. a build tree under /tmp),
#   SHARE (the writable share, default $WORK/share), CONSOLE (the console log, default
#   $WORK/console.log), NET_ARGS (qemu's network options, default -nic none; two_nodes.sh
#   gives each guest two virtio-net NICs), QEMU_PREFIX (a command qemu runs under, e.g.
#   `ip netns exec NS` for NICs that are taps in a network namespace), COMMON (a host directory both guests of
#   two_nodes.sh write to, mounted at /mnt/common). Several may run at once on one WORK:
#   the kernel and initramfs are prepared under a lock.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
GUEST_SCRIPT=$(realpath "$1")
shift
WORK=${WORK:-/tmp/chorus-softroce-$(id -u)}
MEM=${MEM:-2G}; SMP=${SMP:-2}; TIMEOUT=${TIMEOUT:-600}
ACCEL=${ACCEL:-tcg}
if [ "$ACCEL" = kvm ]; then ACCEL_ARGS=(-enable-kvm -cpu "${CPU:-host}"); else ACCEL_ARGS=(-accel tcg,thread=multi -cpu "${CPU:-max}"); fi
mkdir -p "$WORK/debs"
cd "$WORK"
SHARE=${SHARE:-$WORK/share}; CONSOLE=${CONSOLE:-$WORK/console.log}
t0=$(date +%s.%N)
say() { echo "softroce: $*"; }

# 1. host packages: qemu and static busybox for the guest, rdma userspace for the guest's
#    root (which is this host's root). Installing needs root; without qemu we skip.
need=()
for p in qemu-system-x86 busybox-static ibverbs-utils rdma-core ibverbs-providers iproute2; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if ((${#need[@]})); then
  say "installing ${need[*]}"
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 \
        install -y -qq --no-install-recommends "${need[@]}"; } || true
  fi
  if ! command -v qemu-system-x86_64 >/dev/null || [ ! -x /bin/busybox ]; then
    if [ "${CI:-}" = true ]; then  # CI must run this suite: a missing qemu is a failure
      say "FAIL: qemu-system-x86 / busybox-static are not installed and cannot be installed here (CI=true)"
      exit 1
    fi
    say "SKIP: qemu-system-x86 / busybox-static are not installed and cannot be installed here"
    exit 77
  fi
fi

exec 9> "$WORK/prepare.lock"
flock -w 600 9 || { say "FAIL: $WORK/prepare.lock held for 600 s"; exit 1; }
# 2. guest kernel + modules (the -cloud flavour has no rdma_rxe: use the generic one).
newest_kver() {
  apt-cache search --names-only '^linux-image-[0-9.]+-[0-9]+-amd64-unsigned$' 2>/dev/null |
    awk '{print $1}' | sed 's/^linux-image-//; s/-unsigned$//' | sort -V | tail -n1
}
cached_kver() { ls -d "$WORK"/k-*/boot 2>/dev/null | sed "s|.*/k-||; s|/boot||" | sort -V | tail -n1 || true; }
KVER=${KVER:-$(cached_kver)}
KVER=${KVER:-$(newest_kver)}
if [ -z "$KVER" ] && [ "$(id -u)" = 0 ]; then apt-get update -qq || true; KVER=$(newest_kver); fi
[ -n "$KVER" ] || { say "FAIL: no linux-image-*-amd64-unsigned package found (apt lists empty?)"; exit 1; }
KDIR=$WORK/k-$KVER
if [ ! -f "$KDIR/boot/vmlinuz-$KVER" ]; then
  say "downloading linux-image-$KVER-unsigned (~70 MB, once)"
  (cd debs && apt-get download "linux-image-$KVER-unsigned") || { say "FAIL: kernel download"; exit 1; }
  rm -rf "$KDIR"; mkdir -p "$KDIR"
  dpkg-deb -x debs/linux-image-"$KVER"-unsigned_*.deb "$KDIR"
  rm -f debs/linux-image-"$KVER"-unsigned_*.deb
fi
MDIR=$KDIR/lib/modules/$KVER
# Uncompressed ELF vmlinux (has a PVH entry note): qemu boots it directly, skipping the
# real-mode setup and the xz decompressor (seconds under TCG).
if [ ! -f "$WORK/vmlinux-$KVER" ]; then
  python3 - "$KDIR/boot/vmlinuz-$KVER" "$WORK/vmlinux-$KVER" <<'PY'
import lzma, sys
d = open(sys.argv[1], 'rb').read(); i = d.find(b'\xfd7zXZ\x00')
open(sys.argv[2], 'wb').write(lzma.LZMADecompressor().decompress(d[i:]))
PY
fi
[ -f "$MDIR/modules.dep" ] || busybox depmod -b "$KDIR" "$KVER"

# 3. initramfs: static busybox + the module closure for the 9p root and rxe.
MODS="virtio_pci 9pnet_virtio 9p crc32_generic rdma_rxe rdma_ucm dummy veth virtio_net sch_netem"
IMG=$WORK/initramfs-$KVER.cpio.gz
if [ ! -f "$IMG" ] || [ "$HERE/init" -nt "$IMG" ] || [ "$HERE/softroce.sh" -nt "$IMG" ]; then
  IRD=$WORK/initramfs
  rm -rf "$IRD"; mkdir -p "$IRD"/{bin,dev,proc,sys,newroot,lib/modules/$KVER}
  cp /bin/busybox "$IRD/bin/busybox"
  cp "$HERE/init" "$IRD/init"; chmod +x "$IRD/init"
  cp "$MDIR"/modules.{dep,alias,symbols,builtin,order} "$IRD/lib/modules/$KVER/"
  closure() {  # module paths (relative) for module $1 and its dependencies
    local line; line=$(grep -E "/$1\.ko:" "$MDIR/modules.dep" || true)
    [ -n "$line" ] || { echo "missing module $1" >&2; exit 1; }
    echo "$line" | tr -d ':' | tr ' ' '\n'
  }
  for m in $MODS; do closure "$m"; done | sort -u | while read -r f; do
    [ -n "$f" ] || continue
    mkdir -p "$IRD/lib/modules/$KVER/$(dirname "$f")"
    cp "$MDIR/$f" "$IRD/lib/modules/$KVER/$f"
  done
  echo "$MODS" > "$IRD/modules-to-load"
  (cd "$IRD" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) > "$IMG.tmp"
  # qemu's PVH loader hands the kernel a page-rounded initrd; zero-pad so the tail is not "junk"
  truncate -s %4096 "$IMG.tmp"
  mv "$IMG.tmp" "$IMG"
  rm -rf "$IRD"
fi
flock -u 9

# 4. writable share: the guest script, its environment, and its results.
rm -rf "$SHARE"; mkdir -p "$SHARE"
[ -z "${COMMON:-}" ] || mkdir -p "$SHARE/common"  # the guest mounts COMMON here
cp "$GUEST_SCRIPT" "$SHARE/guest.sh"
: > "$SHARE/env"
for kv in "$@"; do printf '%s\n' "export ${kv%%=*}='${kv#*=}'" >> "$SHARE/env"; done
EXTRA_SHARES=()
: > "$SHARE/mounts"
i=0
for p in ${HOST_PATHS:-}; do
  p=$(realpath "$p")
  EXTRA_SHARES+=(-virtfs "local,path=$p,mount_tag=hp$i,security_model=none,readonly=on,multidevs=remap")
  echo "hp$i $p" >> "$SHARE/mounts"
  i=$((i + 1))
done
t1=$(date +%s.%N)

# 5. boot. By default no NIC (-nic none): all RDMA traffic stays inside the guest.
COMMON_SHARE=()
[ -z "${COMMON:-}" ] || COMMON_SHARE=(-virtfs "local,path=$(realpath "$COMMON"),mount_tag=common,security_model=none")
read -r -a NET <<< "${NET_ARGS:--nic none}"
read -r -a PREFIX <<< "${QEMU_PREFIX:-}"
set +e
timeout "$TIMEOUT" "${PREFIX[@]}" qemu-system-x86_64 "${ACCEL_ARGS[@]}" -m "$MEM" -smp "$SMP" \
  -nographic -no-reboot "${NET[@]}" \
  -kernel "$WORK/vmlinux-$KVER" -initrd "$IMG" \
  -append "console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
  -virtfs local,path="$SHARE",mount_tag=share,security_model=none "${EXTRA_SHARES[@]}" "${COMMON_SHARE[@]}" \
  < /dev/null | tr -d '\033' > "$CONSOLE"
qemu_rc=${PIPESTATUS[0]}
set -e
cat "$CONSOLE"
t2=$(date +%s.%N)
if [ ! -s "$SHARE/rc" ]; then
  say "FAIL: the guest did not boot or did not finish (qemu exit $qemu_rc; 124 = timeout ${TIMEOUT}s)"
  exit 1
fi
rc=$(cat "$SHARE/rc")
say "prep $(awk "BEGIN{printf \"%.1f\", $t1-$t0}") s, guest $(awk "BEGIN{printf \"%.1f\", $t2-$t1}") s, guest rc=$rc"
exit "$rc"
