#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""kvm-unit-tests' x86 suite on lull and on QEMU/KVM, side by side.

    tests/kut/kut.py [--build build] [--tests x2apic,tsc,...] [--vmm lull,qemu]
                     [--known docs/guests.md] [--lean]

Runs a kvm-unit-tests build that the user already has: a kvm-unit-tests
tree built for x86_64 (./configure --arch=x86_64 && make), named by
--kut-dir or $LULL_KUT_DIR; lull neither contains nor fetches nor builds
it. Reads that tree's own x86/unittests.cfg for each chosen test (its file, smp, test_args or
extra_params' -append, timeout) and runs it on each VMM, where there is a
/dev/kvm, or else inside tests/nested/lull-nested (under flock on
/tmp/lull-nested.lock: one emulated machine at a time), all tests in one
runner boot. There the runner's second CPU is tickless (nohz_full) and
single-vCPU tests run pinned to it, and a test that hangs for the runner's
own reasons is run again, at most twice (NESTED_KERNEL_ARGS says why).

Both VMMs get the environment kvm-unit-tests' x86/run gives through
-initrd (NR_CPUS, MEMSIZE, TEST_DEVICE=0: no pc-testdev) as the first
multiboot module, and the image's path then its arguments as the
multiboot command line. QEMU is q35 with the reference's -cpu model
(scripts/qemu_ref.py probes it: host where KVM takes it) and +x2apic
(-x2apic where the test's own parameters hide it: xapic), and
isa-debug-exit at 0xf4;
lull hides x2APIC from CPUID for those tests with --no-x2apic. The exit
status is mapped to kvm-unit-tests' code: QEMU's isa-debug-exit returns
(code << 1) | 1, lull returns the code itself.

Prints one row per test: each VMM's verdict (PASS, FAIL, SKIP, TIMEOUT,
as run_tests.sh says them) and its sub-test counts (pass/fail/skip), then
every sub-test whose result differs between the VMMs.

With --known FILE (docs/guests.md), the exit status is 1 when lull fails
a sub-test, or a whole test, that the file's "kvm-unit-tests on lull"
table does not list with its reason for this host's KVM (its "kvm"
column: any, or the module `lull info` names); 0 otherwise. Without it, 0 unless
the runner itself failed. --lean picks the subset the meson suite `kut`
runs (LEAN_TESTS).
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
NESTED = os.path.join(SOURCE_ROOT, "tests", "nested", "lull-nested")
NESTED_LOCK = "/tmp/lull-nested.lock"
sys.path.insert(0, os.path.join(SOURCE_ROOT, "scripts"))
import qemu_ref  # noqa: E402  (the reference's -cpu model)
# The runner's QEMU (7.2) emulates SVM without the STI interrupt shadow
# across a #VMEXIT: VMRUN does not reload it from the VMCB (fixed in QEMU
# 9.1, "target/i386: fix INHIBIT_IRQ/TF/RF handling for VMRUN"). A host
# interrupt that exits between a guest's STI and HLT lets KVM open the
# interrupt window before the HLT, so the guest takes its wake-up interrupt
# and then halts for good: vmexit.flat's *_sti_hlt operations hang there,
# on QEMU/KVM as on lull. The runner's second CPU is therefore tickless
# (nohz_full) and single-vCPU tests run pinned to it, where few host
# interrupts land; tests with more vCPUs run unpinned. Fewer is not none:
# there, a *_sti_hlt operation that times out is run again, at most twice,
# as is any test that timed out without a byte of output (QEMU/KVM now and
# then never starts its guest in the runner).
NESTED_KERNEL_ARGS = ["nohz_full=1", "rcu_nocbs=1"]
NESTED_VMM_CPU = 1
NESTED_HANG_TRIES = 3

# vmexit.flat's self-IPI operations (self_ipi_<op>, x2apic_self_ipi_<op>),
# which unittests.cfg has no entries for
SELF_IPI_OPS = ("sti_nop", "sti_hlt", "tpr", "tpr_sti_nop", "tpr_sti_hlt")

# Issue 27's list, in unittests.cfg's names, and the vmexit_* rows.
DEFAULT_TESTS = [
    "x2apic", "xapic", "ioapic", "smptest", "smptest3", "tsc", "tsc_adjust",
    "tscdeadline_latency", "kvmclock_test", "eventinj", "init", "msr",
    "vmexit_cpuid", "vmexit_vmcall", "vmexit_mov_from_cr8", "vmexit_mov_to_cr8",
    "vmexit_inl_pmtimer", "vmexit_ipi", "vmexit_ipi_halt", "vmexit_ple_round_robin",
    "vmexit_tscdeadline", "vmexit_tscdeadline_immed", "vmexit_cr0_wp", "vmexit_cr4_pge",
] + [f"vmexit_{p}self_ipi_{t}" for p in ("", "x2apic_", "xapic_") for t in SELF_IPI_OPS]
# The meson suite's subset: SMP bring-up by INIT/SIPI, the TSC, event
# injection, the I/O APIC with x2APIC vCPUs; each a few seconds in the
# nested runner. apic.flat (x2apic, xapic) is not in it: its NMI loops
# outlast any timeout there, on QEMU/KVM too (docs/guests.md).
LEAN_TESTS = ["smptest", "smptest3", "tsc", "tsc_adjust", "eventinj", "ioapic"]

# Built by kvm-unit-tests but absent from (or commented out of) its
# unittests.cfg: run with the defaults its own runner would use.
EXTRA_TESTS = {
    # 10M TSC cycles apart, 200 samples: its default, 200000, is shorter
    # than one timer round trip under the nested runner's emulated CPU,
    # where the test then never leaves its interrupt handler (on QEMU/KVM
    # as on lull)
    "tscdeadline_latency": {"file": "tscdeadline_latency.flat",
                            "test_args": "10000000 200"},
    "init": {"file": "init.flat"},
}
# vmexit.flat's self-IPI operations, one per run as unittests.cfg runs the
# other vmexit_* operations (each one runs until 2^30 TSC cycles have
# passed: a few seconds in the nested runner). kvm-unit-tests switches to
# x2APIC where CPUID offers it: self_ipi_<op> then writes the ICR MSR,
# x2apic_self_ipi_<op> the SELF IPI MSR; xapic_self_ipi_<op> is
# self_ipi_<op> with x2APIC hidden, the ICR in the MMIO page.
for _t in SELF_IPI_OPS:
    for _name, _op, _params in (
            (f"vmexit_self_ipi_{_t}", f"self_ipi_{_t}", ""),
            (f"vmexit_x2apic_self_ipi_{_t}", f"x2apic_self_ipi_{_t}", ""),
            (f"vmexit_xapic_self_ipi_{_t}", f"self_ipi_{_t}", "-cpu host,-x2apic")):
        EXTRA_TESTS[_name] = {"file": "vmexit.flat", "test_args": _op,
                              "qemu_params": _params, "timeout": "10"}

# Tests that drive I/O APIC lines through QEMU's pc-testdev (ports 0x2000 +
# pin) whatever TEST_DEVICE says: both VMMs get the device for them
# (lull: --test-device).
NEEDS_TEST_DEVICE = {"ioapic"}

DEFAULT_MEM_MB = 128  # QEMU's default, which unittests.cfg assumes
DEFAULT_TIMEOUT = 90  # run_tests.sh's
# kvm-unit-tests' exit code when every sub-test skipped: 77 >> 1, so that
# QEMU's (code << 1) | 1 makes it autotools' 77
EXIT_SKIP = 77 >> 1
# what this script exits with when it cannot run at all (meson's SKIP)
SCRIPT_SKIP = 77


def log(msg):
    print(f"kut: {msg}", file=sys.stderr, flush=True)


# ---- the user's kvm-unit-tests build ----------------------------------

def find_kut(kut_dir, skip_without):
    """The kvm-unit-tests tree to run; without one, SKIP (77) or an error."""
    why = None
    if not kut_dir:
        why = ("no kvm-unit-tests build given: point --kut-dir or LULL_KUT_DIR at a "
               "kvm-unit-tests tree built with ./configure --arch=x86_64 && make")
    elif not os.path.isfile(os.path.join(kut_dir, "x86", "unittests.cfg")):
        why = f"{kut_dir} is not a kvm-unit-tests tree (no x86/unittests.cfg)"
    elif not any(f.endswith(".flat") for f in os.listdir(os.path.join(kut_dir, "x86"))):
        why = f"{kut_dir} is not built for x86_64 (no x86/*.flat: run make there)"
    if why is None:
        return os.path.abspath(kut_dir)
    if skip_without:
        print(f"kut: SKIP {why}", flush=True)
        sys.exit(SCRIPT_SKIP)
    raise SystemExit(f"kut: {why}")



# ---- unittests.cfg ----------------------------------------------------

def read_unittests_cfg(path):
    """{name: {key: value}}, as kvm-unit-tests' scripts/common.bash reads it."""
    tests, cur = {}, None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            m = re.match(r"^\[(.+)\]$", line)
            if m:
                cur = tests.setdefault(m.group(1), {})
                continue
            m = re.match(r"^(\w+)\s*=\s*(.*)$", line)
            if m and cur is not None:
                cur[m.group(1)] = m.group(2)
    return tests


def unquote(v):
    v = v.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        v = v[1:-1]
    return v


def expand_backticks(s):
    """test_args may hold `cmd` (kvmclock_test: `date +%s`): run it, as bash would."""
    return re.sub(r"`([^`]*)`",
                  lambda m: subprocess.run(m.group(1), shell=True, capture_output=True,
                                           text=True).stdout.strip(), s)


class Test:
    def __init__(self, name, cfg):
        self.name = name
        self.file = cfg["file"]
        self.smp = int(unquote(cfg.get("smp", "1")) or 1)
        qemu_params = unquote(cfg.get("qemu_params", "")) + " " + \
            unquote(cfg.get("extra_params", ""))
        words = shlex.split(qemu_params)
        args = unquote(cfg.get("test_args", ""))
        self.mem_mb = DEFAULT_MEM_MB
        for i, w in enumerate(words[:-1]):
            if w == "-append":
                args = (args + " " + words[i + 1]).strip()
            elif w == "-m":
                self.mem_mb = int(re.match(r"\d+", words[i + 1]).group(0))
            elif w == "-smp":
                self.smp = int(re.match(r"\d+", words[i + 1]).group(0))
        self.args = expand_backticks(args)
        # the test's own -cpu hides x2APIC (xapic): so do both VMMs
        self.x2apic = not re.search(r"-cpu\s+\S*-x2apic", qemu_params)
        self.test_device = name in NEEDS_TEST_DEVICE
        self.timeout = int(re.match(r"\d+", unquote(cfg.get("timeout", "")) or
                                    str(DEFAULT_TIMEOUT)).group(0))


# ---- running one test -------------------------------------------------

def env_file(test, tmp):
    td = int(test.test_device)
    path = os.path.join(tmp, f"env-{test.smp}-{test.mem_mb}-{td}")
    with open(path, "w") as f:
        f.write(f"NR_CPUS={test.smp}\nMEMSIZE={test.mem_mb}\nTEST_DEVICE={td}\n")
    return path


def command(vmm, test, image, env, cfg):
    if vmm == "qemu":
        cpu = qemu_ref.cpu(cfg.qemu, ",+x2apic" if test.x2apic else ",-x2apic")
        cmd = [cfg.qemu, "-nodefaults", "-no-user-config", "-display", "none",
               "-serial", "stdio", "-no-reboot", "-machine", "q35,accel=kvm",
               "-cpu", cpu, "-smp", str(test.smp), "-m", f"{test.mem_mb}M",
               "-device", "isa-debug-exit,iobase=0xf4,iosize=4",
               "-kernel", image, "-initrd", env]
        if test.test_device:
            cmd += ["-device", "pc-testdev"]
        if test.args:
            cmd += ["-append", test.args]
        return cmd
    cmd = [cfg.lull, "run", "--vcpus", str(test.smp), "--mem", f"{test.mem_mb}M",
           "--initrd", env]
    if not test.x2apic:
        cmd.append("--no-x2apic")
    if test.test_device:
        cmd.append("--test-device")
    if test.args:
        cmd += ["--cmdline", test.args]
    return cmd + [image]


SUBTEST = re.compile(r"^(PASS|FAIL|XPASS|XFAIL|SKIP): (.*)$")
# vmexit.flat's "<operation> <cycles>" lines, tscdeadline_latency's samples.
# The self_ipi_* operations print x, the handler's count, where it is not 1
# at the end of a round, on the line the operation's own comes to end.
CYCLES = re.compile(r"^\s*\d*([a-z][a-z0-9_ ]*?) (\d+)$")
LATENCY = re.compile(r"^latency: (\d+)$")


class Result:
    """output: the guest's console (the VMM's stdout); stderr: the VMM's own
    messages, kept apart so that they never split a console line."""

    def __init__(self, verdict, status, output, stderr, seconds):
        self.verdict = verdict
        self.status = status
        self.output = output
        self.stderr = stderr
        self.seconds = seconds
        self.subtests = []  # (result, name) in order
        self.cycles = {}  # vmexit: operation -> cycles per operation
        latencies = []
        for line in output.splitlines():
            m = SUBTEST.match(line.strip())
            if m:
                self.subtests.append((m.group(1), m.group(2).strip()))
            m = CYCLES.match(line)
            if m and not line.startswith(("cr", "r4 =")):
                self.cycles[m.group(1).strip()] = int(m.group(2))
            m = LATENCY.match(line.strip())
            if m:
                latencies.append(int(m.group(1)))
        if latencies:
            latencies.sort()
            self.cycles["tscdeadline_latency p50"] = latencies[len(latencies) // 2]
            self.cycles["tscdeadline_latency p99"] = latencies[
                min(len(latencies) - 1, (len(latencies) * 99) // 100)]

    def counts(self):
        p = sum(r in ("PASS", "XFAIL") for r, _ in self.subtests)
        f = sum(r in ("FAIL", "XPASS") for r, _ in self.subtests)
        s = sum(r == "SKIP" for r, _ in self.subtests)
        return p, f, s

    def by_name(self):
        """{sub-test: result}; a name seen twice keeps its worst result."""
        d = {}
        for r, n in self.subtests:
            if d.get(n) not in ("FAIL", "XPASS"):
                d[n] = r
        return d


def pinned_cpu(test, cfg):
    """The CPU a test's VMM runs on (None: wherever the scheduler puts it)."""
    return cfg.pin_cpu if cfg.pin_cpu is not None and test.smp == 1 else None


def run_one(vmm, test, image, env, cfg):
    cmd = command(vmm, test, image, env, cfg)
    t0 = time.monotonic()
    limit = test.timeout * cfg.timeout_scale
    if cfg.timeout:
        limit = min(limit, cfg.timeout)
    cpu = pinned_cpu(test, cfg)
    pin = None if cpu is None else (lambda: os.sched_setaffinity(0, {cpu}))
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=limit, preexec_fn=pin)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace")
        err = (e.stderr or b"").decode(errors="replace")
        return Result("TIMEOUT", None, out, err, time.monotonic() - t0)
    out = p.stdout.decode(errors="replace")
    err = p.stderr.decode(errors="replace")
    status = p.returncode
    if vmm == "qemu":
        # isa-debug-exit: (code << 1) | 1; an even status is QEMU's own
        code = status >> 1 if status & 1 else None
    else:
        code = status
    if code == 0:
        verdict = "PASS"
    elif code == EXIT_SKIP:
        verdict = "SKIP"
    else:
        verdict = "FAIL"
    return Result(verdict, status, out, err, time.monotonic() - t0)


# ---- the known lull failures (docs/guests.md) ------------------------

def read_known(path, kvm):
    """{(test, sub-test or "*"): reason} from the "kvm-unit-tests on lull"
    table: its rows for any KVM and those for kvm, the host's."""
    known, in_section, in_table = {}, False, False
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                in_section = "kvm-unit-tests on lull" in line
                continue
            if not in_section or not line.startswith("|"):
                in_table = False
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells[:4] == ["test", "sub-test", "kvm", "reason"]:
                in_table = True  # the section's other tables are results
                continue
            if not in_table or len(cells) < 4 or set(cells[0]) <= set("-: "):
                continue
            test, sub = cells[0].strip("`"), cells[1].strip("`")
            where, reason = cells[2].strip("`"), cells[3]
            if reason and where in ("any", kvm):
                known[(test, sub)] = reason
    return known


def unexplained(name, res, known):
    """lull's failures in this test that the known table does not list."""
    if (name, "*") in known:
        return []
    bad = [n for r, n in res.subtests if r in ("FAIL", "XPASS") and (name, n) not in known]
    if res.verdict in ("FAIL", "TIMEOUT") and not bad and not any(
            (name, n) in known for r, n in res.subtests if r in ("FAIL", "XPASS")):
        bad.append(f"(whole test: {res.verdict}, status {res.status})")
    return bad


# ---- the table --------------------------------------------------------

def cell(res):
    if res is None:
        return "-"
    p, f, s = res.counts()
    return f"{res.verdict} {p}/{f}/{s}"


def print_table(names, results, vmms):
    w = max(len(n) for n in names) + 2
    print()
    print("sub-tests as pass/fail/skip; verdicts as kvm-unit-tests' run_tests.sh says them")
    print("test".ljust(w) + "".join(v.ljust(24) for v in vmms))
    for n in names:
        print(n.ljust(w) + "".join(cell(results[n].get(v)).ljust(24) for v in vmms))
    if len(vmms) < 2:
        return
    print()
    print("sub-tests whose results differ:")
    differ = False
    for n in names:
        a, b = results[n].get(vmms[0]), results[n].get(vmms[1])
        if not a or not b:
            continue
        da, db = a.by_name(), b.by_name()
        for sub in list(dict.fromkeys(list(da) + list(db))):
            if da.get(sub) != db.get(sub):
                differ = True
                print(f"  {n}: {sub}: {vmms[0]} {da.get(sub, '-')}, "
                      f"{vmms[1]} {db.get(sub, '-')}")
    if not differ:
        print("  none")
    ops = [(n, op) for n in names for v in vmms if results[n].get(v)
           for op in results[n][v].cycles]
    ops = list(dict.fromkeys(ops))
    if not ops:
        return
    print()
    print(f"cycles per operation (TSC), {vmms[0]} vs {vmms[1]}:")
    # an operation several tests print (self_ipi_* with and without x2APIC)
    # is named with its test
    seen = [op for _, op in ops]
    label = {(n, op): op if seen.count(op) == 1 else f"{op} ({n})" for n, op in ops}
    w = max(len(x) for x in label.values()) + 2
    print("operation".ljust(w) + vmms[0].rjust(12) + vmms[1].rjust(12) + "ratio".rjust(8))
    for n, op in ops:
        a = results[n].get(vmms[0])
        b = results[n].get(vmms[1])
        ca = a.cycles.get(op) if a else None
        cb = b.cycles.get(op) if b else None
        ratio = f"{ca / cb:.2f}" if ca and cb else "-"
        print(label[(n, op)].ljust(w) + str(ca if ca is not None else "-").rjust(12) +
              str(cb if cb is not None else "-").rjust(12) + ratio.rjust(8))


# ---- main -------------------------------------------------------------

def have_kvm():
    return os.access("/dev/kvm", os.R_OK | os.W_OK)


def run_here(cfg, names, tests, kut_src):
    vmms = cfg.vmm
    if "qemu" in vmms and not shutil.which(cfg.qemu):
        raise SystemExit(f"kut: no {cfg.qemu} for the QEMU column (or give --vmm lull)")
    results = {n: {} for n in names}
    log_dir = cfg.log_dir or tempfile.mkdtemp(prefix="kut-logs-")
    os.makedirs(log_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kut-env-") as tmp:
        for n in names:
            t = tests[n]
            image = os.path.join(kut_src, "x86", t.file)
            if not os.path.isfile(image):
                raise SystemExit(f"kut: {n}: no {image} (kvm-unit-tests did not build it)")
            env = env_file(t, tmp)
            for v in vmms:
                res = run_one(v, t, image, env, cfg)
                tries = 1
                while (res.verdict == "TIMEOUT" and cfg.pin_cpu is not None and
                       (t.args.endswith("_sti_hlt") or not res.output.strip()) and
                       tries < NESTED_HANG_TRIES):
                    log(f"{n} on {v}: TIMEOUT ({res.seconds:.1f} s), " +
                        ("the runner's lost STI shadow" if res.output.strip() else
                         "no output at all") + ": again")
                    res = run_one(v, t, image, env, cfg)
                    tries += 1
                results[n][v] = res
                with open(os.path.join(log_dir, f"{n}.{v}.log"), "w") as f:
                    f.write(" ".join(shlex.quote(c) for c in command(v, t, image, env, cfg)))
                    cpu = pinned_cpu(t, cfg)
                    if cpu is not None:
                        f.write(f"\n# pinned to CPU {cpu}")
                    if tries > 1:
                        f.write(f"\n# run {tries} times, the earlier ones timed out")
                    f.write(f"\n# status {res.status}, {res.seconds:.1f} s\n")
                    f.write(res.output)
                    f.write("\n# the VMM's stderr\n")
                    f.write(res.stderr)
                p, fl, s = res.counts()
                log(f"{n} on {v}: {res.verdict} ({p} passed, {fl} failed, {s} skipped, "
                    f"{res.seconds:.1f} s)" + (f", run {tries} times" if tries > 1 else ""))
    print_table(names, results, vmms)
    if cfg.inside and not cfg.log_dir:
        print("\nlogs: lost with the nested runner (give --log-dir to keep them)")
    else:
        print(f"\nlogs: {log_dir}")
    if not cfg.known:
        return 0
    kvm = qemu_ref.host_kvm(cfg.lull)[0]
    if not kvm:
        raise SystemExit(f"kut: {cfg.lull} info cannot open /dev/kvm")
    known = read_known(cfg.known, kvm)
    bad = {}
    for n in names:
        res = results[n].get("lull")
        if res:
            u = unexplained(n, res, known)
            if u:
                bad[n] = u
    if bad:
        print(f"\nlull failures on {kvm} not listed in {cfg.known} "
              "(\"kvm-unit-tests on lull\"):")
        for n, subs in bad.items():
            for s in subs:
                print(f"  {n}: {s}")
        return 1
    print(f"\nevery lull failure on {kvm} is listed in {cfg.known} with its reason")
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(SOURCE_ROOT, "build"),
                    help="lull's meson build directory (default: build)")
    ap.add_argument("--lull", default=None, help="default: BUILD/vmm/lull")
    ap.add_argument("--qemu", default="qemu-system-x86_64")
    ap.add_argument("--kut-dir", default=os.environ.get("LULL_KUT_DIR"),
                    help="a kvm-unit-tests tree built for x86_64 (default: $LULL_KUT_DIR)")
    ap.add_argument("--tests", default=None, help="comma-separated unittests.cfg names")
    ap.add_argument("--lean", action="store_true", help="the meson suite's subset")
    ap.add_argument("--vmm", default="lull,qemu", help="lull, qemu or both (default)")
    ap.add_argument("--known", default=None, metavar="GUESTS_MD",
                    help="fail on lull failures this file does not list")
    ap.add_argument("--timeout", type=int, default=0,
                    help="cap each test's timeout at this many seconds")
    ap.add_argument("--timeout-scale", type=float, default=None,
                    help="multiply unittests.cfg's timeouts (default 1; 3 in the nested "
                    "runner, whose KVM runs on an emulated CPU)")
    ap.add_argument("--log-dir", default=None)
    ap.add_argument("--nested-timeout", type=int, default=1200)
    ap.add_argument("--skip-without-build", action="store_true",
                    help="no kvm-unit-tests build: say SKIP with the reason and exit 77 "
                    "(meson's skip)")
    ap.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--pin-cpu", type=int, default=None, help=argparse.SUPPRESS)
    cfg = ap.parse_args(argv)
    cfg.build = os.path.abspath(cfg.build)
    cfg.lull = os.path.abspath(cfg.lull or os.path.join(cfg.build, "vmm", "lull"))
    cfg.vmm = [v for v in cfg.vmm.split(",") if v]
    if cfg.timeout_scale is None:
        cfg.timeout_scale = 3 if os.environ.get("LULL_NESTED_RUNNER") == "1" else 1
    for v in cfg.vmm:
        if v not in ("lull", "qemu"):
            ap.error(f"--vmm: no VMM '{v}' (lull, qemu)")
    kut_src = kut_dir = find_kut(cfg.kut_dir, cfg.skip_without_build)
    all_tests = read_unittests_cfg(os.path.join(kut_src, "x86", "unittests.cfg"))
    for n, c in EXTRA_TESTS.items():
        all_tests.setdefault(n, c)
    names = (cfg.tests.split(",") if cfg.tests else
             LEAN_TESTS if cfg.lean else DEFAULT_TESTS)
    for n in names:
        if n not in all_tests:
            ap.error(f"no test '{n}' in {kut_src}/x86/unittests.cfg")
    tests = {n: Test(n, all_tests[n]) for n in names}
    if not os.access(cfg.lull, os.X_OK) and "lull" in cfg.vmm:
        ap.error(f"no lull binary at {cfg.lull} (ninja -C {cfg.build})")

    if cfg.inside or have_kvm():
        return run_here(cfg, names, tests, kut_src)
    # No /dev/kvm here: the same command inside the nested runner, with the
    # built tree already in place (the runner sees this file system).
    inner = [sys.executable, os.path.abspath(__file__), "--inside",
             "--build", cfg.build, "--lull", cfg.lull, "--qemu", cfg.qemu,
             "--kut-dir", kut_dir, "--tests", ",".join(names),
             "--vmm", ",".join(cfg.vmm), "--timeout", str(cfg.timeout),
             "--pin-cpu", str(NESTED_VMM_CPU)]
    if cfg.timeout_scale != 1:
        inner += ["--timeout-scale", str(cfg.timeout_scale)]
    if cfg.known:
        inner += ["--known", os.path.abspath(cfg.known)]
    if cfg.log_dir:
        inner += ["--log-dir", os.path.abspath(cfg.log_dir)]
    # The runner's TCG runs its vCPUs on one host thread: more of them only
    # slow each down; the tests' own vCPUs need not have one each.
    mem = max(t.mem_mb for t in tests.values()) * 2 + 512
    writable = []
    if cfg.log_dir:
        os.makedirs(cfg.log_dir, exist_ok=True)
        writable = ["--writable", os.path.abspath(cfg.log_dir)]
    cmd = ["flock", NESTED_LOCK, NESTED, "--cpus", "2", "--mem", f"{mem}M",
           "--timeout", str(cfg.nested_timeout)] + writable + [
               a for k in NESTED_KERNEL_ARGS for a in ("--kernel-arg", k)] + ["--"] + inner
    log("no /dev/kvm here: running in tests/nested/lull-nested")
    return subprocess.run(cmd).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
