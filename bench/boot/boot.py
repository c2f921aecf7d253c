#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Boot benchmark: lull vs QEMU microvm booting the `hello` guest.

    bench/boot/boot.py BUILD_DIR [--runs N] [--mem 16M] [--json] [--no-qemu]

For each run, measured from just before the spawn (time.monotonic_ns):
  first byte  the guest's first serial byte arriving on the stdout pipe
              (lull flushes its console per line, so: the first line)
  exit        the child reaped (os.wait4)

Memory, side by side: the halt-forever guest (boots like hello, then halts
forever) is started under each VMM; once its banner line is on stdout the
script reads VmRSS and VmHWM from /proc/PID/status and kills it. (wait4's
ru_maxrss is no use here: Linux folds the spawning parent's pre-exec RSS
into the child's peak.)

lull's own --stats give the memory split: rss_kib (VmRSS at the end of
the run), guest_resident_kib (guest pages the host backs, by mincore) and
vmm_rss_kib = rss_kib - guest_resident_kib, i.e. what the VMM costs beyond
the memory the guest touched. Those come from separate --stats runs, so
the timed runs do no extra work.

lull and QEMU runs alternate (lull, qemu, lull, qemu, ...) so both see the
same machine noise; the ratio is QEMU median / lull median.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import qemu_ref  # noqa: E402  (the QEMU/KVM reference's one command line)

HELLO_LINE = b"hello: "


def timed_run(argv, expect_status, expect_out=HELLO_LINE):
    """Spawn argv; return (first_byte_ns, exit_ns)."""
    r, w = os.pipe()
    t0 = time.monotonic_ns()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=w,
                            stderr=subprocess.DEVNULL, close_fds=True)
    os.close(w)
    first = None
    out = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        if first is None:
            first = time.monotonic_ns() - t0
        out += chunk
    os.close(r)
    proc.wait()
    end = time.monotonic_ns() - t0
    if proc.returncode != expect_status or expect_out not in out:
        sys.exit("boot.py: %s: status %d (want %d), output %r"
                 % (" ".join(argv), proc.returncode, expect_status, out[:200]))
    return first, end


def resident_run(argv, banner):
    """Start argv (a guest that halts forever); once banner is on its
    stdout, return (VmRSS, VmHWM, RssAnon, RssFile) in KiB, then kill
    it."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    out = b""
    while banner not in out:
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            sys.exit("boot.py: %s ended before printing %r"
                     % (" ".join(argv), banner))
        out += chunk
    time.sleep(0.05)
    fields = {}
    with open("/proc/%d/status" % proc.pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                fields[key] = int(value.split()[0])
    proc.kill()
    proc.wait()
    proc.stdout.close()
    return (fields["VmRSS"], fields["VmHWM"], fields["RssAnon"],
            fields["RssFile"])


def lull_stats(lull, guest, mem):
    """One lull run with --stats; returns the parsed JSON."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        t0 = time.monotonic_ns()
        subprocess.run([lull, "run", "--mem", mem, "--stats", f.name, guest],
                       stdout=subprocess.DEVNULL, check=True)
        elapsed = time.monotonic_ns() - t0
        with open(f.name) as j:
            stats = json.load(j)
        # Spawn to exit, less wall_ns (vm_create to the last vCPU joined).
        stats["outside_run_ns"] = elapsed - stats["wall_ns"]
        return stats


def summary(values):
    return {"median": statistics.median(values), "min": min(values),
            "max": max(values)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build_dir")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--mem", default="16M")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-qemu", action="store_true")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be at least 1")

    lull = os.path.join(args.build_dir, "vmm", "lull")
    guest = os.path.join(args.build_dir, "guests", "hello.elf")
    for path in (lull, guest):
        if not os.path.exists(path):
            sys.exit("boot.py: %s is missing: build BUILD_DIR first" % path)
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        sys.exit("boot.py: needs /dev/kvm")
    qemu = None if args.no_qemu else shutil.which("qemu-system-x86_64")

    halt = os.path.join(args.build_dir, "guests", "halt-forever.elf")

    def lull_cmd(elf):
        return [lull, "run", "--mem", args.mem, elf]

    def qemu_cmd(elf):
        return qemu_ref.command(elf, qemu, mem=args.mem)

    lull_argv = lull_cmd(guest)
    qemu_argv = qemu_cmd(guest) if qemu else None

    # One untimed run of each warms the page cache.
    timed_run(lull_argv, 0)
    if qemu:
        timed_run(qemu_argv, 1)
    runs = {"lull": [], "qemu": []}
    baseline = []
    for _ in range(args.runs):
        baseline.append(timed_run([lull, "--version"], 0, b"lull ")[1])
        runs["lull"].append(timed_run(lull_argv, 0))
        if qemu:
            runs["qemu"].append(timed_run(qemu_argv, 1))  # (0 << 1) | 1
    stats = [lull_stats(lull, guest, args.mem) for _ in range(5)]
    resident = {"lull": [], "qemu": []}
    for _ in range(5):
        resident["lull"].append(resident_run(lull_cmd(halt), b"halting"))
        if qemu:
            resident["qemu"].append(resident_run(qemu_cmd(halt), b"halting"))

    result = {"guest": "hello", "mem": args.mem, "runs": args.runs,
              "host_cpus": os.cpu_count()}
    for name, rs in runs.items():
        if not rs:
            continue
        result[name] = {
            "first_byte_ms": summary([r[0] / 1e6 for r in rs]),
            "exit_ms": summary([r[1] / 1e6 for r in rs]),
            "rss_kib": summary([r[0] for r in resident[name]]),
            "hwm_kib": summary([r[1] for r in resident[name]]),
            "rss_anon_kib": summary([r[2] for r in resident[name]]),
            "rss_file_kib": summary([r[3] for r in resident[name]]),
        }
    result["lull"]["version_exit_ms"] = summary([b / 1e6 for b in baseline])
    result["lull"]["stats"] = {
        key: statistics.median(s[key] for s in stats)
        for key in ("rss_kib", "guest_resident_kib", "vmm_rss_kib")
    }
    for key in ("first_byte_ns", "wall_ns", "outside_run_ns"):
        result["lull"]["stats"][key.replace("_ns", "_ms")] = statistics.median(
            s[key] / 1e6 for s in stats)
    if qemu:
        result["ratio_qemu_over_lull"] = {
            key: result["qemu"][key]["median"] / result["lull"][key]["median"]
            for key in ("first_byte_ms", "exit_ms", "rss_kib")
        }

    if args.json:
        print(json.dumps(result, indent=2))
        return
    print("boot of guests/hello.elf, --mem %s, %d runs each, medians (min-max)"
          % (args.mem, args.runs))
    print("%-6s %-26s %-26s %-24s" % ("", "spawn -> first byte (ms)",
                                      "spawn -> exit (ms)",
                                      "RSS after boot (KiB)"))
    for name in ("lull", "qemu"):
        if name not in result:
            continue
        row = result[name]
        cells = ["%.2f (%.2f-%.2f)" % (row[k]["median"], row[k]["min"],
                                       row[k]["max"])
                 for k in ("first_byte_ms", "exit_ms")]
        cells.append("%d (%d-%d)" % (row["rss_kib"]["median"],
                                     row["rss_kib"]["min"],
                                     row["rss_kib"]["max"]))
        print("%-6s %-26s %-26s %-24s" % (name, *cells))
    if qemu:
        ratio = result["ratio_qemu_over_lull"]
        print("%-6s %-26s %-26s %-24s" % (
            "ratio", "%.1fx" % ratio["first_byte_ms"],
            "%.1fx" % ratio["exit_ms"], "%.1fx" % ratio["rss_kib"]))
    else:
        print("(qemu-system-x86_64 not installed: no QEMU column)")
    for name in ("lull", "qemu"):
        if name in result:
            print("%s RSS after boot: %d KiB anonymous + %d KiB file-backed"
                  " (shared libraries, binary)"
                  % (name, result[name]["rss_anon_kib"]["median"],
                     result[name]["rss_file_kib"]["median"]))
    b = result["lull"]["version_exit_ms"]
    print("baseline: spawn -> exit of 'lull --version' (no KVM): "
          "%.2f ms (%.2f-%.2f)" % (b["median"], b["min"], b["max"]))
    s = result["lull"]["stats"]
    print("lull --stats (median of 5): rss %d KiB = guest-resident %d KiB"
          " + VMM %d KiB" % (s["rss_kib"], s["guest_resident_kib"],
                              s["vmm_rss_kib"]))
    print("  guest's first byte %.2f ms after lull's main(); wall_ns (VM"
          " create to last vCPU joined) %.2f ms; exec, stats, teardown"
          " around it %.2f ms"
          % (s["first_byte_ms"], s["wall_ms"], s["outside_run_ms"]))
    exit_ok = result["lull"]["exit_ms"]["median"] <= 10
    rss_ok = s["vmm_rss_kib"] <= 2048
    print("targets: exit <= 10 ms median: %s; VMM RSS beyond guest <= 2 MiB: %s"
          % ("met" if exit_ok else "MISSED", "met" if rss_ok else "MISSED"))


if __name__ == "__main__":
    main()
