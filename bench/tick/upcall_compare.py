#!/usr/bin/env python3
"""upcall-compare: what upcall delivery saves per host wakeup, side by side in one run.

Runs at the same time, for SECONDS, the `tick` guest (deferrable tick every
TICK_US + hard 100 ms work timer) under lull three ways:
  - deferrable, delivery=upcall: both slots bound to the vCPU's upcall, so a
    wakeup that runs the work timer and the deferred tick is one injection;
  - deferrable, delivery=vector: each slot on its own vector (two injections,
    the second after an IRQ-window exit);
  - strict, delivery=vector: the classic VMM, every tick a hard wakeup.
Then prints per run: host wakeups/s, injections per wakeup, exits per
wakeup (all of them, and without the console's port exits: the guest's
closing lines are a few hundred COM1 writes), IRQ-window exits per wakeup,
the guest's upcall count, and host CPU % of a core (schedstat of every thread
over a window inside the run, and for the whole run). A wakeup is lull's
host_wakeups (a return from the idle wait).

usage: upcall_compare.py [--build DIR] [--seconds S] [--tick-us N] [--json]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

# the same /proc readers as the deferrable-vs-strict comparison beside it
from tick_compare import on_cpu_ns, per_thread


def summary(text):
    """key=value pairs of the tick guest's PASS/FAIL line, and the verdict."""
    for line in text.splitlines():
        if line.startswith("tick: PASS") or line.startswith("tick: FAIL"):
            return dict(re.findall(r"(\w+)=(\S+)", line)), line.split()[1]
    return {}, "NO-SUMMARY"


def upcalls(text):
    m = re.search(r"^tick: upcalls=(\d+) empty=(\d+)", text, re.M)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


RUNS = {
    "deferrable-upcall": ("deferrable", "upcall"),
    "deferrable-vector": ("deferrable", "vector"),
    "strict-vector": ("strict", "vector"),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="meson build dir (default: build)")
    ap.add_argument("--seconds", type=float, default=10, help="run time (default 10)")
    ap.add_argument("--tick-us", type=int, default=1000, help="the guest's tick period (default 1000)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    a = ap.parse_args()

    lull = os.path.join(a.build, "vmm", "lull")
    tick = os.path.join(a.build, "guests", "tick.elf")
    for p in (lull, tick):
        if not os.path.exists(p):
            sys.exit(f"upcall-compare: {p} is missing; build first (ninja -C {a.build})")

    secs = int(a.seconds)
    tmp = tempfile.mkdtemp(prefix="lull-upcall-")
    procs = {}
    try:
        for name, (mode, delivery) in RUNS.items():
            stats = os.path.join(tmp, name + ".json")
            cmd = [lull, "run", "--timeout", str(secs + 30), "--timer-mode", mode,
                   "--stats", stats, "--cmdline",
                   f"seconds={secs} tick_us={a.tick_us} delivery={delivery}", tick]
            procs[name] = (subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, text=True), stats)
        time.sleep(1.0)
        c0 = {n: per_thread(p.pid, on_cpu_ns) for n, (p, _) in procs.items()}
        t0 = time.monotonic()
        time.sleep(max(1.0, secs - 2.0))
        c1 = {n: per_thread(p.pid, on_cpu_ns) for n, (p, _) in procs.items()}
        window = time.monotonic() - t0
        outs = {n: p.communicate(timeout=secs + 60) for n, (p, _) in procs.items()}
    finally:
        for p, _ in procs.values():
            if p.poll() is None:
                p.kill()

    result = {"seconds": secs, "tick_us": a.tick_us}
    for name, (p, stats) in procs.items():
        out, err = outs[name]
        fields, verdict = summary(out)
        r = {"status": p.returncode, "guest_verdict": verdict,
             "delivery": fields.get("delivery")}
        r["upcalls"], r["upcalls_empty"] = upcalls(out)
        try:
            with open(stats) as f:
                st = json.load(f)
        except (OSError, ValueError):
            st = None
        if st:
            v = st["vcpus"][0]
            wakes = max(v["host_wakeups"], 1)
            console = v["io_exits_by_device"]["console"]
            r.update({
                "host_wakeups": v["host_wakeups"],
                "wakeups_per_s": v["host_wakeups"] / (st["wall_ns"] / 1e9),
                "injections": v["injections"],
                "exits": v["exits"],
                "console_exits": console,
                "injections_per_wake": v["injections"] / wakes,
                "exits_per_wake": v["exits"] / wakes,
                "exits_per_wake_no_console": (v["exits"] - console) / wakes,
                "irq_window_per_wake": v["exits_by_reason"]["irq_window"] / wakes,
                "exits_by_reason": v["exits_by_reason"],
                "timers_fired_hard": v["timers_fired_hard"],
                "timers_fired_deferred": v["timers_fired_deferred"],
                "cpu_pct": 100.0 * st["host_cpu_ns"] / st["wall_ns"],
            })
        if c0.get(name) is not None and c1.get(name) is not None:
            r["cpu_pct_window"] = 100.0 * (c1[name] - c0[name]) / (window * 1e9)
        if p.returncode != 0:
            r["stderr"] = err.strip()[-400:]
        result[name] = r

    ok = all(result[n]["status"] == 0 for n in RUNS)
    if a.json:
        print(json.dumps(result, indent=2))
        return 0 if ok else 1

    print(f"tick guest, {secs} s, tick {a.tick_us} us + 100 ms hard work timer, "
          "three runs side by side in one run")
    print(f"{'':34}" + "".join(f"{n:>20}" for n in RUNS))
    rows = [("host wakeups/s", lambda r: f"{r['wakeups_per_s']:.1f}"),
            ("injections / wakeup", lambda r: f"{r['injections_per_wake']:.2f}"),
            ("exits / wakeup", lambda r: f"{r['exits_per_wake']:.2f}"),
            ("exits / wakeup, no console", lambda r: f"{r['exits_per_wake_no_console']:.2f}"),
            ("IRQ-window exits / wakeup", lambda r: f"{r['irq_window_per_wake']:.2f}"),
            ("guest upcalls (empty)", lambda r: "-" if r["upcalls"] is None
             else f"{r['upcalls']} ({r['upcalls_empty']})"),
            ("host CPU % of a core (window)", lambda r: f"{r['cpu_pct_window']:.2f}"),
            ("host CPU % of a core (whole run)", lambda r: f"{r['cpu_pct']:.2f}"),
            ("guest verdict / status", lambda r: f"{r['guest_verdict']}/{r['status']}")]
    for label, f in rows:
        cells = []
        for n in RUNS:
            try:
                cells.append(f(result[n]))
            except (KeyError, TypeError):
                cells.append("?")
        print(f"{label:34}" + "".join(f"{c:>20}" for c in cells))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
