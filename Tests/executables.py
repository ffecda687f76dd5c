"""Runs our executables for the Python suites (this folder is on their import path: its conftest.py
puts it there)."""
import contextlib
import json
import os
import pathlib
import socket
import subprocess
import tempfile
import time

import pytest
import requests


@contextlib.contextmanager
def running_emulator(executable: pathlib.Path, *arguments: str):
    """Runs one of our emulator executables; yields the JSON line it prints when it is ready."""
    # Emulators log to stderr: a file, never a pipe nobody drains (a full pipe would block them).
    with tempfile.TemporaryFile(mode="w+") as log:
        process = subprocess.Popen([str(executable), "--port", "0", *arguments], stdout=subprocess.PIPE, stderr=log, text=True)
        try:
            line = process.stdout.readline()
            if not line:
                log.seek(0)
                pytest.fail(f"{executable.name} printed nothing: {log.read()}")
            yield json.loads(line)
        finally:
            process.terminate()
            process.wait(timeout=10)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_healthy(base: str, process: subprocess.Popen, log, timeout: float = 30) -> None:
    """Waits for `base`/health to answer 200; fails the test (with the process's log) if the
    process exits first or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if requests.get(base + "/health", timeout=1).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            log.seek(0)
            pytest.fail(f"{base} did not come up: {log.read()}")
        time.sleep(0.05)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far, from /proc (Linux)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    # After the name: state is field 3, utime and stime fields 14 and 15 (1-based, whole line).
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_cpu(pids: dict, window: float) -> dict:
    """The share of one core each process used over `window` seconds of doing nothing.

    A busy machine can only make a process get less CPU, never more: the share is an upper bound
    on what the process asks for when idle, whatever else runs."""
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    started = time.monotonic()
    time.sleep(window)
    elapsed = time.monotonic() - started
    return {name: (cpu_seconds(pid) - before[name]) / elapsed for name, pid in pids.items()}


@contextlib.contextmanager
def running_idle_deployment(swift_bin: pathlib.Path, workdir: pathlib.Path):
    """Everything on, nothing to do: `threaddesk serve --gateway` with pushes and the assistant
    (drafts, answers while away, translation) configured, and beside it a `threaddesk serve` fed
    by the gateway daemon (`threaddesk-gateway`), all on emulators. Yields the three processes'
    pids by name once all are up."""
    with running_emulator(swift_bin / "discord-emulator") as discord, \
            running_emulator(swift_bin / "apns-emulator", "--directory", str(workdir)) as apns, \
            running_emulator(swift_bin / "assist-emulator") as assist, \
            tempfile.TemporaryFile(mode="w+") as log:
        secret = "idle-test-gateway-secret-of-32-characters"
        common = {
            **os.environ,
            "DISCORD_TOKEN": discord["botToken"], "DISCORD_API_URL": discord["restURL"],
            "DISCORD_GUILD_ID": discord["guildID"], "DISCORD_FORUM_CHANNEL_ID": discord["forumChannelID"],
            "APP_KEY": "idle-test", "GATEWAY_SECRET": secret,
            "APNS_KEY_ID": apns["keyID"], "APNS_TEAM_ID": apns["teamID"], "APNS_TOPIC": apns["topic"],
            "APNS_PRIVATE_KEY_PATH": apns["privateKeyPath"], "APNS_URL": apns["url"],
            "APNS_CA_FILE": apns["caCertificatePath"], "APNS_ENVIRONMENT": "development",
            "ASSIST_URL": assist["baseURL"], "ASSIST_MODEL": assist["model"], "ASSIST_AUTO": "away",
            # The conversations' timers with reminders and auto-close on (support hours too).
            "REMIND_AFTER_MINUTES": "30", "AUTO_CLOSE_DAYS": "7", "SUPPORT_HOURS": "UTC Mon-Fri 09:00-17:00",
        }
        processes = {}
        try:
            bases = {}
            for name, flags in (("serve --gateway", ["--gateway"]), ("serve", [])):
                port = free_port()
                folder = workdir / name.replace(" ", "").replace("-", "")
                folder.mkdir()
                environment = {**common, "PORT": str(port), "STORE_URL": f"sqlite://{folder}/threaddesk.sqlite"}
                processes[name] = subprocess.Popen(
                    [str(swift_bin / "threaddesk"), "serve", *flags, "--env-file", "/nonexistent"],
                    env=environment, stdout=log, stderr=subprocess.STDOUT, cwd=folder)
                bases[name] = f"http://127.0.0.1:{port}"
            for name, base in bases.items():
                wait_until_healthy(base, processes[name], log)
            daemon_environment = {**common, "SERVER_URL": bases["serve"]}
            processes["gateway daemon"] = subprocess.Popen(
                [str(swift_bin / "threaddesk-gateway")], env=daemon_environment, stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
            yield {name: process.pid for name, process in processes.items()}, log
            for name, process in processes.items():
                if process.poll() is not None:
                    log.seek(0)
                    pytest.fail(f"{name} exited: {log.read()}")
        finally:
            for process in processes.values():
                if process.poll() is None:
                    process.terminate()
            for process in processes.values():
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
