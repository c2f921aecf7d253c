#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cyclictest: timer latency in a stock Linux guest, lull beside QEMU/KVM.

    bench/latency/cyclictest.py [--vcpus 1,2] [--duration 20] [--out DIR] ...

Boots Debian's stock kernel (the bzImage tests/nested/lull-nested caches)
with an initramfs that holds lull-init (tests/linux/init.c) and Debian's
cyclictest (package rt-tests, with libnuma1 and glibc's libraries from
libc6), init in cyclictest mode: it runs

    cyclictest -m -q -p 95 -D 20 -i 1000 -t N -a -h 50000

(N the guest's vCPUs: one SCHED_FIFO thread per vCPU, pinned there, each
sleeping 1 ms periods to an absolute deadline and recording how late it
woke, in µs; a histogram 50 ms wide, where a 5 ms one would put a late
guest's p99 among its overflows), prints the histogram and summary on
the console and powers off. One VM at a time, every mode for every
--vcpus, --repeat times, interleaved; a VM that ends without cyclictest's
summary (a hang, a panic) is run again up to --retries times, and every
attempt is kept:

  qemu              QEMU microvm with KVM's in-kernel local APIC, -cpu
                    host,kvm-pv-eoi=off (bench/density/linux_idle.py says why)
  lull-deferrable   lull run --timer-mode deferrable (lull's default)
  lull-strict       lull run --timer-mode strict
  lull-no-pv-eoi    lull deferrable with --no-pv-eoi, as QEMU's -cpu above
                    (not in the default --modes)
  lull-no-advance   lull deferrable with --no-timer-advance, to show what
                    the timer advance buys (not in the default --modes)
  lull-halt-poll    lull deferrable with --halt-poll 200000 (KVM's default),
                    to show what the halt poll buys (not in the default --modes)

Per run and thread: completed periods (the histogram's count and its
overflows; a wakeup later than a whole period skips the periods it
missed, so a late guest completes fewer than -D / -i), min, avg and max
(cyclictest's own), p50, p99 and p99.9 (from the 1 µs histogram; a
percentile beyond -h µs is shown as ">H"). In every run the guest also
checks itself that no local timer interrupt entered before the TSC deadline
last written on its CPU (lull-init's lull_never_early: the guest's
tracepoints on the guest's TSC); the table shows how many it checked, how
many were early (with the events before the first few) and how many it
could not tell from a late second interrupt ("either"); an early one in a
lull run is lull's bug, and the exit status is 1 (QEMU/KVM's are shown as
measured). For lull runs, lull's whole --stats JSON is kept
(hard_lateness_ns per vCPU, and what else that version reports). Over
cyclictest's -D from its start on the console (as polled; not its
histogram's output after) the table also gives the VMM's CPU, all its
threads and the guest's time in them, per completed period, and how busy
the host's CPUs were: on a host that is busy throughout, every VMM's
timers wait in one queue, and the one that costs more per period waits
longer.

The packages are fetched once with `apt-get download` and cached beside
the runner's kernel ($LULL_NESTED_CACHE or ~/.cache/lull-nested, in
rt-tests/); the initramfs is built with scripts/mkinitramfs --file into
BUILD/bench/latency/. Where /dev/kvm is missing the script runs itself
inside tests/nested/lull-nested (also where /dev/kvm is kvm_pvm, whose
emulator cannot run Debian's kernel; under flock /tmp/lull-nested.lock, one
nested run at a time; --writable OUT), all of it in one runner run, and
says so: the figures are then an emulated machine's, to compare side by
side, not with hardware.

Writes OUT/results.json (every run, its parsed histogram and lull's
stats), OUT/table.txt (what it prints), OUT/command.txt, OUT/runs/ (each
VM's console, gzipped, its stderr and lull's --stats) and, with gnuplot, OUT/cyclictest.png and .svg:
the fraction of periods at least x late, per mode, one panel per --vcpus.
`--report OUT` prints the table and draws the plot again from
OUT/results.json. `ninja -C BUILD cyclictest` runs it with its defaults.
"""

import argparse
import datetime
import glob
import gzip
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "density"))
import density  # noqa: E402  (OWNED, set_pdeathsig, kill_owned)
import linux_idle  # noqa: E402  (vm_command, MODE_SPEC, QEMU_CPU_FEATURES)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import qemu_ref  # noqa: E402  (the reference's -cpu, for the record)
import program_files  # noqa: E402  (cyclictest's interpreter and libraries)
import in_runner  # noqa: E402  (this script again, inside the nested runner)

MKINITRAMFS = os.path.join(ROOT, "scripts", "mkinitramfs")
# Init's lines go through the tty layer, which waits for the UART to
# send them: from QEMU's guest in the nested runner, under a kilobyte a
# second at the 9600 baud the kernel keeps when not told, and faster at
# 115200 (lull's UART sends at once at any rate). Said on both VMMs'
# command lines; the guest prints nothing while cyclictest measures.
CONSOLE = "ttyS0,115200"
MODES = ("qemu", "lull-deferrable", "lull-strict", "lull-no-pv-eoi", "lull-no-advance",
         "lull-halt-poll")
DEFAULT_MODES = MODES[:-3]
# Debian's packages: cyclictest, and what it links against
PACKAGES = ("rt-tests", "libnuma1", "libc6")
PROGRAM = "usr/bin/cyclictest"
READY = "lull-init: ready"
LINE = "lull-init: cyclictest: "
DONE = "lull-init: cyclictest done"
START = "lull-init: cyclictest start"
# the guest's own check that no local timer interrupt entered before its
# TSC deadline (tests/linux/init.c, lull_never_early)
NEVER_EARLY = re.compile(r"lull-init: never-early done checked=(\d+) early=(\d+)(?: either=(\d+))?")
# its per-CPU lines, printed once the whole trace is read, which add up to it
# where a kernel message cuts into that last line (or into its first words,
# "done" included: every vCPU's line there is as good), and the events before
# each of its first early entries
NEVER_EARLY_CPU = re.compile(r"lull-init: never-early cpu=(\d+) .*checked=(\d+) early=(\d+)"
                             r"(?:.* either=(\d+))?")
NEVER_EARLY_SHOWN = re.compile(r"lull-init: never-early early (cpu=.*)")
FAIL, PANIC = linux_idle.FAIL, linux_idle.PANIC
# cyclictest's own histogram row, "000123 000000\t000002" (lull-init passes
# it on as it is only when it cannot pack it)
HIST_ROW = re.compile(r"^(\d{6})\s+(\d+(?:\s+\d+)*)\s*$")
# lull-init's packed rows: "hist 123:0,2 130:1,0 ..."
HIST_PACKED = re.compile(r"^hist((?:\s+\d+:\d+(?:,\d+)*)+)\s*$")
# the figures, one per thread: the kernel's own console lines may cut in
# ("# Max Latencies: 34068 [   44.27] ACPI: ..."), and what follows the
# cut is lost to this line
SUMMARY = re.compile(r"^# (Total|Min Latencies|Avg Latencies|Max Latencies|Histogram Overflows):"
                     r"((?:\s+\d+)*)")
OVERFLOW_AT = re.compile(r"^# Thread (\d+):\s*(.*)$")


def log(msg):
    print(f"cyclictest: {msg}", file=sys.stderr, flush=True)


class Error(Exception):
    pass


# --------------------------------------------------------------------------
# Debian's cyclictest and its libraries, cached; the initramfs


def cache_dir():
    d = os.environ.get("LULL_NESTED_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "lull-nested")
    return os.path.join(d, "rt-tests")


def fetch_packages():
    """CACHE/tree: the packages unpacked (fetched the first time); their
    file names. .debs put in CACHE/debs by hand are used as they are."""
    cache = cache_dir()
    tree, debs_dir, ready = (os.path.join(cache, n) for n in ("tree", "debs", "ready"))
    if os.path.exists(ready):
        with open(ready) as f:
            return tree, f.read().split()
    os.makedirs(debs_dir, exist_ok=True)
    have = {p: sorted(glob.glob(os.path.join(debs_dir, f"{p}_*.deb"))) for p in PACKAGES}
    missing = [p for p in PACKAGES if not have[p]]
    if missing:
        log(f"fetching {' '.join(missing)} into {debs_dir}")
        r = subprocess.run(["apt-get", "download"] + missing, cwd=debs_dir,
                           capture_output=True, text=True)
        for p in missing:
            have[p] = sorted(glob.glob(os.path.join(debs_dir, f"{p}_*.deb")))
        if r.returncode or not all(have[p] for p in missing):
            why = (r.stderr.strip() or r.stdout.strip()).splitlines()
            raise Error(f"cannot fetch {' '.join(missing)} with 'apt-get download' "
                        f"({why[-1] if why else 'status %d' % r.returncode}): the benchmark "
                        f"needs Debian's {', '.join(PACKAGES)} (rt-tests 2.4 is bookworm's); "
                        f"run it where apt reaches Debian's archive (apt-get update first), "
                        f"or put their .deb files in {debs_dir}")
    work = tempfile.mkdtemp(prefix="tree-", dir=cache)
    try:
        names = []
        for p in PACKAGES:
            deb = have[p][-1]
            subprocess.run(["dpkg-deb", "-x", deb, work], check=True)
            names.append(os.path.basename(deb))
        if os.path.exists(tree):
            shutil.rmtree(tree)
        os.rename(work, tree)
    except (OSError, subprocess.CalledProcessError) as e:
        shutil.rmtree(work, ignore_errors=True)
        raise Error(f"cannot unpack the packages in {debs_dir}: {e}")
    with open(ready, "w") as f:
        f.write("\n".join(names) + "\n")
    return tree, names


def build_initramfs(cfg):
    tree, debs = fetch_packages()
    init = os.path.join(cfg.build, "tests", "linux", "lull-init")
    if not os.path.isfile(init):
        raise Error(f"{init} is missing: run ninja -C {cfg.build}")
    os.makedirs(os.path.dirname(cfg.initramfs), exist_ok=True)
    cmd = [sys.executable, MKINITRAMFS, "-o", cfg.initramfs]
    try:
        files = program_files.program_files(tree, "/" + PROGRAM,
                                            "the packages " + ", ".join(PACKAGES))
    except program_files.Missing as e:
        raise Error(str(e))
    for f in files:
        cmd += ["--file", f]
    r = subprocess.run(cmd + [init], capture_output=True, text=True)
    if r.returncode:
        raise Error(f"mkinitramfs: {r.stderr.strip()}")
    return debs


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# --------------------------------------------------------------------------
# cyclictest's output


def parse_output(console, hist_us):
    """Per thread: the histogram (bucket µs -> count) and the summary, from
    the "lull-init: cyclictest: " lines of a console."""
    hist, summary, overflow_at = {}, {}, {}
    for raw in console.splitlines():
        if not raw.startswith(LINE):
            continue
        line = raw[len(LINE):].strip()
        m = HIST_PACKED.match(line)
        if m:
            for word in m.group(1).split():
                b, counts = word.split(":")
                hist[int(b)] = [int(x) for x in counts.split(",")]
            continue
        m = HIST_ROW.match(line)
        if m:
            hist[int(m.group(1))] = [int(x) for x in m.group(2).split()]
            continue
        m = SUMMARY.match(line)
        if m:
            summary[m.group(1)] = [int(x) for x in m.group(2).split()]
            continue
        m = OVERFLOW_AT.match(line)
        if m:
            overflow_at[int(m.group(1))] = [int(x) for x in m.group(2).split("#")[0].split()]
    if "Total" not in summary:
        return None
    threads = []
    for t in range(len(summary["Total"])):
        def one(key):
            v = summary.get(key, [])
            return v[t] if t < len(v) else None
        h = {b: c[t] for b, c in sorted(hist.items()) if t < len(c) and c[t]}
        # the histogram's, where a kernel line cut the summary's off
        max_us = one("Max Latencies")
        if max_us is None:
            max_us = max(h, default=None)
        threads.append(stats(h, one("Histogram Overflows") or 0, hist_us,
                             min_us=one("Min Latencies"), avg_us=one("Avg Latencies"),
                             max_us=max_us, thread=t,
                             overflow_cycles=overflow_at.get(t, [])))
    return threads


def percentile(hist, overflows, q):
    """The smallest bucket with at least q of all samples at or below it
    (nearest rank); None when that is among the overflows."""
    n = sum(hist.values()) + overflows
    if not n:
        return None
    rank, seen = max(1, -(-round(q * 1000) * n // 1000)), 0  # ceil(q n), exactly
    for b in sorted(hist):
        seen += hist[b]
        if seen >= rank:
            return b
    return None


def stats(hist, overflows, hist_us, keep_hist=True, **extra):
    n = sum(hist.values()) + overflows
    res = {"periods": n, "overflows": overflows,
           "p50_us": percentile(hist, overflows, 0.50),
           "p99_us": percentile(hist, overflows, 0.99),
           "p999_us": percentile(hist, overflows, 0.999)}
    res.update(extra)
    if keep_hist:
        # "US:COUNT ..." for the rows with a count: a JSON object with a
        # line per row would be most of the results' size
        res["hist"] = " ".join(f"{b}:{c}" for b, c in sorted(hist.items()))
    return res


def hist_of(threads):
    """Bucket µs -> count, summed over threads' "hist" strings."""
    hist = {}
    for t in threads:
        for word in t["hist"].split():
            b, c = word.split(":")
            hist[int(b)] = hist.get(int(b), 0) + int(c)
    return hist


def combine(threads, hist_us):
    """All threads' periods as one distribution (its histogram: hist_of)."""
    hist = hist_of(threads)
    over = sum(t["overflows"] for t in threads)
    n = sum(t["periods"] for t in threads)
    avgs = [(t["avg_us"], t["periods"]) for t in threads if t.get("avg_us") is not None]
    return stats(hist, over, hist_us, keep_hist=False,
                 min_us=min((t["min_us"] for t in threads if t.get("min_us") is not None),
                            default=None),
                 avg_us=round(sum(a * w for a, w in avgs) / n, 1) if n and avgs else None,
                 max_us=max((t["max_us"] for t in threads if t.get("max_us") is not None),
                            default=None))


# --------------------------------------------------------------------------
# one VM


def run_vm(cfg, vcpus, mode, rep, attempt):
    name = f"{vcpus}vcpu-{mode}-{rep}" + (f"-attempt{attempt + 1}" if attempt else "")
    console = os.path.join(cfg.out, "runs", name + ".console")
    errlog = os.path.join(cfg.out, "runs", name + ".err")
    stats = os.path.join(cfg.out, "runs", name + ".stats.json") if mode != "qemu" else None
    vm_cfg = argparse.Namespace(qemu=cfg.qemu, lull=cfg.lull, mem=cfg.mem, vcpus=vcpus,
                                kernel=cfg.kernel, initramfs=cfg.initramfs)
    args = cfg.cyclictest_args.replace("{N}", str(cfg.threads or vcpus))
    init = f'lull_init=cyclictest lull_cyclictest="{args}" lull_never_early=1'
    lull_timeout = int(cfg.boot_timeout + cfg.duration + cfg.done_timeout + 60)
    cmd = linux_idle.vm_command(vm_cfg, mode, init, stats, lull_timeout, console=CONSOLE)
    if mode != "qemu" and cfg.lull_arg:
        cmd[2:2] = cfg.lull_arg  # after "lull run"
    res = {"vcpus": vcpus, "mode": mode, "rep": rep, "attempt": attempt, "command": cmd,
           "failure": None,
           "console": os.path.relpath(console, cfg.out)}
    if stats and os.path.exists(stats):
        os.unlink(stats)
    t0 = time.monotonic()
    with open(console, "wb") as out, open(errlog, "wb") as err:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                             start_new_session=True, preexec_fn=density.set_pdeathsig)
    density.OWNED[p.pid] = p
    t_ready = t_done = None
    # the VMM's CPU (all its threads) and the host's idle time over
    # cyclictest's -D from its start, as the harness polls (its histogram's
    # output after is not in it): where the host is busy throughout, the
    # guest's latency is the host's queue
    window = {}

    def mark(key):
        snap = density.snapshot(p.pid)
        if snap:
            window[key] = (snap, density.host_idle_ns())

    def text():
        with open(console, "rb") as f:
            return f.read().decode("utf-8", "replace")
    try:
        while True:
            now, seen = time.monotonic(), text()
            if t_ready is None and READY in seen:
                t_ready = now
            if "start" not in window and START in seen:
                mark("start")
            if "start" in window and "done" not in window and (
                    now - window["start"][0][0] / 1e9 >= cfg.duration or DONE in seen):
                mark("done")
            if t_done is None and (DONE in seen or FAIL in seen):
                t_done = now
            if p.poll() is not None:
                break
            if PANIC in seen:
                res["failure"] = "guest kernel panic: " + linux_idle.said_after(seen, PANIC)
                break
            if t_ready is None and now - t0 > cfg.boot_timeout:
                res["failure"] = f"no '{READY}' within {cfg.boot_timeout:g} s"
                break
            if t_ready is not None and t_done is None and \
                    now - t_ready > cfg.duration + cfg.done_timeout:
                res["failure"] = (f"no '{DONE}' within {cfg.duration + cfg.done_timeout:g} s "
                                  "of init")
                break
            if t_done is not None and now - t_done > 10:
                break  # done, and no poweroff: stopped below, as planned
            time.sleep(0.2)
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)  # lull writes its --stats on SIGTERM too
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        density.OWNED.pop(p.pid, None)
    seen = text()
    res.update(exit_status=p.returncode, wall_s=round(time.monotonic() - t0, 1),
               boot_to_init_s=round(t_ready - t0, 1) if t_ready else None)
    if FAIL in seen and not res["failure"]:
        res["failure"] = "init: " + linux_idle.said_after(seen, FAIL)
    keep_gzipped(console)
    res["console"] += ".gz"
    if "start" in window and "done" in window:
        (s0, idle0), (s1, idle1) = window["start"], window["done"]
        secs, cpu, _ = density.window_usage(s0, s1)
        res["window"] = {"span": "-D", "s": round(secs, 2), "vmm_cpu_s": round(cpu / 1e9, 2),
                         "host_busy": round(1 - (idle1 - idle0) / 1e9
                                            / (secs * density.NCPU), 3)}
    m = NEVER_EARLY.search(seen)
    cpus = NEVER_EARLY_CPU.findall(seen)
    if m:
        res["never_early"] = {"checked": int(m.group(1)), "early": int(m.group(2)),
                              "either": int(m.group(3) or 0)}
    elif cpus and ("lull-init: never-early done" in seen
                   or {int(c[0]) for c in cpus} >= set(range(vcpus))):
        res["never_early"] = {"checked": sum(int(c[1]) for c in cpus),
                              "early": sum(int(c[2]) for c in cpus),
                              "either": sum(int(c[3] or 0) for c in cpus)}
    else:
        res["never_early"] = None
    if res["never_early"] and res["never_early"]["early"]:
        res["never_early"]["shown"] = [x.strip() for x in NEVER_EARLY_SHOWN.findall(seen)]
    threads = parse_output(seen, cfg.hist)
    if threads is None and not res["failure"]:
        res["failure"] = "no cyclictest summary on the console"
    if threads:
        res["threads"] = threads
        res["all"] = combine(threads, cfg.hist)
        res["expected_periods"] = int(cfg.duration * 1e6 / cfg.interval)
    if stats:
        try:
            with open(stats) as f:
                res["lull_stats"] = json.load(f)
        except (OSError, ValueError) as e:
            res["lull_stats"] = None
            res["lull_stats_why_none"] = str(e)
    return res


def keep_gzipped(path):
    """path as path.gz: a console is mostly the guest's boot log."""
    with open(path, "rb") as f, gzip.GzipFile(path + ".gz", "wb", mtime=0) as g:
        shutil.copyfileobj(f, g)
    os.unlink(path)


def measure(cfg):
    results = []
    t0 = time.monotonic()
    os.makedirs(os.path.join(cfg.out, "runs"), exist_ok=True)
    try:
        for rep in range(cfg.repeat):
            for vcpus in cfg.vcpus:
                for mode in cfg.modes:
                    log(f"{vcpus} vCPU(s), {mode}, run {rep + 1} of {cfg.repeat} "
                        f"({time.monotonic() - t0:.0f} s in)")
                    failed = []
                    for attempt in range(1 + cfg.retries):
                        r = run_vm(cfg, vcpus, mode, rep, attempt)
                        a = r.get("all") or {}
                        log(f"  {r['failure'] or 'done'}: {r['wall_s']} s, periods "
                            f"{a.get('periods')}, p50 {a.get('p50_us')} p99 {a.get('p99_us')} "
                            f"max {a.get('max_us')} µs")
                        if r.get("threads"):
                            break
                        failed.append(r)
                    if failed and r is not failed[-1]:
                        r["failed_attempts"] = failed
                    elif len(failed) > 1:
                        r["failed_attempts"] = failed[:-1]
                    results.append(r)
                    write_results(cfg, results, partial=True)
    finally:
        density.kill_owned()
    return results


# --------------------------------------------------------------------------
# results


def write_results(cfg, results, partial=False):
    meta = {k: getattr(cfg, k) for k in ("vcpus", "modes", "repeat", "retries", "duration",
                                         "interval",
                                         "hist", "mem", "cyclictest_args", "kernel",
                                         "initramfs_sha256", "packages")}
    meta["cyclictest_threads"] = cfg.threads
    meta.update(command=cfg.command, date=datetime.datetime.now(datetime.timezone.utc)
                .isoformat(timespec="seconds"), partial=partial,
                nested=bool(cfg.inner or os.environ.get("LULL_NESTED_RUNNER") == "1"),
                host_clocksource=in_runner.host_clocksource(),
                qemu_cpu=qemu_ref.describe(*qemu_ref.probe(cfg.qemu)) + linux_idle.QEMU_CPU_FEATURES, results=results)
    tmp = os.path.join(cfg.out, "results.json.tmp")
    with open(tmp, "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    os.replace(tmp, os.path.join(cfg.out, "results.json"))


def us(v, hist):
    """A percentile: None is one among the histogram's overflows."""
    return f">{hist}" if v is None else str(v)


def num(v):
    return "-" if v is None else str(v)


def ratio(a, b):
    if a is None or b is None or not b:
        return "-"
    return f"{a / b:.2f}"


def table(res):
    hist, lines = res["hist"], []
    threads = res.get("cyclictest_threads")
    lines.append(f"cyclictest {res['cyclictest_args'].replace('{N}', 'N')} "
                 + (f"(N = {threads}, pinned from vCPU 0 on; none on the other vCPUs)" if threads else "(N = vCPUs)") + ", "
                 f"Debian's {os.path.basename(res['kernel'])}, {res['mem']} per VM"
                 + ("; inside tests/nested/lull-nested: an emulated host, compare the "
                    "modes side by side" if res.get("nested") else "")
                 + (f"; host clocksource {res['host_clocksource']}"
                    if res.get("host_clocksource") else ""))
    lines.append("latencies in µs; periods: completed of "
                 f"{int(res['duration'] * 1e6 / res['interval'])} per thread")
    lines.append("")
    head = (f"{'vCPUs':>5} {'mode':<16} {'run':>3} {'thread':>6} {'periods':>8} {'min':>5} "
            f"{'avg':>7} {'p50':>6} {'p99':>6} {'p99.9':>6} {'max':>7} {'>' + str(hist):>6}")
    lines.append(head)
    for r in res["results"]:
        for t in r.get("threads", []) + ([dict(r["all"], thread="all")]
                                         if len(r.get("threads", [])) > 1 else []):
            lines.append(f"{r['vcpus']:>5} {r['mode']:<16} {r['rep'] + 1:>3} {t['thread']:>6} "
                         f"{t['periods']:>8} {num(t['min_us']):>5} {num(t['avg_us']):>7} "
                         f"{us(t['p50_us'], hist):>6} {us(t['p99_us'], hist):>6} "
                         f"{us(t['p999_us'], hist):>6} {num(t['max_us']):>7} "
                         f"{t['overflows']:>6}")
        if r.get("failure"):
            lines.append(f"{r['vcpus']:>5} {r['mode']:<16} {r['rep'] + 1:>3} FAILED "
                         f"(attempt {r['attempt'] + 1}: {r['failure']}; console {r['console']})")
        for f in r.get("failed_attempts", []):
            lines.append(f"{'':>5} {'':<16} {'':>3} (attempt {f['attempt'] + 1} failed: "
                         f"{f['failure']}; console {f['console']})")
    lines.append("")
    lines.append("lull / QEMU/KVM, all threads' periods together (same run, same rep):")
    lines.append(f"{'vCPUs':>5} {'mode':<16} {'run':>3} {'p50':>6} {'p99':>6} {'max':>6}")
    for r in res["results"]:
        q = next((x for x in res["results"] if x["mode"] == "qemu" and x["vcpus"] == r["vcpus"]
                  and x["rep"] == r["rep"] and x.get("all")), None)
        if r["mode"] == "qemu" or not r.get("all") or not q:
            continue
        a, b = r["all"], q["all"]
        lines.append(f"{r['vcpus']:>5} {r['mode']:<16} {r['rep'] + 1:>3} "
                     f"{ratio(a['p50_us'], b['p50_us']):>6} {ratio(a['p99_us'], b['p99_us']):>6} "
                     f"{ratio(a['max_us'], b['max_us']):>6}")
    checks = [r for r in res["results"] if "never_early" in r]
    if checks:
        lines.append("")
        lines.append("never early, the guest's own check: local timer interrupts that entered "
                     "before their TSC deadline, of those checked")
        lines.append("(either: entries not checked, as perhaps a deadline's own interrupt after "
                     "one that may have served it too; tests/linux/never_early.h)")
        lines.append(f"{'vCPUs':>5} {'mode':<16} {'run':>3} {'checked':>8} {'early':>6} "
                     f"{'either':>6}")
        for r in checks:
            n = r["never_early"]
            lines.append(f"{r['vcpus']:>5} {r['mode']:<16} {r['rep'] + 1:>3} "
                         + (f"{n['checked']:>8} {n['early']:>6} {n.get('either', '-'):>6}"
                            if n else f"{'not checked (see its console)':>15}"))
        shown = [(r, x) for r in checks for x in (r["never_early"] or {}).get("shown", [])]
        if shown:
            lines.append("")
            lines.append("the first early entries, each after its CPU's events before it "
                         "(TSC cycles from the entry)")
            for r, x in shown:
                lines.append(f"{r['vcpus']:>5} {r['mode']:<16} {r['rep'] + 1:>3} {x}")
    windows = [r for r in res["results"] if r.get("window") and r.get("all")]
    if windows:
        lines.append("")
        lines.append("cyclictest's -D from its start, as polled (* from its start to its done "
                     "line, its histogram's output included): the VMM's CPU, all its "
                     "threads and the guest's time in them, per completed period; the host's "
                     "CPUs busy, all tasks")
        lines.append(f"{'vCPUs':>5} {'mode':<16} {'run':>3} {'s':>6} {'VMM CPU s':>9} "
                     f"{'µs/period':>9} {'host busy':>9}")
        for r in windows:
            w = r["window"]
            per = w["vmm_cpu_s"] * 1e6 / r["all"]["periods"] if r["all"]["periods"] else None
            lines.append(f"{r['vcpus']:>5} {r['mode']:<16} {r['rep'] + 1:>3} "
                         f"{('' if w.get('span') else '*') + str(w['s']):>6} "
                         f"{w['vmm_cpu_s']:>9} {num(per and round(per)):>9} "
                         f"{w['host_busy'] * 100:>8.1f}%")
    lat = [(r, v) for r in res["results"] for v in ((r.get("lull_stats") or {}).get("vcpus") or [])]
    if lat:
        lines.append("")
        lines.append("lull's --stats: hard timers' lateness per vCPU (µs; lull's own, "
                     "deadline to injection)")
        lines.append(f"{'vCPUs':>5} {'mode':<16} {'run':>3} {'vCPU':>4} {'count':>7} {'p50':>7} "
                     f"{'p99':>7} {'max':>8}")
        for r, v in lat:
            h = v.get("hard_lateness_ns") or {}
            lines.append(f"{r['vcpus']:>5} {r['mode']:<16} {r['rep'] + 1:>3} {v.get('index', '?'):>4} "
                         f"{h.get('count', '-'):>7} "
                         + " ".join(f"{'-' if h.get(k) is None else round(h[k] / 1e3):>{w}}"
                                    for k, w in (("p50", 7), ("p99", 7), ("max", 8))))
    return "\n".join(lines) + "\n"


def plot(res, out):
    """cyclictest.png and .svg: the fraction of periods at least x late
    (all threads), per mode, one panel per vCPU count. None, why if not."""
    gp = shutil.which("gnuplot")
    if not gp:
        return None, "gnuplot is not installed (apt-get install gnuplot-nox)"
    runs = [r for r in res["results"] if r.get("all") and r["all"]["periods"]]
    if not runs:
        return None, "nothing to plot"
    style = {"qemu": "lc rgb '#7570b3'", "lull-deferrable": "lc rgb '#1b9e77'",
             "lull-strict": "lc rgb '#d95f02'", "lull-no-pv-eoi": "lc rgb '#e7298a'",
             "lull-no-advance": "lc rgb '#66a61e'", "lull-halt-poll": "lc rgb '#e6ab02'"}
    # where the curves are drawn: every µs to 100, then 100 points a decade
    grid = sorted(set(range(1, 101)) | {round(10 ** (2 + k / 100))
                                        for k in range(1, 100 * 6)
                                        if 10 ** (2 + k / 100) <= res["hist"]})
    # from half the least latency seen: every period is later than that
    xmin = max(1, min((r["all"]["min_us"] or 1) for r in runs) // 2)
    tmp = tempfile.mkdtemp(prefix="cyclictest-plot-")
    panels = []
    for vcpus in res["vcpus"]:
        series = []
        for r in (r for r in runs if r["vcpus"] == vcpus):
            hist, n = hist_of(r["threads"]), r["all"]["periods"]
            dat = os.path.join(tmp, f"{vcpus}vcpu-{r['mode']}-{r['rep']}.ccdf")
            buckets, below, i = sorted(hist), 0, 0
            with open(dat, "w") as f:
                for x in grid:
                    while i < len(buckets) and buckets[i] < x:
                        below += hist[buckets[i]]
                        i += 1
                    if below < n:
                        f.write(f"{x} {(n - below) / n:.6g}\n")
            title = r["mode"] + (f" #{r['rep'] + 1}" if res["repeat"] > 1 else "")
            series.append(f"'{dat}' using 1:2 with lines lw 2 dt {r['rep'] % 5 + 1} "
                          f"{style.get(r['mode'], '')} title '{title}'")
        if series:
            panels.append((vcpus, series))
    where = ("\\nin the nested runner: an emulated host, compare side by side"
             if res.get("nested") else "")
    body = f"""set multiplot layout 1,{len(panels)} title "cyclictest in Debian's stock Linux guest: {res['duration']:g} s of {res['interval']} µs periods per thread{where}" font ',12'
set logscale xy 10
set grid
set key bottom left
set xrange [{xmin}:{res['hist']}]
set yrange [1e-5:1.2]
set format y '10^{{%L}}'
set xlabel "wakeup latency x, µs (cyclictest's histogram: {res['hist']} µs wide)"
set ylabel 'fraction of periods at least x late'
"""
    for vcpus, series in panels:
        body += (f"set title '{vcpus} vCPU{'s' if vcpus > 1 else ''}, all threads'\n"
                 f"plot {', '.join(series)}\n")
    body += "unset multiplot\n"
    made = []
    width = 700 * len(panels)
    try:
        for term, name in ((f"pngcairo size {width},520 font 'DejaVu Sans,10'", "cyclictest.png"),
                           (f"svg size {width},520 dynamic font 'DejaVu Sans,10'",
                            "cyclictest.svg")):
            path = os.path.join(out, name)
            p = subprocess.run([gp], input=f"set terminal {term}\nset output '{path}'\n" + body,
                               text=True, capture_output=True)
            if p.returncode:
                return made or None, "gnuplot: " + (p.stderr.strip().splitlines()
                                                    or ["failed"])[-1]
            made.append(path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return made, None


def report(out):
    with open(os.path.join(out, "results.json")) as f:
        res = json.load(f)
    text = table(res)
    with open(os.path.join(out, "table.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "command.txt"), "w") as f:
        f.write(res["command"] + "\n")
    print(text, end="")
    made, why = plot(res, out)
    print(f"results: {os.path.join(out, 'results.json')}; "
          + (f"plot: {', '.join(made)}" if made else f"plot: none ({why})"))
    failed = [r for r in res["results"] if r.get("failure")]
    early = sum((r.get("never_early") or {}).get("early", 0)
                for r in res["results"] if r["mode"] != "qemu")
    if early:
        print(f"lull delivered {early} local timer interrupts before their TSC deadline: a bug")
    return 1 if failed or early or res.get("partial") else 0


# --------------------------------------------------------------------------
# command line


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="cyclictest.py", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcpus", default="1,2", metavar="LIST",
                    help="vCPU counts, comma-separated (default 1,2)")
    ap.add_argument("--modes", default=",".join(DEFAULT_MODES), metavar="LIST",
                    help="comma-separated subset of " + ",".join(MODES) +
                    " (default all but lull-no-pv-eoi, lull-no-advance and lull-halt-poll)")
    ap.add_argument("--repeat", type=int, default=1, metavar="R",
                    help="runs of every mode and vCPU count, interleaved (default 1)")
    ap.add_argument("--duration", type=int, default=20, metavar="S",
                    help="cyclictest -D, seconds (default 20)")
    ap.add_argument("--interval", type=int, default=1000, metavar="US",
                    help="cyclictest -i, µs (default 1000)")
    ap.add_argument("--threads", type=int, default=None, metavar="N",
                    help="cyclictest -t, its measuring threads, each pinned to its vCPU from "
                         "vCPU 0 on (default: one per vCPU); with fewer, the other vCPUs run "
                         "none, to tell what a vCPU costs its neighbour from what its "
                         "measuring thread costs")
    ap.add_argument("--priority", type=int, default=95, metavar="P",
                    help="cyclictest -p, SCHED_FIFO priority (default 95)")
    ap.add_argument("--hist", type=int, default=50000, metavar="US",
                    help="cyclictest -h, the histogram's width in µs (default 50000: "
                         "a guest's p99 lies inside it even where it is late by "
                         "periods)")
    ap.add_argument("--mem", default="256M", metavar="SIZE", help="guest RAM (default 256M)")
    ap.add_argument("--build", default="build", metavar="DIR",
                    help="meson build folder: vmm/lull, tests/linux/lull-init (default build)")
    ap.add_argument("--kernel", default=None, metavar="BZIMAGE",
                    help="default: the bzImage tests/nested/lull-nested caches")
    ap.add_argument("--qemu", default="qemu-system-x86_64", metavar="PATH")
    ap.add_argument("--lull-arg", action="append", default=[], metavar="ARG",
                    help="one more option for every lull run (repeatable), "
                         "e.g. --lull-arg=--trace-late")
    ap.add_argument("--retries", type=int, default=1, metavar="K",
                    help="run a VM again, up to K times, when it ends without cyclictest's "
                         "summary (a guest that hangs or panics; the nested runner's emulated "
                         "SVM has faults): every attempt is kept in the results (default 1)")
    ap.add_argument("--boot-timeout", type=float, default=300, metavar="S",
                    help="seconds for a guest to reach init (default 300: emulated hosts are slow)")
    ap.add_argument("--out", default=None, metavar="DIR",
                    help="results folder (default BUILD/latency/DATE-TIME)")
    in_runner.add_options(ap, "2G")
    ap.add_argument("--report", default=None, metavar="DIR",
                    help="print the table and draw the plot of a saved run, then exit")
    cfg = ap.parse_args(argv)
    cfg.inner = cfg._inner
    if cfg.report:
        return cfg
    try:
        cfg.vcpus = [int(v) for v in cfg.vcpus.split(",") if v]
    except ValueError:
        ap.error(f"--vcpus {cfg.vcpus}: not a list of numbers")
    cfg.modes = [m for m in cfg.modes.split(",") if m]
    bad = [m for m in cfg.modes if m not in MODES]
    if bad:
        ap.error(f"--modes: unknown {', '.join(bad)}; choose from {', '.join(MODES)}")
    if not cfg.vcpus or min(cfg.vcpus) < 1 or cfg.repeat < 1 or cfg.retries < 0 or cfg.duration < 1 \
            or cfg.interval < 1 or cfg.hist < 1:
        ap.error("--vcpus, --repeat, --duration, --interval and --hist must be positive")
    if cfg.threads is not None and not 1 <= cfg.threads <= min(cfg.vcpus):
        ap.error(f"--threads {cfg.threads}: from 1 to the fewest --vcpus ({min(cfg.vcpus)})")
    # {N}: --threads, or the guest's vCPUs: one thread per vCPU
    cfg.cyclictest_args = (f"-m -q -p {cfg.priority} -D {cfg.duration} -i {cfg.interval} "
                           f"-t {{N}} -a -h {cfg.hist}")
    cfg.done_timeout = max(120.0, cfg.duration * 2.0)
    cfg.build = os.path.abspath(cfg.build)
    cfg.lull = os.path.join(cfg.build, "vmm", "lull")
    cfg.initramfs = os.path.join(cfg.build, "bench", "latency", "cyclictest-initramfs.cpio")
    cfg.kernel = cfg.kernel or linux_idle.cached_bzimage()
    if not cfg.kernel or not os.path.isfile(cfg.kernel):
        ap.error("no kernel: give --kernel, or run tests/nested/lull-nested once to cache one")
    cfg.kernel = os.path.abspath(cfg.kernel)
    if any(m != "qemu" for m in cfg.modes) and not os.access(cfg.lull, os.X_OK):
        ap.error(f"{cfg.lull} is missing: run ninja -C {cfg.build}")
    cfg.out = os.path.abspath(cfg.out or os.path.join(
        cfg.build, "latency", datetime.datetime.now().strftime("%Y%m%d-%H%M%S")))
    return cfg


def run_nested(cfg, argv):
    """The same script, its measurement alone, inside the nested runner."""
    per_vm = cfg.boot_timeout / 2 + cfg.duration + 90
    timeout = 300 + len(cfg.vcpus) * len(cfg.modes) * cfg.repeat * per_vm
    return in_runner.rerun_inside(__file__, argv, cfg.out, cfg.runner_mem, timeout, log,
                                  cfg.runner_tsc)


def main(argv):
    cfg = parse_args(argv)
    if cfg.report:
        return report(os.path.abspath(cfg.report))
    cfg.command = " ".join(["bench/latency/cyclictest.py"] + [shlex.quote(a) for a in argv
                                                              if a != "--_inner"])
    try:
        if not cfg.inner:
            cfg.packages = build_initramfs(cfg)
        elif not os.path.isfile(cfg.initramfs):
            raise Error(f"{cfg.initramfs} is missing (the script builds it before the runner)")
    except Error as e:
        log(str(e))
        return 1
    cfg.initramfs_sha256 = sha256(cfg.initramfs)
    if cfg.inner:
        with open(os.path.join(cache_dir(), "ready")) as f:
            cfg.packages = f.read().split()
    os.makedirs(cfg.out, exist_ok=True)
    kvm, hardware = qemu_ref.host_kvm(cfg.lull)
    nested = cfg.nested == "always" or (cfg.nested == "auto" and not hardware)
    if cfg.inner or not nested:
        if not hardware:
            log(f"/dev/kvm is {kvm or 'missing or not accessible'}: no KVM here runs "
                "Debian's kernel (--nested auto runs inside tests/nested/lull-nested)")
            return 69
        if "qemu" in cfg.modes and not shutil.which(cfg.qemu):
            log(f"{cfg.qemu} is not installed")
            return 69
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        write_results(cfg, measure(cfg))
        if cfg.inner:
            return 0
    else:
        t0 = time.monotonic()
        rc, runner_command = run_nested(cfg, argv)
        path = os.path.join(cfg.out, "results.json")
        if not os.path.exists(path):
            log("the nested run left no results.json")
            return 1
        # the inner run's own command line is the runner's business
        with open(path) as f:
            res = json.load(f)
        res.update(command=cfg.command, runner_command=runner_command,
                   runner_s=round(time.monotonic() - t0), runner_status=rc)
        with open(path, "w") as f:
            json.dump(res, f, indent=1)
            f.write("\n")
    return report(cfg.out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
