#!/usr/bin/env python3
"""Crash reports (issue 59): how soon a MetricKit payload is a note in the user's Discord thread,
and how fast frames are symbolicated.

Starts the Discord emulator (Discord's real rate limits) and `threaddesk serve` on loopback
(SQLite, every QUOTA_* off, DSYMS_SECRET set), builds the sample app MyShop the way
Tests/TestSupport/MachOFixture.swift does (`clang -target arm64-apple-ios17.0 -g -c`, then an
LC_UUID put in after the load commands, here in Python), and measures:

1. report → note: from `POST /v1/crashes` sent to the note ("Crash C…") in the user's thread,
   one report at a time (at most one every `--interval` s, round-robin over `--users` users who
   each have a thread already), p50/p99/max over `--reports`, in four runs, each on a fresh
   server and emulator:
     (a) cached: the dSYM uploaded and already read (its file written by this replica, the
         symbolizer's cache holding every offset): no llvm-symbolizer run;
     (b) not cached: `--reports` reports with never-seen offsets (4-aligned, inside MyShop's
         __text, over several dSYM copies that differ only by UUID, each copy's file written
         beforehand by one warm-up report): one llvm-symbolizer run per report;
     (b′) as (b) with a larger dSYM (`--large-functions` generated functions, 7.5 MB by
         default: the symbolizer's cost grows with the dSYM, and MyShop's is 3.4 kB);
     (c) no dSYM (offsets only, the floor).
   The note's time is its snowflake's (the emulator stamps a message's id with the wall clock
   in ms when it takes the post); polling only finds it.
2. llvm-symbolizer alone, as the server runs it (one process per batch of one binary's
   addresses: `--output-style=JSON --obj=FILE --default-arch arm64 0x…`), batches of 1, 10 and
   100 addresses, on both dSYMs: runs/s and frames/s; and the server's end: `--throughput-reports` reports
   through `POST /v1/crashes` at `--concurrency` with a warm cache, reports answered 201 per
   second (nothing polls the emulator meanwhile; by quarter too), then how long the notes took
   to reach Discord.

    swift build -c release --product threaddesk       # one --product a build: SwiftPM builds only the last given
    swift build -c release --product discord-emulator
    python3 bench/crashes.py                  # every part, release build (~9 minutes)
    python3 bench/crashes.py --parts latency --reports 50 --binary .build/debug/threaddesk --emulator .build/debug/discord-emulator

It prints Markdown tables (progress on stderr as <!-- --> lines); copy them into
bench/RESULTS.md with the machine and commit. Every wait is bounded; every process it starts is
stopped at the end, on errors and on Ctrl-C too.
"""
import argparse
import concurrent.futures
import contextlib
import hashlib
import json
import os
import pathlib
import random
import re
import select
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid as uuidlib

import requests

ROOT = pathlib.Path(__file__).resolve().parents[1]
APP_KEY = "bench-app-key"
DSYMS_SECRET = "bench-dsyms-secret-0123456789"
DISCORD_EPOCH_MS = 1_420_070_400_000
DEFAULT_UUID = "6C2F7D3E-9A41-4B1C-8E55-0D3A2B1C4F60"
PARTS = ("latency", "symbolizer", "throughput")

# ---------------------------------------------------------------- the fixture (MachOFixture.swift)

def _fixture_source() -> str:
    """The C source of Tests/TestSupport/MachOFixture.swift (`MachOFixture.source`), read from it so
    the bench builds exactly the tests' sample app (its Swift raw string's indentation removed)."""
    text = (ROOT / "Tests/TestSupport/MachOFixture.swift").read_text()
    match = re.search(r'public static let source = #"""\n(.*?)\n([ ]*)"""#', text, re.S)
    if not match:
        raise SystemExit("crashes.py: MachOFixture.source not found")
    indent = match.group(2)
    return "\n".join(line[len(indent):] if line.startswith(indent) else line.lstrip(" ") for line in match.group(1).split("\n")) + "\n"


# The same symbols as Tests/TestSupport/MachOFixture.swift.
SOURCE = _fixture_source()
SYMBOLS = {
    "checkoutSubmit": "$s6MyShop12CheckoutViewV6submityyF", "checkoutTap": "$s6MyShop12CheckoutViewV9tapButtonyyF",
    "cartTotal": "$s6MyShop4CartV5totalSivg", "appMain": "$s6MyShop0aB3AppV5$mainyyFZ", "receipt_format": "receipt_format",
}
SYSTEM_UUIDS = {
    "libswiftCore.dylib": "0B6E6A8C-3F7D-3A1C-9E2B-5D4C3B2A1908", "UIKitCore": "1D2C3B4A-5E6F-3071-8293-A4B5C6D7E8F9",
    "dyld": "2E3F4A5B-6C7D-3E8F-9A0B-1C2D3E4F5A6B", "libsystem_kernel.dylib": "3F4A5B6C-7D8E-3F9A-0B1C-2D3E4F5A6B7C",
}
LOAD_ADDRESSES = {
    "MyShop": 0x1_0400_0000, "libswiftCore.dylib": 0x1_9A00_0000, "UIKitCore": 0x1_8C00_0000,
    "dyld": 0x1_B100_0000, "libsystem_kernel.dylib": 0x1_E500_0000,
}


def u32(data, at):
    return struct.unpack_from("<I", data, at)[0]


def u64(data, at):
    return struct.unpack_from("<Q", data, at)[0]


def with_uuid(obj: bytes, uuid: str) -> bytes:
    """MachOFixture.withUUID: a 24-byte LC_UUID after the load commands; every file offset past
    them moves by 24 (segments and their sections, relocations, symbol tables, linkedit data)."""
    data = bytearray(obj)
    if len(data) < 32 or u32(data, 0) != 0xFEEDFACF:
        raise SystemExit("the fixture is not a 64-bit little-endian Mach-O")
    raw = bytes.fromhex(uuid.replace("-", ""))
    count, size = u32(data, 16), u32(data, 20)
    boundary, shift = 32 + size, 24

    def bump32(at):
        if u32(data, at) >= boundary:
            struct.pack_into("<I", data, at, u32(data, at) + shift)

    def bump64(at):
        if u64(data, at) >= boundary:
            struct.pack_into("<Q", data, at, u64(data, at) + shift)

    offset = 32
    for _ in range(count):
        command, command_size = u32(data, offset), u32(data, offset + 4)
        if command == 0x19:  # LC_SEGMENT_64: fileoff, then each section's offset and reloff
            bump64(offset + 40)
            for section in range(u32(data, offset + 64)):
                at = offset + 72 + section * 80
                bump32(at + 48)
                bump32(at + 56)
        elif command == 0x2:  # LC_SYMTAB: symoff, stroff
            bump32(offset + 8)
            bump32(offset + 16)
        elif command == 0xB:  # LC_DYSYMTAB
            for field in (32, 40, 48, 56, 64, 72):
                bump32(offset + field)
        elif command in (0x1D, 0x1E, 0x26, 0x29, 0x2B, 0x2E, 0x80000033, 0x80000034):  # linkedit data: dataoff
            bump32(offset + 8)
        offset += command_size
    data[boundary:boundary] = struct.pack("<II", 0x1B, 24) + raw
    struct.pack_into("<II", data, 16, count + 1, size + 24)
    return bytes(data)


class Fixture:
    """MyShop's object (no UUID yet), where its __text is and where each function starts."""

    def __init__(self, obj: bytes, name: str = "MyShop"):
        self.object, self.name = obj, name
        self.text_address, self.text_size = self.text_section(obj)
        self.functions = {key: value for key, value in self.defined_symbols(obj).items()}

    @classmethod
    def build(cls, directory: pathlib.Path, clang: str, text: str = SOURCE, name: str = "MyShop") -> "Fixture":
        source, obj = directory / f"{name}.c", directory / f"{name}.o"
        source.write_text(text)
        subprocess.run([clang, "-target", "arm64-apple-ios17.0", "-g", "-O0", "-fdebug-compilation-dir=/Users/dev/MyShop",
                        "-c", str(source), "-o", str(obj)], check=True, timeout=600)
        return cls(obj.read_bytes(), name)

    @classmethod
    def build_large(cls, directory: pathlib.Path, clang: str, functions: int) -> "Fixture":
        """A bigger app for the symbolizer: `functions` small functions with Swift symbols, 50 a
        file (one compile unit: clang -c makes one; a real dSYM holds one per source file)."""
        lines = []
        for i in range(functions):
            if i % 50 == 0:
                lines.append(f'#line 1 "Module{i // 50}/File{i // 50}.swift"')
            lines.append(f'int f{i}(int *p) __asm__("_$s6MyShop4F{i}V3runyS2iF");')
            lines.append(f"int f{i}(int *p) {{\n    int t = p[{i % 7}];\n    if (t > {i}) return t - {i};\n    return t * {i % 13} + 1;\n}}")
        return cls.build(directory, clang, "\n".join(lines) + "\n", name="Large")

    def aligned_offsets(self, start: int = 0) -> list:
        return list(range(self.text_address + start, self.text_address + self.text_size, 4))

    def describe(self) -> str:
        return f"{len(self.object) + 24:,}-byte file, __text {self.text_size:,} bytes"

    @staticmethod
    def text_section(obj: bytes):
        offset = 32
        for _ in range(u32(obj, 16)):
            if u32(obj, offset) == 0x19:
                for section in range(u32(obj, offset + 64)):
                    at = offset + 72 + section * 80
                    if obj[at:at + 16].rstrip(b"\0") == b"__text":
                        return u64(obj, at + 32), u64(obj, at + 40)
            offset += u32(obj, offset + 4)
        raise SystemExit("no __TEXT,__text in the fixture")

    @staticmethod
    def defined_symbols(obj: bytes) -> dict:
        offset = 32
        for _ in range(u32(obj, 16)):
            if u32(obj, offset) == 0x2:
                symoff, nsyms, stroff = u32(obj, offset + 8), u32(obj, offset + 12), u32(obj, offset + 16)
                names = {}
                for index in range(nsyms):
                    entry = symoff + index * 16
                    if obj[entry + 4] & 0x0E != 0x0E:  # N_SECT
                        continue
                    start = stroff + u32(obj, entry)
                    names[obj[start:obj.index(b"\0", start)].decode()] = u64(obj, entry + 8)
                return {key: names["_" + mangled] for key, mangled in SYMBOLS.items() if "_" + mangled in names}
            offset += u32(obj, offset + 4)
        raise SystemExit("no LC_SYMTAB in the fixture")

    def copy(self, uuid: str) -> bytes:
        return with_uuid(self.object, uuid)

    def write_copy(self, directory: pathlib.Path, uuid: str) -> pathlib.Path:
        path = directory / f"{self.name}-{uuid}.dwarf"
        path.write_bytes(self.copy(uuid))
        return path

    def crash_offsets(self):
        """Three top frames and `main`'s, inside their functions (what a device reports)."""
        f = self.functions
        return [f["checkoutSubmit"] + 0x14, f["checkoutTap"] + 0x10, f["appMain"] + 0x8], f["appMain"] + 0xC


def crash_payload(uuid: str, offsets, main_offset, serial: int) -> bytes:
    """MachOFixture.crashPayload: MyShop's frames on top, then libswiftCore and UIKit, MyShop's
    main when given, dyld's start; a second, waiting thread. `serial` goes into the pid and the
    time stamps, so every report's bytes (its idempotency) differ."""
    metadata = {
        "appVersion": "4.2", "appBuildVersion": "420", "osVersion": "iPhone OS 17.2 (21C62)", "deviceType": "iPhone15,2",
        "platformArchitecture": "arm64e", "bundleIdentifier": "com.example.MyShop", "regionFormat": "US",
        "isTestFlightApp": False, "lowPowerModeEnabled": False, "pid": 1000 + serial,
        "exceptionType": 1, "exceptionCode": 0, "signal": 11,
        "terminationReason": "Namespace SIGNAL, Code 11 Segmentation fault: 11", "virtualMemoryRegionInfo": "0x8 is not in any region.",
    }
    crashed = [("MyShop", uuid, o) for o in offsets]
    crashed += [("libswiftCore.dylib", SYSTEM_UUIDS["libswiftCore.dylib"], 0x3A1C4), ("UIKitCore", SYSTEM_UUIDS["UIKitCore"], 0x10F3A8),
                ("UIKitCore", SYSTEM_UUIDS["UIKitCore"], 0x88D20)]
    if main_offset is not None:
        crashed.append(("MyShop", uuid, main_offset))
    crashed.append(("dyld", SYSTEM_UUIDS["dyld"], 0x5E4C))
    waiting = [("libsystem_kernel.dylib", SYSTEM_UUIDS["libsystem_kernel.dylib"], 0x1A4C),
               ("libsystem_kernel.dylib", SYSTEM_UUIDS["libsystem_kernel.dylib"], 0x5F10)]

    def chain(frames):
        node = None
        for binary, binary_uuid, offset in reversed(frames):
            entry = {"binaryName": binary, "binaryUUID": binary_uuid, "offsetIntoBinaryTextSegment": offset,
                     "address": LOAD_ADDRESSES.get(binary, 0x100000000) + offset, "sampleCount": 1}
            if node is not None:
                entry["subFrames"] = [node]
            node = entry
        return node or {}

    tree = {"callStackPerThread": True, "callStacks": [
        {"threadAttributed": False, "callStackRootFrames": [chain(waiting)]},
        {"threadAttributed": True, "callStackRootFrames": [chain(crashed)]},
    ]}
    minute, second = divmod(serial % 3600, 60)
    document = {
        "crashDiagnostics": [{"version": "1.0.0", "diagnosticMetaData": metadata, "callStackTree": tree}],
        "timeStampBegin": "2024-01-15 10:00:00", "timeStampEnd": f"2024-01-15 10:{minute:02d}:{second:02d}",
    }
    return json.dumps(document, indent=2, sort_keys=True).encode()


# ---------------------------------------------------------------- tools and machine

def find_clang(given):
    if given:
        return given
    for directory in os.environ.get("PATH", "").split(":"):
        if directory and os.access(os.path.join(directory, "swift"), os.X_OK) and os.access(os.path.join(directory, "clang"), os.X_OK):
            return os.path.join(directory, "clang")
    for candidate in ["/opt/swift/usr/bin/clang", shutil.which("clang")]:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise SystemExit("no clang beside swift or on PATH (--clang)")


def find_symbolizer(given):
    """Symbolizer.locate: beside swift on PATH, /opt/swift/usr/bin, then PATH, then /usr/bin."""
    if given:
        return given
    directories = [d for d in os.environ.get("PATH", "").split(":") if d]
    candidates = [d + "/llvm-symbolizer" for d in directories if os.access(d + "/swift", os.X_OK)]
    candidates += ["/opt/swift/usr/bin/llvm-symbolizer"] + [d + "/llvm-symbolizer" for d in directories] + ["/usr/bin/llvm-symbolizer"]
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return candidate
    raise SystemExit("no llvm-symbolizer found (--symbolizer)")


def log(text: str) -> None:
    print(f"<!-- {time.strftime('%H:%M:%S')} {text} -->", file=sys.stderr, flush=True)


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(what: str, check, timeout: float, interval: float = 0.05):
    """Calls `check` until it returns something truthy (returned); SystemExit past `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def quota_variables() -> list:
    """Every QUOTA_* limit the server reads (its own list), to switch them all off."""
    source = (ROOT / "Sources/ThreadDeskServer/Limits/QuotaSettings.swift").read_text()
    names = sorted(set(re.findall(r'"(QUOTA_[A-Z0-9_]+)"', source)))
    if len(names) < 10:
        raise SystemExit(f"found only {names} in QuotaSettings.swift: where did the quota variables go?")
    return names


class MachineWatch:
    """What the machine did over a stretch: its busy share of all cores (/proc/stat) and the
    processes that used the most CPU meanwhile, ours and others'."""

    def __init__(self):
        self.cores, self.processes, self.started = self.cpu_ticks(), self.process_ticks(), time.monotonic()

    @staticmethod
    def cpu_ticks():
        fields = [int(f) for f in pathlib.Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        idle = fields[3] + fields[4]
        return sum(fields) - idle, sum(fields)

    @staticmethod
    def process_ticks() -> dict:
        found = {}
        for entry in pathlib.Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    head, tail = (entry / "stat").read_text().rsplit(")", 1)
                except (OSError, ValueError):
                    continue
                fields = tail.split()
                found[int(entry.name)] = (head.split("(", 1)[1], int(fields[11]) + int(fields[12]))
        return found

    def end(self) -> str:
        busy, total = self.cpu_ticks()
        seconds = max(1e-3, time.monotonic() - self.started)
        used = {}
        for pid, (name, ticks) in self.process_ticks().items():
            delta = ticks - self.processes.get(pid, (name, 0))[1]
            if delta > 0:
                used[name] = used.get(name, 0) + delta
        tick = os.sysconf("SC_CLK_TCK")
        top = sorted(used.items(), key=lambda item: -item[1])[:6]
        machine = (busy - self.cores[0]) / max(1, total - self.cores[1]) * 100 * (os.cpu_count() or 1)
        gone = max(0.0, machine - sum(used.values()) / tick / seconds * 100)
        return (f"machine {machine:.0f} % of one core over {seconds:.0f} s (of {(os.cpu_count() or 1) * 100} %); busiest: "
                + ", ".join(f"{name} {ticks / tick / seconds * 100:.0f} %" for name, ticks in top)
                + f"; processes that ended meanwhile {gone:.0f} %; load average at the end {os.getloadavg()[0]:.2f}")


# ---------------------------------------------------------------- processes

def stop(process: subprocess.Popen, grace: float = 15) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def readline_within(process: subprocess.Popen, timeout: float, what: str) -> str:
    """The first line a process prints, waited for at most `timeout` s."""
    deadline = time.monotonic() + timeout
    line = b""
    fd = process.stdout.fileno()
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or process.poll() is not None:
            raise SystemExit(f"{what} printed no line within {timeout:.0f} s (exit status {process.poll()})")
        ready, _, _ = select.select([fd], [], [], min(left, 0.5))
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                raise SystemExit(f"{what} closed its output without a line")
            line += chunk
    return line.decode().split("\n", 1)[0]


class Deployment:
    """The Discord emulator and `threaddesk serve` on loopback, with fresh data; users with threads."""

    def __init__(self, args, work: pathlib.Path, name: str, stack: contextlib.ExitStack):
        self.args, self.folder = args, work / name
        self.folder.mkdir()
        self.emulator = subprocess.Popen([args.emulator, "--port", "0"], stdout=subprocess.PIPE,
                                         stderr=open(self.folder / "emulator.log", "w"))
        stack.callback(stop, self.emulator)
        self.discord = json.loads(readline_within(self.emulator, 30, "discord-emulator"))
        self.control = self.discord["controlURL"].rstrip("/")
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        environment = dict(os.environ)
        environment.update({name: "0" for name in quota_variables()})
        environment.update({
            "DISCORD_TOKEN": self.discord["botToken"], "DISCORD_API_URL": self.discord["restURL"],
            "DISCORD_GUILD_ID": self.discord["guildID"], "DISCORD_FORUM_CHANNEL_ID": self.discord["forumChannelID"],
            "APP_KEY": APP_KEY, "STORE_URL": f"sqlite://{self.folder}/threaddesk.sqlite", "HOST": "127.0.0.1",
            "PORT": str(port), "LOG_LEVEL": "warning", "DSYMS_SECRET": DSYMS_SECRET, "SYMBOLIZER_PATH": args.symbolizer,
            "DSYM_CACHE_DIR": str(self.folder / "dsyms"), "REQUEST_TIMEOUT_SECONDS": "60",
        })
        self.server = subprocess.Popen([args.binary, "serve"], env=environment, stdout=open(self.folder / "server.log", "w"),
                                       stderr=subprocess.STDOUT)
        stack.callback(stop, self.server)
        self.http = requests.Session()
        wait_for("the server's /health", self.healthy, timeout=60, interval=0.1)
        self.users = []  # (token, thread id)

    def healthy(self) -> bool:
        if self.server.poll() is not None:
            raise SystemExit(f"threaddesk serve exited ({self.server.returncode}); see {self.folder / 'server.log'}")
        try:
            return requests.get(self.base + "/health", timeout=1).ok
        except requests.RequestException:
            return False

    def threads(self) -> list:
        return self.http.get(self.control + "/threads", timeout=10).json()

    def messages(self, thread: str) -> list:
        return self.http.get(f"{self.control}/threads/{thread}/messages", timeout=10).json()

    def counters(self) -> dict:
        return self.http.get(self.control + "/counters", timeout=10).json()

    def add_users(self, count: int) -> None:
        """Users who each said hello, so each has a thread (the notes then post into it)."""
        known = {thread["id"] for thread in self.threads()}
        for index in range(count):
            answer = self.http.post(self.base + "/v1/session", json={}, headers={"X-App-Key": APP_KEY}, timeout=30)
            answer.raise_for_status()
            token = answer.json()["token"]
            self.http.post(self.base + "/v1/messages", json={"content": f"hello from user {index}"}, timeout=30,
                           headers={"Authorization": f"Bearer {token}", "Idempotency-Key": str(uuidlib.uuid4())}).raise_for_status()
            # Discord lets 10 threads start per 10 s in a forum: a user's thread may take that long.
            new = wait_for(f"user {index}'s thread", lambda: [t["id"] for t in self.threads() if t["id"] not in known], timeout=60, interval=0.05)
            known.add(new[0])
            self.users.append((token, new[0]))

    def upload_dsym(self, data: bytes) -> dict:
        answer = self.http.post(self.base + "/internal/dsyms?name=MyShop", data=data, timeout=60,
                                headers={"Authorization": f"Bearer {DSYMS_SECRET}", "Content-Type": "application/octet-stream"})
        if answer.status_code != 201:
            raise SystemExit(f"dSYM upload answered {answer.status_code}: {answer.text[:300]}")
        return answer.json()

    def report(self, session: requests.Session, token: str, payload: bytes) -> requests.Response:
        return session.post(self.base + "/v1/crashes", data=payload, timeout=60, headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json",
            "Idempotency-Key": hashlib.sha256(payload).hexdigest()})

    def notes(self, thread: str) -> list:
        return [m for m in self.messages(thread) if "Crash C" in m.get("content", "")]

    def wait_notes(self, expected: dict, timeout: float) -> None:
        """Until each thread holds its expected number of notes."""
        def done():
            return all(len(self.notes(thread)) >= count for thread, count in expected.items())
        wait_for("the notes in Discord", done, timeout=timeout, interval=0.2)


def snowflake_ms(message_id: str) -> int:
    return (int(message_id) >> 22) + DISCORD_EPOCH_MS


# ---------------------------------------------------------------- 1. report → note

def measure_latency(deployment: Deployment, reports: list, interval: float, note_timeout: float) -> dict:
    """Sends each (user index, payload) one at a time; the time from sending to the note's
    snowflake, and to the 201."""
    session = requests.Session()
    counts = {thread: len(deployment.notes(thread)) for _, thread in deployment.users}
    limited_before = deployment.counters().get("rateLimited", 0)
    watch = MachineWatch()
    to_note, to_answer, seen, symbolicated = [], [], [], 0
    for index, (user, payload) in enumerate(reports):
        token, thread = deployment.users[user]
        started_wall, started = time.time(), time.monotonic()
        answer = deployment.report(session, token, payload)
        to_answer.append(time.monotonic() - started)
        if answer.status_code != 201:
            raise SystemExit(f"report {index} answered {answer.status_code}: {answer.text[:300]}")
        receipt = answer.json()["reports"][0]
        symbolicated += bool(receipt.get("symbolicated"))
        counts[thread] += 1
        notes = wait_for(f"report {index}'s note", lambda: (lambda n: n if len(n) >= counts[thread] else None)(deployment.notes(thread)),
                         timeout=note_timeout, interval=0.005)
        seen.append(time.time() - started_wall)
        note = notes[counts[thread] - 1]
        to_note.append(snowflake_ms(note["id"]) / 1000 - started_wall)
        wait = interval - (time.monotonic() - started)
        if wait > 0:
            time.sleep(wait)
    machine = watch.end()
    return {"note": to_note, "answer": to_answer, "seen": seen, "symbolicated": symbolicated, "machine": machine,
            "rate limited": deployment.counters().get("rateLimited", 0) - limited_before,
            "sample note": note["content"]}


def latency_runs(args, work: pathlib.Path, fixture: Fixture, large) -> list:
    rows = []
    offsets, main_offset = fixture.crash_offsets()
    for run in args.runs:
        with contextlib.ExitStack() as stack:
            log(f"latency ({run}): starting the emulator and the server")
            deployment = Deployment(args, work, f"latency-{run}", stack)
            deployment.add_users(args.users)
            log(f"latency ({run}): {args.users} users with threads")
            serial = iter(range(1, 10**9))
            warmups, reports = [], []
            if run in ("cached", "none"):
                if run == "cached":
                    deployment.upload_dsym(fixture.copy(DEFAULT_UUID))
                    warmups = [(0, crash_payload(DEFAULT_UUID, offsets, main_offset, next(serial)))]
                reports = [(i % args.users, crash_payload(DEFAULT_UUID, offsets, main_offset, next(serial))) for i in range(args.reports)]
            else:
                # Offsets never asked before: 4 app frames a report (3 on top, `main`), 4-aligned inside
                # __text; the first offset of each copy is its warm-up's (which writes the copy's file
                # on this replica, as the first report of a build does).
                binary = large if run == "uncached-large" else fixture
                pool_all = binary.aligned_offsets(start=4)
                per_copy = min(len(pool_all) // 4, args.reports)
                copies = -(-args.reports // per_copy)
                randomness = random.Random(59)
                for copy in range(copies):
                    uuid = str(uuidlib.UUID(int=randomness.getrandbits(128))).upper()
                    deployment.upload_dsym(binary.copy(uuid))
                    warmups.append((copy % args.users, crash_payload(uuid, [binary.text_address], None, next(serial))))
                    pool = randomness.sample(pool_all, per_copy * 4)
                    for start in range(0, per_copy * 4, 4):
                        if len(reports) < args.reports:
                            frames = pool[start:start + 4]
                            reports.append((len(reports) % args.users, crash_payload(uuid, frames[:3], frames[3], next(serial))))
                log(f"latency ({run}): {copies} dSYM copies of {binary.describe()} uploaded, up to {per_copy} reports of fresh offsets each")
            if warmups:
                expected = {}
                for user, payload in warmups:
                    token, thread = deployment.users[user]
                    answer = deployment.report(deployment.http, token, payload)
                    if answer.status_code != 201:
                        raise SystemExit(f"warm-up report answered {answer.status_code}: {answer.text[:300]}")
                    expected[thread] = expected.get(thread, 0) + 1
                deployment.wait_notes(expected, timeout=120)
            # Discord's windows (5 posts per channel per 5 s, 10 threads per 10 s) start again.
            time.sleep(args.settle)
            log(f"latency ({run}): {len(reports)} reports, one at a time, at most one every {args.interval} s")
            result = measure_latency(deployment, reports, args.interval, args.note_timeout)
            result["run"] = run
            rows.append(result)
            lag = statistics.median(b - a for a, b in zip(result["note"], result["seen"])) * 1000
            log(f"latency ({run}): the poll saw a note {lag:.1f} ms (median) after its snowflake; {result['machine']}")
    return rows


def latency_table(rows: list, args) -> str:
    names = {"cached": "(a) dSYM uploaded, cached (file written, every offset known)",
             "uncached": "(b) dSYM uploaded, offsets never seen: llvm-symbolizer runs per report",
             "uncached-large": "(b′) as (b), the larger binary's dSYM",
             "none": "(c) no dSYM (offsets only): the floor"}
    lines = [f"| run | reports | symbolicated | POST → 201 p50 / p99 ms | POST sent → note in Discord p50 | p99 | max | mean | 429s from Discord |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        ms = [v * 1000 for v in row["note"]]
        answer = [v * 1000 for v in row["answer"]]
        lines.append(f"| {names[row['run']]} | {len(ms)} | {row['symbolicated']} | {percentile(answer, 0.5):.1f} / {percentile(answer, 0.99):.1f} "
                     f"| **{percentile(ms, 0.5):.1f} ms** | {percentile(ms, 0.99):.1f} ms | {max(ms):.1f} ms | {statistics.mean(ms):.1f} ms "
                     f"| {row['rate limited']} |")
    return "\n".join(lines)


# ---------------------------------------------------------------- 2. throughput

def symbolizer_throughput(args, work: pathlib.Path, binaries: list) -> str:
    randomness = random.Random(7)
    lines = ["| binary | batch (addresses a run) | runs | ms a run p50 / p99 | runs/s | frames/s |", "|---|---|---|---|---|---|"]
    for binary, label in binaries:
        path = binary.write_copy(work, DEFAULT_UUID)
        aligned = binary.aligned_offsets()
        for batch in args.batches:
            durations = []
            started = time.monotonic()
            while (time.monotonic() - started < args.symbolizer_seconds or len(durations) < 10) and len(durations) < 100_000:
                addresses = [hex(randomness.choice(aligned)) for _ in range(batch)]
                t0 = time.monotonic()
                out = subprocess.run([args.symbolizer, "--output-style=JSON", f"--obj={path}", "--default-arch", "arm64", *addresses],
                                     stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
                durations.append(time.monotonic() - t0)
                if out.returncode != 0:
                    raise SystemExit(f"llvm-symbolizer failed: {out.stderr[:300]!r}")
                answers = json.loads(out.stdout)
                if len(answers) != batch or not all(a["Symbol"][0].get("FunctionName") for a in answers):
                    raise SystemExit(f"llvm-symbolizer did not name every address: {out.stdout[:300]!r}")
            elapsed = sum(durations)
            ms = [d * 1000 for d in durations]
            lines.append(f"| {label} | {batch} | {len(durations)} | {percentile(ms, 0.5):.1f} / {percentile(ms, 0.99):.1f} "
                         f"| {len(durations) / elapsed:.1f} | **{len(durations) * batch / elapsed:,.0f}** |")
            log(f"llvm-symbolizer on {label}, batches of {batch}: {len(durations)} runs")
    return "\n".join(lines)


def quarters(finished: list, started: float) -> str:
    """Reports/s over each quarter of the answers (a slowdown as the store grows shows here)."""
    finished = sorted(finished)
    if len(finished) < 8:
        return "too few"
    rates, previous = [], started
    for index in range(1, 5):
        end = finished[len(finished) * index // 4 - 1]
        rates.append(f"{(len(finished) // 4) / max(1e-6, end - previous):.0f}")
        previous = end
    return " / ".join(rates)


def server_throughput(args, work: pathlib.Path, fixture: Fixture) -> str:
    offsets, main_offset = fixture.crash_offsets()
    with contextlib.ExitStack() as stack:
        log("throughput: starting the emulator and the server")
        deployment = Deployment(args, work, "throughput", stack)
        deployment.add_users(args.users)
        deployment.upload_dsym(fixture.copy(DEFAULT_UUID))
        token, thread = deployment.users[0]
        deployment.report(deployment.http, token, crash_payload(DEFAULT_UUID, offsets, main_offset, 0)).raise_for_status()
        deployment.wait_notes({thread: 1}, timeout=60)
        time.sleep(args.settle)
        payloads = [(i % args.users, crash_payload(DEFAULT_UUID, offsets, main_offset, i + 1)) for i in range(args.throughput_reports)]
        local = threading.local()
        statuses, finished, expected, lock = {}, [], {}, threading.Lock()

        def send(item):
            user, payload = item
            if not hasattr(local, "session"):
                local.session = requests.Session()
            t0 = time.monotonic()
            answer = deployment.report(local.session, deployment.users[user][0], payload)
            t1 = time.monotonic()
            with lock:
                statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
                if answer.status_code == 201:
                    finished.append(t1)
                    thread_of = deployment.users[user][1]
                    expected[thread_of] = expected.get(thread_of, 0) + 1
            return t1 - t0

        log(f"throughput: {len(payloads)} reports at concurrency {args.concurrency}")
        watch = MachineWatch()
        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
            durations = list(pool.map(send, payloads, timeout=600))
        elapsed = time.monotonic() - started
        machine = watch.end()
        log(f"throughput: {machine}")
        created = statuses.get(201, 0)
        expected[thread] = expected.get(thread, 0) + 1  # the warm-up's
        drain_started = time.monotonic()
        deployment.wait_notes(expected, timeout=args.note_timeout + len(payloads))
        drained = time.monotonic() - started
        limited = deployment.counters().get("rateLimited", 0)
        ms = [d * 1000 for d in durations]
        answered = ", ".join(f"{count} × {status}" for status, count in sorted(statuses.items()))
        return "\n".join([
            "| reports | concurrency | answered | over | reports/s (201) | POST p50 / p99 ms | every note in Discord after | 429s from Discord |",
            "|---|---|---|---|---|---|---|---|",
            f"| {len(payloads)} from {args.users} users | {args.concurrency} | {answered} | {elapsed:.2f} s | **{created / elapsed:.1f}** "
            f"| {percentile(ms, 0.5):.1f} / {percentile(ms, 0.99):.1f} | {drained:.1f} s from the first report "
            f"({time.monotonic() - drain_started:.1f} s after the last 201) | {limited} |",
            f"\n- reports/s in each quarter of the 201s, in order: {quarters(finished, started)}",
            f"- while the reports were sent: {machine}"])


# ---------------------------------------------------------------- main

def interrupted(*_):
    raise KeyboardInterrupt()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=str(ROOT / ".build/release/threaddesk"), help="threaddesk (default: the release build)")
    parser.add_argument("--emulator", default=str(ROOT / ".build/release/discord-emulator"), help="discord-emulator (default: the release build)")
    parser.add_argument("--symbolizer", help="llvm-symbolizer (default: the server's choice, the toolchain's)")
    parser.add_argument("--clang", help="clang that builds the fixture (default: beside swift)")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, of {', '.join(PARTS)} (default: all)")
    parser.add_argument("--runs", default="cached,uncached,uncached-large,none",
                        help="latency runs, of cached, uncached, uncached-large, none (default: all four)")
    parser.add_argument("--large-functions", type=int, default=20_000,
                        help="functions of the larger binary (the uncached-large run and the symbolizer's second rows; "
                             "default 20,000: about 7.5 MB; 0 leaves it out)")
    parser.add_argument("--reports", type=int, default=200, help="reports per latency run (default 200)")
    parser.add_argument("--users", type=int, default=20, help="users (each with a thread) the reports come from (default 20)")
    parser.add_argument("--interval", type=float, default=0.25,
                        help="latency: at most one report every this many s (default 0.25: with 20 users a thread gets a note "
                             "every 5 s, under Discord's 5 posts per 5 s)")
    parser.add_argument("--note-timeout", type=float, default=30, help="s to wait for one note (default 30)")
    parser.add_argument("--settle", type=float, default=6, help="s of rest before measuring, for Discord's windows (default 6)")
    parser.add_argument("--batches", default="1,10,100", help="llvm-symbolizer batch sizes (default 1,10,100)")
    parser.add_argument("--symbolizer-seconds", type=float, default=5, help="s per batch size (default 5)")
    parser.add_argument("--throughput-reports", type=int, default=1500,
                        help="reports sent for reports/s (default 1,500; their notes then take a minute or more to reach "
                             "Discord at 5 posts per 5 s per thread)")
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight for reports/s (default 8)")
    args = parser.parse_args()
    args.parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    args.runs = [r.strip() for r in args.runs.split(",") if r.strip()]
    args.batches = [int(b) for b in args.batches.split(",")]
    if not set(args.parts) <= set(PARTS) or not set(args.runs) <= {"cached", "uncached", "uncached-large", "none"}:
        parser.error("unknown --parts or --runs")
    if not args.large_functions and "uncached-large" in args.runs:
        args.runs.remove("uncached-large")
    if args.reports < 1 or args.users < 1 or args.throughput_reports < 1 or args.concurrency < 1:
        parser.error("--reports, --users, --throughput-reports and --concurrency take 1 or more")
    args.symbolizer = find_symbolizer(args.symbolizer)
    needs_server = "latency" in args.parts or "throughput" in args.parts
    for path in ([args.binary, args.emulator] if needs_server else []):
        if not os.access(path, os.X_OK):
            raise SystemExit(f"{path} is missing: swift build -c release --product threaddesk --product discord-emulator")
    # SIGTERM ends it like Ctrl-C: the finally blocks stop what it started.
    signal.signal(signal.SIGTERM, interrupted)

    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10).stdout.strip()
    version = subprocess.run([args.symbolizer, "--version"], capture_output=True, text=True, timeout=10).stdout
    version = next((line.strip() for line in version.splitlines() if "version" in line.lower()), "?")
    built = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(os.path.getmtime(args.binary))) if os.path.exists(args.binary) else "?"
    print(f"crashes.py at {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}: HEAD {commit}, {args.binary} built {built}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; llvm-symbolizer {args.symbolizer} ({version})\n")
    with tempfile.TemporaryDirectory(prefix="threaddesk-crash-bench-") as folder:
        work = pathlib.Path(folder)
        clang = find_clang(args.clang)
        fixture = Fixture.build(work, clang)
        log(f"fixture MyShop: {fixture.describe()}; functions {fixture.functions}")
        large = None
        if args.large_functions and ("symbolizer" in args.parts or "uncached-large" in args.runs):
            large = Fixture.build_large(work, clang, args.large_functions)
            log(f"larger binary: {args.large_functions:,} functions, {large.describe()}")
        if "latency" in args.parts:
            if "uncached-large" in args.runs and not large:
                raise SystemExit("the uncached-large run needs --large-functions")
            rows = latency_runs(args, work, fixture, large)
            print(f"### Report → note ({args.reports} reports a run from {args.users} users, one at a time, at most one every {args.interval} s)\n")
            print(f"MyShop: {fixture.describe()}" + (f"; the larger binary: {args.large_functions:,} functions, {large.describe()}" if large else "") + "\n")
            print(latency_table(rows, args))
            for row in rows:
                print(f"\n- {row['run']}: {row['machine']}")
            shown = next((row for row in rows if row["symbolicated"]), rows[-1])
            print(f"\nA note as posted (the last of the {shown['run']} run):\n\n````\n" + shown["sample note"] + "\n````\n")
        if "symbolizer" in args.parts:
            binaries = [(fixture, f"MyShop ({fixture.describe()})")]
            if large:
                binaries.append((large, f"{args.large_functions:,} functions ({large.describe()})"))
            print(f"### llvm-symbolizer alone, as the server runs it (one process a batch, {args.symbolizer_seconds:.0f} s a size)\n")
            print(symbolizer_throughput(args, work, binaries) + "\n")
        if "throughput" in args.parts:
            print(f"### The server's end: reports through POST /v1/crashes, warm cache\n")
            print(server_throughput(args, work, fixture) + "\n")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        raise SystemExit("interrupted; the processes it started were stopped")
