#!/usr/bin/env python3
"""Live conversation: idle event streams, reply → event latency, typing coalescing.

Starts the Discord emulator and `threaddesk serve --gateway` (release build) on loopback, then:

1. holds `--streams` idle `GET /v1/events` streams (a user may hold 8: 5 per user here) and
   reports the server's RSS before and after, per stream, and the keep-alives each stream got
   over `--idle` seconds (`LIVE_KEEPALIVE_SECONDS=5` here, so two or more are expected);
2. times agent reply (emulator control API) -> `message.created` on the user's stream,
   `--replies` times, on one node (SQLite), or with `--store postgres` across two replicas: the
   gateway in replica A, the streams on replica B (PostgreSQL LISTEN/NOTIFY in between);
3. sends 100 `POST /v1/typing` a second for `--typing` seconds from one user and counts the
   typing calls that reached Discord.

    swift build -c release --product threaddesk && swift build -c release --product discord-emulator
    python3 bench/live.py                                     # one node, SQLite
    scripts/with-postgres python3 bench/live.py --store postgres --streams 0 --typing 0

It prints Markdown table rows; copy them into bench/RESULTS.md with the machine and commit.
"""
import argparse
import asyncio
import json
import os
import pathlib
import socket
import statistics
import subprocess
import tempfile
import time
import uuid

import requests

ROOT = pathlib.Path(__file__).resolve().parents[1]
TYPING_ROUTE = "POST /channels/{channel_id}/typing"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(what: str, check, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


def healthy(base: str) -> bool:
    try:
        return requests.get(base + "/health", timeout=1).ok
    except requests.ConnectionError:
        return False


def rss_kib(pid: int) -> int:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


class Stream:
    """One raw `GET /v1/events` connection (HTTP/1.1, chunked), parsed as it arrives."""

    def __init__(self, port: int, token: str, arrivals: dict | None = None):
        self.port, self.token, self.arrivals = port, token, arrivals
        self.keepalives = 0
        self.events = 0
        self.ready = asyncio.Event()
        self.task = None

    async def run(self):
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        writer.write(f"GET /v1/events HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {self.token}\r\n\r\n".encode())
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        if b" 200 " not in head.split(b"\r\n")[0]:
            raise RuntimeError(head.decode(errors="replace"))
        buffer = b""
        try:
            while True:
                chunk = await reader.read(65536)
                if not chunk:
                    return
                buffer += chunk
                # Chunk-size lines are noise here: only complete SSE lines matter.
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.startswith(b": keep-alive"):
                        self.keepalives += 1
                    elif line.startswith(b"event: unread"):
                        self.ready.set()
                    elif line.startswith(b"data: {") and self.arrivals is not None and b'"author":"support"' in line:
                        now = time.monotonic()
                        message = json.loads(line[6:])
                        self.arrivals.setdefault(message["id"], now)
                    if line.startswith(b"event: "):
                        self.events += 1
        finally:
            writer.close()

    def start(self):
        self.task = asyncio.ensure_future(self.run())
        return self


def start_server(binary, environment, logs, name, gateway: bool):
    log = open(logs / f"{name}.log", "w")
    arguments = [binary, "serve"] + (["--gateway"] if gateway else [])
    return subprocess.Popen(arguments, env=environment, stdout=log, stderr=subprocess.STDOUT)


def new_user(base: str, with_thread: bool):
    session = requests.post(base + "/v1/session", json={}, headers={"X-App-Key": "bench-app-key"}, timeout=30).json()
    if with_thread:
        requests.post(base + "/v1/messages", json={"content": "hello"}, timeout=30,
                      headers={"Authorization": f"Bearer {session['token']}", "Idempotency-Key": str(uuid.uuid4())}).raise_for_status()
    return session["userId"], session["token"]


async def idle_streams(port: int, pid: int, tokens: list, count: int, idle: float):
    before = rss_kib(pid)
    streams = []
    for index in range(count):
        streams.append(Stream(port, tokens[(index // 5) % len(tokens)]).start())
        if index % 200 == 199:
            await asyncio.sleep(0.05)
    await asyncio.wait_for(asyncio.gather(*(s.ready.wait() for s in streams)), timeout=120)
    opened = rss_kib(pid)
    start = [s.keepalives for s in streams]
    await asyncio.sleep(idle)
    after = rss_kib(pid)
    got = [s.keepalives - k for s, k in zip(streams, start)]
    alive = sum(1 for s in streams if not s.task.done())
    for stream in streams:
        stream.task.cancel()
    per_stream = (max(opened, after) - before) * 1024 / count
    print("| streams | RSS before | RSS open | RSS after idle | per stream | streams alive | keep-alives per stream (min / median) |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {count:,} | {before / 1024:.1f} MiB | {opened / 1024:.1f} MiB | {after / 1024:.1f} MiB | {per_stream / 1024:.1f} KiB | "
          f"{alive:,} | {min(got)} / {statistics.median(got):.0f} in {idle:.0f} s |", flush=True)


async def reply_latency(stream_port: int, control: str, users: list, thread_of: dict, replies: int, label: str):
    arrivals = {}
    streams = [Stream(stream_port, token, arrivals).start() for _, token in users]
    await asyncio.wait_for(asyncio.gather(*(s.ready.wait() for s in streams)), timeout=60)
    delays = []
    for index in range(replies):
        user, _ = users[index % len(users)]
        started = time.monotonic()
        reply = await asyncio.to_thread(
            lambda: requests.post(f"{control}/threads/{thread_of[user]}/replies", json={"content": f"reply {index}"}, timeout=10).json())
        while reply["id"] not in arrivals:
            if time.monotonic() - started > 10:
                raise SystemExit(f"reply {index} never reached its stream")
            await asyncio.sleep(0.0005)
        delays.append((arrivals[reply["id"]] - started) * 1000)
    for stream in streams:
        stream.task.cancel()
    print(f"| {label} | {replies} | {statistics.median(delays):.1f} ms | {percentile(delays, 0.99):.1f} ms | {max(delays):.1f} ms |", flush=True)


def typing_flood(base: str, control: str, token: str, seconds: int):
    session = requests.Session()
    before = requests.get(control + "/counters", timeout=5).json()["requestsByRoute"].get(TYPING_ROUTE, 0)
    sent = 0
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        tick = time.monotonic()
        for _ in range(100):
            session.post(base + "/v1/typing", headers={"Authorization": f"Bearer {token}"}, timeout=5)
            sent += 1
        time.sleep(max(0.0, 1 - (time.monotonic() - tick)))
    elapsed = time.monotonic() - started
    after = requests.get(control + "/counters", timeout=5).json()["requestsByRoute"].get(TYPING_ROUTE, 0)
    print(f"| typing | {sent} POST /v1/typing in {elapsed:.1f} s ({sent / elapsed:.0f}/s) | {after - before} Discord calls "
          f"(at most {int(elapsed // 8) + 1} allowed) |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=str(ROOT / ".build/release/threaddesk"))
    parser.add_argument("--emulator", default=str(ROOT / ".build/release/discord-emulator"))
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--streams", type=int, default=10_000)
    parser.add_argument("--idle", type=float, default=12)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--replies", type=int, default=500)
    parser.add_argument("--typing", type=int, default=20)
    args = parser.parse_args()

    work = tempfile.TemporaryDirectory(prefix="threaddesk-live-bench-")
    logs = pathlib.Path(work.name)
    emulator = subprocess.Popen(
        [args.emulator, "--port", "0", "--window-scale", "0.01", "--message-post-limit", "1000"],
        stdout=subprocess.PIPE, stderr=open(logs / "emulator.log", "w"), text=True)
    servers = []
    try:
        endpoints = json.loads(emulator.stdout.readline())
        control = endpoints["controlURL"]
        if args.store == "postgres":
            store = os.environ.get("THREADDESK_POSTGRES_URL") or SystemExit("--store postgres needs scripts/with-postgres")
        else:
            store = f"sqlite://{logs}/threaddesk.sqlite"
        environment = dict(os.environ)
        environment.update({
            "DISCORD_TOKEN": endpoints["botToken"], "DISCORD_API_URL": endpoints["restURL"],
            "DISCORD_GUILD_ID": endpoints["guildID"], "DISCORD_FORUM_CHANNEL_ID": endpoints["forumChannelID"],
            "APP_KEY": "bench-app-key", "STORE_URL": store, "HOST": "127.0.0.1", "LOG_LEVEL": "warning",
            "LIVE_KEEPALIVE_SECONDS": "5", "LIVE_MAX_STREAMS": "50000",
        })
        for name in ["QUOTA_SESSIONS_PER_ADDRESS", "QUOTA_SESSIONS_PER_APP", "QUOTA_SENDS_PER_USER", "QUOTA_SENDS_PER_ADDRESS",
                     "QUOTA_READS_PER_USER", "QUOTA_UPDATES_PER_USER", "QUOTA_THREADS_PER_ADDRESS", "QUOTA_THREADS_TOTAL"]:
            environment[name] = "0"
        port_a = free_port()
        servers.append(start_server(args.binary, {**environment, "PORT": str(port_a)}, logs, "a", gateway=True))
        base_a = f"http://127.0.0.1:{port_a}"
        wait_for("replica A", lambda: healthy(base_a), timeout=30)
        stream_port = port_a
        label = f"one node ({args.store})"
        if args.store == "postgres":
            port_b = free_port()
            servers.append(start_server(args.binary, {**environment, "PORT": str(port_b)}, logs, "b", gateway=False))
            wait_for("replica B", lambda: healthy(f"http://127.0.0.1:{port_b}"), timeout=30)
            stream_port = port_b
            label = "two replicas (PostgreSQL): gateway on A, stream on B"

        if args.streams:
            idle_users = [new_user(base_a, False) for _ in range((args.streams + 4) // 5)]
            asyncio.run(idle_streams(stream_port, servers[-1].pid, [t for _, t in idle_users], args.streams, args.idle))

        if args.replies:
            users = [new_user(base_a, True) for _ in range(args.users)]
            threads = requests.get(control + "/threads", timeout=10).json()
            thread_of = {thread["name"].split(" ")[0]: thread["id"] for thread in threads}
            print("| setup | replies | p50 | p99 | max |\n|---|---|---|---|---|")
            asyncio.run(reply_latency(stream_port, control, users, thread_of, args.replies, label))

        if args.typing:
            _, token = new_user(base_a, True)
            typing_flood(base_a, control, token, args.typing)
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=30)
        emulator.terminate()
        emulator.wait(timeout=10)


if __name__ == "__main__":
    main()
