#!/bin/sh
# SPDX-License-Identifier: MIT
# lull-nested's file contract: COMMAND sees LULL_NESTED_RUNNER=1; what it
# writes under a --writable folder lands here, what it writes anywhere else
# stays in the guest's memory.
set -eu
runner=$1
shared=$(mktemp -d)
private=$(mktemp -d)
trap 'rm -rf "$shared" "$private"' EXIT
"$runner" --timeout 300 --writable "$shared" -- sh -c '
	test "$LULL_NESTED_RUNNER" = 1 || { echo "LULL_NESTED_RUNNER is not 1"; exit 1; }
	echo kept >"$1/file" && echo lost >"$2/file"' sh "$shared" "$private"
[ "$(cat "$shared/file")" = kept ] || { echo "FAIL: $shared/file was not written back"; exit 1; }
[ ! -e "$private/file" ] || { echo "FAIL: a write outside --writable reached the host"; exit 1; }
echo "PASS: --writable folders are written back, the rest is not"
