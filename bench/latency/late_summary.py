#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Per file of `lull --trace-late` lines: the most late hard timer, and the
one with the largest share of lull's own work (vmm + blocked).

    bench/latency/late_summary.py FILE...

A run's stderr (bench/latency/cyclictest.py keeps it in OUT/runs/*.err)
or any file of those lines. The causes are docs/abi.md's, "Late hard
timers"; vmm and blocked are the time lull's thread spent in its own work,
the rest is the guest's (masked) or the host's (wake, kick, preempted).
"""

import os
import re
import sys

LINE = re.compile(r"delivered ([\d.]+) ms late \(ms: (.*)\)")
OWN = ("vmm", "blocked")


def causes(text):
    out = {}
    for part in text.split(","):
        name, ms = part.strip().rsplit(" ", 1)
        out[name] = float(ms)
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print(f"{'file':44} {'events':>6} {'most late ms':>12} {'lull share ms':>13} {'>50 ms lull':>11}")
    for path in sys.argv[1:]:
        events, over, late, own = 0, 0, (0.0, ""), (0.0, "")
        with open(path, errors="replace") as f:
            for line in f:
                m = LINE.search(line)
                if not m:
                    continue
                events += 1
                ms, c = float(m.group(1)), causes(m.group(2))
                share = sum(c.get(k, 0.0) for k in OWN)
                over += share > 50
                if ms > late[0]:
                    late = (ms, m.group(2))
                if share > own[0]:
                    own = (share, f"of {ms:.1f}: {m.group(2)}")
        print(f"{os.path.basename(path)[:44]:44} {events:6} {late[0]:12.1f} {own[0]:13.1f} {over:11}")
        print(f"    most late: {late[1]}")
        print(f"    largest lull share: {own[1]}")


if __name__ == "__main__":
    main()
