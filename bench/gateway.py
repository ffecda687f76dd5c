#!/usr/bin/env python3
"""The gateway daemon's memory under a long stream of events, beside a stock Discord library.

Starts the Discord emulator, `threaddesk serve` (the events' destination) and `threaddesk gateway`
(release builds), and a hikari bot on the same emulator; posts `--events` agent replies into one
forum thread through the emulator's control API (so both the daemon and hikari receive
`--events` MESSAGE_CREATE dispatches over zlib-stream), then reports each one's resident memory
(RSS, and the peak, VmHWM) and how many events each saw.

    swift build -c release --product threaddesk && swift build -c release --product threaddesk-gateway
    swift build -c release --product discord-emulator
    python3 bench/gateway.py --events 100000

It prints a Markdown table; copy it into bench/RESULTS.md with the machine and commit.
"""
import argparse
import asyncio
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import aiohttp
import requests

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from live import ROOT, free_port, healthy, wait_for  # noqa: E402

SECRET = "bench-gateway-secret-of-thirty-two-characters"


def status_kib(pid: int, field: str) -> int:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def anon_kib(pid: int) -> int:
    """Private memory (`Pss_Anon`): RSS without the shared, clean pages of code and libraries."""
    for line in pathlib.Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss_Anon:"):
            return int(line.split()[1])
    return 0


HIKARI = r'''
import asyncio, sys, hikari
count = 0
async def main():
    bot = hikari.GatewayBot(sys.argv[1], rest_url=sys.argv[2], banner=None, logs="ERROR",
                            intents=hikari.Intents.GUILDS | hikari.Intents.GUILD_MESSAGES | hikari.Intents.MESSAGE_CONTENT)
    @bot.listen(hikari.GuildMessageCreateEvent)
    async def on_message(event):
        global count
        count += 1
    @bot.listen(hikari.StartedEvent)
    async def started(event):
        print("ready", flush=True)
    await bot.start(check_for_updates=False)
    # Reading stdin in a thread: the event loop must keep receiving meanwhile.
    while await asyncio.to_thread(sys.stdin.readline):
        print(count, flush=True)
asyncio.run(main())
'''


async def post_replies(control: str, thread: str, count: int, concurrency: int = 32) -> float:
    start = time.monotonic()
    queue = iter(range(count))
    async with aiohttp.ClientSession() as session:
        async def worker():
            for index in queue:
                async with session.post(f"{control}/threads/{thread}/replies", json={"content": f"event {index}"}) as answer:
                    if answer.status != 200:
                        raise SystemExit(f"reply {index}: {answer.status} {await answer.text()}")
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=str(ROOT / ".build/release/threaddesk"))
    parser.add_argument("--emulator", default=str(ROOT / ".build/release/discord-emulator"))
    # The daemon alone (`threaddesk-gateway`); `--daemon .build/release/threaddesk` measures
    # `threaddesk gateway` inside the all-in-one binary instead.
    parser.add_argument("--daemon", default=str(ROOT / ".build/release/threaddesk-gateway"))
    parser.add_argument("--events", type=int, default=100_000)
    # The daemon's GATEWAY_COMPRESSION (hikari asks for zlib-stream, its default, either way).
    parser.add_argument("--compression", default="zlib-stream", choices=["zlib-stream", "zstd-stream", "none"])
    args = parser.parse_args()

    work = tempfile.TemporaryDirectory(prefix="threaddesk-gateway-bench-")
    logs = pathlib.Path(work.name)
    emulator = subprocess.Popen([args.emulator, "--port", "0"], stdout=subprocess.PIPE, stderr=open(logs / "emulator.log", "w"), text=True)
    processes = []
    try:
        endpoints = json.loads(emulator.stdout.readline())
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        environment = dict(os.environ)
        environment.update({
            "DISCORD_TOKEN": endpoints["botToken"], "DISCORD_API_URL": endpoints["restURL"],
            "DISCORD_GUILD_ID": endpoints["guildID"], "DISCORD_FORUM_CHANNEL_ID": endpoints["forumChannelID"],
            "APP_KEY": "bench-app-key", "STORE_URL": f"sqlite://{logs}/threaddesk.sqlite", "HOST": "127.0.0.1",
            "PORT": str(port), "LOG_LEVEL": "error", "GATEWAY_SECRET": SECRET, "SERVER_URL": base,
            "GATEWAY_COMPRESSION": args.compression,
        })
        server = subprocess.Popen([args.binary, "serve"], env=environment, stdout=open(logs / "server.log", "w"), stderr=subprocess.STDOUT)
        processes.append(server)
        wait_for("the server", lambda: healthy(base), timeout=30)
        daemon_command = [args.daemon, "gateway"] if pathlib.Path(args.daemon).name == "threaddesk" else [args.daemon]
        daemon = subprocess.Popen(daemon_command, env=environment, stdout=open(logs / "daemon.log", "w"), stderr=subprocess.STDOUT)
        processes.append(daemon)
        hikari = subprocess.Popen([sys.executable, "-c", HIKARI, endpoints["botToken"], endpoints["restURL"]],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(logs / "hikari.log", "w"), text=True)
        processes.append(hikari)
        assert hikari.stdout.readline().strip() == "ready"
        control = endpoints["controlURL"]
        wait_for("two gateway sessions", lambda: requests.get(control + "/counters", timeout=5).json()["identifies"] >= 2, timeout=30)
        # A forum thread ThreadDesk does not own: the daemon forwards its events, the server drops them.
        thread = requests.post(f"{endpoints['restURL']}/channels/{endpoints['forumChannelID']}/threads",
                               json={"name": "bench", "message": {"content": "start"}},
                               headers={"Authorization": f"Bot {endpoints['botToken']}"}, timeout=10).json()["id"]
        time.sleep(2)
        before = {"daemon": status_kib(daemon.pid, "VmRSS"), "hikari": status_kib(hikari.pid, "VmRSS"),
                  "daemon-anon": anon_kib(daemon.pid), "hikari-anon": anon_kib(hikari.pid)}
        seconds = asyncio.run(post_replies(control, thread, args.events))
        time.sleep(5)
        hikari.stdin.write("count\n")
        hikari.stdin.flush()
        hikari_seen = int(hikari.stdout.readline())
        counters = requests.get(control + "/counters", timeout=5).json()
        print(f"{args.events:,} MESSAGE_CREATE in {seconds:.0f} s ({args.events / seconds:,.0f}/s); daemon: {args.compression}; "
              f"connections: zlib-stream {counters['compressedGatewayConnections']}, zstd-stream {counters['zstdGatewayConnections']}")
        # Payload bytes the emulator sent, per kind of connection (hikari's zlib-stream included).
        for kind, sent in sorted(counters["gatewayBytesSent"].items()):
            print(f"  gateway bytes sent over {kind}: {sent:,} ({sent / args.events:,.1f} per event, all connections of that kind)")
        print("| process | RSS before | RSS after | peak (VmHWM) | private before | private after | events seen |")
        print("|---|---|---|---|---|---|---|")
        print(f"| `{' '.join(pathlib.Path(part).name for part in daemon_command)}` (release) | {before['daemon'] / 1024:.1f} MiB | {status_kib(daemon.pid, 'VmRSS') / 1024:.1f} MiB | "
              f"{status_kib(daemon.pid, 'VmHWM') / 1024:.1f} MiB | {before['daemon-anon'] / 1024:.1f} MiB | {anon_kib(daemon.pid) / 1024:.1f} MiB | "
              "all, forwarded to the server |")
        print(f"| hikari 2.7 (CPython 3.11) | {before['hikari'] / 1024:.1f} MiB | {status_kib(hikari.pid, 'VmRSS') / 1024:.1f} MiB | "
              f"{status_kib(hikari.pid, 'VmHWM') / 1024:.1f} MiB | {before['hikari-anon'] / 1024:.1f} MiB | {anon_kib(hikari.pid) / 1024:.1f} MiB | "
              f"{hikari_seen:,} |")
    finally:
        for process in reversed(processes):
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        emulator.terminate()
        emulator.wait(timeout=10)


if __name__ == "__main__":
    main()
