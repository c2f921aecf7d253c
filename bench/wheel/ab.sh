#!/bin/sh
# SPDX-License-Identifier: MIT
# Build timers/ at two revisions as shared objects and compare them in one
# process with wheel-ab (see bench/wheel/wheel_ab.c): alternated round by
# round, pinned to one CPU.
set -eu

usage() {
	cat >&2 <<'USAGE'
usage: bench/wheel/ab.sh BUILD_DIR REV_A [REV_B] [-- wheel-ab options]
  BUILD_DIR  a configured build of this tree (for bench/wheel/wheel-ab)
  REV_A      a git revision; REV_B likewise, default the working tree
e.g.  bench/wheel/ab.sh build HEAD~1 -- --n 100000 --rounds 200
USAGE
	exit 2
}

[ $# -ge 2 ] || usage
build=$1
rev_a=$2
shift 2
rev_b=
if [ $# -gt 0 ] && [ "$1" != -- ]; then
	rev_b=$1
	shift
fi
if [ $# -gt 0 ] && [ "$1" = -- ]; then
	shift
fi
top=$(git rev-parse --show-toplevel)
for rev in "$rev_a" $rev_b; do
	if ! git -C "$top" rev-parse -q --verify "$rev^{commit}" >/dev/null; then
		echo "ab.sh: '$rev' is not a revision of this repository" >&2
		exit 2
	fi
done
ninja -C "$build" bench/wheel/wheel-ab >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The flags of the release build of timers/ (meson.build: -O3, PIC), plus
# whatever '-f...' options that revision's timers/meson.build adds. Every
# function starts a cache line on both sides: otherwise a change to one
# function moves the others, and a few-ns operation whose code did not
# change reads up to ~15% off from where it now sits.
# -I the tree's root: includes that name their folder ("timers/wheel.h");
# -I timers/: a revision from before they did.
so() { # so SRC_DIR OUT
	# shellcheck disable=SC2046 # one word per flag
	gcc -O3 -fPIC -shared -std=gnu11 -D_GNU_SOURCE -falign-functions=64 \
		$(grep -o "'-f[^']*'" "$1/timers/meson.build" | tr -d "'") \
		-I"$1" -I"$1/timers" -I"$1/include" "$1/timers/wheel.c" \
		"$1/timers/wheel_advance.c" "$1/timers/wheel_sort.c" -o "$2"
}
tree() { # tree REV DIR: timers/ and include/ of REV, or of the working tree
	mkdir -p "$2"
	if [ -n "$1" ]; then
		git -C "$top" archive "$1" timers include >"$2.tar"
		tar -x -C "$2" -f "$2.tar"
	else
		cp -r "$top/timers" "$top/include" "$2/"
	fi
}
tree "$rev_a" "$tmp/a"
tree "$rev_b" "$tmp/b"
so "$tmp/a" "$tmp/a.so"
so "$tmp/b" "$tmp/b.so"
echo "A = $rev_a, B = ${rev_b:-the working tree}"
taskset -c 1 "$build/bench/wheel/wheel-ab" "$@" "$tmp/a.so" "$tmp/b.so"
