#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest timers never fire early while NTP slews the host's clock: the apic
# guest's exact TSC-deadline and timer checks, with the runner's
# CLOCK_MONOTONIC 5% faster and then 5% slower than CLOCK_MONOTONIC_RAW
# (where the runner's KVM holds a guest's TSC, KVM counts it on RAW while
# lull's timers run on MONOTONIC). A machine of its own: slew-clock changes
# the rate of every clock on it.
set -eu
runner=$1 slew=$2 lull=$3 guests=$4
"$runner" --timeout 300 -- sh -c '
	for permille in 50 -50; do
		out=$("$1" $permille -- "$2" run --vcpus 2 "$3/apic.elf" 2>&1) || {
			printf "%s\n" "$out"
			echo "FAIL: the apic guest with the clock slewed $permille/1000"
			exit 1
		}
		printf "%s\n" "$out" | grep -E "slew-clock|apic: PASS"
	done' sh "$slew" "$lull" "$guests"
echo "PASS: no early timer with the host clock slewed either way"
