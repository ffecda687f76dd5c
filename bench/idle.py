#!/usr/bin/env python3
"""Idle CPU of every process of a deployment with everything on and nothing to do: `threaddesk
serve --gateway` with pushes configured, and `threaddesk serve` beside the gateway daemon, on the
emulators. Prints each process's share of one core over the window (bench/RESULTS.md).

`--tracing` turns tracing on in every process (TRACING=otlp) towards a sink that discards spans
(bench/otlp_sink.py, started here; its CPU and what it received are printed too)."""
import argparse
import contextlib
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "Tests"))
from executables import idle_cpu, running_idle_deployment  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from otlp_sink import running_sink  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--settle", type=float, default=10, help="seconds after start before measuring")
    parser.add_argument("--window", type=float, default=60, help="seconds measured")
    parser.add_argument("--configuration", default="debug", choices=["debug", "release"])
    parser.add_argument("--tracing", action="store_true", help="TRACING=otlp in every process, to a discarding sink")
    parser.add_argument("--tracing-protocol", default="http/protobuf", choices=["http/protobuf", "http/json"])
    parser.add_argument("--tracing-sample-ratio", default="1")
    arguments = parser.parse_args()
    out = subprocess.run(["swift", "build", "-c", arguments.configuration, "--show-bin-path"], cwd=ROOT, check=True,
                         capture_output=True, text=True)
    with contextlib.ExitStack() as stack:
        sink = None
        if arguments.tracing:
            sink = stack.enter_context(running_sink())
            # running_idle_deployment passes os.environ to every process it starts.
            os.environ.update({"TRACING": "otlp", "TRACING_ENDPOINT": sink.url, "TRACING_PROTOCOL": arguments.tracing_protocol,
                               "TRACING_SAMPLE_RATIO": arguments.tracing_sample_ratio})
        folder = stack.enter_context(tempfile.TemporaryDirectory())
        pids, _ = stack.enter_context(running_idle_deployment(pathlib.Path(out.stdout.strip()), pathlib.Path(folder)))
        time.sleep(arguments.settle)
        if sink:
            pids = {**pids, "OTLP sink (Python)": sink.process.pid}
            before = sink.counts()
        shares = idle_cpu(pids, arguments.window)
        if sink:
            after = sink.counts()
    tracing = f", tracing on ({arguments.tracing_protocol})" if arguments.tracing else ", tracing off"
    print(f"| process | CPU over {arguments.window:.0f} s idle ({arguments.configuration}{tracing}) |")
    print("|---|---|")
    for name, share in shares.items():
        print(f"| {name} | {share * 100:.2f} % of a core |")
    if sink:
        received = {key: after[key] - before[key] for key in ("requests", "bytes", "spans")}
        print(f"sink during the window: {received}; since start: {after}")


if __name__ == "__main__":
    main()
