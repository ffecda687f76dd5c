#!/usr/bin/env python3
"""Load benchmark of ThreadDesk's HTTP API against the sandbox (Discord and APNs emulators with
Discord's real rate limits). Starts `threaddesk sandbox` on a free port, runs each scenario with
a pool of client threads, prints requests/s and latency percentiles, and appends nothing
anywhere: copy the table into bench/RESULTS.md with the machine and the commit.

    swift build -c release --product threaddesk
    python3 bench/load.py                      # uses .build/release/threaddesk when it exists
    python3 bench/load.py --binary .build/debug/threaddesk --scale 0.5
"""
import argparse
import concurrent.futures
import json
import pathlib
import socket
import statistics
import subprocess
import tempfile
import threading
import time
import uuid

import requests

ROOT = pathlib.Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Sandbox:
    def __init__(self, binary: pathlib.Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data = tempfile.TemporaryDirectory(prefix="threaddesk-bench-")
        self.log = open(pathlib.Path(self.data.name) / "sandbox.log", "w")
        self.process = subprocess.Popen(
            [str(binary), "sandbox", "--port", str(self.port), "--data-directory", self.data.name],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            try:
                if requests.get(self.url + "/health", timeout=1).ok:
                    break
            except requests.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise SystemExit("the sandbox did not start; see " + self.log.name)
                time.sleep(0.1)
        self.app_key = requests.get(self.url + "/sandbox/api/config", timeout=5).json()["appKey"]

    def close(self):
        self.process.terminate()
        self.process.wait(timeout=15)
        self.log.close()
        self.data.cleanup()


local = threading.local()


def session() -> requests.Session:
    if not hasattr(local, "session"):
        local.session = requests.Session()
    return local.session


def run(name: str, count: int, concurrency: int, call) -> dict:
    """`count` calls of `call(i)` (each returns the HTTP status) on `concurrency` threads."""
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()

    def one(i: int):
        start = time.perf_counter()
        status = call(i)
        elapsed = time.perf_counter() - start
        with lock:
            latencies.append(elapsed)
            statuses[status] = statuses.get(status, 0) + 1

    began = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(count)))
    wall = time.perf_counter() - began
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000

    result = {
        "scenario": name, "requests": count, "concurrency": concurrency, "seconds": round(wall, 2),
        "rps": round(count / wall, 1), "p50_ms": round(pct(0.50), 1), "p95_ms": round(pct(0.95), 1),
        "p99_ms": round(pct(0.99), 1), "mean_ms": round(statistics.fmean(latencies) * 1000, 1), "statuses": statuses,
    }
    print(json.dumps(result), flush=True)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    release = ROOT / ".build" / "release" / "threaddesk"
    parser.add_argument("--binary", type=pathlib.Path, default=release if release.exists() else ROOT / ".build" / "debug" / "threaddesk")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every request count")
    arguments = parser.parse_args()
    n = lambda count: max(1, int(count * arguments.scale))  # noqa: E731

    sandbox = Sandbox(arguments.binary)
    print(json.dumps({"binary": str(arguments.binary), "url": sandbox.url}), flush=True)
    try:
        base = sandbox.url

        def open_session(_):
            return session().post(base + "/v1/session", json={}, headers={"X-App-Key": sandbox.app_key}, timeout=30).status_code

        run("GET /health (server alone)", n(5000), 16, lambda _: session().get(base + "/health", timeout=30).status_code)
        run("POST /v1/session (store write, no Discord)", n(2000), 16, open_session)

        users = []
        for _ in range(10):
            users.append(session().post(base + "/v1/session", json={}, headers={"X-App-Key": sandbox.app_key}, timeout=30).json()["token"])

        def send(i):
            token = users[i % len(users)]
            return session().post(
                base + "/v1/messages", json={"content": f"bench message {i}"},
                headers={"Authorization": f"Bearer {token}", "Idempotency-Key": uuid.uuid4().hex}, timeout=120).status_code

        # 10 users: the first message of each creates its thread (Discord: 10 thread creates per 10 s
        # in the emulator), then 5 posts per 5 s per thread.
        run("POST /v1/messages, 10 users (Discord-bound)", n(100), 10, send)

        def read(i):
            token = users[i % len(users)]
            return session().get(base + "/v1/messages?limit=50", headers={"Authorization": f"Bearer {token}"}, timeout=120).status_code

        # Every read asks Discord: bounded by the bot's global 50 requests/s.
        run("GET /v1/messages, 10 users (Discord-bound)", n(500), 16, read)
    finally:
        sandbox.close()


if __name__ == "__main__":
    main()
