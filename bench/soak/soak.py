#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""lull soak: N VMs in deferrable mode for M minutes, every timer accounted for.

Half the VMs (--tick-fraction) run the `tick` guest (a deferrable periodic
tick and a hard periodic work timer on one vCPU), the rest `idle` (a 10 ms
deferrable tick on every vCPU, one hard one-shot at the end). Each guest
runs for the soak's duration, stops its timers, waits until everything
lull raised has been handled, prints one "account" line per timer slot
(docs/guests.md) and exits. Each VM is then reconciled, exactly:

  guest handled == slot delivered   per slot: every delivery reached the guest
  guest irqs == lull injections     per vCPU: every injection reached a handler
  delivered <= timers fired <= delivered + merged
                                    per vCPU and kind (hard, deferrable):
                                    lull's expirations against the counters
                                    (a fired timer that found its vector
                                    still owed counts as merged)
  K(lo) <= delivered + merged <= K(hi)
                                    per periodic slot, against elapsed time:
                                    K(t) = grid points first + k * period <= t.
                                    Under --missed-ticks one (the default)
                                    every period is either delivered or
                                    counted merged. lo is a deadline lull
                                    provably ran the wheel after (the last
                                    hard timer handled), hi the guest's
                                    clock after stopping the slot; the gap
                                    is the start/stop edge, no tolerance.

A mismatch is timers "unaccounted" (with the count and reason); lull
failing (exit status not 0, no --stats, no account lines) is "failed".
The exit status is 1 if any VM failed, any timer is unaccounted or a
--fault could not be applied.

--fault stops every VM, starves it with SCHED_FIFO hogs, runs KSM over it
or caps its memory cgroup for a few seconds in the middle of the run
(faults.py); the reconciliation is the same.

Where /dev/kvm is missing, the soak runs itself inside
tests/nested/lull-nested (a standard KVM under QEMU's emulation) and says
so; there the default rates are lower (see --work-ms).
Python 3 standard library only.
"""

import argparse
import datetime
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time

import faults

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNER = os.path.join(ROOT, "tests", "nested", "lull-nested")
JSON_BEGIN = "--- soak results.json ---"
JSON_END = "--- end of results.json ---"
ACCOUNT_RE = re.compile(r"^(tick|idle): account vcpu=(\d+) (.*)$")
KINDS = ("hard", "deferrable")


def log(msg):
    print(f"soak: {msg}", file=sys.stderr, flush=True)


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="soak.py", description=__doc__.split("\n\n", 1)[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--vms", type=int, default=128, metavar="N",
                    help="VMs, all at once (default 128; the runner holds 512 in 9 GiB)")
    ap.add_argument("--minutes", type=float, default=5.0, metavar="M",
                    help="how long every guest runs (default 5; rounded to whole seconds)")
    ap.add_argument("--lull", default=os.path.join(ROOT, "build", "vmm", "lull"),
                    metavar="PATH", help="lull binary (default build/vmm/lull)")
    ap.add_argument("--guests", default=None, metavar="DIR",
                    help="folder with tick.elf and idle.elf (default: next to --lull, "
                         "BUILD/guests)")
    ap.add_argument("--out", default=None, metavar="DIR",
                    help="results.json goes here (default BUILD/soak/YYYYmmdd-HHMMSS)")
    ap.add_argument("--tick-fraction", type=float, default=0.5, metavar="F",
                    help="share of the VMs that run tick, the rest idle (default 0.5)")
    ap.add_argument("--tick-us", type=int, default=1000, metavar="US",
                    help="tick's deferrable tick period (default 1000)")
    ap.add_argument("--work-ms", type=int, default=None, metavar="MS",
                    help="tick's hard work period: every VM wakes the host this often. "
                         "Default 100 on a real host, as the tick guest's own default; "
                         "1000 inside the nested runner, where each wake costs a few ms "
                         "of emulated CPU and 64 tick VMs at 10 wakeups/s would need "
                         "more than the runner's 2 emulated CPUs")
    ap.add_argument("--idle-vcpus", type=int, default=2, metavar="N",
                    help="vCPUs of each idle VM (default 2: the end IPI is exercised)")
    ap.add_argument("--missed-ticks", default="one", choices=("one",),
                    help="lull's policy; the reconciliation assumes one (default)")
    ap.add_argument("--fault", choices=faults.KINDS, default=None,
                    help="a host fault in the middle of the run (faults.py says what each does)")
    ap.add_argument("--fault-s", type=float, default=5.0, metavar="S",
                    help="how long the fault lasts (default 5)")
    ap.add_argument("--fault-at", type=float, default=None, metavar="S",
                    help="when it starts, in seconds after the last VM started "
                         "(default a third of the run)")
    ap.add_argument("--nested", choices=("auto", "always", "never"), default="auto",
                    help="run inside tests/nested/lull-nested: auto = when /dev/kvm is "
                         "missing (default)")
    ap.add_argument("--nested-mem", default=None, metavar="SIZE",
                    help="the runner's guest RAM (default 1G + 16M per VM, at most 20G)")
    cfg = ap.parse_args(argv)
    if cfg.vms < 1 or cfg.minutes <= 0 or cfg.idle_vcpus < 1 or cfg.tick_us < 100:
        ap.error("--vms, --minutes, --idle-vcpus must be positive, --tick-us at least 100")
    if not 0 <= cfg.tick_fraction <= 1:
        ap.error("--tick-fraction is between 0 and 1")
    cfg.seconds = max(1, round(cfg.minutes * 60))
    if cfg.fault:
        if cfg.fault_at is None:
            cfg.fault_at = cfg.seconds / 3
        if cfg.fault_s <= 0 or cfg.fault_at < 0 or cfg.fault_at + cfg.fault_s > cfg.seconds - 2:
            ap.error(f"--fault-at {cfg.fault_at:g} + --fault-s {cfg.fault_s:g} must end "
                     f"at least 2 s before the guests do ({cfg.seconds} s)")
        why = faults.check(cfg.fault)
        if why:
            ap.error(why)
    cfg.lull = os.path.abspath(cfg.lull)
    build = os.path.dirname(os.path.dirname(cfg.lull))
    cfg.guests = os.path.abspath(cfg.guests or os.path.join(build, "guests"))
    if cfg.out is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        cfg.out = os.path.join(build, "soak", stamp)
    cfg.out = os.path.abspath(cfg.out)
    for path in (cfg.lull, os.path.join(cfg.guests, "tick.elf"),
                 os.path.join(cfg.guests, "idle.elf")):
        if not os.path.isfile(path):
            ap.error(f"{path} is missing: build first (ninja -C build) or give --lull/--guests")
    return cfg


# --------------------------------------------------------------------------
# running the VMs (where /dev/kvm exists)


class VM:
    def __init__(self, idx, guest, cfg, tmp):
        self.idx, self.guest = idx, guest
        self.vcpus = 1 if guest == "tick" else cfg.idle_vcpus
        base = os.path.join(tmp, f"vm{idx:03d}-{guest}")
        self.stats, self.console, self.stderr = base + ".json", base + ".out", base + ".err"
        args = f"seconds={cfg.seconds}"
        if guest == "tick":
            args += f" tick_us={cfg.tick_us} work_ms={cfg.work_ms}"
        self.argv = [cfg.lull, "run", "--timer-mode", "deferrable",
                     "--missed-ticks", cfg.missed_ticks, "--vcpus", str(self.vcpus),
                     "--stats", self.stats, "--console", self.console,
                     # only a safety net: the guest ends itself
                     "--timeout", str(2 * cfg.seconds + 120),
                     *getattr(cfg, "lull_args", ()),
                     "--cmdline", args, os.path.join(cfg.guests, guest + ".elf")]
        self.pid = self.status = None
        self.cpu_s = 0.0
        self.spawn_error = None

    def start(self):
        files = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                 (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                 (os.POSIX_SPAWN_OPEN, 2, self.stderr,
                  os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)]
        try:
            # posix_spawn, not Popen: wait4() reaps the VMs and gives each one's rusage
            self.pid = os.posix_spawn(self.argv[0], self.argv, os.environ,
                                      file_actions=files, setsid=True)
        except OSError as e:
            self.spawn_error = str(e)


def run_vms(cfg, tmp):
    n_tick = round(cfg.vms * cfg.tick_fraction)
    # interleaved, so tick and idle VMs start spread over the spawn phase
    vms = [VM(i, "tick" if i * n_tick // cfg.vms != (i + 1) * n_tick // cfg.vms else "idle",
              cfg, tmp) for i in range(cfg.vms)]
    fault = faults.Fault(cfg.fault, cfg.fault_at, cfg.fault_s, log) if cfg.fault else None
    t0 = time.monotonic()
    for vm in vms:
        vm.start()
    spawn_s = time.monotonic() - t0
    log(f"{cfg.vms} VMs started in {spawn_s:.1f} s; each runs {cfg.seconds} s")
    by_pid = {vm.pid: vm for vm in vms if vm.pid}
    if fault:
        fault.pids = list(by_pid)
        fault.start()
    left, last = len(by_pid), time.monotonic()
    while left:
        try:
            pid, status, ru = os.wait4(-1, 0)
        except ChildProcessError:
            break
        except KeyboardInterrupt:
            log("interrupted: stopping every VM (they will count as failed)")
            for vm in vms:
                if vm.pid and vm.status is None:
                    try:
                        os.kill(vm.pid, signal.SIGTERM)
                    except ProcessLookupError:
                        pass
            continue
        vm = by_pid.get(pid)
        if vm is None:
            continue
        vm.status = os.waitstatus_to_exitcode(status)
        vm.cpu_s = ru.ru_utime + ru.ru_stime
        left -= 1
        if time.monotonic() - last > 30 or not left:
            last = time.monotonic()
            log(f"{cfg.vms - left}/{cfg.vms} VMs ended after {last - t0:.0f} s")
    if fault:
        fault.finish()
    return vms, spawn_s, time.monotonic() - t0, fault.record if fault else None


# --------------------------------------------------------------------------
# reconciliation


def grid_points(first, period, t):
    """Grid points first + k * period (k >= 0) at or before t."""
    return (t - first) // period + 1 if t >= first else 0


def read_accounts(path):
    """{vcpu: {"slots": [fields...], "irqs": n}} and the guest's last verdict line."""
    out, verdict = {}, None
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return out, None
    for line in lines:
        if re.match(r"^(tick|idle): (PASS|FAIL|SKIP)\b", line) or line.startswith("irq:"):
            verdict = verdict if verdict and "FAIL" in verdict else line
        m = ACCOUNT_RE.match(line)
        if not m:
            continue
        fields = dict(kv.split("=", 1) for kv in m.group(3).split())
        v = out.setdefault(int(m.group(2)), {"slots": [], "irqs": None})
        if "irqs" in fields:
            v["irqs"] = int(fields["irqs"])
        else:
            v["slots"].append({k: (val if k == "kind" else int(val))
                               for k, val in fields.items()})
    return out, verdict


def tail(path, n=3):
    try:
        with open(path, errors="replace") as f:
            return " | ".join(l.strip() for l in f.read().splitlines()[-n:] if l.strip())
    except OSError:
        return ""


def reconcile(vm):
    """The VM's row: counts, and either a failure or the unaccounted timers."""
    row = {"vm": vm.idx, "guest": vm.guest, "vcpus": vm.vcpus, "exit_status": vm.status,
           "host_cpu_s": round(vm.cpu_s, 3), "failed": None, "unaccounted": 0,
           "reasons": [], "expected": 0, "expected_min": 0, "delivered": 0, "merged": 0,
           "oneshots": 0, "fired": 0, "injections": 0, "host_wakeups": 0, "wall_s": None,
           "hard_late_max_ns": 0, "ticks_late": 0}
    accounts, verdict = read_accounts(vm.console)
    if vm.spawn_error:
        row["failed"] = f"could not start: {vm.spawn_error}"
        return row
    if vm.status != 0:
        why = "killed by signal %d" % -vm.status if vm.status < 0 else f"exit status {vm.status}"
        row["failed"] = "; ".join(x for x in (why, verdict, tail(vm.stderr)) if x)
        # what the guest and lull last said: which wait never ended
        row["console_tail"] = tail(vm.console, 5)
        try:
            with open(vm.stats) as f:
                row["stats_at_exit"] = [
                    {k: c[k] for k in ("host_wakeups", "halts", "exits", "injections",
                                       "timers_fired_hard", "timers_fired_deferred", "kicks")}
                    for c in json.load(f)["vcpus"]]
        except (OSError, ValueError, KeyError):
            pass
        return row
    try:
        with open(vm.stats) as f:
            stats = json.load(f)
    except (OSError, ValueError) as e:
        row["failed"] = f"no --stats: {e}"
        return row
    row["wall_s"] = stats["wall_ns"] / 1e9
    if sorted(accounts) != [c["index"] for c in stats["vcpus"]] or any(
            a["irqs"] is None for a in accounts.values()):
        row["failed"] = (f"account lines for vCPUs {sorted(accounts)} of "
                         f"{len(stats['vcpus'])}; guest said: {verdict or tail(vm.console)}")
        return row

    def off(n, why):
        if n:
            row["unaccounted"] += n
            row["reasons"].append(why)

    for cpu in stats["vcpus"]:
        v, acc = cpu["index"], accounts[cpu["index"]]
        row["injections"] += cpu["injections"]
        row["host_wakeups"] += cpu["host_wakeups"]
        row["hard_late_max_ns"] = max(row["hard_late_max_ns"], cpu["hard_lateness_ns"]["max"])
        row["ticks_late"] += cpu["ticks_late"]
        off(abs(cpu["injections"] - acc["irqs"]),
            f"vcpu {v}: lull injected {cpu['injections']}, the guest handled {acc['irqs']}")
        for kind in KINDS:
            slots = [s for s in acc["slots"] if s["kind"] == kind]
            lo = sum(s["delivered"] for s in slots)
            hi = lo + sum(s["merged"] for s in slots)
            fired = cpu[f"timers_fired_{'deferred' if kind == 'deferrable' else 'hard'}"]
            row["fired"] += fired
            off(max(0, lo - fired) + max(0, fired - hi),
                f"vcpu {v}: lull fired {fired} {kind} timers, the counters say {lo}..{hi}")
        for s in acc["slots"]:
            where = f"vcpu {v} slot {s['slot']}"
            off(abs(s["handled"] - s["delivered"]),
                f"{where}: lull delivered {s['delivered']}, the guest handled {s['handled']}")
            if not s["period_ns"]:
                row["oneshots"] += s["delivered"] + s["merged"]
                continue
            row["delivered"] += s["delivered"]
            row["merged"] += s["merged"]
            want_lo = grid_points(s["first_ns"], s["period_ns"], s["lo_ns"])
            want_hi = grid_points(s["first_ns"], s["period_ns"], s["hi_ns"])
            got = s["delivered"] + s["merged"]
            row["expected"] += want_hi
            row["expected_min"] += want_lo
            off(max(0, want_lo - got),
                f"{where}: {got} ticks delivered+merged, elapsed time says at least {want_lo}")
            off(max(0, got - want_hi),
                f"{where}: {got} ticks delivered+merged, elapsed time says at most {want_hi}")
    return row


def summarize(rows, spawn_s, total_s):
    failed = [r for r in rows if r["failed"]]
    ok = [r for r in rows if not r["failed"]]
    vm_s = sum(r["wall_s"] for r in ok)
    cpu = sorted(r["host_cpu_s"] for r in ok)
    return {
        "vms_started": sum(1 for r in rows if not (r["failed"] or "").startswith("could not start")),
        "vms_finished": len(ok), "vms_failed": len(failed),
        "failures": [f"vm {r['vm']} ({r['guest']}): {r['failed']}" for r in failed],
        "ticks_expected": sum(r["expected"] for r in ok),
        "ticks_expected_min": sum(r["expected_min"] for r in ok),
        "ticks_delivered": sum(r["delivered"] for r in ok),
        "ticks_merged": sum(r["merged"] for r in ok),
        "oneshots": sum(r["oneshots"] for r in ok),
        "timers_fired": sum(r["fired"] for r in ok),
        "injections": sum(r["injections"] for r in ok),
        "timers_unaccounted": sum(r["unaccounted"] for r in ok),
        "vms_unaccounted": sum(1 for r in ok if r["unaccounted"]),
        "unaccounted": [f"vm {r['vm']} ({r['guest']}): " + "; ".join(r["reasons"])
                        for r in ok if r["unaccounted"]],
        "host_wakeups": sum(r["host_wakeups"] for r in ok),
        "hard_late_max_ms": round(max((r["hard_late_max_ns"] for r in ok), default=0) / 1e6, 3),
        "ticks_late": sum(r["ticks_late"] for r in ok),
        "host_wakeups_per_vm_s": round(sum(r["host_wakeups"] for r in ok) / vm_s, 3) if vm_s else None,
        "host_cpu_s_per_vm_mean": round(sum(cpu) / len(cpu), 3) if cpu else None,
        "host_cpu_s_per_vm_max": cpu[-1] if cpu else None,
        "host_cpu_pct_per_vm": round(100 * sum(cpu) / vm_s, 3) if vm_s else None,
        "spawn_s": round(spawn_s, 1), "total_s": round(total_s, 1),
    }


def fault_failed(res):
    f = res.get("fault")
    return bool(f) and not f["done"]


def table(s, cfg):
    by_guest = lambda g: sum(1 for r in s["rows"] if r["guest"] == g)
    lines = [
        f"lull soak: {cfg['vms']} VMs ({by_guest('tick')} tick, {by_guest('idle')} idle x "
        f"{cfg['idle_vcpus']} vCPUs), {cfg['seconds']} s each, deferrable, missed-ticks "
        f"{cfg['missed_ticks']}; tick {cfg['tick_us']} us, work {cfg['work_ms']} ms"
        + (" (inside tests/nested/lull-nested)" if cfg["nested"] else ""),
    ]
    sm = s["summary"]
    rows = [
        ("VMs started / finished / failed",
         f"{sm['vms_started']} / {sm['vms_finished']} / {sm['vms_failed']}"),
        ("ticks expected (elapsed / period)", f"{sm['ticks_expected']}"
         f" (at least {sm['ticks_expected_min']} provably due)"),
        ("ticks delivered / merged", f"{sm['ticks_delivered']} / {sm['ticks_merged']}"),
        ("one-shots (end, drain fences)", f"{sm['oneshots']}"),
        ("lull timers fired / injections", f"{sm['timers_fired']} / {sm['injections']}"),
        ("timers unaccounted", f"{sm['timers_unaccounted']} (in {sm['vms_unaccounted']} VMs)"),
        ("worst hard timer late (ms) / ticks late",
         f"{sm['hard_late_max_ms']} / {sm['ticks_late']}"),
        ("host wakeups total / per VM-second",
         f"{sm['host_wakeups']} / {sm['host_wakeups_per_vm_s']}"),
        ("host CPU per VM (mean / max s; % of a core)",
         f"{sm['host_cpu_s_per_vm_mean']} / {sm['host_cpu_s_per_vm_max']}; "
         f"{sm['host_cpu_pct_per_vm']}%"),
        ("spawning / whole run", f"{sm['spawn_s']} s / {sm['total_s']} s"),
    ]
    f = s.get("fault")
    if f:
        rows.append(("host fault", f"{f['kind']} at +{f['at_s']:g} s: "
                     + (f["what"] if f["done"] else f"NOT APPLIED: {f['error']}")))
    width = max(len(k) for k, _ in rows)
    lines += [f"  {k:<{width}}  {v}" for k, v in rows]
    for what in ("failures", "unaccounted"):
        for line in sm[what][:10]:
            lines.append(f"  {what[:-1] if what == 'failures' else what}: {line}")
        if len(sm[what]) > 10:
            lines.append(f"  ... {len(sm[what]) - 10} more {what} in results.json")
    lines.append("PASS: every timer accounted for" if not sm["vms_failed"]
                 and not sm["timers_unaccounted"] and not fault_failed(s) else "FAIL")
    return "\n".join(lines)


def config_json(cfg, nested):
    return {"vms": cfg.vms, "seconds": cfg.seconds, "tick_fraction": cfg.tick_fraction,
            "tick_us": cfg.tick_us, "work_ms": cfg.work_ms, "idle_vcpus": cfg.idle_vcpus,
            "missed_ticks": cfg.missed_ticks, "timer_mode": "deferrable",
            "fault": cfg.fault, "fault_s": cfg.fault_s if cfg.fault else None,
            "fault_at": cfg.fault_at if cfg.fault else None,
            "lull": cfg.lull, "nested": nested}


def soak_here(cfg, nested):
    """Runs the soak on this host's /dev/kvm; returns the results dict."""
    with tempfile.TemporaryDirectory(prefix="lull-soak-") as tmp:
        vms, spawn_s, total_s, fault = run_vms(cfg, tmp)
        rows = [reconcile(vm) for vm in vms]
    return {"config": config_json(cfg, nested), "rows": rows, "fault": fault,
            "summary": summarize(rows, spawn_s, total_s),
            "started": datetime.datetime.now().isoformat(timespec="seconds"),
            "uname": os.uname().release}


# --------------------------------------------------------------------------
# /dev/kvm missing: the same script inside the nested runner


def nested_mem(cfg):
    if cfg.nested_mem:
        return cfg.nested_mem
    return f"{min(20 * 1024, 1024 + 16 * cfg.vms)}M"


def soak_nested(cfg, argv):
    """Re-runs this script inside lull-nested; its results come back on stdout."""
    inner = [sys.executable, os.path.abspath(__file__)] + argv + [
        "--nested", "never", "--work-ms", str(cfg.work_ms), "--_inner"]
    cmd = [RUNNER, "--mem", nested_mem(cfg),
           # past every VM's own --timeout, so a hung VM is reported, not the run lost
           "--timeout", str(int(2 * cfg.seconds + 120 + 2 * cfg.vms + 120)), "--"] + inner
    log("/dev/kvm is missing here: running the soak inside the nested runner "
        "(a standard KVM under QEMU's emulation; every figure is the emulated one):")
    log("  " + " ".join(shlex.quote(a) for a in cmd))
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, errors="replace")
    blob, inside = [], False
    for line in p.stdout:
        if line.rstrip("\n") == JSON_BEGIN:
            inside = True
        elif line.rstrip("\n") == JSON_END:
            inside = False
        elif inside:
            blob.append(line)
        else:
            sys.stdout.write(line)
            sys.stdout.flush()
    rc = p.wait()
    if not blob:
        log(f"the nested run returned no results (runner exit status {rc})")
        return None, rc
    return json.loads("".join(blob)), rc


def main(argv):
    inner = "--_inner" in argv
    argv = [a for a in argv if a != "--_inner"]
    cfg = parse_args(argv)
    have_kvm = os.access("/dev/kvm", os.R_OK | os.W_OK)
    nested = inner or cfg.nested == "always" or (cfg.nested == "auto" and not have_kvm)
    if cfg.work_ms is None:
        cfg.work_ms = 1000 if nested else 100
    if inner or (not nested and have_kvm):
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        res = soak_here(cfg, nested)
        res["command"] = " ".join(["bench/soak/soak.py"] + argv)
        if inner:
            print(JSON_BEGIN)
            print(json.dumps(res))
            print(JSON_END, flush=True)
            return 0
        rc = 0
    elif not nested:
        log("/dev/kvm is missing or not accessible and --nested never was given; "
            "run with --nested auto (the default) to use tests/nested/lull-nested")
        return 69
    else:
        res, rc = soak_nested(cfg, argv)
        if res is None:
            return rc or 1
        res["command"] = " ".join(["bench/soak/soak.py"] + argv)
    os.makedirs(cfg.out, exist_ok=True)
    with open(os.path.join(cfg.out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    print(table(res, res["config"]))
    print(f"results: {os.path.join(cfg.out, 'results.json')}")
    sm = res["summary"]
    return 1 if sm["vms_failed"] or sm["timers_unaccounted"] or fault_failed(res) or rc else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
