"""`threaddesk admin`: a backup of a live SQLite store opens as a store with every migration applied;
another kind of store is refused with a pointer to its own tools; a user's data shown, exported, listed
and erased beside a running server."""
import json
import os
import sqlite3
import subprocess
import tempfile
import time

import requests

from executables import free_port, running_emulator, wait_until_healthy


def run(swift_bin, *arguments, env=None):
    return subprocess.run([str(swift_bin / "threaddesk"), "admin", *arguments], capture_output=True, text=True, timeout=60, env=env)


def test_a_backup_is_a_store_with_every_migration_applied(swift_bin, tmp_path):
    store = f"sqlite://{tmp_path / 'data' / 'threaddesk.sqlite'}"
    listed = run(swift_bin, "migrations", "--store", store)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.strip().splitlines()
    assert len(lines) >= 5 and all(line.startswith("applied") for line in lines)

    copy = tmp_path / "backups" / "copy.sqlite"
    backed = run(swift_bin, "backup", "--store", store, str(copy))
    assert backed.returncode == 0, backed.stderr
    assert copy.exists()
    again = run(swift_bin, "migrations", "--store", f"sqlite://{copy}")
    assert again.returncode == 0 and again.stdout == listed.stdout

    # A backup never overwrites a file.
    refused = run(swift_bin, "backup", "--store", store, str(copy))
    assert refused.returncode != 0
    assert "exists already" in refused.stderr


def test_postgresql_is_pointed_to_its_own_tools(swift_bin):
    refused = run(swift_bin, "backup", "--store", "postgres://u:p@127.0.0.1:5432/db", "/tmp/never")
    assert refused.returncode == 2
    assert "pg_dump" in refused.stderr


def test_a_users_data_is_shown_exported_listed_and_erased_from_the_command_line(swift_bin, tmp_path):
    """`admin user show|export|delete` and `admin user list --inactive`, beside a running server on
    the same SQLite store, against the Discord emulator."""
    with running_emulator(swift_bin / "discord-emulator") as discord, tempfile.TemporaryFile(mode="w+") as log:
        port = free_port()
        store = f"sqlite://{tmp_path}/threaddesk.sqlite"
        environment = {
            **os.environ,
            "DISCORD_TOKEN": discord["botToken"], "DISCORD_API_URL": discord["restURL"],
            "DISCORD_GUILD_ID": discord["guildID"], "DISCORD_FORUM_CHANNEL_ID": discord["forumChannelID"],
            "APP_KEY": "admin-test", "STORE_URL": store, "PORT": str(port),
        }
        server = subprocess.Popen([str(swift_bin / "threaddesk"), "serve", "--env-file", "/nonexistent"],
                                  env=environment, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
        base = f"http://127.0.0.1:{port}"
        control = discord["controlURL"]
        try:
            wait_until_healthy(base, server, log)
            session = requests.post(base + "/v1/session", json={"installation": {"appVersion": "3.1.4"}},
                                    headers={"X-App-Key": "admin-test"}, timeout=10).json()
            user, auth = session["userId"], {"Authorization": f"Bearer {session['token']}"}
            device = "ab" * 32
            assert requests.put(base + "/v1/push-token", json={"token": device, "environment": "production"},
                                headers=auth, timeout=10).status_code == 204
            sent = requests.post(base + "/v1/messages", json={"content": "please export me"},
                                 headers={**auth, "Idempotency-Key": "admin-1"}, timeout=10)
            assert sent.status_code == 201, sent.text
            # The outbox delivers it (and makes the thread) after the answer: sent once the
            # server has kept the thread (a thread in Discord alone may not be the store's yet).
            deadline = time.monotonic() + 20
            while requests.get(base + "/v1/messages", headers=auth, timeout=10).json()["messages"][0]["delivery"] != "sent":
                assert time.monotonic() < deadline, "the message never reached Discord"
                time.sleep(0.02)
            thread = requests.get(control + "/threads", timeout=5).json()[0]["id"]
            assert requests.post(control + f"/threads/{thread}/replies", json={"content": "Here is your answer"}, timeout=5).ok
            assert requests.post(control + f"/threads/{thread}/notes", json={"content": "internal only"}, timeout=5).ok
            listed = requests.get(base + "/v1/messages", headers=auth, timeout=10).json()["messages"]
            assert [message["content"] for message in listed] == ["please export me", "Here is your answer"]

            # A second user, quiet for years (the record's date moved back in the file itself).
            quiet = requests.post(base + "/v1/session", json={}, headers={"X-App-Key": "admin-test"}, timeout=10).json()["userId"]
            with sqlite3.connect(tmp_path / "threaddesk.sqlite", timeout=10) as db:
                db.execute("UPDATE users SET updated_at = '2020-01-01 00:00:00.000', created_at = '2020-01-01 00:00:00.000' WHERE id = ?", (quiet,))

            shown = run(swift_bin, "user", "show", "--store", store, user)
            assert shown.returncode == 0, shown.stderr
            kept = json.loads(shown.stdout)
            assert kept["userId"] == user and kept["threadId"] == thread
            assert kept["pushTokenRegistered"] is True and kept["pushEnvironment"] == "production"
            assert kept["installation"] == {"appVersion": "3.1.4"}
            assert device not in shown.stdout and session["token"] not in shown.stdout

            export = tmp_path / "export.json"
            exported = run(swift_bin, "user", "export", "--store", store, "-o", str(export), user)
            assert exported.returncode == 0, exported.stderr
            document = json.loads(export.read_text())
            assert document["messages"] == listed, "the conversation as the API shows it, notes left out"
            assert document["user"]["userId"] == user and document["hasMore"] is False
            assert (export.stat().st_mode & 0o777) == 0o600
            refused = run(swift_bin, "user", "export", "--store", store, "-o", str(export), user)
            assert refused.returncode == 64 and "exists already" in refused.stderr

            inactive = run(swift_bin, "user", "list", "--store", store, "--inactive", "365d")
            assert inactive.returncode == 0, inactive.stderr
            assert [line.split("\t")[0] for line in inactive.stdout.splitlines()] == [quiet]
            assert inactive.stdout.split("\t")[1].startswith("2020-01-01")

            erased = run(swift_bin, "user", "delete", user, env={**environment, "PORT": "0"})
            assert erased.returncode == 0, erased.stderr
            assert erased.stdout.strip() == f"Erased {user}"
            settled = next(t for t in requests.get(control + "/threads", timeout=5).json() if t["id"] == thread)
            assert settled["locked"] and settled["archived"]
            notes = requests.get(control + f"/threads/{thread}/messages", timeout=5).json()
            assert "deleted on request (threaddesk admin)" in notes[-1]["content"]
            # The running server reads the same store: the user's token is gone.
            assert requests.get(base + "/v1/messages", headers=auth, timeout=10).status_code == 401
            gone = run(swift_bin, "user", "show", "--store", store, user)
            assert gone.returncode == 1 and "keeps nothing" in gone.stderr
            again = run(swift_bin, "user", "delete", user, env={**environment, "PORT": "0"})
            assert again.returncode == 0 and again.stdout.strip() == f"Nothing kept about {user}"
            assert run(swift_bin, "user", "export", "--store", store, user).returncode == 1

            # Refusals name what is wrong.
            unconfigured = run(swift_bin, "user", "delete", "--env-file", "/nonexistent", "--store", store, quiet,
                               env={key: value for key, value in os.environ.items() if not key.startswith(("DISCORD_", "APP_KEY"))})
            assert unconfigured.returncode == 78 and "DISCORD_TOKEN" in unconfigured.stderr
            assert run(swift_bin, "user", "list", "--store", store, "--inactive", "soon").returncode == 64
            assert run(swift_bin, "user", "show", "--store", store, "not a valid id").returncode == 64
        finally:
            server.terminate()
            server.wait(timeout=15)
