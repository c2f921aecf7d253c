#!/bin/sh
# SPDX-License-Identifier: MIT
# README demo: 32 `tick` VMs for 5 s each in lull-deferrable, lull-strict and
# qemu (when qemu-system-x86_64 is installed), side by side; under a minute.
# Builds lull first if needed (meson + ninja in ./build-density).
# Extra arguments go to density.py (e.g. --vms 8, --out DIR).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${LULL_BUILD:-$root/build-density}
if [ ! -x "$build/vmm/lull" ] || [ ! -f "$build/guests/tick.elf" ]; then
	[ -d "$build" ] || meson setup "$build" "$root" >/dev/null
	ninja -C "$build" >/dev/null
fi
exec python3 "$here/density.py" --build "$build" --guest tick --vms 32 \
	--seconds 5 --repeat 1 --boot-timeout 5 --cooldown 0.5 \
	--out "$build/density/demo" "$@"
