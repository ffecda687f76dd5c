#!/usr/bin/env python3
"""Ten apps on one node against one app with the same traffic (issue 43).

Runs `threaddesk serve --gateway` (SQLite, one node) on the Discord and APNs emulators in two
configurations, interleaved (one, ten, one, ten, … so both see the same machine):

- **one app**: the environment as before several apps (`APP_KEY`, `DISCORD_FORUM_CHANNEL_ID`,
  `APNS_TOPIC`);
- **ten apps**: an `APPS_FILE` of ten apps, each with its own key, forum and APNs topic. The nine
  extra forums are made in the Discord emulator through Discord's own route (`POST
  /guilds/{guild}/channels`, type 15, with the bot's token); the APNs emulator is started with
  every topic (`--topic A --topic B …`).

Every run starts fresh emulators, a fresh store and a fresh server, then sets up the same users:
`--users` sessions spread evenly over the apps (user i belongs to app i mod N), and for the first
`--push-users` of them a push token and a first message (so their forum thread exists; the
outbox drained, every thread found in its app's forum). Then it measures:

1. idle CPU of the server over `--idle-window` s after `--settle` s (users exist, nothing
   happening): user + system time from /proc, as a share of one core (`idle_cpu`,
   Tests/executables.py);
2. polls/s: `wrk` at `GET /v1/messages?limit=20` for `--poll-seconds` s, every user's bearer token
   in turn (a Lua script, as bench/mirror.py does);
3. reply → push: the agent replies `--reply-rounds` times in each push user's thread through the
   Discord emulator's control API, `--reply-rate` replies a second; the latency is from just
   before the reply's POST to the APNs emulator's receive time of the push whose collapse id is
   the reply's id (as bench/day.py measures it). Every push must arrive, once, with its app's topic.

The quotas are switched off (`QUOTA_*=0`): every user polls from 127.0.0.1 far faster than a user
may. Needs wrk (Debian package), curl with HTTP/2 (the APNs emulator's deliveries), requests,
aiohttp (bench/day.py's helpers import it), pytest (Tests/executables.py imports it), and release
builds:

    swift build -c release --product threaddesk
    swift build -c release --product discord-emulator && swift build -c release --product apns-emulator
    python3 bench/apps.py                          # 2 pairs (one, ten, one, ten): about 10 minutes
    python3 bench/apps.py --order abba             # one, ten, ten, one: a drifting machine favours neither
    python3 bench/apps.py --pairs 1 --idle-window 20 --poll-seconds 5 --reply-rounds 1   # a quick try

It prints Markdown (a row per run, then each metric's noise and verdict); copy it into
bench/RESULTS.md with the machine's load. `KEEP_LOGS=1` keeps each run's logs and store.
"""
import argparse
import concurrent.futures
import contextlib
import hashlib
import json
import os
import pathlib
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import requests

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "Tests"))
sys.path.insert(0, str(ROOT / "bench"))
from day import (APPLE_EPOCH, apns_deliveries, free_port, healthy, load_picture, metrics,  # noqa: E402
                 percentile, raise_fd_limit, readline_within, wait_for)
from executables import cpu_seconds, idle_cpu  # noqa: E402

# Set per app in APPS_FILE; the server refuses them in the environment beside it.
PER_APP_VARIABLES = ["APP_KEY", "DISCORD_FORUM_CHANNEL_ID", "DISCORD_DEFAULT_TAG_ID", "IDENTITY_SECRET", "LEGACY_API_KEY",
                     "SUPPORT_HOURS", "AWAY_MESSAGE", "DISCORD_FAQ_CHANNEL_ID"]
CONFIGURATIONS = {"one app": 1, "ten apps": 10}


def log(text: str) -> None:
    print(f"<!-- {time.strftime('%H:%M:%S')} {text} -->", file=sys.stderr, flush=True)


def quota_variables() -> list[str]:
    """Every QUOTA_* limit the server reads (its own list), to switch them all off."""
    source = (ROOT / "Sources/ThreadDeskServer/Limits/QuotaSettings.swift").read_text()
    names = sorted(set(re.findall(r'"(QUOTA_[A-Z0-9_]+)"', source)))
    if len(names) < 10:
        raise SystemExit(f"found only {names} in QuotaSettings.swift: where did the quota variables go?")
    return names


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip()


class MachineWatch:
    """What the whole machine did over a stretch: every core's busy share (/proc/stat) and the
    processes that used the most CPU meanwhile (/proc/PID/stat), ours and others'."""

    def __init__(self):
        self.cores, self.processes, self.started = self.cpu_ticks(), self.process_ticks(), time.monotonic()

    @staticmethod
    def cpu_ticks() -> tuple[int, int]:
        fields = [int(f) for f in pathlib.Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        idle = fields[3] + fields[4]  # idle + iowait
        return sum(fields) - idle, sum(fields)

    @staticmethod
    def process_ticks() -> dict:
        found = {}
        for entry in pathlib.Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    head, tail = (entry / "stat").read_text().rsplit(")", 1)
                except OSError:
                    continue
                fields = tail.split()
                found[int(entry.name)] = (head.split("(", 1)[1], int(fields[11]) + int(fields[12]))
        return found

    def end(self) -> dict:
        busy, total = self.cpu_ticks()
        seconds = time.monotonic() - self.started
        used = {}
        for pid, (name, ticks) in self.process_ticks().items():
            delta = ticks - self.processes.get(pid, (name, 0))[1]
            if delta > 0:
                used[name] = used.get(name, 0) + delta
        tick = os.sysconf("SC_CLK_TCK")
        top = sorted(used.items(), key=lambda item: -item[1])[:5]
        machine = (busy - self.cores[0]) / max(1, total - self.cores[1]) * 100 * (os.cpu_count() or 1)
        # Processes that ended inside the stretch (a compiler's, wrk) are in the machine's figure only.
        gone = max(0.0, machine - sum(used.values()) / tick / seconds * 100)
        return {"machine busy %": machine,
                "busiest": ", ".join(f"{name} {ticks / tick / seconds * 100:.0f} %" for name, ticks in top)
                + f"; processes gone by the end {gone:.0f} %"}


# ---------------------------------------------------------------- processes

@contextlib.contextmanager
def emulator(executable: pathlib.Path, log_path: pathlib.Path, *arguments: str):
    """One of our emulators on a free port; yields the JSON line it prints when ready (30 s at most)."""
    with open(log_path, "w") as log_file:
        process = subprocess.Popen([str(executable), "--port", "0", *arguments], stdout=subprocess.PIPE, stderr=log_file, text=True)
        try:
            yield json.loads(readline_within(process, 30, executable.name))
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


@contextlib.contextmanager
def server(binary: pathlib.Path, environment: dict, work: pathlib.Path):
    """`threaddesk serve --gateway`; yields (process, base URL) once it answers /health (60 s at most)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    hard = raise_fd_limit()
    log_path = work / "server.log"
    with open(log_path, "w") as log_file:
        process = subprocess.Popen(
            [str(binary), "serve", "--gateway", "--env-file", "/nonexistent"], env={**environment, "PORT": str(port)},
            stdout=log_file, stderr=subprocess.STDOUT, cwd=work,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard)))
        try:
            try:
                wait_for("the server to answer /health", lambda: healthy(base, process), 60)
            except SystemExit:
                print(log_path.read_text(errors="replace")[-4000:], file=sys.stderr)
                raise
            yield process, base
            if process.poll() is not None:
                print(log_path.read_text(errors="replace")[-4000:], file=sys.stderr)
                raise SystemExit(f"the server exited during the run ({process.returncode})")
        finally:
            if process.poll() is None:
                process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def create_forum(discord: dict, name: str) -> str:
    """A forum made as an admin's bot makes one: Discord's `POST /guilds/{guild}/channels`."""
    answer = requests.post(f"{discord['restURL']}/guilds/{discord['guildID']}/channels", json={"name": name, "type": 15},
                           headers={"Authorization": f"Bot {discord['botToken']}"}, timeout=10)
    if answer.status_code != 201:
        raise SystemExit(f"creating forum {name}: {answer.status_code} {answer.text[:300]}")
    return answer.json()["id"]


# ---------------------------------------------------------------- one run

def run_once(configuration: str, args, number: int) -> dict:
    count = CONFIGURATIONS[configuration]
    result = {"configuration": configuration, "run": number, "load before": load_picture()}
    with contextlib.ExitStack() as stack:
        work = pathlib.Path(tempfile.mkdtemp(prefix="threaddesk-apps-bench-"))
        if os.environ.get("KEEP_LOGS"):
            log(f"logs kept in {work}")
        else:
            stack.callback(shutil.rmtree, work, True)
        discord = stack.enter_context(emulator(
            args.discord_emulator, work / "discord-emulator.log", "--window-scale", str(args.window_scale), "--message-post-limit", "1000"))
        forums = [discord["forumChannelID"]] + [create_forum(discord, f"bench-forum-{i:02d}") for i in range(1, count)]
        topics = [f"com.example.bench.app{i:02d}" for i in range(count)] if count > 1 else []
        apns = stack.enter_context(emulator(
            args.apns_emulator, work / "apns-emulator.log", "--directory", str(work), *[a for t in topics for a in ("--topic", t)]))
        if count == 1:
            topics = [apns["topic"]]
        elif apns["topic"] != topics[0]:
            raise SystemExit(f"the APNs emulator reports topic {apns['topic']}, not {topics[0]}")
        apps = [{"id": "default" if i == 0 else f"app-{i:02d}", "name": f"Bench app {i:02d}",
                 "appKey": f"bench-app-key-{i:02d}-{uuid.uuid4().hex}", "forumChannelID": forums[i],
                 "apns": {"topic": topics[i]}} for i in range(count)]

        environment = {name: value for name, value in os.environ.items()
                       if name not in PER_APP_VARIABLES + ["APPS_FILE", "GATEWAY_SECRET", "PORT"]}
        environment.update({
            "DISCORD_TOKEN": discord["botToken"], "DISCORD_API_URL": discord["restURL"], "DISCORD_GUILD_ID": discord["guildID"],
            "STORE_URL": f"sqlite://{work}/threaddesk.sqlite", "HOST": "127.0.0.1", "LOG_LEVEL": args.log_level,
            "APNS_KEY_ID": apns["keyID"], "APNS_TEAM_ID": apns["teamID"], "APNS_TOPIC": topics[0],
            "APNS_PRIVATE_KEY_PATH": apns["privateKeyPath"], "APNS_URL": apns["url"],
            "APNS_CA_FILE": apns["caCertificatePath"], "APNS_ENVIRONMENT": "development",
            **{name: "0" for name in quota_variables()},
        })
        if count == 1:
            environment.update({"APP_KEY": apps[0]["appKey"], "DISCORD_FORUM_CHANNEL_ID": forums[0]})
        else:
            apps_file = work / "apps.json"
            apps_file.write_text(json.dumps({"apps": apps}, indent=2))
            environment["APPS_FILE"] = str(apps_file)
        process, base = stack.enter_context(server(args.binary, environment, work))
        wait_for("the gateway's first reconciliation", lambda: metrics(base).get("threaddesk_catch_ups_total", 0) >= 1, 120)

        users = setup_users(args, base, discord["controlURL"], apps)
        log(f"{configuration} run {number}: {len(users)} users set up; settling {args.settle:g} s")
        time.sleep(args.settle)

        log(f"{configuration} run {number}: idle CPU over {args.idle_window:g} s")
        watch = MachineWatch()
        result["idle CPU %"] = idle_cpu({"server": process.pid}, args.idle_window)["server"] * 100
        result["machine during idle"] = watch.end()

        log(f"{configuration} run {number}: wrk polls for {args.poll_seconds:g} s")
        watch = MachineWatch()
        result.update(polls(args, base, users, work, process.pid))
        result["machine during polls"] = watch.end()
        time.sleep(args.pause)

        log(f"{configuration} run {number}: replies → pushes")
        counters_before, metrics_before = requests.get(discord["controlURL"] + "/counters", timeout=10).json(), metrics(base)
        result.update(replies_to_pushes(args, discord["controlURL"], apns, users))
        counters_after, metrics_after = requests.get(discord["controlURL"] + "/counters", timeout=10).json(), metrics(base)
        result["during the replies"] = {
            "Discord 429s (emulator)": counters_after["rateLimited"] - counters_before["rateLimited"],
            "Discord calls (emulator)": sum(counters_after["requestsByRoute"].values()) - sum(counters_before["requestsByRoute"].values()),
            **{name: value - metrics_before.get(name, 0.0) for name, value in metrics_after.items()
               if isinstance(value, float) and value != metrics_before.get(name, 0.0)
               and name.startswith(("threaddesk_discord_requests_total", "threaddesk_discord_rate_limited_total",
                                    "threaddesk_pushes_total", "threaddesk_catch_ups_total", "threaddesk_gateway_events_skipped_total"))},
        }
        if process.poll() is not None:
            raise SystemExit(f"the server exited during the run ({process.returncode})")
        result["server log (warning and above)"] = notable_lines(work / "server.log")
    result["load after"] = load_picture()
    return result


def setup_users(args, base: str, control: str, apps: list) -> list:
    """Sessions (user i in app i mod N), push tokens and first messages for the first `--push-users`."""
    session = requests.Session()
    adapter = requests.adapters.HTTPAdapter(pool_connections=16, pool_maxsize=16)
    session.mount("http://", adapter)

    def open_session(i: int) -> dict:
        app = apps[i % len(apps)]
        answer = session.post(base + "/v1/session", json={}, headers={"X-App-Key": app["appKey"]}, timeout=30)
        if answer.status_code != 201:
            raise SystemExit(f"session {i}: {answer.status_code} {answer.text[:200]}")
        body = answer.json()
        return {"index": i, "app": app, "id": body["userId"], "token": body["token"], "label": f"bench-user-{i}",
                "push": i < args.push_users}

    def first_message(user: dict) -> None:
        headers = {"Authorization": f"Bearer {user['token']}"}
        push = session.put(base + "/v1/push-token", json={"token": hashlib.sha256(user["label"].encode()).hexdigest(),
                                                          "environment": "development"}, headers=headers, timeout=30)
        if push.status_code != 204:
            raise SystemExit(f"push token of {user['label']}: {push.status_code} {push.text[:200]}")
        for _ in range(6):
            sent = session.post(base + "/v1/messages", json={"content": f"{user['label']} asks: the sync fails since the update."},
                                headers={**headers, "Idempotency-Key": f"setup-{user['label']}"}, timeout=30)
            if sent.status_code == 201:
                return
            time.sleep(float(sent.headers.get("Retry-After", "2")))
        raise SystemExit(f"first message of {user['label']}: {sent.status_code} {sent.text[:200]}")

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        users = list(pool.map(open_session, range(args.users)))
        list(pool.map(first_message, [u for u in users if u["push"]]))
    # The outbox starts the threads at Discord's pace; every one must exist, in its app's forum.
    deadline = time.monotonic() + 180
    while True:
        depth = metrics(base).get("threaddesk_outbox_depth")
        threads = {t["name"].split(" ")[0]: t for t in requests.get(control + "/threads", timeout=10).json()}
        missing = [u["label"] for u in users if u["push"] and u["label"] not in threads]
        if depth == 0 and not missing:
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"setup: outbox depth {depth}, {len(missing)} threads missing after 180 s (e.g. {missing[:3]})")
        time.sleep(0.5)
    for user in users:
        if user["push"]:
            thread = threads[user["label"]]
            if thread["parentID"] != user["app"]["forumChannelID"]:
                raise SystemExit(f"{user['label']} of {user['app']['id']}: thread in forum {thread['parentID']}, "
                                 f"not {user['app']['forumChannelID']}")
            user["thread"] = thread["id"]
    for user in users:  # every user's first read done before anything is measured
        answer = session.get(base + "/v1/messages?limit=20", headers={"Authorization": f"Bearer {user['token']}"}, timeout=30)
        if answer.status_code != 200:
            raise SystemExit(f"first read of {user['label']}: {answer.status_code} {answer.text[:200]}")
    return users


def polls(args, base: str, users: list, work: pathlib.Path, pid: int) -> dict:
    """wrk's polls/s and latency, and the server's own CPU time per poll (what a poll costs, whatever
    share of the cores the machine's other work left the server)."""
    script = work / "polls.lua"
    script.write_text(
        "tokens = {" + ",".join(f'"{u["token"]}"' for u in users) + "}\n"
        "counter = 0\n"
        "request = function()\n"
        "  counter = counter + 1\n"
        "  return wrk.format(\"GET\", \"/v1/messages?limit=20\", {[\"Authorization\"] = \"Bearer \" .. tokens[(counter % #tokens) + 1]})\n"
        "end\n")
    cpu_before, started = cpu_seconds(pid), time.monotonic()
    answer = subprocess.run(
        ["wrk", f"-t{args.wrk_threads}", f"-c{args.wrk_connections}", f"-d{args.poll_seconds:g}s", "--latency", "-s", str(script), base],
        capture_output=True, text=True, check=True, timeout=args.poll_seconds + 60)
    cpu, seconds = cpu_seconds(pid) - cpu_before, time.monotonic() - started
    output = answer.stdout

    def ms(percent: str) -> float:
        found = re.search(rf"\s{percent}%\s+([\d.]+)(us|ms|s)\b", output)
        value, unit = float(found.group(1)), found.group(2)
        return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value

    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    errors = re.search(r"Socket errors: (.*)", output)
    if non_2xx or errors:
        raise SystemExit(f"wrk saw failures:\n{output}")
    count = int(re.search(r"(\d+) requests in", output).group(1))
    return {"polls": count, "polls/s": float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)),
            "poll p50 ms": ms("50"), "poll p99 ms": ms("99"), "server CPU during polls %": cpu / seconds * 100,
            "server CPU µs per poll": cpu / count * 1e6}


def replies_to_pushes(args, control: str, apns: dict, users: list) -> dict:
    pushed = [u for u in users if u["push"]]
    session = requests.Session()
    replies = []
    started = time.monotonic()
    for k in range(args.reply_rounds * len(pushed)):
        user = pushed[k % len(pushed)]
        time.sleep(max(0.0, started + k / args.reply_rate - time.monotonic()))
        sent = time.time()
        answer = session.post(f"{control}/threads/{user['thread']}/replies", json={"content": f"Reply {k}: try signing out and in."},
                              timeout=10)
        if answer.status_code != 200:
            raise SystemExit(f"reply {k}: {answer.status_code} {answer.text[:200]}")
        replies.append({"id": answer.json()["id"], "sent": sent, "topic": user["app"]["apns"]["topic"], "k": k,
                        "app": user["app"]["id"], "user": user["label"]})
    wanted = {r["id"] for r in replies}
    deadline = time.monotonic() + 60
    while True:
        deliveries = [d for d in apns_deliveries(apns) if d.get("collapseID") in wanted]
        if {d["collapseID"] for d in deliveries} == wanted:
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"{len(wanted - {d['collapseID'] for d in deliveries})} of {len(wanted)} pushes did not reach "
                             "the APNs emulator within 60 s of the last reply")
        time.sleep(1)
    time.sleep(2)  # a push sent twice would come now
    deliveries = [d for d in apns_deliveries(apns) if d.get("collapseID") in wanted]
    by_reply = {}
    for delivery in deliveries:
        by_reply.setdefault(delivery["collapseID"], []).append(delivery)
    wrong_topic = sum(1 for r in replies for d in by_reply[r["id"]] if d["topic"] != r["topic"])
    if wrong_topic:
        raise SystemExit(f"{wrong_topic} pushes carried another app's topic")
    for r in replies:
        r["ms"] = (min(d["receivedAt"] for d in by_reply[r["id"]]) + APPLE_EPOCH - r["sent"]) * 1000
    delays = sorted(r["ms"] for r in replies)
    first = replies[0]["sent"]
    slowest = sorted(replies, key=lambda r: -r["ms"])[:5]
    return {"replies": len(replies), "pushes twice": sum(1 for v in by_reply.values() if len(v) > 1),
            "topics": len({d["topic"] for d in deliveries}),
            "push p50 ms": statistics.median(delays), "push p99 ms": percentile(delays, 0.99), "push max ms": delays[-1],
            "pushes over 100 ms": sum(1 for d in delays if d > 100),
            "slowest pushes": [f"reply {r['k']} ({r['app']}, {r['user']}) at +{r['sent'] - first:.1f} s: {r['ms']:.0f} ms" for r in slowest]}


def notable_lines(path: pathlib.Path) -> dict:
    """The server log's warnings and errors, numbers blanked, with how often each came."""
    text = path.read_text(errors="replace") if path.exists() else ""
    found = {}
    for line in text.splitlines():
        if re.search(r"warning|error|critical", line, re.IGNORECASE):
            key = re.sub(r"[0-9]{3,}", "N", line)[:200]
            found[key] = found.get(key, 0) + 1
    return found


# ---------------------------------------------------------------- the report

# (key, label, digits, whether more is better)
METRICS = [("idle CPU %", "idle CPU, % of a core", 3, False), ("polls/s", "polls/s", 0, True),
           ("server CPU µs per poll", "server CPU per poll, µs", 0, False), ("poll p99 ms", "poll p99 ms (wrk)", 2, False), ("push p50 ms", "reply → push p50 ms", 1, False),
           ("push p99 ms", "reply → push p99 ms", 1, False), ("push max ms", "reply → push max ms", 1, False)]


def verdict_of(results: list, key: str, more_is_better: bool) -> str:
    one = [r[key] for r in results if r["configuration"] == "one app"]
    ten = [r[key] for r in results if r["configuration"] == "ten apps"]
    noise = max(max(v) - min(v) for v in (one, ten))
    difference = statistics.fmean(ten) - statistics.fmean(one)
    if abs(difference) <= noise:
        return "within noise"
    return "better" if (difference > 0) == more_is_better else "worse"


def report(args, results: list, uptime_start: str, uptime_end: str) -> None:
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    built = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(os.path.getmtime(args.binary)))
    order = ", ".join(f"{r['configuration']} {r['run']}" for r in results)
    print(f"HEAD `{commit}` (working tree) at run time; `{args.binary}` built {built}; {os.cpu_count()} cores shared with wrk, "
          f"the emulators and this script. {args.users} users ({args.push_users} with a push token and a thread), "
          f"{args.settle:g} s settle, {args.idle_window:g} s idle window, wrk {args.wrk_threads} threads × "
          f"{args.wrk_connections} connections for {args.poll_seconds:g} s, {args.reply_rounds} × {args.push_users} replies at "
          f"{args.reply_rate:g}/s; order {order}.\n")
    print(f"- `uptime` at the start: {uptime_start}\n- `uptime` at the end: {uptime_end}\n")
    print("| configuration | run | idle CPU (% of a core) | polls/s | server CPU during polls; per poll | poll p50 / p99 ms | "
          "reply → push p50 / p99 / max ms | pushes | whole machine busy during idle / polls (% of a core, 200 = both) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['configuration']} | {r['run']} | {r['idle CPU %']:.3f} % | {r['polls/s']:,.0f} | "
              f"{r['server CPU during polls %']:.0f} %; {r['server CPU µs per poll']:.0f} µs | "
              f"{r['poll p50 ms']:.2f} / {r['poll p99 ms']:.2f} | {r['push p50 ms']:.1f} / {r['push p99 ms']:.1f} / "
              f"{r['push max ms']:.1f} | {r['replies']} ({r['topics']} topics, {r['pushes twice']} twice) | "
              f"{r['machine during idle']['machine busy %']:.0f} % / {r['machine during polls']['machine busy %']:.0f} % |")
    print("\nBusiest processes (share of a core) while the server idled, and during wrk:\n")
    for r in results:
        print(f"- {r['configuration']} run {r['run']}: idle: {r['machine during idle']['busiest']}; "
              f"polls: {r['machine during polls']['busiest']}")
    for r in results:
        if r["pushes over 100 ms"]:
            print(f"{r['configuration']} run {r['run']}: {r['pushes over 100 ms']} of {r['replies']} pushes over 100 ms; slowest: "
                  f"{'; '.join(r['slowest pushes'])}; during the replies: {json.dumps(r['during the replies'])}\n")
    print("\n| metric | one app (runs; spread) | ten apps (runs; spread) | ten − one (means) | noise | ten apps against one |")
    print("|---|---|---|---|---|---|")
    for key, label, digits, more_is_better in METRICS:
        one = [r[key] for r in results if r["configuration"] == "one app"]
        ten = [r[key] for r in results if r["configuration"] == "ten apps"]
        several = len(one) > 1 and len(ten) > 1
        noise = max(max(v) - min(v) for v in (one, ten)) if several else float("nan")
        difference = statistics.fmean(ten) - statistics.fmean(one)
        verdict = {"within noise": "within noise", "better": "better, beyond noise", "worse": "**worse, beyond noise**"}[
            verdict_of(results, key, more_is_better)] if several else "– (one run each: no noise figure)"

        def shown(values):
            spread = f"; {max(values) - min(values):.{digits}f}" if len(values) > 1 else ""
            return " / ".join(f"{v:.{digits}f}" for v in values) + spread
        relative = f" ({difference / statistics.fmean(one) * 100:+.0f} %)" if statistics.fmean(one) else ""
        noise_shown = f"{noise:.{digits}f}" if several else "–"
        print(f"| {label} | {shown(one)} | {shown(ten)} | {difference:+.{digits}f}{relative} | {noise_shown} | {verdict} |")
    print("\nNoise: the larger of the two spreads (max − min over the runs of one configuration); within noise when the "
          "difference of the means is no larger.\n")
    if len({r["run"] for r in results}) > 1:
        worse = [label for key, label, _, more_is_better in METRICS if verdict_of(results, key, more_is_better) == "worse"]
        print("Verdict: " + (f"ten apps cost more than one beyond noise in: {', '.join(worse)}." if worse else
                             "ten apps cost no more than one app: no figure is worse beyond noise.") + "\n")
    for r in results:
        print(f"<!-- {r['configuration']} run {r['run']}: {json.dumps({k: v for k, v in r.items() if k not in ('configuration', 'run')})} -->")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", type=pathlib.Path, default=ROOT / ".build/release/threaddesk")
    parser.add_argument("--discord-emulator", type=pathlib.Path, default=ROOT / ".build/release/discord-emulator")
    parser.add_argument("--apns-emulator", type=pathlib.Path, default=ROOT / ".build/release/apns-emulator")
    parser.add_argument("--pairs", type=int, default=2, help="runs of each configuration, interleaved (one, ten, one, ten, …)")
    parser.add_argument("--order", choices=["abab", "abba"], default="abab",
                        help="abba: every second pair the other way round (one, ten, ten, one, …), so a machine that "
                             "drifts slower or faster during the runs does not favour one configuration")
    parser.add_argument("--users", type=int, default=200, help="users, spread evenly over the apps")
    parser.add_argument("--push-users", type=int, default=100, help="of them, users with a push token and a thread")
    parser.add_argument("--settle", type=float, default=15, help="seconds after the setup before the idle window")
    parser.add_argument("--idle-window", type=float, default=60)
    parser.add_argument("--poll-seconds", type=float, default=20)
    parser.add_argument("--wrk-threads", type=int, default=2)
    parser.add_argument("--wrk-connections", type=int, default=64)
    parser.add_argument("--pause", type=float, default=5, help="seconds after wrk before the replies")
    parser.add_argument("--reply-rounds", type=int, default=3, help="replies per push user")
    parser.add_argument("--reply-rate", type=float, default=10, help="agent replies a second")
    parser.add_argument("--window-scale", type=float, default=0.1, help="the Discord emulator's rate-limit windows (setup speed)")
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args()
    for configuration, count in CONFIGURATIONS.items():
        if args.users % count or args.push_users % count:
            raise SystemExit(f"--users and --push-users must spread evenly over {count} apps")
    for path in (args.binary, args.discord_emulator, args.apns_emulator):
        if not path.exists():
            raise SystemExit(f"{path} is missing: build it first (see the top of this file)")
    if not shutil.which("wrk"):
        raise SystemExit("wrk is missing (apt-get install wrk)")
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(SystemExit("SIGTERM")))

    uptime_start = uptime()
    log(f"start: {uptime_start}")
    results = []
    for pair in range(1, args.pairs + 1):
        order = list(CONFIGURATIONS)
        for configuration in (order[::-1] if args.order == "abba" and pair % 2 == 0 else order):
            result = run_once(configuration, args, pair)
            log(f"{configuration} run {pair}: {json.dumps({k: v for k, v in result.items() if not k.startswith('load')})}")
            results.append(result)
    uptime_end = uptime()
    log(f"end: {uptime_end}")
    report(args, results, uptime_start, uptime_end)


if __name__ == "__main__":
    main()
