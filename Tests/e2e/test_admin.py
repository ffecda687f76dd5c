"""`threaddesk admin`: a backup of a live SQLite store opens as a store with every migration applied;
another kind of store is refused with a pointer to its own tools."""
import subprocess


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
