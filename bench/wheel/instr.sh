#!/bin/sh
# SPDX-License-Identifier: MIT
# Instructions per wheel operation, from callgrind's inclusive counts of the
# wheel-bench phase functions (one repetition per N). Stable under load,
# unlike the timings. Usage: instr.sh path/to/wheel-bench [N ...]
set -eu
bench=$1
shift
[ $# -gt 0 ] || set -- 1000 10000 100000 1000000
half() { echo $(( ($1 + 1) / 2 )); } # hard timers: the even indices
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%9s  %-20s %10s\n' n op wheel_instr
for n in "$@"; do
	valgrind --tool=callgrind --callgrind-out-file="$out/cg" \
		"$bench" --reps 1 --n "$n" >/dev/null 2>&1
	callgrind_annotate --inclusive=yes --threshold=100 "$out/cg" \
		2>/dev/null | awk 'match($0, /wheel_phase_[a-z_]+/) {
			name = substr($0, RSTART + 12, RLENGTH - 12);
			gsub(/,/, "", $1); print name, $1 }' >"$out/ir"
	ir() { awk -v p="$1" '$1 == p { print $2 }' "$out/ir"; }
	h=$(half "$n")
	for op in add del mod_same mod_far; do
		printf '%9s  %-20s %10.1f\n' "$n" "$op" \
			"$(echo "$(ir $op) / $n" | bc -l)"
	done
	printf '%9s  %-20s %10.1f\n' "$n" next_hard_cached \
		"$(echo "$(ir next_hard_cached) / 1000000" | bc -l)"
	printf '%9s  %-20s %10.1f\n' "$n" next_hard_recompute \
		"$(echo "($(ir del_earliest_query) - $(ir del_earliest)) / $h" | bc -l)"
	printf '%9s  %-20s %10.1f\n' "$n" expire \
		"$(echo "$(ir expire) / $n" | bc -l)"
done
