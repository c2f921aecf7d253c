#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Compare two wheel-bench binaries fairly on a machine whose speed drifts.

Runs A and B alternately (A B, B A, A B, ...) pinned to one CPU, so that a
slow minute hits both, and prints per (n, op) the minimum and the median
wheel_ns of each and the ratio of medians B/A. Build the two versions in
their own directories first, e.g. with `git worktree add` (and run meson
setup from inside the worktree: it takes the current directory as the
source).

Know the noise floor before reading a ratio: one binary against a copy of
itself, 8 rounds, gave median ratios from 0.66 to 1.12 while the minimums
agreed within about 10%. Trust a difference the minimums show too, or one
in instructions per op (bench/wheel/instr.sh).

usage: ab.py A/wheel-bench B/wheel-bench [--rounds R] [--n LIST] [--ops LIST]
"""
import argparse
import json
import statistics
import subprocess
import sys


def run(binary, n_list, cpu):
    out = subprocess.run(
        ["taskset", "-c", cpu, binary, "--json", "--reps", "3", "--n", n_list],
        capture_output=True, text=True, check=True).stdout
    return json.loads(out)["rows"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--rounds", type=int, default=6,
                    help="runs of each binary (default 6)")
    ap.add_argument("--n", default="1000,10000,100000",
                    help="timer counts passed to wheel-bench")
    ap.add_argument("--ops", help="comma-separated ops to print (default all)")
    ap.add_argument("--cpu", default="1", help="CPU to pin to (default 1)")
    args = ap.parse_args()
    ops = set(args.ops.split(",")) if args.ops else None

    samples = {args.a: {}, args.b: {}}
    for r in range(args.rounds):
        order = (args.a, args.b) if r % 2 == 0 else (args.b, args.a)
        for binary in order:
            for row in run(binary, args.n, args.cpu):
                key = (row["n"], row["op"])
                samples[binary].setdefault(key, []).append(row["wheel_ns"])
        print(f"round {r + 1}/{args.rounds}", file=sys.stderr)

    print(f"{'n':>8} {'op':<20} {'min A':>7} {'min B':>7} "
          f"{'med A':>7} {'med B':>7} {'B/A':>6}")
    for key, a in samples[args.a].items():
        if ops and key[1] not in ops:
            continue
        b = samples[args.b][key]
        ma, mb = statistics.median(a), statistics.median(b)
        print(f"{key[0]:>8} {key[1]:<20} {min(a):7.2f} {min(b):7.2f} "
              f"{ma:7.2f} {mb:7.2f} {mb / ma if ma else 0:6.2f}")


if __name__ == "__main__":
    main()
