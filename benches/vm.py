"""The VM engine's benchmark: how long the guest takes to boot, and what a guest sender
gets through the emulator with no CPU limit, at 1 and 4 flows, next to the kernel
engine's namespace sender on the same path in the same run.

    sudo python benches/vm.py                 # 3 boots, 5-second runs at 1 and 4 flows
    sudo python benches/vm.py --boots 5 --duration 10s --guest-kernel debian:6.12

Prints medians and the ratio VM / kernel engine. The machine's other work slows both
down: the load average before and after is printed too.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boots", type=int, default=3)
    parser.add_argument("--duration", default="5s")
    parser.add_argument("--rate", default="2Gbit", help="the emulator's rate, above what either sender reaches")
    parser.add_argument("--guest-kernel", default="debian:6.1")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (network namespaces, TUN and TAP devices)")

    import ccbench
    from ccbench.vm.probe import probe

    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    boots = []
    for i in range(args.boots):
        report = probe(args.guest_kernel)
        boots.append(report.boot_s)
        print(f"boot {i + 1}: {report.boot_s:.2f} s ({report.release}, {report.accelerator})")
    print(f"boot time: median {statistics.median(boots):.2f} s of {len(boots)}")

    for flows in (1, 4):
        doc = {
            "duration": args.duration,
            "link": {"rate": args.rate, "rtt": "1ms", "buffer": "2bdp"},
            "flows": [{"cca": "cubic", "count": flows}],
        }
        figures = {}
        for engine, options in (("vm", {"guest_kernel": args.guest_kernel}), ("kernel", {})):
            start = time.monotonic()
            s = ccbench.run(doc, engine=engine, **options).summary
            goodput = sum(f["goodput_bps"] for f in s["flows"]) / 1e6
            figures[engine] = goodput
            print(
                f"{flows} flow(s), {engine:>6}: {goodput:8.1f} Mbit/s "
                f"({time.monotonic() - start:.1f} s wall, utilisation {s['link']['utilization']:.1%})"
            )
        print(f"{flows} flow(s): VM / kernel engine = {figures['vm'] / figures['kernel']:.2f}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
