#!/usr/bin/env python3
"""Memory of a 25 MiB upload: `threaddesk serve` (against the Discord emulator in its own process)
receives `--rounds` messages carrying 25 MiB of files each (10 + 10 + 5 MiB, the default limits),
one after another, and the server's peak resident memory (VmHWM) is reported against its resident
memory before the first: the body is read once into a buffer of its declared size and sent to
Discord as slices of it, so the peak should grow by about one upload, not two or three.

    swift build -c release --product threaddesk && swift build -c release --product discord-emulator
    python3 bench/upload.py                       # or --binary .build/debug/threaddesk …

It prints a Markdown table row; copy it into bench/RESULTS.md with the machine and commit.
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import uuid

import requests

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from live import ROOT, free_port, healthy, wait_for  # noqa: E402


def status_kib(pid: int, field: str) -> int:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=str(ROOT / ".build/release/threaddesk"))
    parser.add_argument("--emulator", default=str(ROOT / ".build/release/discord-emulator"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    work = tempfile.TemporaryDirectory(prefix="threaddesk-upload-bench-")
    logs = pathlib.Path(work.name)
    emulator = subprocess.Popen(
        [args.emulator, "--port", "0"], stdout=subprocess.PIPE, stderr=open(logs / "emulator.log", "w"), text=True)
    server = None
    try:
        endpoints = json.loads(emulator.stdout.readline())
        port = free_port()
        environment = dict(os.environ)
        environment.update({
            "DISCORD_TOKEN": endpoints["botToken"], "DISCORD_API_URL": endpoints["restURL"],
            "DISCORD_GUILD_ID": endpoints["guildID"], "DISCORD_FORUM_CHANNEL_ID": endpoints["forumChannelID"],
            "APP_KEY": "bench-app-key", "STORE_URL": f"sqlite://{logs}/threaddesk.sqlite", "HOST": "127.0.0.1",
            "PORT": str(port), "LOG_LEVEL": "warning", "QUOTA_UPLOAD_MIB_PER_USER": "0", "QUOTA_UPLOAD_MIB_PER_ADDRESS": "0",
            "QUOTA_SENDS_PER_USER": "0", "REQUEST_TIMEOUT_SECONDS": "120",
        })
        server = subprocess.Popen([args.binary, "serve"], env=environment, stdout=open(logs / "server.log", "w"), stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        wait_for("the server", lambda: healthy(base), timeout=30)
        session = requests.post(base + "/v1/session", json={}, headers={"X-App-Key": "bench-app-key"}, timeout=30).json()
        headers = {"Authorization": f"Bearer {session['token']}"}
        requests.post(base + "/v1/messages", json={"content": "hello"}, timeout=30,
                      headers={**headers, "Idempotency-Key": str(uuid.uuid4())}).raise_for_status()
        time.sleep(1)
        before = status_kib(server.pid, "VmRSS")
        mib = 1024 * 1024
        files = [("files", (f"part{i}.zip", os.urandom(size), "application/zip")) for i, size in enumerate([10 * mib, 10 * mib, 5 * mib])]
        total = sum(len(f[1][1]) for f in files)
        durations = []
        for _ in range(args.rounds):
            start = time.monotonic()
            reply = requests.post(base + "/v1/messages", files=files, data={"content": "logs attached"}, timeout=120,
                                  headers={**headers, "Idempotency-Key": str(uuid.uuid4())})
            durations.append(time.monotonic() - start)
            if reply.status_code != 201:
                raise SystemExit(f"upload failed: {reply.status_code} {reply.text[:300]}")
        peak = status_kib(server.pid, "VmHWM")
        after = status_kib(server.pid, "VmRSS")
        print("| upload | rounds | RSS before | peak RSS (VmHWM) | peak growth | in MiB of one upload | RSS after | seconds per upload |")
        print("|---|---|---|---|---|---|---|---|")
        print(f"| {total / mib:.0f} MiB in 3 files | {args.rounds} | {before / 1024:.1f} MiB | {peak / 1024:.1f} MiB | "
              f"{(peak - before) / 1024:.1f} MiB | {(peak - before) * 1024 / total:.2f} | {after / 1024:.1f} MiB | "
              f"{sorted(durations)[len(durations) // 2]:.2f} |")
    finally:
        if server:
            server.terminate()
            server.wait(timeout=30)
        emulator.terminate()
        emulator.wait(timeout=10)


if __name__ == "__main__":
    main()
