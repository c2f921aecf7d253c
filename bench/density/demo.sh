#!/bin/sh
# SPDX-License-Identifier: MIT
# README demo: how many `tick` VMs this host carries, per mode. A sweep of
# 1, 8, 32 and 128 concurrent VMs, 3 s each, in lull-deferrable, lull-strict
# and qemu (when qemu-system-x86_64 is installed), side by side; a mode
# stops growing at the first N past the SLO (host CPU <= half the machine,
# no failed VM, p99 lateness <= 1 ms or twice the mode's own with one VM
# alone, whichever is more: on an emulating KVM one VM is already late).
# About a minute. Builds lull first if needed (meson + ninja in
# ./build-density).
#
# Without a usable /dev/kvm it runs on tests/nested/lull-nested instead: a
# standard KVM inside a machine QEMU emulates, 1, 4 and 8 VMs per mode, a
# few minutes, and says so. Results go to BUILD/density/demo either way.
# Extra arguments go to density.py (e.g. --vms 1,8).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${LULL_BUILD:-$root/build-density}
build=$(mkdir -p "$build" && cd "$build" && pwd)
if [ ! -x "$build/vmm/lull" ] || [ ! -f "$build/guests/tick.elf" ]; then
	[ -f "$build/build.ninja" ] || meson setup "$build" "$root" >/dev/null
	ninja -C "$build" >/dev/null
fi
out=$build/density/demo
mkdir -p "$out"
set -- --build "$build" --guest tick --seconds 3 --repeat 1 --cooldown 0.5 \
	--stop-past-slo --p99-growth 2 --out "$out" "$@"

if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
	exec python3 "$here/density.py" --vms 1,8,32,128 --boot-timeout 5 "$@"
fi

cat <<MSG
demo: this machine has no usable /dev/kvm, so the demo runs on
tests/nested/lull-nested: Debian's kernel with its standard KVM (kvm_amd),
inside a whole machine that QEMU emulates in software. Up to 8 VMs per
mode, not 128, as emulation is far slower. Host CPU figures there are of the emulated
machine: compare the modes with each other, not with real hardware. Wakeups
per VM carry over. (The first run fetches Debian's kernel package.)

MSG
exec "$root/tests/nested/lull-nested" --timeout 1500 --writable "$out" -- \
	python3 "$here/density.py" --vms 1,4,8 --boot-timeout 60 "$@"
