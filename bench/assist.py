#!/usr/bin/env python3
"""Drafted answers beside delivery: what a provider that answers, fails or hangs costs the users.

For each provider mode, a fresh deployment: the Discord emulator (fast windows), the assist
emulator with that permanent outcome, and `threaddesk serve --gateway` on SQLite with drafts on
(no delay, so every user message asks for one). `--users` users send `--messages` messages each,
spread over `--spread` seconds. Reported as Markdown, per mode:

- the send's answer (accepted into the outbox) p50/p99;
- delivery: from the send's answer to the message in Discord (the emulator's snowflake time),
  p50/p99, and messages never delivered (want 0);
- drafts: notes posted, and from the user's message to its draft's note p50/p99;
- the provider's calls by outcome (`threaddesk_assist_requests_total`), tokens settled;
- the server's CPU seconds and RSS at the end.

Modes: `off` (no ASSIST_URL: the baseline), `answer`, `500` (every call refused), `hang` (every
call hangs until ASSIST_TIMEOUT_SECONDS).

    swift build -c release --product threaddesk --product discord-emulator --product assist-emulator
    python3 bench/assist.py --modes off,answer,500,hang

Needs Python 3.11, aiohttp and requests. `KEEP_LOGS=1` keeps the logs.
"""
import argparse
import asyncio
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

import aiohttp
import requests

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from day import client_address, free_port, healthy, percentile, readline_within, wait_for  # noqa: E402

METRICS_TOKEN = "bench-metrics-token-0123456789abcdef"  # /metrics is served on the public listener only behind it
METRICS_HEADERS = {"Authorization": f"Bearer {METRICS_TOKEN}"}

APP_KEY = "assist-bench-app-key"
ROOT = pathlib.Path(__file__).resolve().parent.parent
RELEASE = ROOT / ".build" / "release"
TEXT = re.compile(r"^u(\d{4})-m(\d{3})\b")
DISCORD_EPOCH_MS = 1420070400000
OUTCOMES = {
    "answer": {"kind": "answer", "text": "Restart the app, then sign in again. If that fails, reinstall it."},
    "500": {"kind": "status", "status": 500},
    "hang": {"kind": "hang"},
}


def snowflake_ms(snowflake: str) -> int:
    return (int(snowflake) >> 22) + DISCORD_EPOCH_MS


class Deployment:
    """The emulators and the server of one mode, stopped on exit whatever happens."""

    def __init__(self, args, mode):
        self.args, self.mode = args, mode
        self.work = pathlib.Path(tempfile.mkdtemp(prefix=f"threaddesk-assist-bench-{mode}-"))
        self.processes = []

    def spawn(self, command, log, **kwargs):
        process = subprocess.Popen(command, stderr=open(self.work / log, "w"), cwd=self.work, **kwargs)
        self.processes.append(process)
        return process

    def start(self):
        discord = self.spawn([self.args.emulator, "--port", "0", "--window-scale", "0.02"], "discord-emulator.log",
                             stdout=subprocess.PIPE, text=True)
        self.discord = json.loads(readline_within(discord, 30, "the Discord emulator"))
        environment = dict(os.environ)
        environment.update({
            "DISCORD_TOKEN": self.discord["botToken"], "DISCORD_API_URL": self.discord["restURL"],
            "DISCORD_GUILD_ID": self.discord["guildID"], "DISCORD_FORUM_CHANNEL_ID": self.discord["forumChannelID"],
            "APP_KEY": APP_KEY, "STORE_URL": f"sqlite://{self.work}/threaddesk.sqlite", "HOST": "127.0.0.1",
            "PORT": str(free_port()), "LOG_LEVEL": "notice", "TRUSTED_PROXIES": "127.0.0.1",
            "QUOTA_SESSIONS_PER_APP": "0", "QUOTA_THREADS_TOTAL": f"{self.args.users * 2 + 100}/3600",
            "ASSIST_DRAFT_DELAY_SECONDS": "0", "ASSIST_TIMEOUT_SECONDS": str(self.args.timeout),
            "ASSIST_TOKENS_PER_DAY": "0", "ASSIST_TOKENS_PER_USER_PER_DAY": "0", "METRICS_TOKEN": METRICS_TOKEN,
        })
        environment.pop("GATEWAY_SECRET", None)
        if self.mode != "off":
            assist = self.spawn([self.args.assist_emulator, "--port", "0"], "assist-emulator.log", stdout=subprocess.PIPE, text=True)
            self.assist = json.loads(readline_within(assist, 30, "the assist emulator"))
            answer = requests.post(self.assist["controlURL"] + "/outcome", json={"outcome": OUTCOMES[self.mode]}, timeout=10)
            answer.raise_for_status()
            environment.update({"ASSIST_URL": self.assist["baseURL"], "ASSIST_MODEL": self.assist["model"]})
        self.base = f"http://127.0.0.1:{environment['PORT']}"
        self.server = self.spawn([self.args.binary, "serve", "--gateway"], "server.log", env=environment, stdout=subprocess.DEVNULL)
        wait_for("the server to answer /health", lambda: healthy(self.base, self.server), 60)

    def cpu_seconds(self) -> float:
        fields = pathlib.Path(f"/proc/{self.server.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mib(self) -> float:
        for line in pathlib.Path(f"/proc/{self.server.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self):
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        if os.environ.get("KEEP_LOGS"):
            print(f"\n<!-- logs kept in {self.work} -->")
        else:
            shutil.rmtree(self.work, ignore_errors=True)


async def run_users(deployment, args):
    """Sessions, then every user's messages spread over the window; each send's answer time."""
    accepted = {}  # (user, seq) -> (wall ms when answered, ms the answer took)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as http:
        tokens = []
        for user in range(args.users):
            headers = {"X-App-Key": APP_KEY, "X-Forwarded-For": client_address(user)}
            async with http.post(deployment.base + "/v1/session", json={}, headers=headers) as answer:
                assert answer.status == 201, await answer.text()
                tokens.append((await answer.json())["token"])
        start = time.monotonic()

        async def one(user, seq, at):
            await asyncio.sleep(max(0, start + at - time.monotonic()))
            headers = {"Authorization": f"Bearer {tokens[user]}", "Idempotency-Key": f"u{user}-{seq}", "X-Forwarded-For": client_address(user)}
            began = time.monotonic()
            async with http.post(deployment.base + "/v1/messages", json={"content": f"u{user:04d}-m{seq:03d} the app is stuck"}, headers=headers) as answer:
                assert answer.status == 201, await answer.text()
            accepted[(user, seq)] = (time.time() * 1000, (time.monotonic() - began) * 1000)

        plan = []
        for user in range(args.users):
            for seq in range(args.messages):
                plan.append((user, seq, (user * args.messages + seq) * args.spread / (args.users * args.messages)))
        await asyncio.gather(*(one(*entry) for entry in plan))
    return accepted


def metrics(base) -> str:
    return requests.get(base + "/metrics", headers=METRICS_HEADERS, timeout=10).text


def metric_values(text, name):
    found = {}
    for line in text.splitlines():
        if line.startswith(name):
            key, _, value = line.rpartition(" ")
            found[key[len(name):]] = float(value)
    return found


def measure(args, mode):
    deployment = Deployment(args, mode)
    try:
        deployment.start()
        cpu_before = deployment.cpu_seconds()
        accepted = asyncio.run(run_users(deployment, args))
        control = deployment.discord["controlURL"]
        expected = args.users * args.messages

        def delivered():
            threads = requests.get(control + "/threads", timeout=30).json()
            seen = {}
            drafts = []
            for thread in threads:
                messages = requests.get(f"{control}/threads/{thread['id']}/messages", timeout=30).json()
                last_user = None
                for message in messages:
                    found = TEXT.match(message["content"])
                    if found:
                        seen[(int(found.group(1)), int(found.group(2)))] = snowflake_ms(message["id"])
                        last_user = snowflake_ms(message["id"])
                    elif message["content"].startswith(":ninja: 🤖 Draft answer") and last_user is not None:
                        drafts.append(snowflake_ms(message["id"]) - last_user)
            return seen, drafts

        deadline = time.monotonic() + args.settle
        seen, drafts = delivered()
        while len(seen) < expected and time.monotonic() < deadline:
            time.sleep(1)
            seen, drafts = delivered()
        # Drafts (and the provider's failures) still under way get their time too: until the
        # provider's calls have not changed for longer than one call may take.
        if mode != "off":
            last, changed = None, time.monotonic()
            cap = time.monotonic() + args.settle + args.timeout * 20
            while time.monotonic() < cap:
                total = sum(metric_values(metrics(deployment.base), "threaddesk_assist_requests_total").values())
                if total != last:
                    last, changed = total, time.monotonic()
                elif time.monotonic() - changed > args.timeout + 5:
                    break
                time.sleep(1)
            seen, drafts = delivered()
        text = metrics(deployment.base)
        calls = {key: value for key, value in metric_values(text, "threaddesk_assist_requests_total").items() if value}
        tokens = metric_values(text, "threaddesk_assist_tokens_total")
        lateness = [seen[key] - accepted[key][0] for key in seen if key in accepted]
        return {
            "mode": mode,
            "accept_p50": percentile([v[1] for v in accepted.values()], 0.5),
            "accept_p99": percentile([v[1] for v in accepted.values()], 0.99),
            "deliver_p50": percentile(lateness, 0.5), "deliver_p99": percentile(lateness, 0.99),
            "lost": expected - len(seen),
            "drafts": len(drafts), "draft_p50": percentile(drafts, 0.5), "draft_p99": percentile(drafts, 0.99),
            "calls": calls, "tokens": sum(tokens.values()),
            "cpu": deployment.cpu_seconds() - cpu_before, "rss": deployment.rss_mib(),
        }
    finally:
        deployment.stop()


def outcome_of(labels: str) -> str:
    found = re.search(r'outcome="([^"]+)"', labels)
    return found.group(1) if found else labels


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=str(RELEASE / "threaddesk"))
    parser.add_argument("--emulator", default=str(RELEASE / "discord-emulator"))
    parser.add_argument("--assist-emulator", default=str(RELEASE / "assist-emulator"))
    parser.add_argument("--modes", default="off,answer,500,hang")
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--messages", type=int, default=3)
    parser.add_argument("--spread", type=float, default=30, help="seconds the sends are spread over")
    parser.add_argument("--timeout", type=int, default=10, help="ASSIST_TIMEOUT_SECONDS")
    parser.add_argument("--settle", type=float, default=120, help="seconds to wait for every message to reach Discord")
    args = parser.parse_args()
    rows = [measure(args, mode) for mode in args.modes.split(",")]
    print(f"\n{args.users} users × {args.messages} messages over {args.spread:.0f} s, ASSIST_TIMEOUT_SECONDS={args.timeout}, drafts at once\n")
    print("| provider | send answered p50 / p99 | in Discord after p50 / p99 | not delivered | drafts | message → draft p50 / p99 | calls by outcome | tokens | server CPU s | RSS MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        calls = ", ".join(f"{outcome_of(key)} {int(value)}" for key, value in sorted(row["calls"].items())) or "none"
        print(f"| {row['mode']} | {row['accept_p50']:.1f} / {row['accept_p99']:.1f} ms | {row['deliver_p50']:.0f} / {row['deliver_p99']:.0f} ms | "
              f"{row['lost']} | {row['drafts']} | {row['draft_p50']:.0f} / {row['draft_p99']:.0f} ms | {calls} | {row['tokens']:.0f} | "
              f"{row['cpu']:.1f} | {row['rss']:.0f} |")


if __name__ == "__main__":
    main()
