"""The deployment files, checked as far as this machine allows: no Docker engine runs here, so the
compose file and Dockerfile are checked for what they must say; the systemd units go through
`systemd-analyze verify`; the binary meets the example environment."""
import ipaddress
import os
import pathlib
import re
import shutil
import subprocess
import time
import tomllib

import pytest
import requests
import yaml
from executables import free_port, running_emulator

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def _example_environment() -> dict[str, str]:
    values = {}
    for line in (ROOT / ".env.example").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            values[name.strip()] = value
    return values


def _variables_the_code_reads() -> set[str]:
    names = set()
    for source in (ROOT / "Sources").rglob("*.swift"):
        text = source.read_text()
        names |= set(re.findall(r'value\("([A-Z][A-Z0-9_]+)"\)', text))
        names |= set(re.findall(r'environment\["([A-Z][A-Z0-9_]+)"\]', text))
        names |= set(re.findall(r'required\("([A-Z][A-Z0-9_]+)"\)', text))
        names |= set(re.findall(r'snowflake\("([A-Z][A-Z0-9_]+)"\)', text))
        names |= set(re.findall(r'seconds\("([A-Z][A-Z0-9_]+)"', text))
        names |= set(re.findall(r'mebibytes\("([A-Z][A-Z0-9_]+)"', text))
        names |= set(re.findall(r'(?:count|flag)\("([A-Z][A-Z0-9_]+)"', text))
        names |= set(re.findall(r'\("(QUOTA_[A-Z0-9_]+)", \\\.', text))
    return names


def test_env_example_lists_every_variable_and_only_those():
    read = _variables_the_code_reads()
    listed = set(_example_environment())
    assert {"DISCORD_TOKEN", "APP_KEY", "STORE_URL", "GATEWAY_SECRET", "APNS_KEY_ID", "SERVER_URL"} <= read
    # PATH is the system's (where llvm-symbolizer is looked for), not ThreadDesk's to configure.
    assert read - listed - {"PATH"} == set(), "read by the code but missing from .env.example"
    # POSTGRES_PASSWORD is compose's, for the database container.
    assert listed - read - {"POSTGRES_PASSWORD"} == set(), "in .env.example but read by nothing"


def test_env_example_leaves_every_secret_blank():
    values = _example_environment()
    for secret in ("DISCORD_TOKEN", "APP_KEY", "IDENTITY_SECRET", "LEGACY_API_KEY", "GATEWAY_SECRET", "APNS_PRIVATE_KEY",
                   "POSTGRES_PASSWORD", "DSYMS_SECRET"):
        assert values[secret] == "", secret


@pytest.fixture(scope="module")
def threaddesk(swift_bin) -> pathlib.Path:
    """The release binary when one was built (`swift build -c release`), else the debug one."""
    release = ROOT / ".build" / "release" / "threaddesk"
    return release if release.exists() else swift_bin / "threaddesk"


@pytest.mark.parametrize("binary, command, missing", [
    ("threaddesk", ["serve"], ["DISCORD_TOKEN", "DISCORD_GUILD_ID", "DISCORD_FORUM_CHANNEL_ID", "APP_KEY"]),
    ("threaddesk", ["gateway"], ["DISCORD_TOKEN", "DISCORD_FORUM_CHANNEL_ID", "GATEWAY_SECRET"]),
    # The daemon's own small executable reads the same settings the same way.
    ("threaddesk-gateway", [], ["DISCORD_TOKEN", "DISCORD_FORUM_CHANNEL_ID", "GATEWAY_SECRET"]),
])
def test_the_binary_names_the_missing_secrets_of_the_example_environment(threaddesk, tmp_path, binary, command, missing):
    run = subprocess.run(
        [str(threaddesk.parent / binary), *command, "--env-file", str(ROOT / ".env.example")],
        env={"PATH": os.environ["PATH"]}, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert run.returncode == 78, run.stderr  # EX_CONFIG: the units do not restart on it
    message = run.stderr.strip()
    assert message.count("\n") == 0, "one line, not a stack trace"
    assert "cannot start" in message and "missing" in message
    for name in missing:
        assert name in message
    assert not (tmp_path / "data").exists(), "nothing is created before the configuration is complete"


def test_systemd_units_verify(swift_bin, tmp_path):
    verify = shutil.which("systemd-analyze")
    if verify is None:
        pytest.fail("systemd-analyze is not installed (Debian: apt-get install systemd)")
    units = []
    for name in ("threaddesk.service", "threaddesk-gateway.service"):
        text = (DEPLOY / name).read_text()
        assert "/usr/local/bin/threaddesk" in text
        for option in ("Restart=always", "RestartPreventExitStatus=78", "NoNewPrivileges=yes", "ProtectSystem=strict",
                       "User=threaddesk", "--env-file /etc/threaddesk/threaddesk.env"):
            assert option in text, f"{name}: {option}"
        # The unit as installed, but pointing at the binary this build made (verify checks it exists).
        unit = tmp_path / name
        unit.write_text(text.replace("/usr/local/bin/threaddesk", str(swift_bin / "threaddesk")))
        units.append(str(unit))
    run = subprocess.run([verify, "verify", *units], capture_output=True, text=True, timeout=60)
    # verify exits 0 on unknown keys and bad values, but names them: any word from it is a defect.
    assert run.returncode == 0 and run.stdout.strip() == "" and run.stderr.strip() == "", run.stdout + run.stderr


def test_compose_runs_two_replicas_the_gateway_and_postgres():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    assert {"server", "gateway", "postgres"} <= set(services)
    server, gateway, postgres = services["server"], services["gateway"], services["postgres"]
    assert server["deploy"]["replicas"] == 2
    assert server["command"] == ["serve"] and gateway["command"] == ["gateway"]
    assert server["image"] == gateway["image"], "one image with both commands"
    assert server["environment"]["STORE_URL"].startswith("postgres://") and "@postgres:5432/" in server["environment"]["STORE_URL"]
    assert server["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name, service in services.items():
        assert "healthcheck" in service, f"{name} has no health check"
    assert "/ready" in " ".join(server["healthcheck"]["test"])
    # The proxy forwards the public port only; the gateway daemon (and /metrics) use the replicas'
    # internal listener, which the proxy does not reach.
    proxy_config = compose["configs"]["caddyfile"]["content"]
    assert {"source": "caddyfile", "target": "/etc/caddy/Caddyfile"} in services["proxy"]["configs"]
    proxy_target = re.search(r"reverse_proxy\s+(\S+)", proxy_config).group(1)
    # The proxy believes the X-Forwarded-For of a TLS terminator in front of it on a private
    # network, so the client's address reaches the replicas.
    assert "trusted_proxies static private_ranges" in proxy_config
    internal = server["environment"]["INTERNAL_PORT"]
    assert "server:8080" in proxy_target and f":{internal}" not in proxy_target
    assert server["environment"]["INTERNAL_HOST"] == "0.0.0.0" and internal in server["expose"]
    assert gateway["environment"]["SERVER_URL"] == f"http://server:{internal}"
    # The replicas believe X-Forwarded-For from the proxy, and only from it: its fixed address on
    # the compose network is inside TRUSTED_PROXIES, nothing else on that network is.
    proxy_address = ipaddress.ip_address(services["proxy"]["networks"]["default"]["ipv4_address"])
    subnet = ipaddress.ip_network(compose["networks"]["default"]["ipam"]["config"][0]["subnet"])
    trusted = [ipaddress.ip_network(entry.strip()) for entry in server["environment"]["TRUSTED_PROXIES"].split(",")]
    assert proxy_address in subnet and any(proxy_address in network for network in trusted)
    assert all(network.num_addresses == 1 for network in trusted), "only the proxy, not the whole compose network"
    # No secret is written into the file: they come from .env.
    text = (DEPLOY / "compose.yaml").read_text()
    assert "${POSTGRES_PASSWORD:?" in text and not re.search(r"(TOKEN|SECRET|KEY)\s*:\s*\S", text)


def test_dockerfile_is_multi_stage_static_and_unprivileged():
    lines = [line.strip() for line in (DEPLOY / "Dockerfile").read_text().splitlines()]
    stages = [line for line in lines if line.startswith("FROM ")]
    assert len(stages) == 2 and stages[0].endswith(" AS build")
    build = "\n".join(lines)
    assert "swift build -c release --product threaddesk --static-swift-stdlib" in build
    # The small daemon is installed beside the server: `threaddesk gateway` becomes it.
    assert "swift build -c release --product threaddesk-gateway --static-swift-stdlib" in build
    assert "for binary in threaddesk threaddesk-gateway" in build and "/staging/usr/local/bin/$binary" in build
    assert "COPY --from=build" in build
    users = [line for line in lines if line.startswith("USER ")]
    assert users and not users[-1].startswith("USER root") and lines.index(users[-1]) > lines.index(stages[1])
    assert 'ENTRYPOINT ["/usr/local/bin/threaddesk"]' in lines and 'CMD ["serve"]' in lines
    assert any(line.startswith("HEALTHCHECK") for line in lines)
    # Every local package the server depends on is in the image before dependencies are resolved.
    manifest = (ROOT / "Package.swift").read_text()
    resolve = lines.index("RUN swift package resolve")
    for path in re.findall(r'\.package\(path: "([^"]+)"\)', manifest):
        top = path.split("/")[0]
        copies = [i for i, line in enumerate(lines) if line.startswith(f"COPY {top} ")]
        assert copies and copies[0] < resolve, f"the Dockerfile must COPY {top} before resolving"


def test_fly_runs_one_always_on_gateway():
    fly = tomllib.loads((DEPLOY / "fly.toml").read_text())
    assert fly["processes"] == {"gateway": "gateway"}
    assert "http_service" not in fly and "services" not in fly, "the gateway serves nothing"
    assert (DEPLOY / fly["build"]["dockerfile"]).exists()
    assert "DISCORD_TOKEN" not in fly.get("env", {}) and "GATEWAY_SECRET" not in fly.get("env", {})


@pytest.mark.parametrize("flags, runs_as", [([], "threaddesk-gateway"), (["--in-process"], "threaddesk")])
def test_threaddesk_gateway_becomes_the_daemon_installed_beside_it(swift_bin, tmp_path, flags, runs_as):
    """`threaddesk gateway` (what compose, Fly.io and the unit run) execs `threaddesk-gateway` from
    its own directory, so it costs the small process's memory; `--in-process` keeps it in one."""
    with running_emulator(swift_bin / "discord-emulator") as emulator:
        environment = {"PATH": os.environ["PATH"], "DISCORD_TOKEN": emulator["botToken"],
                       "DISCORD_API_URL": emulator["restURL"], "DISCORD_FORUM_CHANNEL_ID": emulator["forumChannelID"],
                       # Nothing listens there: the forwarder retries, which does not matter here.
                       "SERVER_URL": f"http://127.0.0.1:{free_port()}", "GATEWAY_SECRET": "s" * 32, "LOG_LEVEL": "error"}
        with open(tmp_path / "gateway.log", "w") as log:
            process = subprocess.Popen([str(swift_bin / "threaddesk"), "gateway", *flags, "--env-file", str(tmp_path / "none.env")],
                                       env=environment, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
            try:
                deadline = time.monotonic() + 60
                while requests.get(emulator["controlURL"] + "/counters", timeout=5).json()["identifies"] < 1:
                    assert process.poll() is None, (tmp_path / "gateway.log").read_text()
                    assert time.monotonic() < deadline, "the gateway never identified"
                    time.sleep(0.1)
                # The same process (no child left behind), now the named executable.
                assert pathlib.Path(os.readlink(f"/proc/{process.pid}/exe")).name == runs_as
            finally:
                process.terminate()
                assert process.wait(timeout=30) == 0, (tmp_path / "gateway.log").read_text()
