#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""lateness-cost: what lull's lateness attribution costs the host, in one run.

Runs a guest under up to three lull variants, interleaved, REPS times each:
  base     a lull binary built without the attribution (--base BIN), if given
  default  this build: phase marks, a clock read each
  trace    this build with --trace-late: the thread's CPU-time clock and its
           schedstat read per mark as well
and prints, per variant, the host CPU lull used (user + system, from the
kernel's accounting of the reaped child), the vCPU's exits and halts from
--stats, and CPU per exit; the ratios to the first variant beside them.
CPU times on an emulated host are that host's: compare the ratios.

usage: lateness_cost.py --build DIR [--base LULL] [--reps N]
                        [--guest NAME] [--cmdline STRING] [--mode MODE]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile


def run_once(lull, guest, cmdline, mode, extra):
    """CPU seconds, exits and halts of one run; exits on a failed run."""
    with tempfile.NamedTemporaryFile(suffix=".json") as stats:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run([lull, "run", "--timer-mode", mode,
                            "--stats", stats.name, "--cmdline", cmdline,
                            *extra, guest],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if p.returncode != 0:
            sys.exit(f"lateness-cost: {lull} {' '.join(extra)} ended with "
                     f"status {p.returncode}: {p.stderr.strip()}")
        s = json.load(open(stats.name))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    exits = sum(v["exits"] for v in s["vcpus"])
    halts = sum(v["halts"] for v in s["vcpus"])
    return cpu, exits, halts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="the build directory")
    ap.add_argument("--base", help="a lull binary without the attribution")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--guest", default="tick")
    ap.add_argument("--cmdline", default="seconds=5 tick_us=250")
    ap.add_argument("--mode", default="strict")
    a = ap.parse_args()

    lull = os.path.join(a.build, "vmm", "lull")
    guest = os.path.join(a.build, "guests", a.guest + ".elf")
    variants = []
    if a.base:
        variants.append(("base", a.base, []))
    variants += [("default", lull, []), ("trace", lull, ["--trace-late"])]
    totals = {name: [0.0, 0, 0] for name, _, _ in variants}
    for _ in range(a.reps):
        for name, binary, extra in variants:
            cpu, exits, halts = run_once(binary, guest, a.cmdline, a.mode,
                                         extra)
            t = totals[name]
            t[0] += cpu
            t[1] += exits
            t[2] += halts

    print(f"# {a.guest} '{a.cmdline}', --timer-mode {a.mode}, "
          f"{a.reps} runs per variant, interleaved")
    print(f"{'variant':8} {'CPU s':>8} {'exits':>9} {'halts':>9} "
          f"{'CPU us/exit':>12} {'ratio':>6}")
    first = None
    for name, _, _ in variants:
        cpu, exits, halts = totals[name]
        per_exit = cpu * 1e6 / exits if exits else float("nan")
        first = first or per_exit
        print(f"{name:8} {cpu:8.2f} {exits:9d} {halts:9d} "
              f"{per_exit:12.2f} {per_exit / first:6.3f}")


if __name__ == "__main__":
    main()
