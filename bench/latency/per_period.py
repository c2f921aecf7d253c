#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What lull does per cyclictest period, from two runs that differ in length.

    bench/latency/per_period.py SHORT LONG

SHORT and LONG are results folders of bench/latency/cyclictest.py, each
with one lull run of the same vCPUs, mode and options, cyclictest -D
shorter in SHORT. Boot, power-off and the histogram's output cost both
runs the same, so the difference of lull's --stats counters over the
difference of completed periods is what one period costs: exits by reason
and I/O device, injections, PV EOIs, host wakeups, and each lateness
cause's time per hard timer (with --lull-arg=--late-threshold=0 every hard
timer is charged, not only the late ones). Counts carry over to any host;
times are the host's.
"""

import json
import os
import sys


def lull_run(folder):
    with open(os.path.join(folder, "results.json")) as f:
        res = json.load(f)
    runs = [r for r in res["results"]
            if r["mode"] != "qemu" and not r.get("failure") and r.get("threads")]
    if len(runs) != 1:
        sys.exit(f"per_period: {folder}: want one completed lull run, found {len(runs)}")
    run = runs[0]
    stats = os.path.join(folder, "runs", os.path.basename(run["console"]).split(".console")[0]
                         + ".stats.json")
    with open(stats) as f:
        return res, run, json.load(f)


def counters(stats):
    """Every per-vCPU counter, summed over vCPUs, flattened to name -> value."""
    out = {}

    def add(key, value):
        out[key] = out.get(key, 0) + value

    for v in stats["vcpus"]:
        for k in ("exits", "injections", "apic_pv_eois", "host_wakeups", "halts",
                  "kicks", "timers_fired_hard", "apic_timer_rearmed"):
            add(k, v.get(k, 0))
        for k, n in v["exits_by_reason"].items():
            add("exits." + k, n)
        for k, n in v["io_exits_by_device"].items():
            add("io." + k, n)
        late = v["lateness"]
        add("late.events", late["events"])
        for cause, c in late.items():
            if isinstance(c, dict) and "ns" in c:
                add("late_ns." + cause, c["ns"])
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    (rs, short, ss), (rl, long_, sl) = lull_run(sys.argv[1]), lull_run(sys.argv[2])
    for key in ("vcpus", "mode"):
        if short[key] != long_[key]:
            sys.exit(f"per_period: the runs differ in {key}: {short[key]} vs {long_[key]}")
    periods = sum(t["periods"] for t in long_["threads"]) - \
        sum(t["periods"] for t in short["threads"])
    if periods <= 0:
        sys.exit("per_period: LONG completed no more periods than SHORT")
    a, b = counters(ss), counters(sl)
    timers = b["timers_fired_hard"] - a["timers_fired_hard"]
    late = b["late.events"] - a["late.events"]
    print(f"{long_['vcpus']} vCPU(s), {long_['mode']}: {periods} more periods in "
          f"{rl['duration'] - rs['duration']} s more of cyclictest")
    print(f"{'per period':28} {'count':>8}")
    for k in sorted(b):
        if k.startswith("late") or k.startswith("exits.other"):
            continue
        print(f"  {k:26} {(b[k] - a.get(k, 0)) / periods:8.2f}")
    # with --late-threshold=0 every timer delivered late is charged; one the
    # timer advance delivered at its expiry is not, and counts as zero
    threshold = sl["vcpus"][0].get("lateness", {}).get("threshold_ns")
    if late and threshold == 0 and late <= timers:
        print(f"per hard timer, expiry to injection ({timers} timers, {timers - late} "
              "on time), mean µs by cause:")
        for k in sorted(b):
            if k.startswith("late_ns."):
                print(f"  {k[8:]:26} {(b[k] - a.get(k, 0)) / timers / 1e3:8.1f}")
    else:
        print(f"(lateness charged for {late} of {timers} hard timers: run both with "
              "--lull-arg=--late-threshold=0 for the causes per timer)")


if __name__ == "__main__":
    main()
