"""`threaddesk doctor` as an operator runs it: the configuration from a .env file, checked against a
running Discord emulator; exit 0 when every check passes, 1 with the failed check named otherwise;
--json for scripts; no secret in the output."""
import json
import subprocess

import requests

from executables import running_emulator


def doctor(swift_bin, env_file, *arguments):
    return subprocess.run(
        [str(swift_bin / "threaddesk"), "doctor", "--env-file", str(env_file), *arguments],
        capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin"})


def env_file(tmp_path, discord):
    path = tmp_path / "doctor.env"
    path.write_text(
        f"DISCORD_TOKEN={discord['botToken']}\n"
        f"DISCORD_API_URL={discord['restURL']}\n"
        f"DISCORD_GUILD_ID={discord['guildID']}\n"
        f"DISCORD_FORUM_CHANNEL_ID={discord['forumChannelID']}\n"
        "APP_KEY=0123456789abcdef0123456789abcdef\n"
        f"STORE_URL=sqlite://{tmp_path / 'data' / 'threaddesk.sqlite'}\n")
    return path


def test_the_doctor_passes_then_names_what_discord_withholds(swift_bin, tmp_path):
    with running_emulator(swift_bin / "discord-emulator") as discord:
        env = env_file(tmp_path, discord)
        passed = doctor(swift_bin, env)
        assert passed.returncode == 0, passed.stdout + passed.stderr
        lines = passed.stdout.strip().splitlines()
        assert all(line.startswith("✓ ") for line in lines[:-1]), passed.stdout
        assert lines[-1].startswith("All ") and lines[-1].endswith("checks passed.")

        # The bot loses Add Reactions in the forum, and the Message Content intent is switched off.
        control = discord["controlURL"]
        assert requests.post(control + "/forum/deny-bot", json={"permissions": str(1 << 6)}, timeout=5).status_code == 204
        assert requests.put(control + "/application/message-content", json={"enabled": False}, timeout=5).ok
        failed = doctor(swift_bin, env, "--json")
        assert failed.returncode == 1, failed.stderr
        report = json.loads(failed.stdout)
        assert report["passed"] is False
        by_name = {check["name"]: check for check in report["checks"]}
        assert {name for name, check in by_name.items() if not check["passed"]} == {
            "discord.intent", "discord.gateway", "discord.permissions"}
        assert "Add Reactions" in by_name["discord.permissions"]["detail"]
        assert "4014" in by_name["discord.gateway"]["detail"]
        assert "turn on Message Content Intent in the Developer Portal" in by_name["discord.gateway"]["fix"]
        assert discord["botToken"] not in failed.stdout + passed.stdout
        assert "0123456789abcdef0123456789abcdef" not in failed.stdout + passed.stdout


def test_an_incomplete_configuration_fails_naming_what_is_missing(swift_bin, tmp_path):
    path = tmp_path / "empty.env"
    path.write_text("DISCORD_GUILD_ID=123\n")
    result = doctor(swift_bin, path)
    assert result.returncode == 1
    assert result.stdout.startswith("✗ configuration:")
    assert "DISCORD_TOKEN" in result.stdout
