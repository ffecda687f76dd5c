#!/usr/bin/env python3
"""Polls of `GET /v1/messages` from the conversation mirror, with the gateway feed live.

Starts the Discord emulator and `threaddesk serve --gateway` (release build) on loopback, makes
`--users` users each with a thread and a support reply, waits for the gateway's first
reconciliation, then:

1. drives `wrk` (Debian package) at `GET /v1/messages` with every user's token in turn, and reads
   the emulator's counters before and after: Discord message reads per poll;
2. measures agent reply (emulator control API) -> visible in that user's next poll, `--replies` times.

    swift build -c release --product threaddesk && swift build --product discord-emulator
    python3 bench/mirror.py                                   # SQLite
    scripts/with-postgres python3 bench/mirror.py --store postgres

It prints one Markdown table row per run; copy it into bench/RESULTS.md with the machine and commit.
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import re
import socket
import statistics
import subprocess
import tempfile
import time
import uuid

import requests

METRICS_TOKEN = "bench-metrics-token-0123456789abcdef"  # /metrics is served on the public listener only behind it
METRICS_HEADERS = {"Authorization": f"Bearer {METRICS_TOKEN}"}

ROOT = pathlib.Path(__file__).resolve().parents[1]
MESSAGE_READS = ["GET /channels/{channel_id}/messages", "GET /channels/{channel_id}/messages/{message_id}"]


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


def metric(base: str, series: str) -> float:
    for line in requests.get(base + "/metrics", headers=METRICS_HEADERS, timeout=5).text.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return 0.0


def message_reads(control: str) -> int:
    counters = requests.get(control + "/counters", timeout=5).json()
    return sum(counters.get("requestsByRoute", {}).get(route, 0) for route in MESSAGE_READS)


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=str(ROOT / ".build/release/threaddesk"))
    parser.add_argument("--emulator", default=str(ROOT / ".build/debug/discord-emulator"))
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--duration", type=int, default=20)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--replies", type=int, default=500)
    args = parser.parse_args()

    work = tempfile.TemporaryDirectory(prefix="threaddesk-mirror-bench-")
    logs = pathlib.Path(work.name)
    emulator_log = open(logs / "emulator.log", "w")
    emulator = subprocess.Popen(
        [args.emulator, "--port", "0", "--window-scale", "0.01", "--message-post-limit", "1000"],
        stdout=subprocess.PIPE, stderr=emulator_log, text=True)
    server = None
    try:
        endpoints = json.loads(emulator.stdout.readline())
        control = endpoints["controlURL"]
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        if args.store == "postgres":
            url = os.environ.get("THREADDESK_POSTGRES_URL")
            if not url:
                raise SystemExit("--store postgres needs THREADDESK_POSTGRES_URL (run under scripts/with-postgres)")
            store = url
        else:
            store = f"sqlite://{logs}/threaddesk.sqlite"
        environment = dict(os.environ)
        environment.update({
            "DISCORD_TOKEN": endpoints["botToken"], "DISCORD_API_URL": endpoints["restURL"],
            "DISCORD_GUILD_ID": endpoints["guildID"], "DISCORD_FORUM_CHANNEL_ID": endpoints["forumChannelID"],
            "APP_KEY": "bench-app-key", "STORE_URL": store, "PORT": str(port), "HOST": "127.0.0.1",
            "LOG_LEVEL": "warning", "METRICS_TOKEN": METRICS_TOKEN,
        })
        for name in ["QUOTA_SESSIONS_PER_ADDRESS", "QUOTA_SESSIONS_PER_APP", "QUOTA_SENDS_PER_USER",
                     "QUOTA_SENDS_PER_ADDRESS", "QUOTA_READS_PER_USER", "QUOTA_THREADS_PER_ADDRESS", "QUOTA_THREADS_TOTAL"]:
            environment[name] = "0"
        server_log = open(logs / "server.log", "w")
        server = subprocess.Popen([args.binary, "serve", "--gateway"], env=environment, stdout=server_log, stderr=subprocess.STDOUT)
        wait_for("the server", lambda: _healthy(base), timeout=30)

        # Users, each with a thread and a support reply.
        def make_user(index: int):
            session = requests.post(base + "/v1/session", json={}, headers={"X-App-Key": "bench-app-key"}, timeout=30).json()
            token = session["token"]
            sent = requests.post(base + "/v1/messages", json={"content": f"hello from user {index}"},
                                 headers={"Authorization": f"Bearer {token}", "Idempotency-Key": str(uuid.uuid4())}, timeout=30)
            sent.raise_for_status()
            return session["userId"], token
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            users = list(pool.map(make_user, range(args.users)))
        tokens = [token for _, token in users]
        # The outbox makes each thread after the send was answered: wait until all are there.
        wait_for("every user's thread", lambda: len(requests.get(control + "/threads", timeout=10).json()) >= args.users, timeout=120)
        threads = requests.get(control + "/threads", timeout=10).json()
        # A thread is named after its first message ("hello from user N"), not its user.
        by_name = {thread["name"]: thread["id"] for thread in threads}
        thread_of = {user: by_name[f"hello from user {index}"] for index, (user, _) in enumerate(users)}
        for thread in threads:
            requests.post(f"{control}/threads/{thread['id']}/replies", json={"content": "Thanks, looking into it."}, timeout=10)
        wait_for("the gateway's reconciliation", lambda: metric(base, "threaddesk_catch_ups_total") >= 1)
        wait_for("the replies mirrored", lambda: len(_poll(base, tokens[-1])) >= 2)
        for token in tokens:
            _poll(base, token)

        # 1. Polls under wrk.
        script = logs / "polls.lua"
        script.write_text(
            "tokens = {" + ",".join(f'"{token}"' for token in tokens) + "}\n"
            "counter = 0\n"
            "request = function()\n"
            "  counter = counter + 1\n"
            "  return wrk.format(\"GET\", \"/v1/messages?limit=20\", {[\"Authorization\"] = \"Bearer \" .. tokens[(counter % #tokens) + 1]})\n"
            "end\n")
        reads_before = message_reads(control)
        wrk = subprocess.run(
            ["wrk", f"-t{args.threads}", f"-c{args.connections}", f"-d{args.duration}s", "--latency", "-s", str(script), base],
            capture_output=True, text=True, check=True)
        reads_after = message_reads(control)
        output = wrk.stdout
        requests_total = int(re.search(r"(\d+) requests in", output).group(1))
        rate = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
        latency = {p: re.search(rf"\s{p}%\s+([\d.]+)(us|ms|s)", output) for p in ["50", "99"]}
        non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
        def ms(match):
            value, unit = float(match.group(1)), match.group(2)
            return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value

        # 2. Agent reply -> visible in the user's next poll.
        delays = []
        for index in range(args.replies):
            user, token = users[index % len(users)]
            thread = thread_of[user]
            started = time.monotonic()
            reply = requests.post(f"{control}/threads/{thread}/replies", json={"content": f"reply {index}"}, timeout=10).json()
            while True:
                if any(message["id"] == reply["id"] for message in _poll(base, token, limit=5)):
                    break
                if time.monotonic() - started > 10:
                    raise SystemExit(f"reply {index} not visible after 10 s")
            delays.append((time.monotonic() - started) * 1000)

        print(f"| {args.store} | {args.users} | {args.connections} | {requests_total:,} | {rate:,.0f} | "
              f"{ms(latency['50']):.2f} | {ms(latency['99']):.2f} | {int(non_2xx.group(1)) if non_2xx else 0} | "
              f"{reads_after - reads_before} | {statistics.median(delays):.1f} | {percentile(delays, 0.99):.1f} |")
        print(output, flush=True)
    finally:
        if server:
            server.terminate()
            server.wait(timeout=20)
        emulator.terminate()
        emulator.wait(timeout=10)


def _poll(base: str, token: str, limit: int = 20):
    reply = requests.get(f"{base}/v1/messages?limit={limit}", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    reply.raise_for_status()
    return reply.json()["messages"]


def _healthy(base: str) -> bool:
    try:
        return requests.get(base + "/health", timeout=1).ok
    except requests.ConnectionError:
        return False


if __name__ == "__main__":
    main()
