#!/bin/sh
# SPDX-License-Identifier: MIT
# Guest timers never fire early while NTP slews the host's clock, with the
# runner's CLOCK_MONOTONIC 5% faster and then 5% slower than
# CLOCK_MONOTONIC_RAW: the apic guest's exact TSC-deadline and timer
# checks, and the latency guest's one-shot PV timers read on lull's
# pvclock, whose --stats must show the clock's rate. Twice: in the usual
# runner, whose kernel calls its TSC unstable (KVM holds a guest's TSC and
# counts it on RAW while lull's timers run on MONOTONIC), and in one told
# tsc=reliable, where KVM calls the TSC stable and the guest's TSC runs
# with the host's at an offset (as on most hosts): either way the TSC runs at its nominal rate and the
# host's clock does not. Machines of their own: slew-clock changes every
# clock on one.
set -eu
runner=$1 slew=$2 lull=$3 guests=$4
for kernel_arg in "" tsc=reliable; do
	echo "runner kernel arguments: ${kernel_arg:-(none)}"
	"$runner" --timeout 300 ${kernel_arg:+--kernel-arg $kernel_arg} -- sh -c '
		slew=$1 lull=$2 guests=$3 want_stable=$4 stats=/tmp/slewed-stats.json
		for permille in 50 -50; do
			for run in "--vcpus 2 $guests/apic.elf" \
				"--cmdline count=200 $guests/latency.elf"; do
				out=$("$slew" $permille -- "$lull" run --stats $stats $run 2>&1) || {
					printf "%s\n" "$out"
					echo "FAIL: lull run $run with the clock slewed $permille/1000"
					exit 1
				}
				printf "%s\n" "$out" | grep -E "slew-clock|: PASS"
			done
			grep -E "\"tsc_(stable|held)\"" $stats | tr -d "\n"; echo
			# KVM keeps its master clock on a host that trusts its
			# TSC, and only there (docs/abi.md, leaf 0x80000007)
			grep -q "\"tsc_stable\": $want_stable" $stats || {
				echo "FAIL: tsc_stable is not $want_stable"
				exit 1
			}
			ppm=$(sed -n "s/.*\"pvclock_rate_ppm\": \(-*[0-9]*\).*/\1/p" $stats | head -n 1)
			echo "latency: vCPU 0 pvclock_rate_ppm $ppm"
			[ "${ppm:-0}" -gt $((permille * 1000 - 2000)) ] &&
			[ "${ppm:-0}" -lt $((permille * 1000 + 2000)) ] || {
				echo "FAIL: pvclock_rate_ppm ${ppm:-missing}, not about $((permille * 1000))"
				exit 1
			}
		done' sh "$slew" "$lull" "$guests" \
		"$([ -n "$kernel_arg" ] && echo true || echo false)"
done
echo "PASS: no early timer with the host clock slewed either way"
