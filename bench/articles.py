#!/usr/bin/env python3
"""The help center (issue 61): `GET /v1/articles` pages, searches and 304 revalidations per second
at 1,000 articles, all from memory (no Discord call, no store read but the token's).

1. starts the Discord emulator and posts `--n` articles into its FAQ forum through the control API
   (`POST /_emulator/faq/posts`): questions an app's users ask, a few sentences each, a third
   tagged `billing` or `television`;
2. starts `threaddesk serve` (release build) with `DISCORD_FAQ_CHANNEL_ID`, read quotas off, waits
   until every article is listed, opens one session;
3. measures, `--seconds` each, with `wrk` (`--threads`, `--connections` keep-alive connections):
   - list: every page of the help center by title, `limit=20` (`after` cursors read first), and
     `tag=billing` pages, in turn;
   - search: `--queries` realistic queries (words, typos, a word being typed), `limit=20`;
   - 304: the list pages again, each with the `ETag` its first answer had (`If-None-Match`).
   Requests per second, p50 and p99 latency as wrk measured them; the Discord REST calls the
   emulator counted during the runs (0 expected).

    swift build -c release --scratch-path .build-release --product threaddesk
    swift build -c release --scratch-path .build-release --product discord-emulator
    python3 bench/articles.py

It prints a Markdown table (progress on stderr); copy it into bench/RESULTS.md with the machine.
Every wait is bounded; every process it starts is stopped at the end, on errors too. Needs `wrk`
(Debian: apt-get install wrk) and `requests`.
"""
import argparse
import contextlib
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse

import requests

ROOT = pathlib.Path(__file__).resolve().parent.parent
APP_KEY = "bench-articles-app-key-0123456789"

VERBS = ["connect", "cancel", "restore", "export", "pair", "reset", "update", "share", "delete", "download", "sync", "rename",
         "move", "print", "back up", "unlock", "turn off", "find", "change", "set up"]
OBJECTS = ["my TV", "my subscription", "my purchases", "my lists", "a watch", "my password", "the app", "a list", "my account",
           "episodes offline", "my devices", "a playlist", "subtitles", "my data", "a receipt", "parental controls",
           "notifications", "the widget", "my family plan", "a Chromecast", "my email address", "the dark theme",
           "audio sync", "a refund", "two-factor sign-in", "my language", "the home screen", "a gift card", "my profile",
           "downloads", "the sleep timer", "casting", "a shared list", "the trial", "my billing address", "smart TV pairing",
           "my recommendations", "the watch history", "captions", "my region", "a coupon", "the yearly plan", "my phone number",
           "my avatar", "a second screen", "storage", "the beta", "my invoices", "playback quality", "the TV app"]
PLACES = ["Settings › Account", "Settings › Devices", "Settings › Plan", "Settings › Data", "the Library tab", "the Home tab"]
QUERIES = ["cancel subscription", "refund", "tv wont connect", "cant conect my tv", "chromecast", "subtitles", "download offline",
           "parental controls", "delete account", "forgot password", "reset password", "audio out of sync", "casting",
           "widget", "pairing", "restore purchases", "export my data", "family plan", "change email", "gift card", "invoice",
           "two factor", "dark theme", "sleep timer", "how do i share a li", "yearly plan price", "update the app", "watch history"]


def log(text: str) -> None:
    print(f"<!-- {text} -->", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(process: subprocess.Popen, grace: float = 15) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def articles(n: int):
    """`n` (title, answer, tags): distinct questions, answers of a few sentences, a third tagged."""
    for index in range(n):
        verb, thing = VERBS[index % len(VERBS)], OBJECTS[(index // len(VERBS)) % len(OBJECTS)]
        title = f"How do I {verb} {thing}?" + ("" if index < len(VERBS) * len(OBJECTS) else f" ({index})")
        place = PLACES[index % len(PLACES)]
        answer = (f"Open {place} and choose **{verb.title()}**. If {thing} does not show there, update the app first, "
                  f"then sign out and in again. Still stuck? Write to us from the app and say which device you use.\n"
                  f"keywords: {verb}, {thing.replace('my ', '')}")
        tags = ["billing"] if index % 3 == 0 else ["television"] if index % 3 == 1 else []
        yield title, answer, tags


def rest_calls(control: str) -> int:
    counters = requests.get(control + "/counters", timeout=10).json()
    return sum((counters.get("requestsByRoute") or {}).values())


def wrk(base: str, token: str, requests_: list, seconds: int, threads: int, connections: int, folder: pathlib.Path, name: str) -> dict:
    """Runs wrk over `requests_` ((path, etag or None)) in turn; requests/s, p50 and p99 in ms."""
    lines = ["local requests = {"]
    for path, etag in requests_:
        headers = {"Authorization": f"Bearer {token}"}
        if etag:
            headers["If-None-Match"] = etag
        lines.append("  wrk.format('GET', %s, {%s})," % (json.dumps(path), ", ".join(f"[{json.dumps(k)}] = {json.dumps(v)}" for k, v in headers.items())))
    # No `response` callback: it would cost a Lua call per answer; wrk counts what is not 2xx or 3xx.
    lines += ["}", "local i = 0", "request = function()", "  i = i % #requests + 1", "  return requests[i]", "end"]
    script = folder / f"{name}.lua"
    script.write_text("\n".join(lines))
    out = subprocess.run(["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", str(script), base],
                         capture_output=True, text=True, timeout=seconds + 60)
    if out.returncode != 0:
        raise SystemExit(f"wrk failed: {out.stderr[:500]}")
    text = out.stdout
    rate = float(re.search(r"Requests/sec:\s+([0-9.]+)", text).group(1))

    def percentile(label: str) -> float:
        match = re.search(rf"\s{label}%\s+([0-9.]+)(us|ms|s)", text)
        value, unit = float(match.group(1)), match.group(2)
        return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value

    errors = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    socket_errors = re.search(r"Socket errors: (.*)", text)
    return {"rate": rate, "p50": percentile("50"), "p99": percentile("99"),
            "errors": int(errors.group(1)) if errors else 0, "socket": socket_errors.group(1) if socket_errors else ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="articles in the FAQ forum (default 1000)")
    parser.add_argument("--server", default=str(ROOT / ".build-release/release/threaddesk"))
    parser.add_argument("--emulator", default=str(ROOT / ".build-release/release/discord-emulator"))
    parser.add_argument("--seconds", type=int, default=10, help="seconds per measurement (default 10)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--connections", type=int, default=8)
    args = parser.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("wrk is not installed (Debian: apt-get install wrk)")

    folder = pathlib.Path(tempfile.mkdtemp(prefix="threaddesk-articles-bench-"))
    with contextlib.ExitStack() as stack:
        emulator = subprocess.Popen([args.emulator, "--port", "0"], stdout=subprocess.PIPE, stderr=open(folder / "emulator.log", "w"), text=True)
        stack.callback(stop, emulator)
        endpoints = json.loads(emulator.stdout.readline())
        control = endpoints["controlURL"]
        log(f"posting {args.n} articles")
        with requests.Session() as http:
            for index, (title, answer, tags) in enumerate(articles(args.n)):
                answered = http.post(control + "/faq/posts", json={"title": title, "answer": answer, "tags": tags}, timeout=10)
                if answered.status_code != 200:
                    raise SystemExit(f"POST /faq/posts #{index}: {answered.status_code} {answered.text[:200]}")

        port = free_port()
        base = f"http://127.0.0.1:{port}"
        environment = dict(os.environ)
        environment.update({
            "DISCORD_TOKEN": endpoints["botToken"], "DISCORD_API_URL": endpoints["restURL"], "DISCORD_GUILD_ID": endpoints["guildID"],
            "DISCORD_FORUM_CHANNEL_ID": endpoints["forumChannelID"], "DISCORD_FAQ_CHANNEL_ID": endpoints["faqChannelID"],
            "APP_KEY": APP_KEY, "STORE_URL": f"sqlite://{folder}/threaddesk.sqlite", "HOST": "127.0.0.1", "PORT": str(port),
            "LOG_LEVEL": "warning", "QUOTA_SESSIONS_PER_ADDRESS": "0", "QUOTA_READS_PER_USER": "0",
        })
        server = subprocess.Popen([args.server, "serve"], env=environment, stdout=open(folder / "server.log", "w"), stderr=subprocess.STDOUT)
        stack.callback(stop, server)
        deadline = time.monotonic() + 120
        while True:
            if server.poll() is not None:
                raise SystemExit(f"threaddesk serve exited; see {folder / 'server.log'}")
            with contextlib.suppress(requests.RequestException):
                if requests.get(base + "/health", timeout=1).ok:
                    break
            if time.monotonic() > deadline:
                raise SystemExit("the server was not healthy within 120 s")
            time.sleep(0.1)
        session = requests.post(base + "/v1/session", json={}, headers={"X-App-Key": APP_KEY}, timeout=10).json()
        auth = {"Authorization": f"Bearer {session['token']}"}

        # Every article read from the forum (the cold read goes a starter at a time), then each page's cursor and ETag.
        log("waiting for the forum to be read")
        deadline = time.monotonic() + 600
        while True:
            listed, after = 0, None
            while True:
                path = "/v1/articles?limit=100" + (f"&after={after}" if after else "")
                page = requests.get(base + path, headers=auth, timeout=10).json()
                listed += len(page["articles"])
                after = page.get("next")
                if not after:
                    break
            if listed >= args.n:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"only {listed} of {args.n} articles listed after 600 s")
            time.sleep(1)

        def walk(query: str) -> list:
            found, after = [], None
            while True:
                path = f"/v1/articles?limit=20{query}" + (f"&after={after}" if after else "")
                answer = requests.get(base + path, headers=auth, timeout=10)
                found.append((path, answer.headers["ETag"]))
                after = answer.json().get("next")
                if not after:
                    return found

        pages = walk("") + walk("&tag=billing")
        searches = [f"/v1/articles?limit=20&q={urllib.parse.quote(query)}" for query in QUERIES]
        hits = [len(requests.get(base + path, headers=auth, timeout=10).json()["articles"]) for path in searches]
        for path, etag in pages[:3]:
            again = requests.get(base + path, headers={**auth, "If-None-Match": etag}, timeout=10)
            if again.status_code != 304:
                raise SystemExit(f"{path} with its ETag answered {again.status_code}")

        before = rest_calls(control)
        rows = []
        for name, batch in [("list pages (by title, by tag)", [(path, None) for path, _ in pages]),
                            ("searches", [(path, None) for path in searches]),
                            ("304 revalidations", pages)]:
            log(f"measuring {name}")
            rows.append((name, len(batch), wrk(base, session["token"], batch, args.seconds, args.threads, args.connections, folder, name.split()[0])))
        discord = rest_calls(control) - before

    print(f"Help center at {args.n:,} articles: `wrk -t{args.threads} -c{args.connections} -d{args.seconds}s` on loopback, "
          f"release build, SQLite; {len(pages)} pages of 20 ({len(pages) - (args.n + 19) // 20} by tag), {len(searches)} queries "
          f"({sum(hits) / len(hits):.1f} articles on their first page on average); Discord REST calls during the runs: {discord}")
    print()
    print("| requests | distinct URLs | requests/s | p50 (ms) | p99 (ms) | not 200/304 |")
    print("|---|---|---|---|---|---|")
    for name, count, result in rows:
        print(f"| {name} | {count} | {result['rate']:,.0f} | {result['p50']:.2f} | {result['p99']:.2f} | {result['errors']} |")
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
