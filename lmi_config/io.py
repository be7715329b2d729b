"""Input and output at the edge: bounded reads of every input, safe writes of generated files.

Reading: every input (configuration files, standard input, specs, templates, model configs)
goes through :func:`read_bounded` or :func:`read_stdin`. A regular file larger than the cap is
refused from its size, without reading it; standard input, character devices (``/dev/zero``)
and FIFOs report no useful size, so they are read in chunks and reading stops at the cap. A
FIFO that nothing is writing to is refused at once instead of waiting forever. Every failure
is an :class:`InputError` naming the path (exit code 2). Memory stays proportional to the cap.

Writing: a regular file is replaced atomically (a reader sees the old content or the new, never half),
keeping its mode and, where the operating system allows, its owner. A symlink is followed and
its target updated. A FIFO or a character device (``/dev/stdout``, ``/dev/full``) is written
through, never replaced by a regular file. Every failure is an :class:`OutputError` whose
message names the path and what to do.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from lmi_config.errors import InputError as InputError
from lmi_config.errors import OutputError as OutputError

STDOUT = "-"
T = TypeVar("T")
MAX_INPUT_BYTES = 4 * 1024 * 1024  # the largest input read: far beyond any real configuration
_CHUNK_BYTES = 64 * 1024


def read_bounded(
    path: str | os.PathLike[str], *, shown: str | None = None, limit_bytes: int = MAX_INPUT_BYTES
) -> bytes:
    """The bytes of a regular file, a character device or a FIFO, at most ``limit_bytes`` of them.

    Raises :class:`InputError` (with ``shown``, default the path) for a missing file, a dangling
    symlink, a symlink loop, a directory, a socket, no permission, a FIFO nothing writes to, and
    an input over the cap.
    """
    shown = _short(shown if shown is not None else os.fspath(path))
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer (it is cleared before reading)
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise InputError(f"{shown}: {_open_problem(path, error)}") from None
    try:
        status = os.fstat(handle)
        mode = status.st_mode
        if stat.S_ISDIR(mode):
            raise InputError(f"{shown}: is a directory; give a file (or lint the directory)")
        if stat.S_ISREG(mode) and status.st_size > limit_bytes:
            raise InputError(
                f"{shown}: file is {status.st_size} bytes; lmi-config reads at most {limit_bytes} bytes of one input"
            )
        if stat.S_ISFIFO(mode):
            return _read_fifo(handle, shown, limit_bytes)
        if not (stat.S_ISREG(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode)):
            raise InputError(f"{shown}: {special_file_kind(mode)}, not a file that can be read")
        os.set_blocking(handle, True)
        return _read_capped(handle, shown, limit_bytes)
    except OSError as error:
        raise InputError(f"{shown}: cannot read: {error.strerror or error}") from None
    finally:
        os.close(handle)


def _short(name: str, limit: int = 200) -> str:
    """A path as shown in a message: a 5,000-character name would hide what went wrong."""
    return name if len(name) <= limit else f"{name[: limit - 1]}…"


def read_stdin(*, limit_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """Standard input, at most ``limit_bytes``: reading stops at the cap (:class:`InputError`)."""
    try:
        return _read_capped(0, "<stdin>", limit_bytes)
    except OSError as error:
        raise InputError(f"<stdin>: cannot read standard input: {error.strerror or error}") from None


def special_file_kind(mode: int) -> str:
    """``is a FIFO``, ``is a socket``… for a file that is not a regular file or a directory."""
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "is a socket"
    if stat.S_ISCHR(mode):
        return "is a character device"
    if stat.S_ISBLK(mode):
        return "is a block device"
    return "is not a regular file"


def _open_problem(path: str | os.PathLike[str], error: OSError) -> str:
    if error.errno == errno.ENOENT:
        if os.path.islink(path):
            return f"is a symlink to {os.readlink(path)}, which does not exist"
        return "no such file or directory"
    if error.errno == errno.ELOOP:
        return "is a symlink loop (a symlink that points back to itself)"
    if error.errno in (errno.EACCES, errno.EPERM):
        return "permission denied (cannot read the file)"
    if error.errno == errno.ENAMETOOLONG:
        return "the file name is too long"
    if error.errno == errno.ENXIO:
        return "is a socket or a device with nothing behind it; give a file"
    return f"cannot read: {error.strerror or error}"


def _read_capped(handle: int, shown: str, limit_bytes: int, chunks: list[bytes] | None = None) -> bytes:
    chunks = chunks if chunks is not None else []
    total = sum(len(chunk) for chunk in chunks)
    while total <= limit_bytes:
        chunk = os.read(handle, min(_CHUNK_BYTES, limit_bytes + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
    raise InputError(
        f"{shown}: more than {limit_bytes} bytes (reading stopped there); lmi-config reads at most "
        f"{limit_bytes} bytes of one input"
    )


def _read_fifo(handle: int, shown: str, limit_bytes: int) -> bytes:
    """Read a FIFO opened without blocking: end of file at once means nothing has it open for writing."""
    try:
        first = os.read(handle, _CHUNK_BYTES)
    except BlockingIOError:
        first = None  # a writer has it open but has not written yet: wait for it
    if first == b"":
        raise InputError(
            f"{shown}: is a FIFO (named pipe) that nothing is writing to; start the writer first, or give a file"
        )
    os.set_blocking(handle, True)
    return _read_capped(handle, shown, limit_bytes, [first] if first else [])


def write_output(destination: str, text: str) -> str:
    """Write ``text`` to ``destination`` (``-`` is standard output); returns what was written to.

    A regular file (or a new one) is written by :func:`write_atomically`; a FIFO or a character
    device is written through. Raises :class:`OutputError` for a missing or read-only directory, a
    read-only file, a directory, a name too long, a FIFO with no reader or a full device.
    """
    if destination == STDOUT:
        _write_stdout(text)
        return "standard output"
    target = _final_target(Path(destination), destination)
    status = _status(target, destination)
    if status is not None and stat.S_ISDIR(status.st_mode):
        raise OutputError(f"cannot write {_short(destination)}: it is a directory; give a file name")
    if status is not None and not stat.S_ISREG(status.st_mode):
        _write_through(target, text, destination, status.st_mode)
        return destination
    write_atomically(target, text, shown=destination)
    return destination


def _write_stdout(text: str) -> None:
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as error:
        silence_stdout()
        raise OutputError(f"cannot write to standard output: {error.strerror or error}") from None


def silence_stdout() -> None:
    """Point standard output at /dev/null after it failed (closed pipe, full disk), so that the
    interpreter's last flush at exit does not fail a second time with a traceback."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _write_through(target: Path, text: str, shown: str, mode: int) -> None:
    """Write into a FIFO or a device in place: the node itself is never replaced."""
    shown = _short(shown)
    if not (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
        raise OutputError(
            f"cannot write {shown}: it is neither a regular file, a FIFO nor a character device"
        )
    flags = os.O_WRONLY | (os.O_NONBLOCK if stat.S_ISFIFO(mode) else 0)
    try:
        handle = os.open(target, flags)
    except OSError as error:
        if error.errno == errno.ENXIO:
            raise OutputError(f"cannot write {shown}: it is a FIFO and nothing is reading from it") from None
        raise OutputError(f"cannot write {shown}: {_write_problem(error)}") from None
    try:
        if stat.S_ISFIFO(mode):
            os.set_blocking(handle, True)
        _write_all(handle, text.encode("utf-8"))
    except OSError as error:
        raise OutputError(f"cannot write {shown}: {_write_problem(error)}") from None
    finally:
        os.close(handle)


def _write_all(handle: int, data: bytes) -> None:
    while data:
        written = os.write(handle, data)
        data = data[written:]


class ChangedSinceRead(OutputError):
    """The file no longer holds what was read from it (someone edited it meanwhile): it was left
    as it is now, and nothing was written to it."""


def _final_target(path: Path, shown: str) -> Path:
    """The file ``path`` names once every symlink is followed: what a write must change (replacing
    the link would leave its target as it was and turn the link into a copy)."""
    try:
        return Path(os.path.realpath(path, strict=False)) if _is_link(path) else path
    except OSError as error:
        raise OutputError(f"cannot write {_short(shown)}: {_write_problem(error)}") from None


def _is_link(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False
    except NotADirectoryError:
        return False


def _status(target: Path, shown: str) -> os.stat_result | None:
    """The target's status, ``None`` when it does not exist yet; :class:`OutputError` otherwise."""
    try:
        return os.stat(target)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise OutputError(f"cannot write {_short(shown)}: {_write_problem(error)}") from None


def _write_problem(error: OSError) -> str:
    """What an operating-system error means to someone writing a file, and what to do."""
    if error.errno == errno.ENAMETOOLONG:
        return "the file name is too long for the file system (at most 255 bytes a name); give a shorter one"
    if error.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if error.errno == errno.ENOSPC:
        return "no space left on the device"
    if error.errno == errno.EROFS:
        return "the file system is read-only"
    if error.errno == errno.ELOOP:
        return "is a symlink loop (a symlink that points back to itself)"
    if error.errno == errno.ENOTDIR:
        return "a part of the path is a file, not a directory"
    return str(error.strerror or error)


def writable_problem(path: Path, status: os.stat_result) -> str | None:
    """Why the user may not write the existing file ``path``, or ``None``.

    Replacing a file by rename needs only the directory's permission, so it would rewrite a file
    its owner made read-only; this asks what an editor asks. Root may write any file, but a file
    with no write bit at all was made read-only on purpose, and is refused to root too.
    """
    mode = stat.S_IMODE(status.st_mode)
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(path, os.W_OK):
        return (
            f"it is read-only (mode {mode:04o}); make it writable (chmod u+w) if it is meant to change, "
            "or write elsewhere"
        )
    return None


def write_atomically(
    path: Path, text: str, *, shown: str | None = None, unchanged_since: bytes | None = None
) -> None:
    """Replace (or create) a regular file so that a reader sees the old content or the new.

    The one writer of a user's files (rendered and converted files, fixes, baselines, cache-config
    files, a search's results): a symlink is followed and its target written; a file the user may
    not write (:func:`writable_problem`) is refused; with ``unchanged_since`` (the bytes read from
    it), a file that holds anything else now is left as it is (:class:`ChangedSinceRead`). The file
    keeps its permission bits and, where allowed, its owner and group; a new file gets 0644 less the
    umask. A file with other hard links, or in a directory the user may not write, is rewritten in
    place, so that every name of it sees the change. Raises :class:`OutputError` naming ``shown``.
    """
    shown = _short(shown or str(path))
    target = _final_target(path, shown)
    status = _status(target, shown)
    if status is not None:
        if not stat.S_ISREG(status.st_mode):
            raise OutputError(f"cannot write {shown}: it is not a regular file")
        problem = writable_problem(target, status)
        if problem is not None:
            raise OutputError(f"cannot write {shown}: {problem}")
    elif unchanged_since is not None:
        raise ChangedSinceRead(f"{shown}: was deleted after lmi-config read it; nothing was written")
    data = text.encode("utf-8", errors="surrogatepass")
    if status is not None and status.st_nlink > 1:
        _rewrite_in_place(target, data, shown, unchanged_since)
        return
    try:
        _replace(target, data, shown, unchanged_since)
    except _DirectoryNotWritable as refused:
        if status is None:
            raise OutputError(f"cannot write {shown}: {refused}") from None
        _rewrite_in_place(target, data, shown, unchanged_since)


class _DirectoryNotWritable(Exception):
    """No temporary file can be made beside the target (a read-only directory)."""


def _replace(target: Path, data: bytes, shown: str, unchanged_since: bytes | None) -> None:
    import tempfile  # only when a file is written

    directory = target.parent if str(target.parent) else Path(".")
    try:
        # a short prefix: a name of 255 bytes is legal, the same name with a prefix and suffix is not
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name[:32]}.", suffix=".tmp", dir=directory)
    except FileNotFoundError:
        raise OutputError(
            f"cannot write {shown}: the directory {_short(str(directory))} does not exist"
        ) from None
    except PermissionError:
        raise _DirectoryNotWritable(
            f"the directory {_short(str(directory))} is not writable (permission denied)"
        ) from None
    except OSError as error:
        raise OutputError(f"cannot write {shown}: {_write_problem(error)}") from None
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        _copy_metadata(target, temporary)
        _check_unchanged(target, shown, unchanged_since)
        os.replace(temporary, target)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise OutputError(f"cannot write {shown}: {_write_problem(error)}") from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    _sync_directory(directory)


def _rewrite_in_place(target: Path, data: bytes, shown: str, unchanged_since: bytes | None) -> None:
    """Write the file's own inode (every hard link sees it), truncating what is left."""
    try:
        handle = os.open(target, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise OutputError(f"cannot write {shown}: {_write_problem(error)}") from None
    try:
        _check_unchanged(target, shown, unchanged_since)
        _write_all(handle, data)
        os.ftruncate(handle, len(data))
        os.fsync(handle)
    except OSError as error:
        raise OutputError(f"cannot write {shown}: {_write_problem(error)}") from None
    finally:
        os.close(handle)


def _check_unchanged(target: Path, shown: str, unchanged_since: bytes | None) -> None:
    """Refuse to write a file that holds something else than what was read from it: the last
    moment before the write, so that an edit made while lmi-config worked is not lost."""
    if unchanged_since is None:
        return
    try:
        now = read_bounded(target, shown=shown, limit_bytes=max(MAX_INPUT_BYTES, len(unchanged_since)))
    except InputError:
        now = None
    if now != unchanged_since:
        raise ChangedSinceRead(
            f"{shown}: changed after lmi-config read it; it was left as it is now, with nothing written "
            "(run the command again to fix what it holds now)"
        )


def _sync_directory(directory: Path) -> None:
    """Make the rename durable (a crash after it must not bring back the old file)."""
    with contextlib.suppress(OSError):
        handle = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(handle)
        finally:
            os.close(handle)


def _copy_metadata(path: Path, temporary: str) -> None:
    try:
        status = os.stat(path)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o644 & ~umask)
        return
    os.chmod(temporary, stat.S_IMODE(status.st_mode))
    if hasattr(os, "chown"):
        # only root (or the owner, for the group) may keep another user's ownership
        with contextlib.suppress(PermissionError):
            os.chown(temporary, status.st_uid, status.st_gid)


@dataclass(repr=False, eq=False)
class PendingWrite:
    """One file of a batch: its name as the user gave it, the bytes read from it, its new text."""

    path: str
    read: bytes
    text: str


class BatchWriteError(OutputError):
    """Some files of a batch were not written; the message names each, and which were."""

    def __init__(self, message: str, written: list[str], not_written: list[str]) -> None:
        super().__init__(message)
        self.written = written
        self.not_written = not_written


def write_files(pending: list[PendingWrite]) -> list[str]:
    """Write a batch of a user's files (``lint --fix``); returns the paths written.

    Every file is checked before the first is written (a read-only file, a directory that is gone,
    a file changed since it was read), so that a batch that cannot be written changes nothing. A
    file changed while the batch was written is left as it is; a file that fails while being
    written does not stop the others. Either raises :class:`BatchWriteError`, whose message says
    exactly which files were changed and which were not, and why. Two names of one file (a link
    and its target) are written once.
    """
    problems: list[tuple[str, str]] = []
    unique: list[PendingWrite] = []
    seen: dict[str, PendingWrite] = {}
    for item in pending:
        try:
            key = os.path.realpath(item.path)
        except (OSError, ValueError) as error:
            problems.append((item.path, str(error)))
            continue
        if key in seen:
            if seen[key].text != item.text:
                problems.append((item.path, f"the same file as {seen[key].path}, fixed differently there"))
            continue
        seen[key] = item
        unique.append(item)
        problem = _preflight(item)
        if problem is not None:
            problems.append((item.path, problem))
    if problems:
        raise BatchWriteError(_batch_message([], problems), [], [path for path, _ in problems])
    written: list[str] = []
    for item in unique:
        try:
            write_atomically(Path(item.path), item.text, shown=item.path, unchanged_since=item.read)
        except OutputError as error:
            problems.append((item.path, _reason(error, item.path)))
            continue
        written.append(item.path)
    if problems:
        raise BatchWriteError(_batch_message(written, problems), written, [path for path, _ in problems])
    return written


def _preflight(item: PendingWrite) -> str | None:
    """Why ``item`` cannot be written, found before anything is written; ``None`` when it can."""
    path = Path(item.path)
    try:
        target = _final_target(path, item.path)
        status = os.stat(target)
    except FileNotFoundError:
        return "was deleted after lmi-config read it"
    except (OSError, OutputError) as error:
        return _reason(error, item.path)
    if not stat.S_ISREG(status.st_mode):
        return "is no longer a regular file"
    problem = writable_problem(target, status)
    if problem is not None:
        return problem
    try:
        if (
            read_bounded(target, shown=item.path, limit_bytes=max(MAX_INPUT_BYTES, len(item.read)))
            != item.read
        ):
            return "changed after lmi-config read it; it was left as it is now"
    except InputError as error:
        return _reason(error, item.path)
    return None


def _reason(error: Exception, path: str) -> str:
    """An error's message without the file name it starts with (the batch message names the file)."""
    text = str(error)
    for prefix in (f"cannot write {_short(path)}: ", f"{_short(path)}: "):
        if text.startswith(prefix):
            return text[len(prefix) :]
    return text


def _batch_message(written: list[str], problems: list[tuple[str, str]]) -> str:
    lines = [f"cannot write {_short(path)}: {why}" for path, why in problems]
    if written:
        lines.append(f"changed {len(written)} file(s): {', '.join(_short(path) for path in written)}")
        lines.append(f"not changed: {', '.join(_short(path) for path, _ in problems)}")
    else:
        lines.append("no file was changed")
    return "\n".join(lines)


# Read-merge-write under an exclusive lock: every file that two runs may write at once (a
# cache-config file that ``plan`` and ``search`` merge into, a search's results and journal).
LOCK_WAIT_SECONDS = 30.0  # writers hold the lock for one read and one write: milliseconds
_LOCK_POLL_SECONDS = 0.02


def lock_path(path: str | os.PathLike[str]) -> Path:
    """The sidecar lock of a file: ``<name>.lock`` beside the file a symlink points to, so every
    writer of one file takes one lock whichever name it was given."""
    target = Path(os.path.realpath(path))
    return target.with_name(target.name + ".lock")


@contextlib.contextmanager
def exclusive_lock(
    lock: Path, *, shown: str | None = None, wait_seconds: float = LOCK_WAIT_SECONDS
) -> Iterator[None]:
    """Hold ``flock(LOCK_EX)`` on ``lock`` (created if missing, never deleted: deleting it would let
    a second writer lock a new file while the first still holds the old one).

    Waits at most ``wait_seconds`` for another holder; raises :class:`OutputError` naming
    ``shown`` (default the lock) when the lock cannot be created or is held longer.
    """
    import fcntl
    import time

    shown = _short(shown or str(lock))
    flags = (
        os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    )
    try:
        handle = os.open(lock, flags, 0o666)
    except FileNotFoundError:
        raise OutputError(f"cannot write {shown}: the directory {lock.parent} does not exist") from None
    except OSError as error:
        raise OutputError(
            f"cannot write {shown}: cannot create its lock {lock}: {error.strerror or error}"
        ) from None
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            raise OutputError(f"cannot write {shown}: its lock {lock} is not a regular file; remove it")
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise OutputError(
                        f"cannot write {shown}: another process has held {lock} for {wait_seconds:g} s; "
                        "wait for it to finish and run the command again"
                    ) from None
                time.sleep(_LOCK_POLL_SECONDS)
        yield
    finally:
        os.close(handle)  # closing releases the lock


def update_locked(
    destination: str | os.PathLike[str],
    update: Callable[[bytes | None], tuple[str, T]],
    *,
    shown: str | None = None,
    limit_bytes: int = MAX_INPUT_BYTES,
) -> T:
    """Read ``destination``, let ``update`` merge into it, and write the result, all under the file's
    exclusive lock (:func:`lock_path`), so that concurrent writers each see the others' entries.

    ``update`` receives the current bytes (``None`` when the file does not exist) and returns the
    new text and a value handed back to the caller (e.g. how many entries it added). The read is
    bounded; the write is atomic and goes through a symlink to its target. The file must be a
    regular file (or not exist yet): a FIFO or a device cannot be read, merged and replaced, and
    is refused with :class:`InputError`; a directory, a missing directory or a lock held too long
    raise :class:`OutputError`.
    """
    shown = _short(shown if shown is not None else os.fspath(destination))
    target = Path(os.path.realpath(destination))
    _check_mergeable(target, shown)  # before the lock: no lock file beside /dev/zero
    with exclusive_lock(lock_path(destination), shown=shown):
        exists = _check_mergeable(target, shown)  # again: it may have changed while we waited
        current = read_bounded(target, shown=shown, limit_bytes=limit_bytes) if exists else None
        text, value = update(current)
        write_atomically(target, text, shown=shown, unchanged_since=current)
    return value


def read_mergeable(
    path: str | os.PathLike[str], *, shown: str | None = None, limit_bytes: int = MAX_INPUT_BYTES
) -> bytes | None:
    """The bytes of a file that entries are merged into (bounded), ``None`` when it does not exist; a
    directory, a FIFO or a device is refused by name, as :func:`update_locked` refuses it."""
    shown = shown if shown is not None else os.fspath(path)
    target = Path(os.path.realpath(path))
    return (
        read_bounded(target, shown=shown, limit_bytes=limit_bytes)
        if _check_mergeable(target, shown)
        else None
    )


def _check_mergeable(target: Path, shown: str) -> bool:
    """Whether ``target`` exists; an error when it is something other than a regular file."""
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return False
    except OSError as error:
        raise OutputError(f"cannot write {shown}: {_open_problem(target, error)}") from None
    if stat.S_ISDIR(mode):
        raise OutputError(f"cannot write {shown}: it is a directory; give a file name")
    if not stat.S_ISREG(mode):
        raise InputError(
            f"{shown}: {special_file_kind(mode)}, not a regular file; entries are merged into it, so it must be a regular file"
        )
    return True
