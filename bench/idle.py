#!/usr/bin/env python3
"""Idle CPU of every process of a deployment with everything on and nothing to do: `threaddesk
serve --gateway` with pushes configured, and `threaddesk serve` beside the gateway daemon, on the
emulators. Prints each process's share of one core over the window (bench/RESULTS.md)."""
import argparse
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "Tests"))
from executables import idle_cpu, running_idle_deployment  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--settle", type=float, default=10, help="seconds after start before measuring")
    parser.add_argument("--window", type=float, default=60, help="seconds measured")
    parser.add_argument("--configuration", default="debug", choices=["debug", "release"])
    arguments = parser.parse_args()
    out = subprocess.run(["swift", "build", "-c", arguments.configuration, "--show-bin-path"], cwd=ROOT, check=True,
                         capture_output=True, text=True)
    with tempfile.TemporaryDirectory() as folder, running_idle_deployment(pathlib.Path(out.stdout.strip()), pathlib.Path(folder)) as (pids, _):
        time.sleep(arguments.settle)
        shares = idle_cpu(pids, arguments.window)
    print(f"| process | CPU over {arguments.window:.0f} s idle ({arguments.configuration}) |")
    print("|---|---|")
    for name, share in shares.items():
        print(f"| {name} | {share * 100:.2f} % of a core |")


if __name__ == "__main__":
    main()
