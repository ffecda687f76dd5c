#!/usr/bin/env python3
"""Discord down, users writing: what the outbox keeps, and how it gives it back.

Starts the Discord emulator with Discord's own rate-limit windows (`--window-scale 1`: 5 posts per
channel per 5 s, 10 thread starts per 10 s per forum, 50 requests/s per bot) and `threaddesk serve
--gateway` on SQLite, or with `--store postgres` two replicas on one PostgreSQL (gateway in A, each
with half the bot's global budget, requests spread over both at random).

1. `--users` users open sessions (no thread yet: every user's first message makes one).
2. Discord refuses everything (`503` on every REST call) for `--outage` seconds, while the users
   send `--messages` messages spread over that window: every `--files-every`th with a PNG, every
   `--diagnostics-every`th a diagnostics upload instead (both through the outbox too).
3. Discord comes back; the outbox drains. With `--store postgres`, replica B is killed (SIGKILL)
   once a third is delivered and started again 5 s later, and PostgreSQL is restarted once two
   thirds are (`THREADDESK_POSTGRES_RESTART`, set by scripts/with-postgres).

Reported as Markdown: accepted (want 100 %), the send's p50/p99 during the outage, the time to
drain, the drain's pace against the fastest Discord allows for that mix (thread starts at 1/s,
5 posts per thread per 5 s, 50 calls/s: want >= 90 %), 429s during the drain, and what reached
Discord against what was accepted: messages out of order, twice, or never (want 0, 0, 0), read
from the emulator's threads (each user's texts carry their number and place).

    swift build -c release --product threaddesk && swift build -c release --product discord-emulator
    python3 bench/outage.py --outage 600                       # SQLite, one node, 10 minutes
    scripts/with-postgres python3 bench/outage.py --store postgres --outage 600
    python3 bench/outage.py --outage 60 --users 50 --messages 200   # a quick try

Needs Python 3.11, aiohttp and requests. `KEEP_LOGS=1` keeps the logs.
"""
import argparse
import asyncio
import collections
import json
import math
import os
import pathlib
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import aiohttp
import requests

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from day import client_address, diagnostics_document, free_port, healthy, percentile, png_bytes, raise_fd_limit, readline_within, wait_for  # noqa: E402

METRICS_TOKEN = "bench-metrics-token-0123456789abcdef"  # /metrics is served on the public listener only behind it
METRICS_HEADERS = {"Authorization": f"Bearer {METRICS_TOKEN}"}

APP_KEY = "outage-bench-app-key"
ROOT = pathlib.Path(__file__).resolve().parent.parent
TEXT = re.compile(r"^u(\d{3})-m(\d{4})\b")


class Deployment:
    """The emulator and the servers, stopped on exit whatever happens."""

    def __init__(self, args):
        self.args = args
        self.work = pathlib.Path(tempfile.mkdtemp(prefix="threaddesk-outage-bench-"))
        self.servers = {}  # name -> (process, base, environment)
        self.emulator = None

    def start(self):
        self.hard = raise_fd_limit()
        self.emulator = subprocess.Popen(
            [self.args.emulator, "--port", "0", "--window-scale", "1", "--message-post-limit", "5"],
            stdout=subprocess.PIPE, stderr=open(self.work / "discord-emulator.log", "w"), text=True)
        self.discord = json.loads(readline_within(self.emulator, 30, "the Discord emulator"))
        self.control = self.discord["controlURL"]
        if self.args.store == "postgres":
            store = os.environ.get("THREADDESK_POSTGRES_URL")
            if not store:
                raise SystemExit("--store postgres needs THREADDESK_POSTGRES_URL (run under scripts/with-postgres)")
        else:
            store = f"sqlite://{self.work}/threaddesk.sqlite"
        environment = dict(os.environ)
        environment.update({
            "DISCORD_TOKEN": self.discord["botToken"], "DISCORD_API_URL": self.discord["restURL"],
            "DISCORD_GUILD_ID": self.discord["guildID"], "DISCORD_FORUM_CHANNEL_ID": self.discord["forumChannelID"],
            "APP_KEY": APP_KEY, "STORE_URL": store, "HOST": "127.0.0.1", "LOG_LEVEL": "info", "METRICS_TOKEN": METRICS_TOKEN,
            "TRUSTED_PROXIES": "127.0.0.1", "QUOTA_SESSIONS_PER_APP": "0",
            "QUOTA_THREADS_TOTAL": f"{self.args.users * 4 + 100}/3600",
            "OUTBOX_MAX_MIB": "4096",
        })
        environment.pop("GATEWAY_SECRET", None)
        names = ["a", "b"] if self.args.store == "postgres" else ["a"]
        for name in names:
            env = {**environment, "PORT": str(free_port())}
            if len(names) > 1:
                env["DISCORD_GLOBAL_LIMIT"] = str(50 // len(names))
            self.launch(name, env)

    def launch(self, name, env):
        command = [self.args.binary, "serve"] + (["--gateway"] if name == "a" else [])
        process = subprocess.Popen(
            command, env=env, stdout=open(self.work / f"server-{name}.log", "a"), stderr=subprocess.STDOUT, cwd=self.work,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (self.hard, self.hard)))
        base = f"http://127.0.0.1:{env['PORT']}"
        self.servers[name] = (process, base, env)
        wait_for(f"server {name} to answer /health", lambda: healthy(base, process), 60)

    @property
    def bases(self):
        return [base for _, base, _ in self.servers.values()]

    def kill_and_restart(self, name, pause):
        process, _, env = self.servers[name]
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        time.sleep(pause)
        self.launch(name, env)

    def stop(self):
        for process, _, _ in self.servers.values():
            if process.poll() is None:
                process.terminate()
        if self.emulator and self.emulator.poll() is None:
            self.emulator.terminate()
        for process in [p for p, _, _ in self.servers.values()] + [self.emulator]:
            if process is None:
                continue
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        if os.environ.get("KEEP_LOGS"):
            print(f"\n<!-- logs kept in {self.work} -->")
        else:
            shutil.rmtree(self.work, ignore_errors=True)


def fault(control, count):
    answer = requests.post(control + "/faults/server-errors", json={"count": count, "status": 503}, timeout=10)
    answer.raise_for_status()


def outbox_depth(base) -> int:
    text = requests.get(base + "/metrics", headers=METRICS_HEADERS, timeout=10).text
    found = re.search(r"^threaddesk_outbox_depth (\S+)$", text, re.MULTILINE)
    return int(float(found.group(1))) if found else -1


def counters(control) -> dict:
    return requests.get(control + "/counters", timeout=10).json()


async def open_sessions(http, bases, users):
    tokens = []
    for index in range(users):
        base = random.choice(bases)
        headers = {"X-App-Key": APP_KEY, "X-Forwarded-For": client_address(index)}
        async with http.post(base + "/v1/session", json={}, headers=headers) as answer:
            assert answer.status == 201, await answer.text()
            tokens.append((await answer.json())["token"])
    return tokens


async def send_all(http, bases, tokens, args, plan):
    """The plan's sends at their moments; returns (kind, user, seq, status, ms) per send."""
    results = []
    picture = png_bytes(20_000)
    document = json.dumps(diagnostics_document())
    start = time.monotonic()

    async def one(at, kind, user, seq):
        await asyncio.sleep(max(0, start + at - time.monotonic()))
        base = random.choice(bases)
        # Each user from an address of their own (127.0.0.1 is a trusted proxy), as in production.
        headers = {"Authorization": f"Bearer {tokens[user]}", "Idempotency-Key": f"u{user}-{seq}-{kind}",
                   "X-Forwarded-For": client_address(user)}
        began = time.monotonic()
        status = 0
        for _ in range(5):  # a 503 busy (a cap) or a lost connection is sent again with the same key
            try:
                if kind == "diagnostics":
                    async with http.post(base + "/v1/diagnostics", data=document,
                                         headers={**headers, "Content-Type": "application/json"}) as answer:
                        status = answer.status
                elif kind == "file":
                    form = aiohttp.FormData()
                    form.add_field("content", f"u{user:03d}-m{seq:04d} with a screenshot")
                    form.add_field("files", picture, filename="screen.png", content_type="image/png")
                    async with http.post(base + "/v1/messages", data=form, headers=headers) as answer:
                        status = answer.status
                else:
                    async with http.post(base + "/v1/messages", json={"content": f"u{user:03d}-m{seq:04d} the app is stuck"},
                                         headers=headers) as answer:
                        status = answer.status
            except aiohttp.ClientError:
                status = -1
            if status in (200, 201):
                break
            await asyncio.sleep(1)
        results.append((kind, user, seq, status, (time.monotonic() - began) * 1000))

    await asyncio.gather(*(one(*entry) for entry in plan))
    return results


def plan_sends(args):
    """Who sends what, when: every user at least once, the rest at random, in each user's order."""
    users = [index % args.users for index in range(args.messages)]
    random.shuffle(users)
    moments = sorted(random.uniform(0, args.outage * 0.8) for _ in range(args.messages))
    seqs = collections.Counter()
    plan = []
    for number, (at, user) in enumerate(zip(moments, users)):
        kind = "diagnostics" if (number + 1) % args.diagnostics_every == 0 else \
            "file" if (number + 1) % args.files_every == 0 else "text"
        plan.append((at, kind, user, seqs[user]))
        seqs[user] += 1
    return plan


def discord_view(control):
    """Every user's texts as Discord has them, in thread order, and the diagnostics notes per user."""
    texts = collections.defaultdict(list)
    diagnostics = collections.Counter()
    for thread in requests.get(control + "/threads", timeout=30).json():
        messages = requests.get(f"{control}/threads/{thread['id']}/messages", timeout=30).json()
        owner = None
        for message in messages:
            found = TEXT.match(message["content"])
            if found:
                owner = int(found.group(1))
                texts[owner].append(int(found.group(2)))
        for message in messages:
            if owner is not None and message["content"].startswith(":ninja: 📎 diagnostics-"):
                diagnostics[owner] += 1
    return texts, diagnostics


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--outage", type=float, default=600, help="seconds Discord refuses everything")
    parser.add_argument("--files-every", type=int, default=10)
    parser.add_argument("--diagnostics-every", type=int, default=25)
    parser.add_argument("--drain-timeout", type=float, default=1800)
    parser.add_argument("--binary", default=str(ROOT / ".build/release/threaddesk"))
    parser.add_argument("--emulator", default=str(ROOT / ".build/release/discord-emulator"))
    parser.add_argument("--seed", type=int, default=20261128)
    parser.add_argument("--no-faults", action="store_true",
                        help="with --store postgres: neither kill replica B nor restart PostgreSQL during the drain")
    parser.add_argument("--timeline", action="store_true",
                        help="print the outbox depth, thread starts and posts every 5 s of the drain")
    args = parser.parse_args()
    args.binary, args.emulator = os.path.abspath(args.binary), os.path.abspath(args.emulator)
    random.seed(args.seed)
    deployment = Deployment(args)
    try:
        deployment.start()
        asyncio.run(run(args, deployment))
    finally:
        deployment.stop()


async def run(args, deployment):
    control = deployment.control
    plan = plan_sends(args)
    connector = aiohttp.TCPConnector(limit=400)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120)) as http:
        tokens = await open_sessions(http, deployment.bases, args.users)
        fault(control, 10**9)
        outage_began = time.monotonic()
        results = await send_all(http, deployment.bases, tokens, args, plan)
    await asyncio.sleep(max(0, outage_began + args.outage - time.monotonic()))
    before = counters(control)
    fault(control, 0)
    back = time.monotonic()
    total = outbox_depth(deployment.bases[0])
    killed = restarted = None
    depth = total
    timeline = []
    last_mark = back
    while depth != 0:
        if time.monotonic() - back > args.drain_timeout:
            break
        await asyncio.sleep(0.5)
        try:
            depth = outbox_depth(deployment.servers["a"][1])
        except requests.RequestException:
            continue
        if args.timeline and time.monotonic() - last_mark >= 5:
            last_mark = time.monotonic()
            routes = counters(control)["requestsByRoute"]
            timeline.append((last_mark - back, depth, routes.get("POST /channels/{channel_id}/threads", 0),
                             routes.get("POST /channels/{channel_id}/messages", 0)))
        if args.no_faults:
            continue
        if args.store == "postgres" and killed is None and depth <= total * 2 / 3:
            killed = time.monotonic() - back
            deployment.kill_and_restart("b", pause=5)
        if args.store == "postgres" and restarted is None and killed is not None and depth <= total / 3:
            command = os.environ.get("THREADDESK_POSTGRES_RESTART")
            if command:
                restarted = time.monotonic() - back
                subprocess.run(command, shell=True, check=True, capture_output=True)
    drained = time.monotonic() - back
    after = counters(control)
    await asyncio.sleep(2)  # the last deliveries' gateway events
    texts, diagnostics = discord_view(control)
    report(args, plan, results, total, drained, depth, before, after, texts, diagnostics, killed, restarted)
    if timeline:
        print("\n| s into the drain | outbox depth | thread starts (all time) | posts (all time) |")
        print("|---|---|---|---|")
        for at, depth, starts, posts in timeline:
            print(f"| {at:.0f} | {depth} | {starts} | {posts} |")


def report(args, plan, results, total, drained, depth, before, after, texts, diagnostics, killed, restarted):
    accepted = [r for r in results if r[3] in (200, 201)]
    send_ms = [r[4] for r in results]
    expected = collections.defaultdict(list)
    expected_diagnostics = collections.Counter()
    for _, kind, user, seq in plan:
        if kind == "diagnostics":
            expected_diagnostics[user] += 1
        else:
            expected[user].append(seq)
    twice = sum(sum(count - 1 for count in collections.Counter(seen).values() if count > 1) for seen in texts.values())
    never = sum(len(set(wanted) - set(texts.get(user, []))) for user, wanted in expected.items())
    out_of_order = sum(1 for user, seen in texts.items() for a, b in zip(seen, seen[1:]) if b < a)
    diagnostics_twice = sum(max(0, diagnostics[u] - n) for u, n in expected_diagnostics.items())
    diagnostics_never = sum(max(0, n - diagnostics[u]) for u, n in expected_diagnostics.items())
    threads = len(set(expected) | set(expected_diagnostics))
    posts = sum(len(v) for v in expected.values()) - threads + 2 * sum(expected_diagnostics.values())
    busiest = max((len(v) + 2 * expected_diagnostics[u] for u, v in expected.items()), default=0)
    # The fastest Discord allows: thread starts 10 per 10 s window per forum, 5 posts per 5 s
    # window per thread (the starter post is in the thread's call), 50 calls a second for the bot.
    ideal = max((math.ceil(threads / 10) - 1) * 10, (math.ceil(busiest / 5) - 1) * 5, (threads + posts) / 50.0)
    drain_429 = after["rateLimited"] - before["rateLimited"]
    store = "SQLite, one node" if args.store == "sqlite" else \
        "PostgreSQL, two replicas" + ("" if args.no_faults else " (B killed mid-drain, PostgreSQL restarted)")
    print(f"### Outage: {args.outage:.0f} s of Discord down, {args.users} users, {args.messages} sends — {store}\n")
    print("| what | value |")
    print("|---|---|")
    print(f"| accepted during the outage | {len(accepted)} of {len(results)} ({100 * len(accepted) / max(1, len(results)):.1f} %) |")
    statuses = collections.Counter(r[3] for r in results)
    print(f"| answers | {', '.join(f'{status}: {count}' for status, count in sorted(statuses.items()))} |")
    print(f"| send p50 / p99 / max during the outage | {percentile(send_ms, .5):.0f} / {percentile(send_ms, .99):.0f} / {max(send_ms):.0f} ms |")
    print(f"| waiting when Discord came back (outbox depth) | {total} |")
    print(f"| time to drain | {drained:.1f} s{' (not drained: ' + str(depth) + ' left)' if depth else ''} |")
    print(f"| fastest drain Discord allows for this mix | {ideal:.1f} s ({threads} thread starts, {posts} more posts, busiest thread {busiest} posts) |")
    print(f"| drain pace against that | {100 * ideal / max(drained, 0.001):.0f} % |")
    print(f"| Discord 429s during the drain | {drain_429} |")
    print(f"| texts out of order / twice / never | {out_of_order} / {twice} / {never} |")
    print(f"| diagnostics twice / never | {diagnostics_twice} / {diagnostics_never} |")
    if killed is not None:
        print(f"| replica B killed (SIGKILL) at | {killed:.1f} s into the drain, started again 5 s later |")
    if restarted is not None:
        print(f"| PostgreSQL restarted at | {restarted:.1f} s into the drain |")


if __name__ == "__main__":
    main()
