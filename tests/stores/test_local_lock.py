"""Tests for the store's lock: who holds it, waiting for it, and giving up after --lock-timeout."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ivy_matrix.cli import main
from ivy_matrix.errors import ExitCode, StoreError
from ivy_matrix.stores.local import LocalStore

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]

# Holds the store's lock (through LocalStore, as a hung update would) until stdin has a line.
_HOLDER = (
    "import sys; from pathlib import Path; from ivy_matrix.stores.local import LocalStore\n"
    "with LocalStore(Path(sys.argv[1])).locked():\n"
    "    print('held', flush=True)\n"
    "    sys.stdin.readline()\n"
)


@pytest.fixture(name="holder")
def holder_fixture(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process that holds the lock of the store tmp_path/.ivy-matrix until told."""
    with subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tmp_path / ".ivy-matrix")],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline() == "held\n"
            yield proc
        finally:
            proc.kill()
            proc.wait(timeout=10)


def test_update_gives_up_after_the_lock_timeout_naming_the_holder(
    tmp_path, monkeypatch, capsys, holder
):
    """While another process holds the lock, update says who and exits 4 after --lock-timeout."""
    monkeypatch.chdir(tmp_path)
    Path("r.xml").write_text(
        '<testsuite><testcase classname="x.test_core.test_grad" name="t"/></testsuite>',
        encoding="utf-8",
    )

    code = main(["update", "--junit", "r.xml", "--backend", "t", "--lock-timeout", "1"], {})

    lines = capsys.readouterr().err.splitlines()

    holder_text = f"pid {holder.pid} on host {socket.gethostname()!r} since "
    waiting = [line for line in lines if line.startswith("waiting for the lock")]
    assert code == ExitCode.STORE
    assert len(waiting) == 1
    assert holder_text in waiting[0]
    assert "giving up after 1 s (--lock-timeout)" in waiting[0]
    assert lines[-1].startswith("error: cannot lock the store .ivy-matrix: it is still held by ")
    assert holder_text in lines[-1]
    assert lines[-1].endswith("or pass a longer --lock-timeout")
    assert not (tmp_path / ".ivy-matrix" / "state").exists()


def test_the_lock_is_taken_once_its_holder_lets_go(tmp_path, holder):
    """A waiter hears who holds the lock, and gets it as soon as the holder releases it."""
    store = LocalStore(tmp_path / ".ivy-matrix")
    heard: list[str] = []

    def on_wait(message: str) -> None:
        heard.append(message)
        assert holder.stdin is not None
        holder.stdin.write("release\n")
        holder.stdin.flush()

    with store.locked(timeout=50, on_wait=on_wait):
        assert holder.wait(timeout=50) == 0  # it let go without error, while we hold it

    assert len(heard) == 1
    assert f"held by pid {holder.pid} on host" in heard[0]
    assert (tmp_path / ".ivy-matrix" / ".lock").read_bytes() == b""


def test_a_zero_lock_timeout_fails_at_once_when_the_lock_is_held(tmp_path, holder):
    """--lock-timeout 0 does not wait: a held lock is a StoreError naming its holder."""
    store = LocalStore(tmp_path / ".ivy-matrix")

    held = f"still held by pid {holder.pid} on host .* after 0 s"
    with pytest.raises(StoreError, match=held), store.locked(timeout=0):
        pass


def test_a_negative_lock_timeout_is_refused(capsys):
    """A negative --lock-timeout is a user error naming the input."""
    code = main(["update", "--junit", "r.xml", "--backend", "t", "--lock-timeout", "-1"], {})

    assert code == ExitCode.USAGE
    assert "--lock-timeout got -1" in capsys.readouterr().err
