#!/usr/bin/env python3
"""Discord calls the FAQ forum's read costs when ThreadDesk starts, cold and then from its store.

Starts the Discord emulator on loopback (Discord's own rate limits) and posts `--n` curated
answers into its FAQ forum through the control API (`POST /_emulator/faq/posts`), then:

1. a cold start: `threaddesk serve --gateway` (the gateway in-process) with
   `DISCORD_FAQ_CHANNEL_ID` set and a fresh SQLite store. It polls `GET /v1/suggestions?q=Question`
   until an answer comes, then waits until the emulator's REST counters have stood still for
   `--quiet` seconds: starter reads (`GET /channels/{channel_id}/messages/{message_id}`), reads of
   the forum's lists (active and archived threads), every REST call, 429s, the seconds until the
   first suggestion and until the reads stopped;
2. SIGTERM, and a warm start on the same store and emulator: the answers come from the store's
   snapshot at once, and the forum is read again in the background at 10 starters a second, so it
   waits up to `--n`/10 + 60 s for the counters to stand still, and reports the same columns.

Seconds are counted from the server's spawn (the time it takes to listen included; `/health`'s
first 200 is shown too).

    swift build --product threaddesk && swift build --product discord-emulator
    python3 bench/faq_start.py --n 1000
    python3 bench/faq_start.py --n 200 --server .build/release/threaddesk

It prints a Markdown table; copy it into bench/RESULTS.md with the machine, build and commit.
Standard library only.
"""
import argparse
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]
APP_KEY = "bench-app-key"
STARTER_READS = ["GET /channels/{channel_id}/messages/{message_id}"]
LIST_READS = ["GET /guilds/{guild_id}/threads/active", "GET /channels/{channel_id}/threads/archived/public"]
TOPICS = ["billing", "pairing", "the TV app", "Chromecast", "subtitles", "downloads", "offline mode",
          "parental controls", "account deletion", "passwords", "refunds", "audio sync", "casting", "widgets"]


def call(method: str, url: str, body=None, headers=None, timeout: float = 10):
    """(status, decoded JSON or None) of one HTTP call; errors are answers, not exceptions."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            status, raw = answer.status, answer.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def counters(control: str) -> dict:
    status, body = call("GET", control + "/counters")
    if status != 200:
        raise SystemExit(f"GET {control}/counters: {status}")
    return body


def rest_snapshot(control: str) -> dict:
    """The REST calls per route and the 429s, as the emulator counts them."""
    body = counters(control)
    return {"routes": dict(body.get("requestsByRoute", {})), "rateLimited": body.get("rateLimited", 0)}


def difference(after: dict, before: dict) -> dict:
    routes = {route: count - before["routes"].get(route, 0) for route, count in after["routes"].items()}
    return {"routes": {route: count for route, count in routes.items() if count}, "rateLimited": after["rateLimited"] - before["rateLimited"]}


def healthy(base: str) -> bool:
    try:
        return call("GET", base + "/health", timeout=1)[0] == 200
    except OSError:
        return False


class Server:
    """One `threaddesk serve --gateway` process; its output goes to a log file."""

    def __init__(self, binary: str, environment: dict, log: pathlib.Path):
        self.log = open(log, "w")
        self.started = time.monotonic()
        self.process = subprocess.Popen([binary, "serve", "--gateway"], env=environment, stdout=self.log, stderr=subprocess.STDOUT)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            raise SystemExit(f"the server exited ({self.process.returncode}); see {self.log.name}")

    def stop(self) -> float:
        """SIGTERM, then SIGKILL after 30 s; the seconds it took to exit."""
        if self.process.poll() is not None:
            return 0.0
        began = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()
        return time.monotonic() - began


def measure_start(server: Server, base: str, control: str, token_box: list, before: dict, deadline: float, quiet: float) -> dict:
    """Waits for `/health`, then for the first suggestion, then for the REST counters to stand still
    for `quiet` s; the counters are sampled all along, so "reads stopped" is the last change seen."""
    up = first = None
    last, last_change = rest_snapshot(control), 0.0

    def sample() -> None:
        nonlocal last, last_change
        now = rest_snapshot(control)
        if now != last:
            last, last_change = now, server.elapsed()

    while first is None or server.elapsed() - last_change < quiet:
        server.check_alive()
        if server.elapsed() > deadline:
            waiting = "/health" if up is None else "a suggestion" if first is None else "the Discord calls to stop"
            raise SystemExit(f"still waiting for {waiting} after {deadline:.0f} s")
        sample()
        if up is None:
            if healthy(base):
                up = server.elapsed()
        elif first is None:
            if not token_box:
                status, session = call("POST", base + "/v1/session", {}, {"X-App-Key": APP_KEY}, timeout=30)
                if status not in (200, 201):
                    raise SystemExit(f"POST /v1/session: {status} {session}")
                token_box.append(session["token"])
            status, body = call("GET", base + "/v1/suggestions?q=Question", headers={"Authorization": f"Bearer {token_box[0]}"})
            if status != 200:
                raise SystemExit(f"GET /v1/suggestions: {status} {body}")
            if body.get("suggestions"):
                first = server.elapsed()
        time.sleep(0.05 if first is None else 0.25)
    spent = difference(last, before)
    routes = spent["routes"]
    return {
        "health": up, "first": first, "stopped": last_change,
        "starters": sum(routes.get(route, 0) for route in STARTER_READS),
        "lists": sum(routes.get(route, 0) for route in LIST_READS),
        "total": sum(routes.values()), "429": spent["rateLimited"], "routes": routes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="FAQ posts to create (default 1000)")
    parser.add_argument("--server", default=str(ROOT / ".build/debug/threaddesk"), help="the threaddesk binary")
    parser.add_argument("--emulator", default=str(ROOT / ".build/debug/discord-emulator"), help="the discord-emulator binary")
    parser.add_argument("--deadline", type=float, default=300, help="seconds the cold start may take to read the forum")
    parser.add_argument("--quiet", type=float, default=5, help="seconds without a REST call that mean the reads stopped")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, store); it is always kept after a failure")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="threaddesk-faq-bench-")
    logs = pathlib.Path(work)
    emulator = subprocess.Popen([args.emulator, "--port", "0"], stdout=subprocess.PIPE, stderr=open(logs / "emulator.log", "w"), text=True)
    server = None
    finished = False
    try:
        endpoints = json.loads(emulator.stdout.readline())
        control = endpoints["controlURL"]
        for index in range(args.n):
            title = f"Question {index} about {TOPICS[index % len(TOPICS)]}"
            answer = f"Answer {index}: open Settings, then {TOPICS[(index * 7) % len(TOPICS)]}, and try again.\nkeywords: topic{index % 50}"
            status, body = call("POST", control + "/faq/posts", {"title": title, "answer": answer})
            if status != 200:
                raise SystemExit(f"POST /faq/posts #{index}: {status} {body}")

        port = free_port()
        base = f"http://127.0.0.1:{port}"
        environment = dict(os.environ)
        environment.update({
            "DISCORD_TOKEN": endpoints["botToken"], "DISCORD_API_URL": endpoints["restURL"],
            "DISCORD_GUILD_ID": endpoints["guildID"], "DISCORD_FORUM_CHANNEL_ID": endpoints["forumChannelID"],
            "DISCORD_FAQ_CHANNEL_ID": endpoints["faqChannelID"],
            "APP_KEY": APP_KEY, "STORE_URL": f"sqlite://{logs}/threaddesk.sqlite", "HOST": "127.0.0.1", "PORT": str(port),
            "LOG_LEVEL": "warning", "QUOTA_SESSIONS_PER_ADDRESS": "0", "QUOTA_READS_PER_USER": "0",
        })
        token_box: list = []
        rows = []
        for label, deadline in [("cold (empty store)", args.deadline), ("warm (same store)", args.n / 10 + 60)]:
            before = rest_snapshot(control)
            server = Server(args.server, environment, logs / f"server-{len(rows) + 1}.log")
            rows.append((label, measure_start(server, base, control, token_box, before, deadline, args.quiet)))
            server.stop()
            server = None

        print(f"FAQ forum read at start: {args.n:,} posts, server `{args.server}`, "
              "emulator at Discord's rate limits; seconds from the server's spawn")
        print()
        print("| start | N posts | starter reads | forum list reads | REST calls | 429s | /health (s) | first suggestion (s) | reads stopped (s) |")
        print("|---|---|---|---|---|---|---|---|---|")
        for label, row in rows:
            print(f"| {label} | {args.n:,} | {row['starters']:,} | {row['lists']:,} | {row['total']:,} | {row['429']} | "
                  f"{row['health']:.1f} | {row['first']:.1f} | {row['stopped']:.1f} |")
        print()
        for label, row in rows:
            print(f"REST calls, {label}: " + ", ".join(f"{route} ×{count}" for route, count in sorted(row["routes"].items())))
        finished = True
    finally:
        if server:
            server.stop()
        emulator.terminate()
        emulator.wait(timeout=10)
        if finished and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"\nlogs and store kept in {logs}")


if __name__ == "__main__":
    main()
