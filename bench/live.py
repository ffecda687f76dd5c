#!/usr/bin/env python3
"""Live conversation at scale: open event streams, reply → event latency, typing coalescing.

Starts the Discord emulator and `threaddesk serve --gateway` (release build) on loopback, then:

1. opens `--streams` idle `GET /v1/events` streams (5 per user) from worker processes, each
   connecting from its own loopback address (127.0.0.2, 127.0.0.3, …) so the ephemeral ports
   suffice, and reports the server's RSS before, with all open and after `--idle` seconds, per
   stream, and the keep-alives each stream got (`LIVE_KEEPALIVE_SECONDS=5` here) with the longest
   gap between two of them;
2. with all of them open: an agent reply (emulator control API) to each of `--threaded` users
   (who have a thread; their streams are among the open ones), so those streams have carried an
   event, then RSS again; and reply → `message.created` on one stream of the user, `--replies`
   times (p50 / p99 / max);
3. SIGTERM to the server with every stream open: time until the process exits and until the last
   stream saw its end, against the shutdown grace (`SHUTDOWN_GRACE_SECONDS`, 10 s by default);
4. `--typing` seconds of 100 `POST /v1/typing` a second from one user: Discord typing calls.

File descriptors: every stream is one socket in the server and one in a worker. The benchmark
raises its soft `RLIMIT_NOFILE` to the hard limit and gives the server the same; a worker holds
at most `--per-worker` streams. When the hard limit cannot carry `--streams` in one server
process, it measures as many as the limit allows and says so in the table (raising a hard limit
needs `CAP_SYS_RESOURCE`: `LimitNOFILE=` in systemd, `ulimit -Hn` as root, `--ulimit` in Docker).

    swift build -c release --product threaddesk && swift build -c release --product discord-emulator
    python3 bench/live.py                                     # one node, SQLite, 100,000 streams
    scripts/with-postgres python3 bench/live.py --store postgres --streams 2000 --typing 0
    scripts/with-postgres python3 bench/live.py --store postgres --replicas 6   # 10,000 then 100,000 streams

`--replicas N` runs N `threaddesk serve` on one PostgreSQL (replica 0 with `--gateway`, the others
plain), each within its own open-file limit, and sends the streams to them in turn as a
round-robin load balancer would. The streams are opened in stages (`--stages 10000,100000`), each
measured with all of its streams open: RSS and CPU per replica, keep-alives, reply →
`message.created` on probe streams that sit on replicas 1…N-1 while replica 0 ingests the replies,
and a fan-out (a reply to each of `--threaded` users at once, until every one of their open
streams carried it). At the end, SIGTERM to every replica at once. N replicas hold at most
N × (hard limit − 1,124) streams here.

`--settle S` waits (up to S seconds) before measuring until the servers' CPU falls under
`--settle-below`: what a burst of openings leaves behind is done. A stage that did not settle is
said to have not, and each of its figures carries a † (unsettled: streams just opened, not streams
held). Memory per idle stream is RSS after the idle window less RSS before any stream, beside the
process's own report from `/metrics` (`threaddesk_live_bytes_per_stream`, resident and heap bytes,
heap trims). `--hog N` keeps N processes spinning on the cores for the whole run: the same
measurement on a busy machine.

It prints Markdown table rows; copy them into bench/RESULTS.md with the machine and commit.
"""
import argparse
import asyncio
import concurrent.futures
import json
import multiprocessing
import os
import random
import pathlib
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import time
import uuid

import requests

ROOT = pathlib.Path(__file__).resolve().parents[1]
TYPING_ROUTE = "POST /channels/{channel_id}/typing"
STREAMS_PER_USER = int(os.environ.get("STREAMS_PER_USER", "5"))
# Each worker process opens 250 streams, then pauses this long (OPEN_RATE: streams a second per worker).
OPEN_PAUSE = 250 / float(os.environ["OPEN_RATE"]) if os.environ.get("OPEN_RATE") else 0.02
# The server keeps 1,024 descriptors for everything but streams (`OpenFileLimit.reserve`) and
# answers 503 past that; 100 more for the reply probes' streams.
SERVER_FD_HEADROOM = 1_024 + 100


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


METRICS_TOKEN = "bench-metrics-" + uuid.uuid4().hex
# A stage whose openings' after-work did not settle (`--settle`): its figures carry this mark.
UNSETTLED = "†"


def gauges(port: int) -> dict:
    """The process's own report of its memory (`/metrics`, issue 62): resident and heap bytes, bytes
    per open stream, heap trims. Empty when the server does not export them (an older build)."""
    try:
        text = requests.get(f"http://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=10).text
    except requests.RequestException:
        return {}
    found = {}
    for line in text.splitlines():
        if line.startswith("#") or " " not in line:
            continue
        name, value = line.rsplit(" ", 1)
        if name.startswith(("threaddesk_process_resident_bytes", "threaddesk_heap_", "threaddesk_live_bytes_per_stream",
                            "threaddesk_live_streams ")) or name == "threaddesk_live_streams":
            try:
                found[name] = float(value)
            except ValueError:
                pass
    return found


def gauge_text(found: dict) -> str:
    """The process's report as one table cell: bytes per open stream, resident, heap in use / free, trims."""
    if "threaddesk_live_bytes_per_stream" not in found:
        return "–"
    trims = {name.split('reason="')[1].split('"')[0]: int(value) for name, value in found.items()
             if name.startswith("threaddesk_heap_trims_total{")}
    return (f"{found['threaddesk_live_bytes_per_stream'] / 1024:.1f} KiB (RSS {found.get('threaddesk_process_resident_bytes', 0) / 2**20:.0f} MiB, "
            f"heap {found.get('threaddesk_heap_in_use_bytes', 0) / 2**20:.0f} used / {found.get('threaddesk_heap_free_bytes', 0) / 2**20:.0f} free MiB, "
            f"trims {', '.join(f'{n} {r}' for r, n in sorted(trims.items())) or '0'})")


def settled_text(settled) -> str:
    """The after-work column: how the stage's wait for it ended (`settle`'s answer), or that none was asked."""
    if settled is None:
        return "not awaited"
    seconds, share, done = settled
    return f"settled in {seconds:.0f} s" if done else f"**{UNSETTLED} not settled**: {share * 100:.0f} % of a core after {seconds:.0f} s"


def hog(seconds: float) -> None:
    """Keeps one core busy (`--hog`): the machine the figures must hold on is not a quiet one."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(10_000))


def rss_kib(pid: int) -> int:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def raise_fd_limit() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


class Busy(Exception):
    """A 503 answer to a stream's opening: try again after `retry_after` seconds."""

    def __init__(self, retry_after: float, code: str):
        super().__init__(f"503 {code}, retry after {retry_after} s")
        self.retry_after, self.code = retry_after, code


class Stream:
    """One raw `GET /v1/events` connection (HTTP/1.1, chunked), parsed as it arrives."""

    def __init__(self, port: int, token: str, source: str = "127.0.0.1", arrivals: dict | None = None):
        self.port, self.token, self.source, self.arrivals = port, token, source, arrivals
        self.keepalives = 0
        self.events = 0
        self.last_keepalive = None
        self.longest_gap = 0.0
        self.ended = None
        self.reconnects = 0
        # Why each reconnection happened: the 503's error code, or the connection's error.
        self.reasons = {}
        self.ready = asyncio.Event()
        self.task = None

    async def run(self):
        # As an EventSource does: a connection refused, reset or timed out before the stream opened
        # is tried again (a listen queue overflowing under a burst of connections drops some). As
        # ThreadDeskKit does: a 503 (a replica's store pool busy under the burst) is tried again
        # after its Retry-After.
        for attempt in range(10):
            try:
                return await self.connect()
            except Busy as busy:
                if self.ready.is_set() or attempt == 9:
                    raise
                self.reconnects += 1
                self.reasons[busy.code] = self.reasons.get(busy.code, 0) + 1
                await asyncio.sleep(busy.retry_after + random.random())
            except (OSError, asyncio.IncompleteReadError) as error:
                if self.ready.is_set() or attempt == 9:
                    raise
                self.reconnects += 1
                self.reasons[type(error).__name__] = self.reasons.get(type(error).__name__, 0) + 1
                await asyncio.sleep(1 + attempt)

    async def connect(self):
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port, local_addr=(self.source, 0), limit=4096)
        try:
            writer.write(f"GET /v1/events HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {self.token}\r\n\r\n".encode())
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            status_line = head.split(b"\r\n")[0]
            if b" 503 " in status_line:
                fields = {line.split(b":", 1)[0].strip().lower(): line.split(b":", 1)[1].strip() for line in head.split(b"\r\n")[1:] if b":" in line}
                retry = fields.get(b"retry-after", b"2")
                length = int(fields.get(b"content-length", b"0") or 0)
                try:
                    code = json.loads(await reader.readexactly(length))["error"]["code"] if 0 < length < 65536 else "?"
                except (ValueError, KeyError, TypeError, asyncio.IncompleteReadError):
                    code = "?"
                raise Busy(float(retry) if retry.isdigit() else 2.0, code)
            if b" 200 " not in status_line:
                raise RuntimeError(head.decode(errors="replace"))
            buffer = b""
            while True:
                chunk = await reader.read(65536)
                if not chunk:
                    return
                buffer += chunk
                # Chunk-size lines are noise here: only complete SSE lines matter.
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.startswith(b": keep-alive"):
                        now = time.monotonic()
                        if self.last_keepalive is not None:
                            self.longest_gap = max(self.longest_gap, now - self.last_keepalive)
                        self.last_keepalive = now
                        self.keepalives += 1
                    elif line.startswith(b"event: unread"):
                        self.ready.set()
                    elif line.startswith(b"data: {") and self.arrivals is not None and b'"author":"support"' in line:
                        now = time.monotonic()
                        message = json.loads(line[6:])
                        self.arrivals.setdefault(message["id"], now)
                    if line.startswith(b"event: ") and not line.startswith(b"event: unread"):
                        self.events += 1
        finally:
            self.ended = time.monotonic()
            writer.close()

    def start(self):
        self.task = asyncio.ensure_future(self.run())
        return self


def worker(connection, ports: list, source: str, tokens: list):
    """A process holding one stream per token (to the port beside it), from `source`; answers the
    coordinator's commands."""
    raise_fd_limit()
    asyncio.run(_worker(connection, ports, source, tokens))


async def _open(connection, ports, source, tokens) -> list | None:
    """Opens one stream per token and answers ("open", count) once every one has its first event,
    or ("failed", why) after 600 s (then None)."""
    streams = []
    for index, (port, token) in enumerate(zip(ports, tokens)):
        streams.append(Stream(port, token, source).start())
        if index % 250 == 249:
            await asyncio.sleep(OPEN_PAUSE)
    try:
        await asyncio.wait_for(asyncio.gather(*(s.ready.wait() for s in streams)), timeout=600)
        connection.send(("open", len(streams)))
        return streams
    except (asyncio.TimeoutError, OSError, RuntimeError) as error:
        failed = [s.task.exception() for s in streams if s.task.done() and not s.task.cancelled() and s.task.exception()]
        connection.send(("failed", f"{sum(1 for s in streams if s.ready.is_set())} of {len(streams)} open; "
                                   f"{type(error).__name__}; first failure: {failed[0] if failed else None!r}"))
        return None


async def _worker(connection, ports, source, tokens):
    loop = asyncio.get_running_loop()
    streams = await _open(connection, ports, source, tokens)
    if streams is None:
        return
    while True:
        command = await loop.run_in_executor(None, connection.recv)
        if command == "stats":
            connection.send(("stats", {
                "alive": sum(1 for s in streams if not s.task.done()),
                "keepalives": [s.keepalives for s in streams],
                "gaps": [s.longest_gap for s in streams],
                "events": [s.events for s in streams],
                "reconnects": sum(s.reconnects for s in streams),
                "reasons": [reason for s in streams for reason, n in s.reasons.items() for _ in range(n)],
            }))
        elif command == "mark":
            # A window starts: gaps are counted from here (the opening's load stays out of them).
            for stream in streams:
                stream.longest_gap = 0.0
            connection.send(("marked", None))
        elif command == "await-end":
            # The server is shutting down: every stream must see its end.
            pending = [s.task for s in streams if not s.task.done()]
            if pending:
                await asyncio.wait(pending, timeout=120)
            ends = [s.ended for s in streams if s.ended is not None]
            by_port = {}
            for s in streams:
                count, last = by_port.get(s.port, (0, None))
                if s.ended is not None:
                    count, last = count + 1, max(last or s.ended, s.ended)
                by_port[s.port] = (count, last)
            connection.send(("ended", {"ended": len(ends), "of": len(streams), "last": max(ends) if ends else None,
                                       "wall": time.time() - time.monotonic(), "by_port": by_port}))
        elif command == "drop":
            # Every client at once loses its connection (a deploy, a network blip): closed here,
            # then answered once all are gone.
            for stream in streams:
                stream.task.cancel()
            await asyncio.gather(*(s.task for s in streams), return_exceptions=True)
            connection.send(("dropped", len(streams)))
        elif command == "reopen":
            # ... and comes back with the same token, to the same replica.
            streams = await _open(connection, ports, source, tokens)
            if streams is None:
                return
        elif command == "close":
            for stream in streams:
                stream.task.cancel()
            await asyncio.gather(*(s.task for s in streams), return_exceptions=True)
            connection.send(("closed", None))
            return


class Workers:
    def __init__(self, ports, tokens: list, per_worker: int, first_address: int = 0):
        """`ports`: one server port for all, or a list of one per token (a load balancer's choice)."""
        self.processes, self.pipes = [], []
        ports = ports if isinstance(ports, list) else [ports] * len(tokens)
        context = multiprocessing.get_context("spawn")
        for index, start in enumerate(range(0, len(tokens), per_worker)):
            ours, theirs = context.Pipe()
            source = f"127.0.{(2 + first_address + index) // 256}.{(2 + first_address + index) % 256}"
            chunk = slice(start, start + per_worker)
            process = context.Process(target=worker, args=(theirs, ports[chunk], source, tokens[chunk]), daemon=True)
            process.start()
            self.processes.append(process)
            self.pipes.append(ours)

    def ask(self, command: str | None, timeout: float = 660):
        answers = []
        for pipe in self.pipes:
            if command is not None:
                pipe.send(command)
        for pipe in self.pipes:
            if not pipe.poll(timeout):
                raise SystemExit(f"a stream worker did not answer {command or 'open'} within {timeout:.0f} s")
            kind, value = pipe.recv()
            if kind == "failed":
                raise SystemExit(f"a stream worker failed: {value}")
            answers.append(value)
        return answers

    def stop(self):
        for process in self.processes:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()


def start_server(binary, environment, logs, name, gateway: bool, fd_limit: int):
    log = open(logs / f"{name}.log", "w")
    arguments = [binary, "serve"] + (["--gateway"] if gateway else [])
    return subprocess.Popen(arguments, env=environment, stdout=log, stderr=subprocess.STDOUT,
                            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, fd_limit)))


def new_user(base: str, with_thread: bool):
    session = requests.post(base + "/v1/session", json={}, headers={"X-App-Key": "bench-app-key"}, timeout=30).json()
    if with_thread:
        requests.post(base + "/v1/messages", json={"content": f"hello {session['userId']}"}, timeout=30,
                      headers={"Authorization": f"Bearer {session['token']}", "Idempotency-Key": str(uuid.uuid4())}).raise_for_status()
    return session["userId"], session["token"]


def make_users(base: str, count: int, threaded: int):
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        return list(pool.map(lambda index: new_user(base, index < threaded), range(count)))


def threads_by_user(control: str, users: list) -> dict:
    threads = requests.get(control + "/threads", timeout=30).json()
    found = {}
    for user, _ in users:
        for thread in threads:
            if user in thread["name"]:
                found[user] = thread["id"]
    return found


def reply(control: str, thread: str, text: str) -> dict:
    answer = requests.post(f"{control}/threads/{thread}/replies", json={"content": text}, timeout=10)
    answer.raise_for_status()
    return answer.json()


async def reply_latency(stream_port, control: str, users: list, thread_of: dict, replies: int):
    """`stream_port`: the port of every probe's stream, or a list of one per user."""
    arrivals = {}
    ports = stream_port if isinstance(stream_port, list) else [stream_port] * len(users)
    streams = [Stream(port, token, "127.0.0.1", arrivals).start() for port, (_, token) in zip(ports, users)]
    await asyncio.wait_for(asyncio.gather(*(s.ready.wait() for s in streams)), timeout=60)
    delays = []
    for index in range(replies):
        user, _ = users[index % len(users)]
        started = time.monotonic()
        posted = await asyncio.to_thread(reply, control, thread_of[user], f"reply {index}")
        while posted["id"] not in arrivals:
            if time.monotonic() - started > 10:
                raise SystemExit(f"reply {index} never reached its stream")
            await asyncio.sleep(0.0005)
        delays.append((arrivals[posted["id"]] - started) * 1000)
    for stream in streams:
        stream.task.cancel()
    await asyncio.gather(*(s.task for s in streams), return_exceptions=True)
    return delays


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


def many_streams(args, servers, base_a, stream_port, control, hard):
    server = servers[-1]
    users = make_users(base_a, (args.streams + STREAMS_PER_USER - 1) // STREAMS_PER_USER, args.threaded)
    tokens = [token for _, token in users for _ in range(STREAMS_PER_USER)][:args.streams]
    before = rss_kib(server.pid)
    started = time.monotonic()
    workers = Workers(stream_port, tokens, args.per_worker)
    try:
        workers.ask(None)
        open_seconds = time.monotonic() - started
        opened = rss_kib(server.pid)
        settled = settle(servers, args.settle, args.settle_below) if args.settle else None
        m = UNSETTLED if settled and not settled[2] else ""
        first = workers.ask("stats")
        workers.ask("mark")
        cpu_before = cpu_seconds(server.pid)
        time.sleep(args.idle)
        cpu_idle = (cpu_seconds(server.pid) - cpu_before) / args.idle
        after_idle = rss_kib(server.pid)
        report = gauges(stream_port)
        second = workers.ask("stats")
        alive = sum(s["alive"] for s in second)
        reconnects = sum(s["reconnects"] for s in second)
        got = [b - a for s1, s2 in zip(first, second) for a, b in zip(s1["keepalives"], s2["keepalives"])]
        gaps = [g for s in second for g in s["gaps"]]
        # What an idle stream holds: RSS after the idle window (the peak of the burst is "RSS open").
        per_stream = (after_idle - before) * 1024 / len(tokens)
        capped = f" (capped: hard RLIMIT_NOFILE {hard:,})" if len(tokens) < args.requested else ""
        print("| streams | openings' after-work | opened in (reconnects) | RSS before | RSS open | RSS after idle | per idle stream (RSS after idle) | "
              f"the process's own report (`/metrics`): per open stream | alive | keep-alives per stream in {args.idle:.0f} s (min / median) | "
              "longest keep-alive gap in the idle window (p99 / max) | server CPU while idle (share of a core) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        print(f"| {len(tokens):,} of {args.requested:,}{capped} | {settled_text(settled)} | {open_seconds:.0f} s ({reconnects}) | {before / 1024:.1f} MiB | "
              f"{opened / 1024:.1f} MiB | {m}{after_idle / 1024:.1f} MiB | {m}{per_stream / 1024:.1f} KiB | {m}{gauge_text(report)} | {alive:,} | "
              f"{min(got)} / {statistics.median(got):.0f} | {m}{percentile(gaps, 0.99):.2f} s / {max(gaps):.2f} s (interval {args.keepalive} s) | "
              f"{m}{cpu_idle * 100:.1f} % |", flush=True)
        if m:
            print(f"\n{UNSETTLED} unsettled: measured while the openings' after-work still ran (`--settle` ran out); not figures of streams held.")

        # Streams that carry events: a reply to each threaded user reaches their open streams.
        threaded = users[:args.threaded]
        thread_of = threads_by_user(control, threaded)
        if len(thread_of) != len(threaded):
            raise SystemExit(f"found {len(thread_of)} of {len(threaded)} threads in the emulator")
        if threaded:
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda user: reply(control, thread_of[user[0]], "an answer"), threaded))
            carried_expected = min(len(tokens), len(threaded) * STREAMS_PER_USER)
            deadline = time.monotonic() + 120
            while True:
                stats = workers.ask("stats")
                carried = sum(1 for s in stats for e in s["events"] if e > 0)
                if carried >= carried_expected or time.monotonic() > deadline:
                    break
                time.sleep(1)
            with_events = rss_kib(server.pid)
            print("\n| streams that carried a `message.created` | RSS after | growth per such stream | alive |")
            print("|---|---|---|---|")
            print(f"| {carried:,} of {carried_expected:,} expected | {with_events / 1024:.1f} MiB | "
                  f"{(with_events - after_idle) * 1024 / max(carried, 1) / 1024:.2f} KiB | "
                  f"{sum(s['alive'] for s in stats):,} |", flush=True)

            if args.replies:
                probes = threaded[:min(50, len(threaded))]
                delays = asyncio.run(reply_latency(stream_port, control, probes, thread_of, args.replies))
                print(f"\n| reply → `message.created` with {alive:,} streams open | replies | p50 | p99 | max |\n|---|---|---|---|---|")
                print(f"| {'one node (' + args.store + ')' if args.store == 'sqlite' else 'two replicas (PostgreSQL): gateway on A, streams on B'} | "
                      f"{args.replies} | {m}{statistics.median(delays):.1f} ms | {m}{percentile(delays, 0.99):.1f} ms | {m}{max(delays):.1f} ms |",
                      flush=True)

        if args.shutdown:
            stop_wall = time.time()
            for process in servers:
                process.send_signal(signal.SIGTERM)
            for process in servers:
                process.wait(timeout=args.grace + 60)
            exited = time.time() - stop_wall
            ends = workers.ask("await-end", timeout=180)
            ended = sum(e["ended"] for e in ends)
            last = max((e["last"] + e["wall"]) for e in ends if e["last"] is not None) - stop_wall
            print(f"\n| shutdown (SIGTERM) with {len(tokens):,} streams open | process exited after | last stream ended after | "
                  f"streams ended | grace |\n|---|---|---|---|---|")
            print(f"| {'one node' if len(servers) == 1 else 'two replicas'} | {exited:.2f} s | {last:.2f} s | {ended:,} of {len(tokens):,} | "
                  f"{args.grace} s |", flush=True)
        else:
            workers.ask("close")
    finally:
        workers.stop()


def settle(servers, limit: float, below: float) -> tuple[float, float, bool]:
    """Waits (up to `limit` seconds) until the servers together use less than `below` of a core
    over 3 s: what a burst of openings leaves behind (each token's first-use note, written a few at
    a time) is done, and what is measured next is streams held, not streams just opened. Returns
    the wait, the last share and whether it settled: a stage that did not is marked in every table
    (`UNSETTLED`), its figures being those of streams just opened."""
    started = time.monotonic()
    while True:
        before = [cpu_seconds(server.pid) for server in servers]
        time.sleep(3)
        share = sum(cpu_seconds(server.pid) - b for server, b in zip(servers, before)) / 3
        if share < below or time.monotonic() - started >= limit:
            return time.monotonic() - started, share, share < below


def cpu_seconds(pid: int) -> float:
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def make_users_spread(bases: list, count: int, threaded: int):
    """Sessions (and the threaded users' first messages) through every replica in turn."""
    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        return list(pool.map(lambda index: new_user(bases[index % len(bases)], index < threaded), range(count)))


def replica_stages(args, servers, ports, control, hard):
    """`--replicas N`: the streams go to the N replicas in turn, as a round-robin load balancer sends
    them, and are opened in stages (`--stages`), each measured with all of its streams open. Replies
    are ingested by replica 0 (the gateway's); the probes' streams sit on the other replicas."""
    count = len(servers)
    stages = sorted(args.stages)
    total = stages[-1]
    bases = [f"http://127.0.0.1:{port}" for port in ports]
    made = time.monotonic()
    users = make_users_spread(bases, (total + STREAMS_PER_USER - 1) // STREAMS_PER_USER, args.threaded)
    print(f"<!-- {len(users):,} users made in {time.monotonic() - made:.0f} s -->", flush=True)
    tokens = [token for _, token in users for _ in range(STREAMS_PER_USER)][:total]
    targets = [ports[index % count] for index in range(total)]
    threaded = users[:args.threaded]
    # The outbox posts the first messages (and makes the threads) after answering.
    deadline = time.monotonic() + 120
    while len(thread_of := threads_by_user(control, threaded)) < len(threaded) and time.monotonic() < deadline:
        time.sleep(1)
    if len(thread_of) != len(threaded):
        raise SystemExit(f"found {len(thread_of)} of {len(threaded)} threads in the emulator")
    probes = threaded[:min(50, len(threaded))]
    probe_ports = [ports[1 + index % (count - 1)] for index in range(len(probes))]

    baseline = [rss_kib(server.pid) for server in servers]
    workers, opened, rows, memory = [], 0, [], []
    try:
        for stage in stages:
            started = time.monotonic()
            batch = Workers(targets[opened:stage], tokens[opened:stage], args.per_worker, first_address=len(workers))
            batch.ask(None)
            open_seconds = time.monotonic() - started
            workers.append(batch)
            opened = stage
            settled = settle(servers, args.settle, args.settle_below) if args.settle else None
            if settled:
                print(f"<!-- stage {stage:,}: the openings' after-work {'settled' if settled[2] else 'did NOT settle'} in "
                      f"{settled[0]:.0f} s (replicas at {settled[1] * 100:.1f} % of a core together) -->", flush=True)
            mark = UNSETTLED if settled and not settled[2] else ""
            every = [answer for group in workers for answer in group.ask("stats")]
            for group in workers:
                group.ask("mark")
            rss_open = [rss_kib(server.pid) for server in servers]
            cpu_before = [cpu_seconds(server.pid) for server in servers]
            time.sleep(args.idle)
            cpu_idle = [(cpu_seconds(server.pid) - before) / args.idle for server, before in zip(servers, cpu_before)]
            rss_idle = [rss_kib(server.pid) for server in servers]
            reports = [gauges(port) for port in ports]
            second = [answer for group in workers for answer in group.ask("stats")]
            alive = sum(s["alive"] for s in second)
            reconnects = sum(s["reconnects"] for s in second)
            reasons = {}
            for reason in (r for s in second for r in s["reasons"]):
                reasons[reason] = reasons.get(reason, 0) + 1
            reconnects = f"{reconnects}: " + ", ".join(f"{n} {r}" for r, n in sorted(reasons.items())) if reasons else str(reconnects)
            got = [b - a for s1, s2 in zip(every, second) for a, b in zip(s1["keepalives"], s2["keepalives"])]
            gaps = [g for s in second for g in s["gaps"]]
            held = [targets[:stage].count(port) for port in ports]
            for index in range(count):
                memory.append((stage, index, held[index], baseline[index], rss_open[index], rss_idle[index],
                               (rss_idle[index] - baseline[index]) / max(held[index], 1), cpu_idle[index], mark, gauge_text(reports[index])))

            delays = asyncio.run(reply_latency(probe_ports, control, probes, thread_of, args.replies)) if args.replies else [0]

            # Fan-out: a reply to every threaded user at once reaches each of their open streams.
            before = [e for s in second for e in s["events"]]
            expected = min(stage, len(threaded) * STREAMS_PER_USER)
            burst = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda user: reply(control, thread_of[user[0]], "an answer"), threaded))
            posted = time.monotonic() - burst
            deadline = time.monotonic() + 120
            while True:
                stats = [answer for group in workers for answer in group.ask("stats")]
                after = [e for s in stats for e in s["events"]]
                carried = sum(1 for a, b in zip(before, after) if b > a)
                if carried >= expected or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            fan_out = time.monotonic() - burst
            rows.append((stage, open_seconds, reconnects, alive, min(got), statistics.median(got), percentile(gaps, 0.99), max(gaps),
                         statistics.median(delays), percentile(delays, 0.99), max(delays), len(delays),
                         len(threaded), carried, expected, posted, fan_out, settled))
            print(f"<!-- stage {stage:,} measured: {rows[-1]} -->", flush=True)

        again = reconnect_all(args, servers, ports, workers, control, probes, probe_ports, thread_of, opened) if args.reconnect else None

        print(f"\n| streams held ({count} replicas) | openings' after-work | opened in (reconnects) | alive | keep-alives per stream in {args.idle:.0f} s "
              f"(min / median) | longest keep-alive gap in the idle window (p99 / max) | reply → `message.created`, other replica: p50 / p99 / max "
              f"(replies) | fan-out: replies at once → streams that carried one, all in |")
        print("|---|---|---|---|---|---|---|---|")
        for (stage, seconds, reconnects, alive, least, median, gap99, gapmax, p50, p99, worst, replies, fan, carried, expected,
             posted, fan_out, settled) in rows:
            m = UNSETTLED if settled and not settled[2] else ""
            print(f"| {stage:,} of {args.requested:,} | {settled_text(settled)} | {seconds:.0f} s ({reconnects}) | {alive:,} | {least} / {median:.0f} | "
                  f"{m}{gap99:.2f} / {gapmax:.2f} s (interval {args.keepalive} s) | {m}{p50:.1f} / {p99:.1f} / {worst:.1f} ms ({replies}) | "
                  f"{m}{fan:,} → {carried:,} of {expected:,} in {fan_out:.2f} s (posting took {posted:.2f} s) |")
        if len(rows) > 1:
            unsettled = [row[0] for row in (rows[0], rows[-1]) if row[17] and not row[17][2]]
            ratio = f"{rows[-1][9] / max(rows[0][9], 0.001):.2f}×"
            print(f"\np99 at {rows[-1][0]:,} / p99 at {rows[0][0]:,}: " +
                  (f"{UNSETTLED}{ratio} (**unsettled**: the after-work of {', '.join(f'{u:,}' for u in unsettled)} was still running; "
                   f"not a figure of streams held)" if unsettled else f"**{ratio}**"))
        print("\n| streams held | replica | its streams | RSS before any stream | RSS all open | RSS after idle | per idle stream (RSS after idle) | "
              "the process's own report (`/metrics`): per open stream | CPU while idle (share of a core) |\n|---|---|---|---|---|---|---|---|---|")
        for stage, index, held, base, rss_open, rss_idle, per, cpu, m, report in memory:
            role = "0 (gateway)" if index == 0 else str(index)
            print(f"| {stage:,} | {role} | {held:,} | {base / 1024:.1f} MiB | {rss_open / 1024:.1f} MiB | {m}{rss_idle / 1024:.1f} MiB | "
                  f"{m}{per:.1f} KiB | {m}{report} | {m}{cpu * 100:.1f} % |")
        if any(m for *_, m, _ in memory):
            print(f"\n{UNSETTLED} unsettled: measured while the openings' after-work still ran (`--settle` ran out); not figures of streams held.")

        if again:
            (dropped, quiet, seconds, cpu, settled, alive, reconnects, rss, report, p50, p99, worst, replies) = again
            m = UNSETTLED if settled and not settled[2] else ""
            print(f"\n| every client drops its stream and comes back at once ({opened:,}, same tokens, same replicas) | "
                  f"all dropped in | closes settled | all back in (retries) | replicas' CPU while they came back (share of a core, together) | "
                  f"the reconnections' after-work | alive | RSS per replica after it | the process's own report, replica 1 | "
                  f"reply → `message.created` p50 / p99 / max (replies) |\n|---|---|---|---|---|---|---|---|---|---|")
            print(f"| | {dropped:.1f} s | {settled_text(quiet)} | {seconds:.0f} s ({reconnects}) | {cpu * 100:.0f} % | {settled_text(settled)} | "
                  f"{alive:,} | {m}{min(rss) / 1024:.0f}–{max(rss) / 1024:.0f} MiB | {m}{report} | "
                  f"{m}{p50:.1f} / {p99:.1f} / {worst:.1f} ms ({replies}) |")

        if args.shutdown:
            stop_wall = time.time()
            for process in servers:
                process.send_signal(signal.SIGTERM)
            exited = [None] * count
            while any(e is None for e in exited) and time.time() - stop_wall < args.grace + 60:
                for index, process in enumerate(servers):
                    if exited[index] is None and process.poll() is not None:
                        exited[index] = time.time() - stop_wall
                time.sleep(0.01)
            ends = [answer for group in workers for answer in group.ask("await-end", timeout=180)]
            print(f"\n| SIGTERM to every replica with {opened:,} streams open | replica | process exited after | "
                  f"its last stream ended after | its streams ended | grace |\n|---|---|---|---|---|---|")
            for index, port in enumerate(ports):
                ended = sum(e["by_port"].get(port, (0, None))[0] for e in ends)
                lasts = [e["by_port"][port][1] + e["wall"] for e in ends if e["by_port"].get(port, (0, None))[1] is not None]
                last = f"{max(lasts) - stop_wall:.2f} s" if lasts else "–"
                held = targets[:opened].count(port)
                code = servers[index].returncode
                print(f"| | {'0 (gateway)' if index == 0 else index} | "
                      f"{f'{exited[index]:.2f} s' if exited[index] is not None else 'still running'} (exit {code}) | {last} | "
                      f"{ended:,} of {held:,} | {args.grace} s |", flush=True)
        else:
            for group in workers:
                group.ask("close")
    finally:
        for group in workers:
            group.stop()


def reconnect_all(args, servers, ports, workers, control, probes, probe_ports, thread_of, opened):
    """`--reconnect`: every client loses its stream at once and comes back with the same token (a
    deploy that restarts the load balancer, a network blip). Tokens already in use write nothing
    when they come back (their first use is noted), so what a reconnection leaves behind should be
    little: how long the replicas stay busy after it is the figure."""
    started = time.monotonic()
    for group in workers:
        group.ask("drop", timeout=300)
    dropped = time.monotonic() - started
    quiet = settle(servers, args.settle or 60, args.settle_below)
    print(f"<!-- reconnect: {opened:,} dropped in {dropped:.1f} s; {settled_text(quiet)} -->", flush=True)
    before = [cpu_seconds(server.pid) for server in servers]
    started = time.monotonic()
    answers = []
    for group in workers:
        for pipe in group.pipes:
            pipe.send("reopen")
    for group in workers:
        answers.extend(group.ask(None))
    seconds = time.monotonic() - started
    cpu = sum(cpu_seconds(server.pid) - b for server, b in zip(servers, before)) / max(seconds, 0.001)
    settled = settle(servers, args.settle, args.settle_below) if args.settle else None
    print(f"<!-- reconnect: {sum(answers):,} back in {seconds:.0f} s; {settled_text(settled)} -->", flush=True)
    stats = [answer for group in workers for answer in group.ask("stats")]
    reasons = {}
    for reason in (r for s in stats for r in s["reasons"]):
        reasons[reason] = reasons.get(reason, 0) + 1
    retries = sum(s["reconnects"] for s in stats)
    retries = f"{retries}: " + ", ".join(f"{n} {r}" for r, n in sorted(reasons.items())) if reasons else str(retries)
    rss = [rss_kib(server.pid) for server in servers]
    report = gauge_text(gauges(ports[1 if len(ports) > 1 else 0]))
    delays = asyncio.run(reply_latency(probe_ports, control, probes, thread_of, args.replies)) if args.replies else [0]
    return (dropped, quiet, seconds, cpu, settled, sum(s["alive"] for s in stats), retries, rss, report,
            statistics.median(delays), percentile(delays, 0.99), max(delays), len(delays))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=str(ROOT / ".build/release/threaddesk"))
    parser.add_argument("--emulator", default=str(ROOT / ".build/release/discord-emulator"))
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--streams", type=int, default=100_000)
    parser.add_argument("--per-worker", type=int, default=10_000, help="streams per client process")
    parser.add_argument("--threaded", type=int, default=1_000, help="users (of the streams' users) with a thread")
    parser.add_argument("--idle", type=float, default=12)
    parser.add_argument("--keepalive", type=int, default=5)
    parser.add_argument("--grace", type=int, default=10)
    parser.add_argument("--replies", type=int, default=500)
    parser.add_argument("--typing", type=int, default=0)
    parser.add_argument("--no-shutdown", dest="shutdown", action="store_false")
    parser.add_argument("--settle", type=float, default=0,
                        help="replicas: before measuring a stage, wait up to this many seconds for the openings' after-work to end")
    parser.add_argument("--settle-below", type=float, default=0.3,
                        help="the servers' CPU together (share of a core) under which a stage counts as settled")
    parser.add_argument("--replicas", type=int, default=0,
                        help="N `threaddesk serve` on one PostgreSQL (0 gateway's, the rest plain); streams spread over them")
    parser.add_argument("--stages", default="10000,100000",
                        help="with --replicas: stream counts measured in turn, each with all its streams open")
    parser.add_argument("--reconnect", action="store_true",
                        help="with --replicas: after the last stage every client drops its stream and comes back at once (a deploy)")
    parser.add_argument("--hog", type=int, default=0, help="processes spinning on the cores for the whole run (a busy machine)")
    args = parser.parse_args()
    hogs = [multiprocessing.get_context("spawn").Process(target=hog, args=(24 * 3600,), daemon=True) for _ in range(args.hog)]
    for process in hogs:
        process.start()
    if hogs:
        print(f"<!-- {len(hogs)} process(es) spinning on the cores for the whole run (--hog) -->", flush=True)

    hard = raise_fd_limit()
    args.requested = args.streams
    if args.replicas:
        if args.store != "postgres" or args.replicas < 2:
            raise SystemExit("--replicas needs --store postgres and 2 or more replicas")
        args.stages = [int(stage) for stage in args.stages.split(",")]
        args.requested = max(args.stages)
        # Each replica within its own open-file limit: the share of the largest stage must fit.
        capacity = (hard - SERVER_FD_HEADROOM) * args.replicas
        if args.requested > capacity:
            print(f"<!-- the hard RLIMIT_NOFILE here is {hard:,}: {args.replicas} replicas hold {capacity:,} streams, "
                  f"not {args.requested:,} -->", flush=True)
            args.stages = sorted({min(stage, capacity) for stage in args.stages})
        args.streams = max(args.stages)
    elif args.streams + SERVER_FD_HEADROOM > hard:
        args.streams = max(0, hard - SERVER_FD_HEADROOM)
        print(f"<!-- the hard RLIMIT_NOFILE here is {hard:,}: one server process can hold {args.streams:,} streams, "
              f"not {args.requested:,} -->", flush=True)
    args.per_worker = min(args.per_worker, hard - 200)
    args.threaded = min(args.threaded, (args.streams + STREAMS_PER_USER - 1) // STREAMS_PER_USER)

    logs = pathlib.Path(tempfile.mkdtemp(prefix="threaddesk-live-bench-"))
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
            "APP_KEY": "bench-app-key", "STORE_URL": store, "HOST": "127.0.0.1", "LOG_LEVEL": os.environ.get("BENCH_LOG_LEVEL", "warning"),
            "LIVE_KEEPALIVE_SECONDS": str(args.keepalive), "LIVE_MAX_STREAMS": str(max(args.streams + 100, 1)),
            "LIVE_STREAMS_PER_ADDRESS": str(max(args.streams + 100, 1)), "SHUTDOWN_GRACE_SECONDS": str(args.grace),
            "METRICS_TOKEN": METRICS_TOKEN,
        })
        for name in ["QUOTA_SESSIONS_PER_ADDRESS", "QUOTA_SESSIONS_PER_APP", "QUOTA_SENDS_PER_USER", "QUOTA_SENDS_PER_ADDRESS",
                     "QUOTA_READS_PER_USER", "QUOTA_UPDATES_PER_USER", "QUOTA_THREADS_PER_ADDRESS", "QUOTA_THREADS_TOTAL"]:
            environment[name] = "0"
        if args.replicas:
            share = (args.streams + args.replicas - 1) // args.replicas + 100
            environment["LIVE_MAX_STREAMS"] = environment["LIVE_STREAMS_PER_ADDRESS"] = str(share)
            ports = [free_port() for _ in range(args.replicas)]
            for index, port in enumerate(ports):
                servers.append(start_server(args.binary, {**environment, "PORT": str(port)}, logs, f"replica-{index}", index == 0, hard))
            for index, port in enumerate(ports):
                wait_for(f"replica {index}", lambda: healthy(f"http://127.0.0.1:{port}"), timeout=60)
            replica_stages(args, servers, ports, control, hard)
            return
        port_a = free_port()
        servers.append(start_server(args.binary, {**environment, "PORT": str(port_a)}, logs, "a", True, hard))
        base_a = f"http://127.0.0.1:{port_a}"
        wait_for("replica A", lambda: healthy(base_a), timeout=30)
        stream_port = port_a
        if args.store == "postgres":
            port_b = free_port()
            servers.append(start_server(args.binary, {**environment, "PORT": str(port_b)}, logs, "b", False, hard))
            wait_for("replica B", lambda: healthy(f"http://127.0.0.1:{port_b}"), timeout=30)
            stream_port = port_b

        if args.typing:
            _, token = new_user(base_a, True)
            typing_flood(base_a, control, token, args.typing)
        if args.streams:
            many_streams(args, servers, base_a, stream_port, control, hard)
    finally:
        for server in servers:
            if server.poll() is None:
                server.terminate()
                server.wait(timeout=30)
        emulator.terminate()
        emulator.wait(timeout=10)
        for process in hogs:
            process.kill()
        if os.environ.get("KEEP_LOGS"):
            print(f"logs kept in {logs}")
        else:
            shutil.rmtree(logs, ignore_errors=True)


if __name__ == "__main__":
    main()
