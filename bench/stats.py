#!/usr/bin/env python3
"""Support's numbers (issue 60): how long `GET /internal/stats` (what `/stats` shows) takes for a
year of a popular app: 50,000 conversations and 1,000,000 messages in the store.

For SQLite, and for PostgreSQL when THREADDESK_POSTGRES_URL is set (scripts/with-postgres):

1. starts the Discord emulator and `threaddesk serve` once on a fresh store, so the server makes
   its schema, and stops it;
2. fills the store with `--conversations` conversations of the app spread over the last year (90 %
   answered, their first responses from a minute to two days after the user wrote; 85 % closed;
   40 % rated, scores 1–5; a reminder in one in ten), a few hundred waiting now, and
   `--messages` mirrored messages in their threads (the numbers never read messages: they are
   there so the tables are as large as a real year's), then ANALYZE;
3. starts the server again with `SUPPORT_HOURS` (first responses are counted in support hours)
   and asks `GET /internal/stats?days=366` and `?days=30` `--requests` times each, one at a time:
   p50/p90/max in ms as the client measured them (loopback HTTP included), and the figures once.

    swift build -c release --scratch-path .build-release --product threaddesk
    swift build -c release --scratch-path .build-release --product discord-emulator
    scripts/with-postgres python3 bench/stats.py

It prints Markdown tables (progress on stderr); copy them into bench/RESULTS.md with the machine.
Every wait is bounded; every process it starts is stopped at the end, on errors too.
"""
import argparse
import contextlib
import json
import os
import pathlib
import random
import select
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

import requests

ROOT = pathlib.Path(__file__).resolve().parent.parent
APP_KEY = "bench-stats-app-key-0123456789"
TOKEN = "bench-stats-metrics-token-0123456789abcdef"
HOURS = "UTC Mon-Fri 09:00-17:00"
YEAR = 365 * 86_400


def log(text: str) -> None:
    print(f"<!-- {text} -->", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def first_line(process: subprocess.Popen, timeout: float) -> str:
    deadline, line = time.monotonic() + timeout, b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or process.poll() is not None:
            raise SystemExit(f"the emulator printed no line within {timeout:.0f} s")
        ready, _, _ = select.select([process.stdout], [], [], min(left, 0.5))
        if ready:
            line += os.read(process.stdout.fileno(), 4096)
    return line.decode().split("\n", 1)[0]


def stop(process: subprocess.Popen, grace: float = 15) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


class Server:
    """`threaddesk serve` on `store`, beside a Discord emulator; stopped when the block ends."""

    def __init__(self, args, store: str, folder: pathlib.Path, hours: bool):
        self.stack = contextlib.ExitStack()
        emulator = subprocess.Popen([args.emulator, "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.stack.callback(stop, emulator)
        discord = json.loads(first_line(emulator, 30))
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        environment = dict(os.environ)
        environment.update({
            "DISCORD_TOKEN": discord["botToken"], "DISCORD_API_URL": discord["restURL"], "DISCORD_GUILD_ID": discord["guildID"],
            "DISCORD_FORUM_CHANNEL_ID": discord["forumChannelID"], "APP_KEY": APP_KEY, "STORE_URL": store, "HOST": "127.0.0.1",
            "PORT": str(port), "LOG_LEVEL": "warning", "METRICS_TOKEN": TOKEN, "REQUEST_TIMEOUT_SECONDS": "60",
        })
        if hours:
            environment["SUPPORT_HOURS"] = HOURS
        self.process = subprocess.Popen([args.binary, "serve"], env=environment, stdout=open(folder / "server.log", "a"),
                                        stderr=subprocess.STDOUT)
        self.stack.callback(stop, self.process)
        deadline = time.monotonic() + 120
        while True:
            if self.process.poll() is not None:
                raise SystemExit(f"threaddesk serve exited; see {folder / 'server.log'}")
            with contextlib.suppress(requests.RequestException):
                if requests.get(self.base + "/health", timeout=1).ok:
                    break
            if time.monotonic() > deadline:
                raise SystemExit("the server was not healthy within 120 s")
            time.sleep(0.1)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.stack.close()

    def stats(self, days: int) -> dict:
        answer = requests.get(f"{self.base}/internal/stats?days={days}", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
        if answer.status_code != 200:
            raise SystemExit(f"/internal/stats answered {answer.status_code}: {answer.text[:300]}")
        return answer.json()


def support_seconds(start: float, end: float) -> float:
    """Seconds of `HOURS` (UTC, Monday to Friday, 09:00 to 17:00) between two times, as the server
    keeps them with a first response."""
    total, day = 0.0, start - start % 86_400
    while day < end:
        weekday = (int(day // 86_400) + 3) % 7  # 1970-01-01 was a Thursday: 0 is Monday
        if weekday < 5:
            total += max(0.0, min(end, day + 17 * 3600) - max(start, day + 9 * 3600))
        day += 86_400
    return total


def conversations(count: int, now: float, rng: random.Random):
    """Rows: owner, app, thread, opened, first response, last user, last support, waiting since,
    reminded, reminders, closed, closed by, rating requested, rating, comment, rated, response seconds."""
    for index in range(count):
        opened = now - rng.uniform(0, YEAR)
        owner, thread = f"u_bench{index:08d}", 10_000_000 + index
        waiting = index % 160 == 0  # a few hundred wait now
        answered = not waiting and rng.random() < 0.9
        first = opened + rng.uniform(60, 2 * 86_400) if answered else None
        closed = min(now, (first or opened) + rng.uniform(600, 5 * 86_400)) if (answered or not waiting) and rng.random() < 0.85 else None
        rated = closed is not None and answered and rng.random() < 0.4
        reminders = 1 if rng.random() < 0.1 else 0
        yield (owner, "default", thread, opened, first, opened, first, opened if waiting else None, opened + 1800 if reminders else None,
               reminders, closed, "agent" if closed else None, closed if rated else None, rng.randint(1, 5) if rated else None,
               "thanks" if rated and rng.random() < 0.3 else None, (closed + 60) if rated else None,
               support_seconds(opened, first) if first else None)


COLUMNS = ("owner, app, thread_id, opened_at, first_response_at, last_user_at, last_support_at, waiting_since, reminded_at, reminders, "
           "closed_at, closed_by, rating_requested_at, rating, rating_comment, rated_at, response_seconds")


def filler(kind: str, index: int):
    kind = kind.lower()
    if "int" in kind or "bool" in kind:
        return index if "int" in kind else 0
    if "double" in kind or "real" in kind or "numeric" in kind:
        return float(index)
    if "bytea" in kind or "blob" in kind:
        return b""
    return "x" if "text" in kind or "char" in kind else ""


def seed_sqlite(path: pathlib.Path, args, now: float) -> None:
    rng = random.Random(60)
    db = sqlite3.connect(path)
    db.executemany(f"INSERT INTO conversations ({COLUMNS}) VALUES ({', '.join('?' * 17)})", conversations(args.conversations, now, rng))
    required = [(name, kind) for _, name, kind, notnull, default, _ in db.execute("PRAGMA table_info(mirror_messages)")
                if notnull and default is None]
    names = [name for name, _ in required]
    per = max(1, args.messages // args.conversations)

    def rows():
        for index in range(args.messages):
            row = {name: filler(kind, index) for name, kind in required}
            if "id" in row:
                row["id"] = 1_000_000_000_000 + index
            if "thread_id" in row:
                row["thread_id"] = 10_000_000 + index // per
            yield tuple(row[name] for name in names)

    db.executemany(f"INSERT INTO mirror_messages ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})", rows())
    db.commit()
    db.execute("ANALYZE")
    db.close()


def psql(url: str, sql: str, stdin: str | None = None) -> str:
    out = subprocess.run(["psql", url, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql], input=stdin, text=True, capture_output=True, timeout=1200)
    if out.returncode != 0:
        raise SystemExit(f"psql failed: {out.stderr[:500]}")
    return out.stdout


def seed_postgres(url: str, args, now: float) -> None:
    rng = random.Random(60)

    def csv(value) -> str:
        return "" if value is None else str(value)

    body = "\n".join(",".join(csv(v) for v in row) for row in conversations(args.conversations, now, rng)) + "\n"
    psql(url, f"COPY conversations ({COLUMNS}) FROM STDIN WITH (FORMAT csv)", body)
    required = [line.split("|") for line in psql(url, (
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'mirror_messages' "
        "AND table_schema = current_schema() AND is_nullable = 'NO' AND column_default IS NULL ORDER BY ordinal_position")).splitlines()]
    names = [name for name, _ in required]
    per = max(1, args.messages // args.conversations)
    lines = []
    for index in range(args.messages):
        row = {name: filler(kind, index) for name, kind in required}
        if "id" in row:
            row["id"] = 1_000_000_000_000 + index
        if "thread_id" in row:
            row["thread_id"] = 10_000_000 + index // per
        lines.append(",".join("\\x" if isinstance(v, bytes) else str(v) for v in (row[name] for name in names)))
    psql(url, f"COPY mirror_messages ({', '.join(names)}) FROM STDIN WITH (FORMAT csv)", "\n".join(lines) + "\n")
    psql(url, "VACUUM ANALYZE")  # as autovacuum leaves a table that has long stood: index-only scans


def measure(server: Server, days: int, count: int) -> tuple:
    server.stats(days)  # warm
    times = []
    for _ in range(count):
        start = time.perf_counter()
        figures = server.stats(days)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.9 * (len(times) - 1))], times[-1], figures


def run(args, name: str, store: str, folder: pathlib.Path, seed) -> list:
    log(f"{name}: making the schema")
    with Server(args, store, folder, hours=False):
        pass
    log(f"{name}: filling {args.conversations} conversations and {args.messages} messages")
    started = time.monotonic()
    seed()
    log(f"{name}: filled in {time.monotonic() - started:.0f} s; measuring")
    rows = []
    with Server(args, store, folder, hours=True) as server:
        for days in (366, 30):
            p50, p90, most, figures = measure(server, days, args.requests)
            rows.append((name, days, p50, p90, most, figures))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    build = ROOT / ".build-release/release"
    parser.add_argument("--binary", default=str(build / "threaddesk"))
    parser.add_argument("--emulator", default=str(build / "discord-emulator"))
    parser.add_argument("--conversations", type=int, default=50_000)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=30)
    args = parser.parse_args()
    now = time.time()
    rows = []
    with tempfile.TemporaryDirectory(prefix="threaddesk-stats-") as temporary:
        folder = pathlib.Path(temporary)
        path = folder / "threaddesk.sqlite"
        rows += run(args, "SQLite", f"sqlite://{path}", folder, lambda: seed_sqlite(path, args, now))
        base = os.environ.get("THREADDESK_POSTGRES_URL")
        if base:
            database = f"bench_stats_{os.getpid()}"
            psql(base, f"CREATE DATABASE {database}")
            url = urllib.parse.urlunparse(urllib.parse.urlparse(base)._replace(path="/" + database))
            try:
                rows += run(args, "PostgreSQL", url, folder, lambda: seed_postgres(url, args, now))
            finally:
                psql(base, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
    print(f"| store | window | p50 ms | p90 ms | max ms | opened | answered | first response median / p90 (support hours) | ratings |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, days, p50, p90, most, figures in rows:
        first = figures["firstResponse"]
        median = first.get("medianSeconds") or 0
        p90s = first.get("p90Seconds") or 0
        print(f"| {name} | {days} d | {p50:.1f} | {p90:.1f} | {most:.1f} | {figures['conversations']['opened']} | "
              f"{figures['conversations']['answered']} | {median / 60:.0f} / {p90s / 60:.0f} min | {figures['ratings']['count']} |")
    def comparable(figures: dict) -> str:
        kept = {k: v for k, v in figures.items() if k not in ("from", "until")}
        kept["conversations"] = {k: v for k, v in figures["conversations"].items() if k != "longestWaitSeconds"}
        return json.dumps(kept, sort_keys=True)

    same = {comparable(f) for _, d, _, _, _, f in rows if d == 366}
    print(f"\nThe 366-day figures are {'the same' if len(same) == 1 else 'DIFFERENT'} on every store measured.")


if __name__ == "__main__":
    main()
