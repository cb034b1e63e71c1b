"""#22 item 1 (and 13's BOM/CRLF): `check --fix` never damages the file it writes.

Faults are real: a file-size limit set in the child that writes, a full filesystem (a small tmpfs in a
private mount namespace, where the machine lets a test make one), a SIGKILL while the fix is written, and
another program's edit landing between the read and the replace. After each, the original is
byte-identical, the exit code is 2 and the message says the file is unchanged.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rootrank import atomic
from rootrank.check import MAX_PARSE_CHARS

PY = sys.executable
HEAD = "from torch.utils.checkpoint import checkpoint\n"
CALL = "y = checkpoint(f, x)\n"  # its safe fix adds `use_reentrant=True`
FIXED_CALL = "y = checkpoint(f, x, use_reentrant=True)\n"


def big_source(size: int) -> bytes:
    """A training file of about `size` bytes whose fix is one short insertion near its start: the new
    content is as large as the old, so any cut would show."""
    filler = "".join(f"value_{i} = 'padding line {i} " + "x" * 40 + "'\n" for i in range(size // 64 + 1))
    return (HEAD + CALL + filler).encode()


def check_fix(path: Path, *extra: str, limit: int | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    def child() -> None:
        if limit is not None:  # Python ignores SIGXFSZ: a write past the limit raises EFBIG
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run([PY, "-m", "rootrank", "check", "--fix", *extra, str(path)], capture_output=True,
                          text=True, timeout=timeout, preexec_fn=child)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if "rootrank-" in p.name)


def test_a_file_size_limit_leaves_the_original_byte_identical(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    original = big_source(1_200_000)
    path.write_bytes(original)
    done = check_fix(path, limit=500_000)
    assert done.returncode == 2, done.stderr
    assert path.read_bytes() == original
    assert "the file is unchanged" in done.stderr and str(path) in done.stderr
    assert leftovers(tmp_path) == []  # the partial temporary file is removed
    # Without the limit the same run writes the whole fix.
    assert check_fix(path).returncode in (0, 1)
    assert path.read_bytes() == original.replace(CALL.encode(), FIXED_CALL.encode())


def _tmpfs_command() -> list[str] | None:
    """How to mount a tmpfs here: as root in a private mount namespace, else in a user namespace."""
    unshare = shutil.which("unshare")
    mount = shutil.which("mount")
    if unshare is None or mount is None:
        return None
    for prefix in ([unshare, "-m"], [unshare, "-rm"]) if os.geteuid() == 0 else ([unshare, "-rm"],):
        probe = subprocess.run([*prefix, "sh", "-c", "d=$(mktemp -d) && mount -t tmpfs -o size=64k none \"$d\""],
                               capture_output=True, timeout=30)
        if probe.returncode == 0:
            return prefix
    return None


def test_a_full_filesystem_leaves_the_original_byte_identical(tmp_path: Path) -> None:
    prefix = _tmpfs_command()
    if prefix is None:
        pytest.skip("this machine lets no test mount a tmpfs (no unshare, or namespaces not allowed); "
                    "the file-size limit test covers the same write path")
    original = big_source(300_000)
    (tmp_path / "train.py").write_bytes(original)
    script = textwrap.dedent(f"""\
        set -e
        mnt=$(mktemp -d)
        mount -t tmpfs -o size=400k none "$mnt"
        cp {tmp_path}/train.py "$mnt/train.py"
        set +e
        {PY} -m rootrank check --fix "$mnt/train.py" 2> {tmp_path}/stderr
        echo $? > {tmp_path}/rc
        cmp -s {tmp_path}/train.py "$mnt/train.py" && echo same > {tmp_path}/same
        ls -a "$mnt" > {tmp_path}/listing
        """)
    subprocess.run([*prefix, "sh", "-c", script], check=True, timeout=120,
                   env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    stderr = (tmp_path / "stderr").read_text()
    assert (tmp_path / "rc").read_text().strip() == "2", stderr
    assert (tmp_path / "same").exists(), "the original changed on a full filesystem"
    assert "No space left on device" in stderr and "the file is unchanged" in stderr
    assert "rootrank-" not in (tmp_path / "listing").read_text()


KILLER = textwrap.dedent("""\
    import os, signal, sys
    import rootrank.atomic as atomic
    real = getattr(os, sys.argv[2])
    def die(*args):
        if sys.argv[2] == "write":  # half the new content on disk, then the kill
            real(args[0], bytes(args[1])[: len(args[1]) // 2])
        os.kill(os.getpid(), signal.SIGKILL)
    setattr(os, sys.argv[2], die)
    from rootrank.cli import main
    main(["check", "--fix", sys.argv[1]])
    """)


@pytest.mark.parametrize("step", ["write", "fsync", "replace"])
def test_a_kill_during_the_write_leaves_the_original(tmp_path: Path, step: str) -> None:
    """SIGKILL at each step of the write (mid-write, at the fsync, at the rename): the target is the
    original, byte for byte; the debris is a hidden temporary file beside it, never the file itself."""
    path = tmp_path / "train.py"
    original = big_source(200_000)
    path.write_bytes(original)
    done = subprocess.run([PY, "-c", KILLER, str(path), step], capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert path.read_bytes() == original


def test_kills_at_random_moments_never_leave_a_partial_file(tmp_path: Path) -> None:
    """A real `check --fix` killed at moments spread over its run: the file is always either the
    original or the whole fix."""
    original = big_source(1_500_000)  # under the parse cap (MAX_PARSE_CHARS), so the fix is made
    assert len(original) < MAX_PARSE_CHARS
    fixed = original.replace(CALL.encode(), FIXED_CALL.encode())
    path = tmp_path / "train.py"
    path.write_bytes(original)
    started = time.monotonic()
    check_fix(path)
    took = time.monotonic() - started
    assert path.read_bytes() == fixed
    for step in range(8):
        path.write_bytes(original)
        child = subprocess.Popen([PY, "-m", "rootrank", "check", "--fix", str(path)], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        time.sleep(took * (0.5 + step / 8))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
        assert path.read_bytes() in (original, fixed), f"a partial file after a kill at {step}"


def test_an_edit_between_read_and_replace_is_never_lost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another program saves the file while the fix is being written (here: at the fsync of the new
    content): the replace is refused, and the other program's edit is what stays."""
    path = tmp_path / "train.py"
    path.write_text(HEAD + CALL)
    snap = atomic.snapshot(str(path))
    real_fsync = os.fsync

    def editor_saves(fd: int) -> None:
        real_fsync(fd)
        path.write_text(HEAD + CALL + "# the user's edit\n")

    monkeypatch.setattr(os, "fsync", editor_saves)
    with pytest.raises(atomic.WriteError, match="changed by another program"):
        atomic.replace(snap, (HEAD + FIXED_CALL).encode(), str(path))
    monkeypatch.undo()
    assert path.read_text() == HEAD + CALL + "# the user's edit\n"
    assert leftovers(tmp_path) == []
    # The same edit landing before the write starts is refused too (the size and the content are compared).
    path.write_text(HEAD + CALL)
    snap = atomic.snapshot(str(path))
    path.write_text(HEAD + CALL.replace("x", "z"))  # same size: the content comparison catches it
    with pytest.raises(atomic.WriteError):
        atomic.replace(snap, b"new", str(path))
    assert path.read_text() == HEAD + CALL.replace("x", "z")


def test_mode_owner_symlink_and_hard_links_are_kept(tmp_path: Path) -> None:
    real = tmp_path / "real.py"
    real.write_text(HEAD + CALL)
    real.chmod(0o640)
    if os.geteuid() == 0:
        os.chown(real, 4321, 4321)
    link = tmp_path / "link.py"
    link.symlink_to(real)
    assert check_fix(link).returncode in (0, 1)
    assert link.is_symlink() and os.readlink(link) == str(real)  # the link stays a link
    assert real.read_text() == HEAD + FIXED_CALL
    info = real.stat()
    assert stat.S_IMODE(info.st_mode) == 0o640
    if os.geteuid() == 0:
        assert (info.st_uid, info.st_gid) == (4321, 4321)
    # Hard links: every name sees the fix (the inode is rewritten in place, not replaced).
    first, second = tmp_path / "a.py", tmp_path / "b.py"
    first.write_text(HEAD + CALL)
    os.link(first, second)
    inode = first.stat().st_ino
    assert check_fix(first).returncode in (0, 1)
    assert second.read_text() == HEAD + FIXED_CALL and first.stat().st_ino == inode
    assert leftovers(tmp_path) == []


def test_a_hard_linked_file_under_a_size_limit_is_restored(tmp_path: Path) -> None:
    path, other = tmp_path / "train.py", tmp_path / "same.py"
    original = big_source(600_000)
    path.write_bytes(original)
    os.link(path, other)
    done = check_fix(path, limit=len(original) + 4)  # the fix grows the file past the limit
    assert done.returncode == 2 and "the file is unchanged" in done.stderr, done.stderr
    assert path.read_bytes() == original and other.read_bytes() == original
    assert leftovers(tmp_path) == []


def test_bom_and_crlf_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    source = (HEAD + CALL + "z = 1\n").replace("\n", "\r\n")
    path.write_bytes(b"\xef\xbb\xbf" + source.encode())
    assert check_fix(path).returncode in (0, 1)
    assert path.read_bytes() == b"\xef\xbb\xbf" + (HEAD + FIXED_CALL + "z = 1\n").replace("\n", "\r\n").encode()
    # A notebook re-dumped by its fix keeps CRLF too.
    import json

    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                           "source": [HEAD, CALL]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    nb = tmp_path / "nb.ipynb"
    nb.write_bytes(b"\xef\xbb\xbf" + json.dumps(notebook, indent=1).replace("\n", "\r\n").encode() + b"\r\n")
    assert check_fix(nb).returncode in (0, 1)
    data = nb.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and b"use_reentrant=True" in data
    assert data.count(b"\n") == data.count(b"\r\n")


def test_write_new_replaces_whole_or_not_at_all(tmp_path: Path) -> None:
    """The fleet report (`--html`): a new file appears whole; an unwritable folder says so."""
    target = tmp_path / "report.html"
    target.write_text("old report")
    target.chmod(0o644)
    atomic.write_new(str(target), b"<html>new</html>")
    assert target.read_bytes() == b"<html>new</html>" and stat.S_IMODE(target.stat().st_mode) == 0o644
    with pytest.raises(atomic.WriteError):
        atomic.write_new(str(tmp_path / "missing" / "report.html"), b"x")
