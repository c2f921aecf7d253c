#!/usr/bin/env python3
"""tick-compare: the guest-timers figures, side by side in one run.

Runs at the same time, for SECONDS:
  - the `tick` guest (1 kHz deferrable tick + 10 Hz hard work timer) under
    lull --timer-mode deferrable and under --timer-mode strict;
  - the `idle` guest (4 vCPUs, deferrable timers only, one final hard timer);
  - host-timer-latency, the bare host's wake latency (the floor under any VMM).
Then prints host wakeups/s (lull's count and the kernel's voluntary context
switches of the vCPU threads over a window inside the run), host CPU % of a
core (schedstat of every thread over that window, and for the whole run),
and hard-timer lateness p50/p99/max measured by lull and by the guest.

usage: tick_compare.py [--build DIR] [--seconds S] [--slop NS] [--lull-arg ARG]... [--json]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time


def per_thread(pid, read, only_vcpus=False):
    """Sum of read(tid_dir) over the process's threads (vcpuN only if asked);
    None once the process is gone. Threads that exit meanwhile are skipped."""
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tids:
        d = f"/proc/{pid}/task/{tid}"
        try:
            if only_vcpus:
                with open(f"{d}/comm") as f:
                    if not f.read().startswith("vcpu"):
                        continue
            total += read(d)
        except (OSError, ValueError, IndexError):
            continue
    return total


def voluntary_switches(d):
    with open(f"{d}/status") as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    return 0


def on_cpu_ns(d):
    with open(f"{d}/schedstat") as f:
        return int(f.read().split()[0])


def vcpu_switches(pid):
    """Voluntary context switches of the vcpuN threads: their host wakeups."""
    return per_thread(pid, voluntary_switches, only_vcpus=True)


def cpu_ns(pid):
    """Time on CPU of every thread of the process (schedstat, exact)."""
    return per_thread(pid, on_cpu_ns)


def summary(text, name):
    """key=value pairs of the guest's `name: PASS ...` line."""
    for line in text.splitlines():
        if line.startswith(f"{name}: PASS") or line.startswith(f"{name}: FAIL"):
            return dict(re.findall(r"(\w+)=(\S+)", line)), line.split()[1]
    return {}, "NO-SUMMARY"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="meson build dir (default: build)")
    ap.add_argument("--seconds", type=float, default=10, help="run time (default 10)")
    ap.add_argument("--slop", type=int, help="lull --slop in ns (default: lull's)")
    ap.add_argument("--lull-arg", action="append", default=[], metavar="ARG",
                    help="one more option for every lull run (repeatable), e.g. "
                    "--lull-arg=--no-timer-advance")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    a = ap.parse_args()

    lull = os.path.join(a.build, "vmm", "lull")
    guests = os.path.join(a.build, "guests")
    hostlat = os.path.join(a.build, "bench", "tick", "host-timer-latency")
    for p in (lull, hostlat, os.path.join(guests, "tick.elf")):
        if not os.path.exists(p):
            sys.exit(f"tick-compare: {p} is missing; build first (ninja -C {a.build})")

    secs = int(a.seconds)
    tmp = tempfile.mkdtemp(prefix="lull-tick-")
    runs = {
        "tick-deferrable": ["--timer-mode", "deferrable", "--cmdline", f"seconds={secs}",
                            os.path.join(guests, "tick.elf")],
        "tick-strict": ["--timer-mode", "strict", "--cmdline", f"seconds={secs}",
                        os.path.join(guests, "tick.elf")],
        "idle-deferrable": ["--vcpus", "4", "--cmdline", f"seconds={secs}",
                            os.path.join(guests, "idle.elf")],
    }
    procs = {}
    try:
        for name, args in runs.items():
            stats = os.path.join(tmp, name + ".json")
            slop = ["--slop", str(a.slop)] if a.slop is not None else []
            cmd = [lull, "run", *slop, *a.lull_arg, "--timeout", str(secs + 30),
                   "--stats", stats] + args
            procs[name] = (subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, text=True), stats)
        host = subprocess.Popen([hostlat, "100000", str(max(10, secs * 10 - 10))],
                                stdout=subprocess.PIPE, text=True)
        # The kernel's count over a window inside the run, away from boot and exit.
        time.sleep(1.0)
        k0 = {n: vcpu_switches(p.pid) for n, (p, _) in procs.items()}
        c0 = {n: cpu_ns(p.pid) for n, (p, _) in procs.items()}
        t0 = time.monotonic()
        time.sleep(max(1.0, secs - 2.0))
        k1 = {n: vcpu_switches(p.pid) for n, (p, _) in procs.items()}
        c1 = {n: cpu_ns(p.pid) for n, (p, _) in procs.items()}
        window = time.monotonic() - t0
        outs = {n: p.communicate(timeout=secs + 60) for n, (p, _) in procs.items()}
        host_out = host.communicate(timeout=secs + 60)[0].split()
    finally:
        for p, _ in procs.values():
            if p.poll() is None:
                p.kill()

    result = {"seconds": secs, "slop_ns": a.slop, "lull_args": a.lull_arg,
              "host_timer_latency_ns": dict(zip(("p50", "p99", "max"), map(int, host_out)))}
    for name, (p, stats) in procs.items():
        out, err = outs[name]
        guest = name.split("-")[0]
        fields, verdict = summary(out, guest)
        try:
            with open(stats) as f:
                st = json.load(f)
        except (OSError, ValueError):
            st = None
        r = {"status": p.returncode, "guest_verdict": verdict}
        if st:
            result["slop_ns"] = st["slop_ns"]  # what lull used
            wall = st["wall_ns"] / 1e9
            v = st["vcpus"]
            r.update({
                "wakeups_per_s": sum(x["host_wakeups"] for x in v) / wall,
                "wakeups_per_vcpu": [x["host_wakeups"] for x in v],
                "cpu_pct": 100.0 * st["host_cpu_ns"] / st["wall_ns"],
                "vmm_lateness_ns": v[0]["hard_lateness_ns"],
                "deferred_delay_ns": v[0]["deferred_delay_ns"],
                "timers_fired_hard": sum(x["timers_fired_hard"] for x in v),
                "timers_fired_deferred": sum(x["timers_fired_deferred"] for x in v),
            })
        if k0.get(name) is not None and k1.get(name) is not None:
            r["kernel_wakeups_per_s"] = (k1[name] - k0[name]) / window
        if c0.get(name) is not None and c1.get(name) is not None:
            # Steady state, inside the run: boot and exit are not the tick.
            r["cpu_pct_window"] = 100.0 * (c1[name] - c0[name]) / (window * 1e9)
        if "late_p50_ns" in fields:
            r["guest_lateness_ns"] = {"p50": int(fields["late_p50_ns"]),
                                      "p99": int(fields["late_p99_ns"]),
                                      "max": int(fields["late_max_ns"])}
        if p.returncode != 0:
            r["stderr"] = err.strip()[-400:]
        result[name] = r

    d, s = result["tick-deferrable"], result["tick-strict"]
    if d.get("cpu_pct_window") and s.get("cpu_pct_window"):
        result["strict_over_deferrable_cpu"] = s["cpu_pct_window"] / d["cpu_pct_window"]
        result["strict_over_deferrable_wakeups"] = s["wakeups_per_s"] / max(d["wakeups_per_s"], 1e-9)

    if a.json:
        print(json.dumps(result, indent=2))
        return 0 if all(result[n]["status"] == 0 for n in runs) else 1

    us = lambda h: f"{h['p50']/1e3:.0f}/{h['p99']/1e3:.0f}/{h['max']/1e3:.0f}"
    print(f"tick guest, {secs} s, slop {result['slop_ns']} ns, both modes side by side in one run")
    print(f"{'':22}{'deferrable':>16}{'strict':>16}")
    rows = [("host wakeups/s (lull)", lambda r: f"{r['wakeups_per_s']:.1f}"),
            ("host wakeups/s (kernel)", lambda r: f"{r.get('kernel_wakeups_per_s', float('nan')):.1f}"),
            ("host CPU % of a core (window)", lambda r: f"{r['cpu_pct_window']:.3f}"),
            ("host CPU % of a core (whole run)", lambda r: f"{r['cpu_pct']:.3f}"),
            ("hard late p50/p99/max us (VMM)", lambda r: us(r["vmm_lateness_ns"])),
            ("hard late p50/p99/max us (guest)", lambda r: us(r["guest_lateness_ns"]) if "guest_lateness_ns" in r else "-"),
            ("guest verdict / status", lambda r: f"{r['guest_verdict']}/{r['status']}")]
    for label, f in rows:
        try:
            print(f"{label:32}{f(d):>14}{f(s):>14}")
        except (KeyError, TypeError):
            print(f"{label:32}{'?':>14}{'?':>14}")
    if "strict_over_deferrable_cpu" in result:
        print(f"strict/deferrable: CPU {result['strict_over_deferrable_cpu']:.0f}x, "
              f"wakeups {result['strict_over_deferrable_wakeups']:.0f}x")
    i = result["idle-deferrable"]
    print(f"idle guest, 4 vCPUs, deferrable: host wakeups per vCPU {i.get('wakeups_per_vcpu')}, "
          f"kernel wakeups/s {i.get('kernel_wakeups_per_s', float('nan')):.2f}, "
          f"deferred timers fired {i.get('timers_fired_deferred')}, verdict {i['guest_verdict']}/{i['status']}")
    h = result["host_timer_latency_ns"]
    print(f"bare host timer latency (no VM), 100 ms sleeps: p50/p99/max {us(h)} us")
    return 0 if all(result[n]["status"] == 0 for n in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
