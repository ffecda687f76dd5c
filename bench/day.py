#!/usr/bin/env python3
"""A day of a popular app, in one benchmark: a scripted mix of everything a widget does.

Starts the Discord emulator (Discord's own rate-limit windows: `--window-scale 1`, 5 posts per
channel per 5 s, 10 thread starts per 10 s per forum, 50 requests/s per route and bot), the APNs
emulator (pushes configured, so the push path is on) and `threaddesk serve --gateway` (SQLite,
one node), or with `--store postgres` two replicas on PostgreSQL (gateway in A, each replica
given half of the bot's global budget with `DISCORD_GLOBAL_LIMIT=25`, every request sent to one
of the two at random, as a load balancer without affinity would).

Setup (not measured): `--users` sessions (every user its own client address through
`X-Forwarded-For`, 127.0.0.1 being a trusted proxy, so the per-address limits apply per user as
in production), push tokens for `--push-share` of them, a first message (hence a forum thread,
at Discord's thread-start pace) from `--threaded` users, and `--streams` users with the chat open
(`GET /v1/events` held open, split over worker processes).

Then, for `--duration` seconds (default 300):

- the users without the chat open poll `GET /v1/messages?after=…` every `--poll-interval` s, each
  at its own phase, and mark a new support reply read (`POST /v1/read`) half of the time;
- `--sends` messages a second (Poisson arrivals) from users with the chat open (and a
  `--poller-sends` share from the others), each after two `POST /v1/typing` 1.5 s apart;
  `--new-conversations` of them a second are a user's first message (a new forum thread);
- an agent replies once a second (`--replies`) through the emulator's control API (typing first)
  to the users who wrote, oldest unanswered first: replies reach streams and pushes;
- users with the chat open mark each reply read 0.5–2 s after it reaches their stream;
- `--churn` users a second close the chat and open it again (`GET /v1/messages`, then the stream
  with `Last-Event-ID`);
- a diagnostics upload every `--diagnostics-every` s and a screenshot (multipart, 200 KiB PNG)
  every `--uploads-every` s.

It reports, as Markdown: per request kind count, rate, p50/p99 and answers by status;
reply → `message.created` on the user's stream and reply → APNs emulator receipt (p50/p99/max);
Discord calls per route (per minute, busiest second) against the emulator's limits and its 429s;
CPU of every process over the window (server CPU per 1,000 active users); server RSS at start and
end; the server's own counters (pushes, quota refusals, Discord calls); warnings and errors in the
server's log; and a timeline in 10 s steps (poll/send/typing p99, the load generator's own lag,
Discord calls and message reads a second, server CPU and RSS), which tells a stall of the whole
machine (every column at once, the generator's lag included) from a slow path of the server.

The servers inherit the environment, so a setting can be varied per run, e.g.
`RECONCILE_INTERVAL_SECONDS=3600` keeps the periodic reconciliation out of the window.

`--read-path discord` runs the same mix against `threaddesk serve` without a gateway feed: the
mirror is never trusted, so every read of a user with a thread asks Discord first
(`MirrorSync.ensureCurrent`), which is the reference design's read path. Replies then reach the
mirror (and streams and pushes) only when a read of that thread asks Discord.

Needs: Python 3.11, aiohttp (`pip install aiohttp`), requests, curl with HTTP/2 (to read the APNs
emulator's deliveries), release builds:

    swift build -c release --product threaddesk
    swift build -c release --product discord-emulator && swift build -c release --product apns-emulator
    python3 bench/day.py                                       # one node, SQLite, 5 minutes
    scripts/with-postgres python3 bench/day.py --store postgres
    python3 bench/day.py --read-path discord                   # the reference design's reads
    python3 bench/day.py --duration 30 --users 2000 --streams 200 --threaded 20   # a quick try

One Python process cannot drive this mix beside the server on two cores, so the users are split
over `--workers` processes (2 by default); the coordinator runs the setup, the agent and the
sampling. The soft RLIMIT_NOFILE is raised to the hard limit for every process, the server's too.
The report says how far the generator kept to the schedule (lag of the poll scheduler).
`KEEP_LOGS=1` keeps the server and emulator logs.
"""
import argparse
import asyncio
import base64
import collections
import hashlib
import heapq
import json
import math
import multiprocessing
import os
import pathlib
import queue
import random
import re
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
import zlib

import aiohttp

METRICS_TOKEN = "bench-metrics-token-0123456789abcdef"  # /metrics is served on the public listener only behind it
METRICS_HEADERS = {"Authorization": f"Bearer {METRICS_TOKEN}"}

ROOT = pathlib.Path(__file__).resolve().parents[1]
APP_KEY = "bench-app-key"
APPLE_EPOCH = 978307200  # Foundation's Date encodes seconds since 2001-01-01.
TIMELINE_STEP = 10  # seconds per row of the timeline


# ---------------------------------------------------------------- helpers

def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def raise_fd_limit() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def postgres_cpu_seconds() -> float:
    """User + system CPU of the throwaway PostgreSQL server (scripts/with-postgres): its postmaster
    (with its reaped children) and every process it runs now."""
    restart = os.environ.get("THREADDESK_POSTGRES_RESTART", "").split()
    if len(restart) < 3:
        return float("nan")
    try:
        postmaster = int(pathlib.Path(restart[2], "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")
    total = 0.0
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, parent = int(entry.name), int(fields[1])
        if pid == postmaster:
            total += sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime, stime, cutime, cstime
        elif parent == postmaster:
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def rss_mib(pid: int) -> float:
    try:
        for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except FileNotFoundError:
        pass
    return float("nan")


def percentile(values, fraction):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def client_address(index: int) -> str:
    return f"10.{(index >> 16) & 255}.{(index >> 8) & 255}.{index & 255}"


def push_token(user_id: str) -> str:
    return hashlib.sha256(user_id.encode()).hexdigest()


def png_bytes(size: int) -> bytes:
    """A real PNG (noise, so it does not compress) of about `size` bytes."""
    width = 256
    height = max(1, size // (width * 3))
    raw = b"".join(b"\x00" + os.urandom(width * 3) for _ in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b"")


def diagnostics_document() -> dict:
    return {
        "app": {"version": "5.12.0", "build": "5120"},
        "device": {"model": "iPhone15,3", "os": "iOS 18.1", "locale": "en_US", "freeDiskMiB": 20480},
        "log": [f"2026-11-25T21:{i // 60:02d}:{i % 60:02d}Z INFO sync finished in {i % 97} ms, {i % 13} items" for i in range(400)],
    }


class Stats:
    """Latencies (ms) and answers per request kind, only for requests started inside the window."""

    def __init__(self):
        self.latencies = collections.defaultdict(list)
        self.statuses = collections.defaultdict(collections.Counter)
        self.timeline = collections.defaultdict(lambda: collections.defaultdict(list))  # kind -> 10 s step -> ms
        self.window = (float("inf"), float("inf"))

    def inside(self, started: float) -> bool:
        return self.window[0] <= started < self.window[1]

    def record(self, kind: str, started: float, status) -> None:
        if not self.inside(started):
            return
        self.statuses[kind][status] += 1
        if isinstance(status, int):
            elapsed = (time.time() - started) * 1000
            self.latencies[kind].append(elapsed)
            self.timeline[kind][int((started - self.window[0]) // TIMELINE_STEP)].append(elapsed)

    def merge(self, other: dict) -> None:
        for kind, values in other["latencies"].items():
            self.latencies[kind].extend(values)
        for kind, counts in other["statuses"].items():
            self.statuses[kind].update(counts)
        for kind, steps in other["timeline"].items():
            for step, values in steps.items():
                self.timeline[kind][step].extend(values)

    def export(self) -> dict:
        return {"latencies": dict(self.latencies), "statuses": {k: dict(v) for k, v in self.statuses.items()},
                "timeline": {k: dict(v) for k, v in self.timeline.items()}}


# ---------------------------------------------------------------- the users' side (worker processes)

class Worker:
    def __init__(self, index: int, conf: dict, users: list, to_main, go, results):
        self.index, self.conf, self.users = index, conf, users
        self.to_main, self.go, self.results = to_main, go, results
        self.stats = Stats()
        self.arrivals = {}  # support message id -> wall time it reached a stream
        self.stream_events = collections.Counter()
        self.stream_ends = collections.Counter()
        self.streams = {}  # user index -> task
        self.last_event = {}
        self.poll_lag = []
        self.lag_steps = collections.defaultdict(list)
        self.sent_at = {}
        self.stopping = False
        self.rng = random.Random(1000 + index)

    def base(self) -> str:
        return self.rng.choice(self.conf["bases"])

    def headers(self, user: dict, **extra) -> dict:
        return {"Authorization": f"Bearer {user['token']}", "X-Forwarded-For": user["address"], **extra}

    async def request(self, kind, method, path, user, **kwargs):
        started = time.time()
        try:
            async with self.http.request(method, self.base() + path, headers=self.headers(user, **kwargs.pop("headers", {})),
                                         timeout=aiohttp.ClientTimeout(total=60), **kwargs) as answer:
                body = await answer.read()
                self.stats.record(kind, started, answer.status)
                return answer.status, body
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as error:
            self.stats.record(kind, started, type(error).__name__)
            return None, b""

    # -- streams

    async def stream(self, user: dict, ready: asyncio.Event, kind: str):
        headers = self.headers(user)
        if user["index"] in self.last_event:
            headers["Last-Event-ID"] = self.last_event[user["index"]]
        started = time.time()
        try:
            async with self.http.get(self.base() + "/v1/events", headers=headers,
                                     timeout=aiohttp.ClientTimeout(total=None, sock_connect=30)) as answer:
                self.stats.record(kind, started, answer.status)
                if answer.status != 200:
                    await answer.read()
                    self.stream_ends[f"refused {answer.status}"] += 1
                    return
                event = None
                async for raw in answer.content:
                    line = raw.rstrip(b"\r\n")
                    if line.startswith(b"event: "):
                        event = line[7:].decode()
                        if event == "unread":
                            ready.set()
                    elif line.startswith(b"id: "):
                        self.last_event[user["index"]] = line[4:].decode()
                    elif line.startswith(b"data: ") and event:
                        if self.stats.inside(time.time()):
                            self.stream_events[event] += 1
                        if event == "message.created" and b'"author":"support"' in line:
                            now = time.time()
                            message = json.loads(line[6:])
                            self.arrivals.setdefault(message["id"], now)
                            asyncio.ensure_future(self.read_later(user, message["id"], self.rng.uniform(0.5, 2.0)))
                        event = None
                self.stream_ends["ended by server"] += 1
        except asyncio.CancelledError:
            raise
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as error:
            if not ready.is_set():
                self.stats.record(kind, started, type(error).__name__)
            self.stream_ends[type(error).__name__] += 1
        finally:
            ready.set()

    def open_stream(self, user: dict, kind: str) -> asyncio.Event:
        ready = asyncio.Event()
        self.streams[user["index"]] = asyncio.ensure_future(self.stream(user, ready, kind))
        return ready

    async def keep_streams(self):
        """Reopens a stream the server ended (as an app does), after a short pause."""
        while not self.stopping:
            await asyncio.sleep(1)
            for user in self.holders:
                task = self.streams.get(user["index"])
                if task is not None and task.done() and not self.stopping:
                    await asyncio.sleep(0.05)
                    self.open_stream(user, "GET /v1/events (reconnect)")

    async def churn(self, rate: float):
        while not self.stopping:
            await asyncio.sleep(self.rng.expovariate(rate))
            user = self.rng.choice(self.holders)
            task = self.streams.pop(user["index"], None)
            if task:
                task.cancel()
            await self.request("GET /v1/messages (chat opened)", "GET", "/v1/messages?limit=50", user)
            self.open_stream(user, "GET /v1/events (chat opened)")

    async def read_later(self, user: dict, message_id: str, delay: float):
        await asyncio.sleep(delay)
        if not self.stopping:
            await self.request("POST /v1/read", "POST", "/v1/read", user, json={"messageId": message_id})

    # -- polls

    async def poll(self, user: dict):
        path = "/v1/messages?limit=50" + (f"&after={user['after']}" if user.get("after") else "")
        status, body = await self.request("GET /v1/messages (poll)", "GET", path, user)
        if status != 200:
            return
        messages = json.loads(body)["messages"]
        if messages:
            user["after"] = messages[-1]["id"]
            support = [m for m in messages if m["author"] == "support"]
            if support and user.get("polled") and self.rng.random() < 0.5:
                asyncio.ensure_future(self.read_later(user, support[-1]["id"], self.rng.uniform(0.5, 3.0)))
        user["polled"] = True

    async def pollers_loop(self, interval: float, end: float):
        due = [(self.window_start + self.rng.uniform(0, interval), i) for i in range(len(self.pollers))]
        heapq.heapify(due)
        busy = set()

        async def one(i):
            try:
                await self.poll(self.pollers[i])
            finally:
                busy.discard(i)
        while due and not self.stopping:
            at, i = due[0]
            now = time.time()
            if at > now:
                await asyncio.sleep(min(0.05, at - now))
                continue
            heapq.heappop(due)
            if at >= end:
                break
            if self.stats.inside(at):
                self.poll_lag.append((now - at) * 1000)
                self.lag_steps[int((at - self.window_start) // TIMELINE_STEP)].append((now - at) * 1000)
            if i not in busy:  # one poll at a time per user, as an app does
                busy.add(i)
                asyncio.ensure_future(one(i))
            heapq.heappush(due, (at + interval, i))

    # -- sends

    async def send(self, user: dict, first: bool):
        for pause in (1.5, 1.5):
            await self.request("POST /v1/typing", "POST", "/v1/typing", user)
            await asyncio.sleep(pause)
        kind = "POST /v1/messages (first: new thread)" if first else "POST /v1/messages"
        status, body = await self.request(kind, "POST", "/v1/messages", user,
                                          headers={"Idempotency-Key": str(uuid.uuid4())},
                                          json={"content": f"{user['id']} asks at {time.time():.3f}: the sync fails."})
        if status == 201:
            if not user["threaded"]:
                user["threaded"] = True
                self.threaded.append(user)
            self.to_main.put(("wrote", user["id"], time.time()))
        else:
            user["sending"] = False
        user["sending"] = False

    async def senders_loop(self, rate: float, new_rate: float, poller_share: float, end: float):
        while time.time() < end and not self.stopping:
            await asyncio.sleep(self.rng.expovariate(rate))
            if time.time() >= end:
                break
            first = self.rng.random() < new_rate / rate
            if first:
                candidates = [u for u in self.sample(self.holders, 50) if not u["threaded"] and not u["sending"]]
            else:
                pool = self.threaded_pollers() if self.rng.random() < poller_share else self.threaded_holders()
                candidates = [u for u in self.sample(pool, 20)
                              if not u["sending"] and time.time() - self.sent_at.get(u["index"], 0) > 10]
            if not candidates:
                continue
            user = candidates[0]
            user["sending"] = True
            self.sent_at[user["index"]] = time.time()
            asyncio.ensure_future(self.send(user, first))

    def sample(self, pool, count):
        return self.rng.sample(pool, min(count, len(pool))) if pool else []

    def threaded_holders(self):
        return [u for u in self.threaded if u["stream"]]

    def threaded_pollers(self):
        return [u for u in self.threaded if not u["stream"]]

    # -- diagnostics and uploads (worker 0)

    async def occasional(self, every: float, what: str, end: float):
        image = png_bytes(200 * 1024)
        document = diagnostics_document()
        await asyncio.sleep(self.rng.uniform(0, every))
        while time.time() < end and not self.stopping:
            user = self.rng.choice(self.threaded) if self.threaded else None
            if user:
                if what == "diagnostics":
                    asyncio.ensure_future(self.request("POST /v1/diagnostics", "POST", "/v1/diagnostics", user,
                                                       headers={"Idempotency-Key": str(uuid.uuid4())}, json=document))
                else:
                    form = aiohttp.FormData()
                    form.add_field("content", "Here is a screenshot")
                    form.add_field("files", image, filename="screenshot.png", content_type="image/png")
                    asyncio.ensure_future(self.request("POST /v1/messages (upload, 200 KiB PNG)", "POST", "/v1/messages", user,
                                                       headers={"Idempotency-Key": str(uuid.uuid4())}, data=form))
            await asyncio.sleep(every)

    # -- the run

    async def run(self):
        raise_fd_limit()
        conf = self.conf
        connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, force_close=False, enable_cleanup_closed=True)
        self.http = aiohttp.ClientSession(connector=connector)
        for user in self.users:
            user["sending"] = False
        self.holders = [u for u in self.users if u["stream"]]
        self.pollers = [u for u in self.users if not u["stream"]]
        self.threaded = [u for u in self.users if u["threaded"]]
        try:
            readies = []
            for n, user in enumerate(self.holders):
                readies.append(self.open_stream(user, "GET /v1/events (setup)"))
                if n % 100 == 99:
                    await asyncio.sleep(0.05)
            await asyncio.wait_for(asyncio.gather(*(r.wait() for r in readies)), timeout=300)
            alive = sum(1 for u in self.holders if not self.streams[u["index"]].done())
            self.to_main.put(("ready", self.index, alive))
            loop = asyncio.get_running_loop()
            started = await loop.run_in_executor(None, self.go.wait, 900)
            if not started:
                raise RuntimeError("no go from the coordinator within 900 s")
            start = conf["start"].value
            end = start + conf["duration"]
            self.window_start = start
            self.stats.window = (start, end)
            while time.time() < start:
                await asyncio.sleep(start - time.time())
            share = conf["workers"]
            tasks = [
                asyncio.ensure_future(self.pollers_loop(conf["poll_interval"], end)),
                asyncio.ensure_future(self.senders_loop(conf["sends"] / share, conf["new_conversations"] / share,
                                                        conf["poller_sends"], end)),
                asyncio.ensure_future(self.keep_streams()),
            ]
            if conf["churn"] > 0:
                tasks.append(asyncio.ensure_future(self.churn(conf["churn"] / share)))
            if self.index == 0:
                if conf["diagnostics_every"] > 0:
                    tasks.append(asyncio.ensure_future(self.occasional(conf["diagnostics_every"], "diagnostics", end)))
                if conf["uploads_every"] > 0:
                    tasks.append(asyncio.ensure_future(self.occasional(conf["uploads_every"], "upload", end)))
            await asyncio.sleep(max(0.0, end - time.time()))
            # Requests started in the window may finish; replies sent at the end may still arrive.
            await asyncio.sleep(conf["drain"])
            self.stopping = True
            alive_at_end = sum(1 for u in self.holders if u["index"] in self.streams and not self.streams[u["index"]].done())
            for task in tasks + list(self.streams.values()):
                task.cancel()
            await asyncio.gather(*tasks, *self.streams.values(), return_exceptions=True)
            self.results.put(("result", self.index, {
                "stats": self.stats.export(), "arrivals": self.arrivals, "events": dict(self.stream_events),
                "ends": dict(self.stream_ends), "alive": alive_at_end, "poll_lag": self.poll_lag,
                "lag_steps": dict(self.lag_steps),
                "cpu": cpu_seconds(os.getpid()),
            }))
        except BaseException as error:  # noqa: BLE001 - reported to the coordinator, then re-raised
            self.results.put(("failed", self.index, f"{type(error).__name__}: {error}"))
            self.to_main.put(("failed", self.index, f"{type(error).__name__}: {error}"))
            raise
        finally:
            await self.http.close()


def worker_main(index, conf, users, to_main, go, results):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    asyncio.run(Worker(index, conf, users, to_main, go, results).run())


# ---------------------------------------------------------------- the coordinator

class Deployment:
    """Emulators and servers, stopped on exit whatever happens."""

    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="threaddesk-day-bench-")
        self.logs = pathlib.Path(self.work)
        self.processes = {}
        self.servers = []

    def start(self):
        args = self.args
        hard = raise_fd_limit()
        discord = subprocess.Popen(
            [args.emulator, "--port", "0", "--window-scale", "1", "--message-post-limit", "5"],
            stdout=subprocess.PIPE, stderr=open(self.logs / "discord-emulator.log", "w"), text=True)
        self.processes["discord emulator"] = discord
        apns = subprocess.Popen([args.apns_emulator, "--port", "0", "--directory", str(self.logs)],
                                stdout=subprocess.PIPE, stderr=open(self.logs / "apns-emulator.log", "w"), text=True)
        self.processes["apns emulator"] = apns
        self.discord = json.loads(readline_within(discord, 30, "the Discord emulator"))
        self.apns = json.loads(readline_within(apns, 30, "the APNs emulator"))
        self.control = self.discord["controlURL"]
        if args.store == "postgres":
            store = os.environ.get("THREADDESK_POSTGRES_URL")
            if not store:
                raise SystemExit("--store postgres needs THREADDESK_POSTGRES_URL (run under scripts/with-postgres)")
        else:
            store = f"sqlite://{self.logs}/threaddesk.sqlite"
        environment = dict(os.environ)
        environment.update({
            "DISCORD_TOKEN": self.discord["botToken"], "DISCORD_API_URL": self.discord["restURL"],
            "DISCORD_GUILD_ID": self.discord["guildID"], "DISCORD_FORUM_CHANNEL_ID": self.discord["forumChannelID"],
            "APP_KEY": APP_KEY, "STORE_URL": store, "HOST": "127.0.0.1", "LOG_LEVEL": args.log_level, "METRICS_TOKEN": METRICS_TOKEN,
            "APNS_KEY_ID": self.apns["keyID"], "APNS_TEAM_ID": self.apns["teamID"], "APNS_TOPIC": self.apns["topic"],
            "APNS_PRIVATE_KEY_PATH": self.apns["privateKeyPath"], "APNS_URL": self.apns["url"],
            "APNS_CA_FILE": self.apns["caCertificatePath"], "APNS_ENVIRONMENT": "development",
            "TRUSTED_PROXIES": "127.0.0.1",
            "LIVE_MAX_STREAMS": str(args.streams * 2 + 1000),
            # The setup opens a day's sessions in a minute, and a day's new threads in this window.
            "QUOTA_SESSIONS_PER_APP": "0", "QUOTA_THREADS_TOTAL": f"{max(200, args.threaded * 4 + 2000)}/3600",
        })
        environment.pop("GATEWAY_SECRET", None)
        names = ["a", "b"] if args.store == "postgres" else ["a"]
        for name in names:
            port = free_port()
            env = {**environment, "PORT": str(port)}
            if len(names) > 1:
                env["DISCORD_GLOBAL_LIMIT"] = str(50 // len(names))
            gateway = name == "a" and args.read_path == "mirror"
            command = [args.binary, "serve"] + (["--gateway"] if gateway else [])
            process = subprocess.Popen(
                command, env=env, stdout=open(self.logs / f"server-{name}.log", "w"), stderr=subprocess.STDOUT, cwd=self.work,
                preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard)))
            label = f"server {name.upper()}" + (" (--gateway)" if gateway else "") if len(names) > 1 else \
                "server" + (" (--gateway)" if gateway else " (no gateway)")
            self.processes[label] = process
            self.servers.append((label, process, f"http://127.0.0.1:{port}"))
            wait_for(f"{label} to answer /health", lambda: healthy(f"http://127.0.0.1:{port}", process), 60)

    def stop(self):
        for process in reversed(list(self.processes.values())):
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        if os.environ.get("KEEP_LOGS"):
            print(f"\n<!-- logs kept in {self.logs} -->")
        else:
            shutil.rmtree(self.work, ignore_errors=True)


def readline_within(process, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        import select
        ready, _, _ = select.select([process.stdout], [], [], 0.5)
        if ready:
            line = process.stdout.readline()
            if line:
                return line
        if process.poll() is not None:
            raise SystemExit(f"{what} exited with {process.returncode}")
    raise SystemExit(f"{what} printed nothing within {seconds} s")


def wait_for(what, check, timeout):
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.1)


def healthy(base, process) -> bool:
    import urllib.request
    if process.poll() is not None:
        raise SystemExit(f"{base} exited with {process.returncode} before answering")
    try:
        with urllib.request.urlopen(base + "/health", timeout=1) as answer:
            return answer.status == 200
    except OSError:
        return False


async def setup_users(args, bases, control):
    """Sessions, push tokens and first messages; returns the users and the setup's timings."""
    connector = aiohttp.TCPConnector(limit=64)
    timings = {}
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120)) as http:
        users = [None] * args.users
        failures = collections.Counter()

        async def session(i):
            address = client_address(i + 1)
            for attempt in range(5):
                try:
                    async with http.post(bases[i % len(bases)] + "/v1/session", json={},
                                         headers={"X-App-Key": APP_KEY, "X-Forwarded-For": address}) as answer:
                        if answer.status == 201:
                            body = await answer.json()
                            users[i] = {"index": i, "id": body["userId"], "token": body["token"], "address": address,
                                        "stream": i < args.streams, "threaded": False, "push": False}
                            return
                        failures[f"session {answer.status}"] += 1
                except (aiohttp.ClientError, asyncio.TimeoutError) as error:
                    failures[f"session {type(error).__name__}"] += 1
                await asyncio.sleep(0.5 * (attempt + 1))

        started = time.monotonic()
        await gather_limited((session(i) for i in range(args.users)), 64)
        timings["sessions"] = time.monotonic() - started
        missing = sum(1 for u in users if u is None)
        if missing:
            raise SystemExit(f"setup: {missing} sessions failed ({dict(failures)})")

        rng = random.Random(7)
        with_push = [u for u in users if rng.random() < args.push_share]

        async def register(user):
            async with http.put(bases[user["index"] % len(bases)] + "/v1/push-token",
                                json={"token": push_token(user["id"]), "environment": "development"},
                                headers={"Authorization": f"Bearer {user['token']}", "X-Forwarded-For": user["address"]}) as answer:
                if answer.status == 204:
                    user["push"] = True
                else:
                    failures[f"push-token {answer.status}"] += 1
        started = time.monotonic()
        await gather_limited((register(u) for u in with_push), 64)
        timings["push tokens"] = time.monotonic() - started

        # First messages: half from users with the chat open, half from the others. Discord lets a
        # forum start 10 threads per 10 s, so this takes about `--threaded` seconds.
        holders = [u for u in users if u["stream"]]
        others = [u for u in users if not u["stream"]]
        chosen = rng.sample(holders, min(len(holders), args.threaded // 2)) + \
            rng.sample(others, min(len(others), args.threaded - args.threaded // 2))

        async def first(user):
            for attempt in range(6):
                async with http.post(bases[user["index"] % len(bases)] + "/v1/messages",
                                     json={"content": f"{user['id']} says hello and has a question."},
                                     headers={"Authorization": f"Bearer {user['token']}", "X-Forwarded-For": user["address"],
                                              "Idempotency-Key": f"setup-{user['id']}"}) as answer:
                    await answer.read()
                    if answer.status == 201:
                        user["threaded"] = True
                        return
                    failures[f"first message {answer.status}"] += 1
                    await asyncio.sleep(float(answer.headers.get("Retry-After", "2")))
        started = time.monotonic()
        await gather_limited((first(u) for u in chosen), 4)
        # Accepted at once; the outbox makes their threads at Discord's pace after: the window
        # starts once it is empty (every replica reads the one store).
        await outbox_empty(http, bases[0], deadline=started + 60 + 2 * args.threaded)
        timings["first messages"] = time.monotonic() - started
        threaded = [u for u in chosen if u["threaded"]]
        # Each conversation has had an answer, as a day's conversations have.
        thread_of = await thread_map(http, control)
        for user in threaded:
            if user["id"] in thread_of:
                async with http.post(f"{control}/threads/{thread_of[user['id']]}/replies",
                                     json={"content": "Thanks for writing! We are looking into it."}) as answer:
                    await answer.read()
        timings["failures"] = dict(failures)
        return users, timings


async def outbox_empty(http, base, deadline):
    """Waits for the server's outbox to be empty (`threaddesk_outbox_depth` 0); fails past `deadline`."""
    while True:
        async with http.get(base + "/metrics", headers=METRICS_HEADERS) as answer:
            text = await answer.text()
        found = re.search(r"^threaddesk_outbox_depth (\S+)$", text, re.MULTILINE)
        if found and float(found.group(1)) == 0:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"the outbox still holds {found.group(1) if found else '?'} messages after the setup")
        await asyncio.sleep(1)


async def gather_limited(coroutines, limit):
    semaphore = asyncio.Semaphore(limit)

    async def guarded(coroutine):
        async with semaphore:
            await coroutine
    await asyncio.gather(*(guarded(c) for c in coroutines))


async def thread_map(http, control) -> dict:
    async with http.get(control + "/threads") as answer:
        threads = await answer.json()
    found = {}
    for thread in threads:
        # A thread is named after its first message, which starts with the user id here.
        found[thread["name"].split(" ")[0]] = thread["id"]
    return found


async def agent(control, duration, rate, wrote_queue, users_by_id, start, replies, errors, threaded_ids):
    """Replies once a second (typing first) to the users who wrote, oldest first."""
    pending = collections.deque()
    thread_of = {}
    refreshed = 0.0
    rng = random.Random(3)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
        next_at = start
        n = 0
        while True:
            next_at += 1 / rate
            if next_at >= start + duration:
                break
            while True:
                try:
                    kind, user_id, _ = wrote_queue.get_nowait()
                except queue.Empty:
                    break
                if kind == "wrote":
                    pending.append(user_id)
                    threaded_ids.add(user_id)
            user_id = pending.popleft() if pending else (rng.choice(sorted(threaded_ids)) if threaded_ids else None)
            await asyncio.sleep(max(0.0, next_at - time.time()))
            if user_id is None:
                continue
            if user_id not in thread_of and time.time() - refreshed > 2:
                try:
                    thread_of = await thread_map(http, control)
                except (aiohttp.ClientError, asyncio.TimeoutError) as error:
                    errors[f"GET /threads {type(error).__name__}"] += 1
                refreshed = time.time()
            thread = thread_of.get(user_id)
            if thread is None:
                pending.append(user_id)  # its thread appears in the emulator's list soon
                continue
            n += 1
            try:
                async with http.post(f"{control}/threads/{thread}/typing") as answer:
                    await answer.read()
                sent = time.time()
                async with http.post(f"{control}/threads/{thread}/replies",
                                     json={"content": f"Reply {n}: try signing out and in again."}) as answer:
                    if answer.status != 200:
                        errors[f"reply {answer.status}"] += 1
                        continue
                    body = await answer.json()
                replies.append({"id": body["id"], "user": user_id, "sent": sent,
                                "stream": users_by_id[user_id]["stream"], "push": users_by_id[user_id]["push"]})
            except (aiohttp.ClientError, asyncio.TimeoutError) as error:
                errors[f"reply {type(error).__name__}"] += 1


async def sampler(control, duration, start, samples, pids):
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
        while time.time() < start + duration + 1:
            try:
                async with http.get(control + "/counters") as answer:
                    counters = await answer.json()
                counters["serverCPU"] = sum(cpu_seconds(pid) for label, pid in pids.items() if label.startswith("server"))
                counters["serverRSS"] = sum(rss_mib(pid) for label, pid in pids.items() if label.startswith("server"))
                samples.append((time.time(), counters))
            except (aiohttp.ClientError, asyncio.TimeoutError):
                pass
            await asyncio.sleep(1 - (time.time() - start) % 1)


def metrics(base) -> dict:
    import urllib.request
    values = {}
    try:
        with urllib.request.urlopen(urllib.request.Request(base + "/metrics", headers=METRICS_HEADERS), timeout=10) as answer:
            for line in answer.read().decode().splitlines():
                if line.startswith("threaddesk_") and not line.startswith("#"):
                    name, _, value = line.rpartition(" ")
                    try:
                        values[name] = float(value)
                    except ValueError:
                        pass
    except OSError as error:
        values["unreadable"] = str(error)
    return values


def apns_deliveries(apns) -> list:
    answer = subprocess.run(["curl", "-s", "--http2", "--max-time", "60", "--cacert", apns["caCertificatePath"],
                             apns["deliveriesURL"]], capture_output=True, text=True, timeout=90)
    if answer.returncode != 0:
        return []
    return json.loads(answer.stdout)


def load_picture() -> str:
    load = pathlib.Path("/proc/loadavg").read_text().split()[:3]
    top = subprocess.run(["ps", "-eo", "pcpu,rss,comm", "--sort=-pcpu"], capture_output=True, text=True).stdout.splitlines()[1:9]
    return f"load average {' '.join(load)}; busiest processes (ps %CPU, RSS KiB, command): " + \
        "; ".join(" ".join(line.split()) for line in top)


def fmt_ms(value) -> str:
    return "–" if value != value else (f"{value:.1f}" if value < 100 else f"{value:,.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=str(ROOT / ".build/release/threaddesk"))
    parser.add_argument("--emulator", default=str(ROOT / ".build/release/discord-emulator"))
    parser.add_argument("--apns-emulator", default=str(ROOT / ".build/release/apns-emulator"))
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--read-path", choices=["mirror", "discord"], default="mirror",
                        help="discord: no gateway feed, so every read of a thread asks Discord (the reference design)")
    parser.add_argument("--duration", type=float, default=300)
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument("--streams", type=int, default=2_000, help="users with the chat open (one stream each)")
    parser.add_argument("--poll-interval", type=float, default=30, help="seconds between two polls of one user")
    parser.add_argument("--sends", type=float, default=5, help="messages a second")
    parser.add_argument("--new-conversations", type=float, default=0.5, help="of the sends, first messages a second")
    parser.add_argument("--poller-sends", type=float, default=0.2, help="share of sends from users without the chat open")
    parser.add_argument("--replies", type=float, default=1, help="agent replies a second")
    parser.add_argument("--churn", type=float, default=2, help="chats closed and opened again a second")
    parser.add_argument("--threaded", type=int, default=120, help="users with a conversation before the window")
    parser.add_argument("--push-share", type=float, default=0.6, help="share of users with a push token")
    parser.add_argument("--diagnostics-every", type=float, default=20)
    parser.add_argument("--uploads-every", type=float, default=30)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--drain", type=float, default=10, help="seconds after the window for answers in flight")
    parser.add_argument("--log-level", default="notice")
    args = parser.parse_args()
    args.streams = min(args.streams, args.users)

    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    deployment = Deployment(args)
    workers = []
    previous = signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(SystemExit("SIGTERM")))
    try:
        conditions_before = load_picture()
        deployment.start()
        bases = [base for _, _, base in deployment.servers]
        control = deployment.control
        if args.read_path == "mirror":
            wait_for("the gateway's first reconciliation",
                     lambda: metrics(bases[0]).get("threaddesk_catch_ups_total", 0) >= 1, 120)
        print(f"<!-- setup: {args.users:,} sessions, push tokens, {args.threaded} first messages … -->", flush=True)
        users, timings = asyncio.run(setup_users(args, bases, control))
        print(f"<!-- setup took: sessions {timings['sessions']:.0f} s ({args.users / timings['sessions']:,.0f}/s), push tokens "
              f"{timings['push tokens']:.0f} s, first messages {timings['first messages']:.0f} s; setup failures: "
              f"{timings['failures'] or 'none'} -->", flush=True)

        context = multiprocessing.get_context("spawn")
        to_main, results, go = context.Queue(), context.Queue(), context.Event()
        start_value = context.Value("d", 0.0)
        conf = {"bases": bases, "duration": args.duration, "poll_interval": args.poll_interval, "sends": args.sends,
                "new_conversations": args.new_conversations, "poller_sends": args.poller_sends, "churn": args.churn,
                "diagnostics_every": args.diagnostics_every, "uploads_every": args.uploads_every,
                "workers": args.workers, "drain": args.drain, "start": start_value}
        for index in range(args.workers):
            share = users[index::args.workers]
            process = context.Process(target=worker_main, args=(index, conf, share, to_main, go, results), daemon=True)
            process.start()
            workers.append(process)
        ready = 0
        open_streams = 0
        deadline = time.monotonic() + 360
        while ready < args.workers:
            try:
                kind, index, value = to_main.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise SystemExit("the workers did not open their streams within 360 s")
            if kind == "failed":
                raise SystemExit(f"worker {index} failed: {value}")
            if kind == "ready":
                ready += 1
                open_streams += value
        print(f"<!-- {open_streams:,} of {args.streams:,} streams open; the window starts -->", flush=True)

        pids = {label: process.pid for label, process in deployment.processes.items()}
        pids.update({f"load generator {i}": w.pid for i, w in enumerate(workers)})
        pids["coordinator (agent, sampling)"] = os.getpid()
        metrics_before = [metrics(base) for base in bases]
        start = time.time() + 2
        start_value.value = start
        time.sleep(max(0.0, start - time.time()))
        cpu_before = {label: cpu_seconds(pid) for label, pid in pids.items()}
        if args.store == "postgres":
            cpu_before["PostgreSQL (all its processes)"] = postgres_cpu_seconds()
        rss_start = {label: rss_mib(process.pid) for label, process, _ in deployment.servers}
        go.set()

        replies, agent_errors, samples = [], collections.Counter(), []
        users_by_id = {u["id"]: u for u in users}
        threaded_ids = {u["id"] for u in users if u["threaded"]}

        async def coordinate():
            await asyncio.gather(
                agent(control, args.duration, args.replies, to_main, users_by_id, start, replies, agent_errors, threaded_ids),
                sampler(control, args.duration, start, samples, pids))
        asyncio.run(coordinate())
        time.sleep(max(0.0, start + args.duration - time.time()))
        cpu_after = {label: cpu_seconds(pid) for label, pid in pids.items()}
        if args.store == "postgres":
            cpu_after["PostgreSQL (all its processes)"] = postgres_cpu_seconds()
        window = time.time() - start
        rss_end = {label: rss_mib(process.pid) for label, process, _ in deployment.servers}
        conditions_during = load_picture()
        metrics_after = [metrics(base) for base in bases]

        stats = Stats()
        arrivals, events, ends, poll_lag, alive = {}, collections.Counter(), collections.Counter(), [], 0
        lag_steps = collections.defaultdict(list)
        collected = 0
        deadline = time.monotonic() + args.drain + 180
        while collected < args.workers:
            try:
                kind, index, value = results.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise SystemExit(f"only {collected} of {args.workers} workers reported within {args.drain + 180:.0f} s")
            if kind == "failed":
                raise SystemExit(f"worker {index} failed: {value}")
            collected += 1
            stats.merge(value["stats"])
            arrivals.update({k: min(v, arrivals.get(k, v)) for k, v in value["arrivals"].items()})
            events.update(value["events"])
            ends.update(value["ends"])
            poll_lag.extend(value["poll_lag"])
            for step, values in value["lag_steps"].items():
                lag_steps[step].extend(values)
            alive += value["alive"]
        deliveries = apns_deliveries(deployment.apns)
        report(args, commit, deployment, stats, window, replies, arrivals, deliveries, samples, cpu_before, cpu_after,
               rss_start, rss_end, metrics_before, metrics_after, events, ends, poll_lag, alive, open_streams, agent_errors,
               conditions_before, conditions_during, timings, users, lag_steps, start)
    finally:
        signal.signal(signal.SIGTERM, previous)
        for process in workers:
            if process.is_alive():
                process.terminate()
        for process in workers:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
        deployment.stop()


# ---------------------------------------------------------------- the report

def report(args, commit, deployment, stats, window, replies, arrivals, deliveries, samples, cpu_before, cpu_after,
           rss_start, rss_end, metrics_before, metrics_after, events, ends, poll_lag, alive, open_streams, agent_errors,
           conditions_before, conditions_during, timings, users, lag_steps, start):
    if args.read_path == "discord":
        setup = ("one node, SQLite" if args.store == "sqlite" else "two replicas on PostgreSQL") + \
            ", `serve` without a gateway feed: the reference design's read path (every read of a thread asks Discord)"
    else:
        setup = ("one node, SQLite, `serve --gateway`" if args.store == "sqlite" else
                 "two replicas on PostgreSQL (gateway in A, `DISCORD_GLOBAL_LIMIT=25` each, requests spread at random)")
    print(f"\n### A day of a popular app — {setup}\n")
    built = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(os.path.getmtime(args.binary)))
    print(f"HEAD `{commit}` at run time; `{args.binary}` built {built}; {os.cpu_count()} cores shared with the load generator (and whatever else ran, below); "
          f"window {window:.0f} s; {args.users:,} users, {open_streams:,} streams open, polls every {args.poll_interval:g} s, "
          f"{args.sends:g} sends/s ({args.new_conversations:g}/s first messages), {args.replies:g} agent reply/s, "
          f"{args.churn:g} chats reopened/s, diagnostics every {args.diagnostics_every:g} s, uploads every {args.uploads_every:g} s, "
          f"{sum(1 for u in users if u['push']):,} users with a push token, {args.threaded} conversations before the window; "
          f"load generator: {args.workers} worker processes + a coordinator.\n")
    print(f"Machine before: {conditions_before}.  \nDuring the window: {conditions_during}.\n")

    print("| request | count | rate/s | p50 ms | p99 ms | max ms | answers |")
    print("|---|---|---|---|---|---|---|")
    for kind in sorted(stats.statuses, key=lambda k: -sum(stats.statuses[k].values())):
        statuses = stats.statuses[kind]
        count = sum(statuses.values())
        latencies = stats.latencies.get(kind, [])
        answers = ", ".join(f"{status}: {n:,}" for status, n in sorted(statuses.items(), key=lambda item: str(item[0])))
        print(f"| {kind} | {count:,} | {count / window:,.1f} | {fmt_ms(percentile(latencies, 0.5))} | "
              f"{fmt_ms(percentile(latencies, 0.99))} | {fmt_ms(max(latencies) if latencies else float('nan'))} | {answers} |")
    lag_p99 = percentile(poll_lag, 0.99)
    print(f"\nPoll scheduler lag (load generator behind its schedule): p50 {fmt_ms(percentile(poll_lag, 0.5))} ms, "
          f"p99 {fmt_ms(lag_p99)} ms. Stream events received in the window: "
          f"{', '.join(f'{k} {v:,}' for k, v in sorted(events.items())) or 'none'}. Streams open at the end: {alive:,}; "
          f"stream ends seen: {dict(ends) or 'none'}.\n")

    # Replies → streams and pushes.
    to_streams = [r for r in replies if r["stream"]]
    stream_delays = [(arrivals[r["id"]] - r["sent"]) * 1000 for r in to_streams if r["id"] in arrivals]
    by_collapse = {}
    for delivery in deliveries:
        key = delivery.get("collapseID")
        if key:
            by_collapse.setdefault(key, []).append(delivery["receivedAt"] + APPLE_EPOCH)
    to_push = [r for r in replies if r["push"]]
    push_delays = [(min(by_collapse[r["id"]]) - r["sent"]) * 1000 for r in to_push if r["id"] in by_collapse]
    doubled = sum(1 for r in to_push if len(by_collapse.get(r["id"], [])) > 1)
    print("| agent reply → | replies | arrived | p50 ms | p99 ms | max ms |")
    print("|---|---|---|---|---|---|")
    print(f"| `message.created` on the user's stream | {len(to_streams):,} | {len(stream_delays):,} | "
          f"{fmt_ms(percentile(stream_delays, 0.5))} | {fmt_ms(percentile(stream_delays, 0.99))} | "
          f"{fmt_ms(max(stream_delays) if stream_delays else float('nan'))} |")
    print(f"| push received by the APNs emulator | {len(to_push):,} | {len(push_delays):,} | "
          f"{fmt_ms(percentile(push_delays, 0.5))} | {fmt_ms(percentile(push_delays, 0.99))} | "
          f"{fmt_ms(max(push_delays) if push_delays else float('nan'))} |")
    print(f"\nAgent replies sent: {len(replies):,} ({dict(agent_errors) or 'no errors'}); pushes delivered twice for one reply: {doubled}; "
          f"APNs deliveries in all (setup included): {len(deliveries):,}.\n")

    # Discord calls.
    inside = [(t, c) for t, c in samples]
    if len(inside) >= 2:
        first, last = inside[0][1], inside[-1][1]
        span = inside[-1][0] - inside[0][0]
        routes = sorted(set(first["requestsByRoute"]) | set(last["requestsByRoute"]))
        peak_route = collections.Counter()
        peak_total = 0
        for (t0, c0), (t1, c1) in zip(inside, inside[1:]):
            total = 0
            for route in routes:
                delta = c1["requestsByRoute"].get(route, 0) - c0["requestsByRoute"].get(route, 0)
                peak_route[route] = max(peak_route[route], delta / max(t1 - t0, 1e-3))
                total += delta
            peak_total = max(peak_total, total / max(t1 - t0, 1e-3))
        limits = {
            "POST /channels/{channel_id}/messages": "5 per 5 s per channel; 50/s global",
            "POST /channels/{channel_id}/threads": "10 per 10 s per forum; 50/s global",
        }
        print(f"| Discord route (emulator's count, {span:.0f} s) | calls | per minute | busiest second (1 s samples) | limit |")
        print("|---|---|---|---|---|")
        total_calls = 0
        for route in routes:
            calls = last["requestsByRoute"].get(route, 0) - first["requestsByRoute"].get(route, 0)
            if calls == 0:
                continue
            total_calls += calls
            print(f"| {route} | {calls:,} | {calls / span * 60:,.0f} | {peak_route[route]:.0f} | "
                  f"{limits.get(route, '50/s per route and channel; 50/s global')} |")
        print(f"| **all** | {total_calls:,} | {total_calls / span * 60:,.0f} | {peak_total:.0f} | 50/s global (3,000/min) |")
        print(f"\n429s from the emulator in the window: {last['rateLimited'] - first['rateLimited']} "
              f"(global: {last['globalRateLimited'] - first['globalRateLimited']}); invalid requests (401/403/429): "
              f"{last['invalidRequests'] - first['invalidRequests']}; busiest global window since the emulator started "
              f"(setup included): {last['busiestGlobalWindow']} of 50. Since start (setup included): 429s {last['rateLimited']}.\n")
    else:
        print("\nDiscord counters: too few samples.\n")

    # CPU and memory.
    print("| process | CPU over the window (share of one core) | RSS at start | RSS at end |")
    print("|---|---|---|---|")
    server_share = 0.0
    for label in cpu_before:
        share = (cpu_after[label] - cpu_before[label]) / window
        if label.startswith("server"):
            server_share += share
        rss = f"{rss_start[label]:.1f} MiB | {rss_end[label]:.1f} MiB" if label in rss_start else "– | –"
        print(f"| {label} | {share * 100:.1f} % | {rss} |")
    database = ""
    if "PostgreSQL (all its processes)" in cpu_before:
        pg_share = (cpu_after["PostgreSQL (all its processes)"] - cpu_before["PostgreSQL (all its processes)"]) / window
        database = (f"; with PostgreSQL's own processes {(server_share + pg_share) * 100 / (args.users / 1000):.2f} % of a core "
                    f"({(server_share + pg_share) * 100:.1f} % in all)")
    print(f"\nServer CPU per 1,000 active users ({args.users:,} active: {open_streams:,} with the chat open, the rest polling): "
          f"{server_share * 100 / (args.users / 1000):.2f} % of a core ({server_share * 100:.1f} % in all){database}.\n")

    # The server's own counters.
    print("| server counter (delta over the window, all replicas) | value |")
    print("|---|---|")
    deltas = collections.Counter()
    for before, after in zip(metrics_before, metrics_after):
        for name, value in after.items():
            if not isinstance(value, float):
                continue
            if any(name.startswith(prefix) for prefix in (
                    "threaddesk_pushes_total", "threaddesk_quota_refusals_total", "threaddesk_discord_requests_total",
                    "threaddesk_discord_rate_limited_total", "threaddesk_live_streams_dropped_total", "threaddesk_threads_archived_total",
                    "threaddesk_catch_ups_total", "threaddesk_catch_up_failures_total", "threaddesk_typing_sent_total",
                    "threaddesk_messages_posted_total", "threaddesk_diagnostics_uploaded_total", "threaddesk_http_requests_total")):
                if "_bucket" in name or name.endswith("_sum") or name.endswith("_count"):
                    continue
                delta = value - before.get(name, 0.0)
                if delta:
                    deltas[name] += delta
    for name, value in sorted(deltas.items()):
        if name.startswith("threaddesk_http_requests_total") and 'status="2' in name:
            continue  # 2xx are in the table above; the rest are findings
        print(f"| `{name}` | {value:,.0f} |")

    # Timeline: what was slow when, beside the Discord traffic of the same seconds and the load
    # generator's own lag (a stall of the whole machine shows in all columns at once).
    print(f"\n| t (s) | polls | poll p50 / p99 ms | sends p99 ms | typing p99 ms | other p99 ms | generator lag p99 ms | "
          f"Discord calls/s (of which message reads) | server CPU | server RSS MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    steps = int(math.ceil(args.duration / TIMELINE_STEP))
    main_kinds = {"GET /v1/messages (poll)", "POST /v1/messages", "POST /v1/typing"}
    for step in range(steps):
        polls = stats.timeline.get("GET /v1/messages (poll)", {}).get(step, [])
        sends = stats.timeline.get("POST /v1/messages", {}).get(step, [])
        typing = stats.timeline.get("POST /v1/typing", {}).get(step, [])
        others = [v for kind, per in stats.timeline.items() if kind not in main_kinds for v in per.get(step, [])]
        t0, t1 = start + step * TIMELINE_STEP, start + (step + 1) * TIMELINE_STEP
        inside_step = [(t, c) for t, c in samples if t0 - 0.5 <= t <= t1 + 0.5]
        if len(inside_step) >= 2:
            a, b = inside_step[0], inside_step[-1]
            total = sum(b[1]["requestsByRoute"].values()) - sum(a[1]["requestsByRoute"].values())
            reads = b[1]["requestsByRoute"].get("GET /channels/{channel_id}/messages", 0) - \
                a[1]["requestsByRoute"].get("GET /channels/{channel_id}/messages", 0)
            calls = f"{total / max(b[0] - a[0], 1e-3):.1f} ({reads / max(b[0] - a[0], 1e-3):.1f})"
            cpu = f"{(b[1]['serverCPU'] - a[1]['serverCPU']) / max(b[0] - a[0], 1e-3) * 100:.0f} % | {b[1]['serverRSS']:.0f}"
        else:
            calls, cpu = "–", "– | –"
        print(f"| {step * TIMELINE_STEP} | {len(polls):,} | {fmt_ms(percentile(polls, 0.5))} / {fmt_ms(percentile(polls, 0.99))} | "
              f"{fmt_ms(percentile(sends, 0.99))} | {fmt_ms(percentile(typing, 0.99))} | {fmt_ms(percentile(others, 0.99))} | "
              f"{fmt_ms(percentile(lag_steps.get(step, []), 0.99))} | {calls} | {cpu} |")

    # The server's log.
    for label, process, _ in deployment.servers:
        name = "a" if "B" not in label else "b"
        path = deployment.logs / f"server-{name}.log"
        lines = path.read_text(errors="replace").splitlines() if path.exists() else []
        notable = collections.Counter()
        for line in lines:
            lowered = line.lower()
            if any(level in lowered for level in ("warning", "error", "critical", "notice")):
                notable[re.sub(r"[0-9]{3,}", "N", line)[:220]] += 1
        print(f"\n{label} log: {len(lines):,} lines at `LOG_LEVEL={args.log_level}`" + (":" if notable else "."))
        for line, count in notable.most_common(12):
            print(f"- {count:,}× `{line}`")


if __name__ == "__main__":
    main()
