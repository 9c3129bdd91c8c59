"""Large APDUs as files beside a SQLite database (the spool), rows keeping their names.

SQLite writes every page of a row twice (to the WAL, then to the database file at the
checkpoint), one system call per page: for a 1 MB APDU that is 2 MB of disk writes and
about 800 calls at each MTA, where one ``write`` and one flush of a file of its own do.
So an APDU of at least :data:`SPOOL_THRESHOLD` octets goes into a file of the spool
folder (``<database>-apdus``, beside SQLite's own ``-wal``), and its row (transit queue or
mailbox) holds the file's name and an empty ``apdu``, as Postfix keeps message files and
its queue manager only their names.

Nothing acknowledged is lost, nothing is left behind:

* a file is written and flushed before the transaction that names it commits, and its
  name was flushed to the folder before it was written (blank files are made ahead, in
  groups), so a committed row never names a file that a power cut loses;
* a file whose transaction does not commit (rolled back, or the MTA stopped before the
  commit) is named by no row: it is removed at the rollback, or by the sweep
  (:func:`store.db.sweep_spool`) when the MTA starts, as are unused blank files;
* a row deleted (a purged message, a mailbox entry the user deleted) has its file removed
  after its transaction commits, never before (a rollback keeps both);
* savepoints count as transactions: a unit of a group commit that fails in its savepoint
  takes its files with it, and a row deleted in it keeps its file.

An APDU read back in the transaction that wrote it (a claim that shares a submission's
transaction) is the one written, not a second copy read from its file: until the
transaction ends, the session keeps the APDUs it wrote (:data:`MAX_WRITTEN_KEPT` octets
of them at most, the last written), which their writers hold meanwhile anyway.

An APDU read to be sent (``mapped``) from a file of at least :data:`MAP_THRESHOLD` octets
is a read-only mapping of the file, not a copy: what holds it holds no more than the
pages of it last touched (the link writes it in pieces and lets those pages go, see
:func:`mta.link.Link.transfer`), where a copy read would be the whole APDU for as long as
it is sent.  A file is never written again once its row names it, so the mapping shows
what was written.  (A mapped file that something else cuts short, or a disk error under
it, is a SIGBUS to the process when the page is read, not an OSError: the folder must
be the MTA's alone, as docs/operating.md says.)

PostgreSQL keeps every APDU in its rows: several MTA processes may share its queue,
possibly on different hosts, and a file would be on one of them only.

Public API::

    Spool(folder, threshold=SPOOL_THRESHOLD)
        .wants(apdu) -> bool        .put(session, apdu) -> name
        .get(name) -> bytes         .discard_after_commit(session, names)
        .mapped(name) -> bytes | mmap   (a large file mapped, not read)
        .names() -> set[str]        .remove(names) -> int      .sweep(referenced) -> int
    spool_of(session) -> Spool | None       (the spool of the session's database)
    apdu_columns(spool, session, apdu) -> {"apdu": ..., "apdu_file": ...}   (a new row's)
    stored_apdu(spool, apdu, apdu_file, what, session=None, *, mapped=False)
        -> bytes | mmap                                                     (a row's APDU)
    as_bytes(apdu) -> bytes     an APDU as bytes (a mapped one copied)
    SPOOL_OPTION, SPOOL_THRESHOLD, MAP_THRESHOLD, SpoolError
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import re
import secrets
import threading
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any, Final, Literal, overload

from sqlalchemy import event
from sqlalchemy.orm import Session, SessionTransaction

from store._sql import connection_of

__all__ = [
    "MAP_THRESHOLD",
    "SPOOL_OPTION",
    "SPOOL_THRESHOLD",
    "Spool",
    "SpoolError",
    "apdu_columns",
    "as_bytes",
    "spool_of",
    "stored_apdu",
]

log = logging.getLogger(__name__)

SPOOL_THRESHOLD: Final = 64 * 1024
"""Octets from which an APDU is kept in a file: below it, the row's own pages cost less
than a file's create, flush and folder flush."""

MAP_THRESHOLD: Final = 4 * 1024 * 1024
"""Octets from which a file read to be sent is mapped (:meth:`Spool.mapped`): messages of
several megabytes.  A smaller one is read whole: its copy costs less than mapping it."""

SPOOL_OPTION: Final = "aiox400_spool"
"""Execution option of an engine whose database has a spool (its :class:`Spool`)."""

_CREATED: Final = "aiox400_spool_created"
"""Key in a session's ``info``: files written in its transaction (removed at rollback)."""
_DOOMED: Final = "aiox400_spool_doomed"
"""Key in a session's ``info``: files of rows deleted in its transaction (removed at
commit)."""

_WRITTEN: Final = "aiox400_spool_written"
"""Key in a session's ``info``: the APDUs written in its transaction, by file name."""
MAX_WRITTEN_KEPT: Final = 64 * 1024 * 1024
"""Octets of the APDUs a transaction wrote that it keeps to be read back (the oldest
go first past this): a transaction that writes many large ones holds no more."""

_BLANKS: Final = 32
"""Blank files made at a time, with one flush of the folder."""

_flush_data = getattr(os, "fdatasync", os.fsync)

_NAME = re.compile(r"[0-9a-f]{32}\.ber")
"""The names :meth:`Spool.put` gives: anything else in the folder is not the spool's."""


class SpoolError(Exception):
    """A spooled APDU cannot be written or read (the message names the file)."""


class Spool:
    """A folder of APDU files (module docstring)."""

    def __init__(self, folder: Path, threshold: int = SPOOL_THRESHOLD) -> None:
        self.folder = folder
        self.threshold = threshold
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._blanks: list[str] = []
        self._lock = threading.Lock()

    def wants(self, apdu: bytes) -> bool:
        """Whether ``apdu`` is large enough to be kept in a file."""
        return len(apdu) >= self.threshold

    def put(self, session: Session, apdu: bytes) -> str:
        """Write ``apdu`` to a file of its own, flushed to disk; the file's name.

        The file is one of the blank files made ahead (:meth:`_blank`), whose names are
        on disk already: flushing the folder costs as much as flushing a 1 MB file, so
        it is done once per :data:`_BLANKS` files, not per file.  The file belongs to
        ``session``'s transaction: it is removed if that rolls back.
        """
        current = _current(session)
        try:
            name = self._blank()
            session.info.setdefault(_CREATED, []).append((self, name, current))
            _write_durably(self.folder / name, apdu)
        except OSError as exc:
            raise SpoolError(f"cannot write an APDU file in {self.folder}: {exc}") from exc
        if type(apdu) is bytes:  # (a mutable buffer may change after it was written)
            _keep_written(session, name, apdu)
        return name

    def _blank(self) -> str:
        """The name of an empty file whose folder entry is on disk."""
        with self._lock:
            if not self._blanks:
                names = [f"{secrets.token_hex(16)}.ber" for _ in range(_BLANKS)]
                for name in names:
                    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
                    os.close(os.open(self.folder / name, flags, 0o600))
                _flush_folder(self.folder)
                self._blanks = names
            return self._blanks.pop()

    def get(self, name: str) -> bytes:
        """The APDU in file ``name``; :class:`SpoolError` if it cannot be read."""
        path = self.folder / name
        try:
            return path.read_bytes()
        except OSError as exc:
            raise SpoolError(f"cannot read APDU file {path}: {exc.strerror}") from exc

    def mapped(self, name: str) -> bytes | mmap.mmap:
        """The APDU in file ``name`` to be sent: a read-only mapping of the file when it
        has at least :data:`MAP_THRESHOLD` octets, else its octets read (as :meth:`get`);
        :class:`SpoolError` if it cannot be opened or read."""
        path = self.folder / name
        try:
            with path.open("rb") as file:
                if os.fstat(file.fileno()).st_size < MAP_THRESHOLD:
                    return file.read()
                return mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else str(exc)
            raise SpoolError(f"cannot read APDU file {path}: {why}") from exc

    def discard_after_commit(self, session: Session, names: Iterable[str | None]) -> None:
        """Remove the files ``names`` (of rows deleted in ``session``'s transaction) once
        that transaction commits; keep them if it rolls back."""
        current = _current(session)
        doomed = session.info.setdefault(_DOOMED, [])
        doomed.extend((self, name, current) for name in names if name)

    def names(self) -> set[str]:
        """Names of the spool's files now in the folder."""
        return {entry.name for entry in os.scandir(self.folder) if _NAME.fullmatch(entry.name)}

    def remove(self, names: Iterable[str]) -> int:
        """Remove files ``names`` (missing ones are no error); how many were removed."""
        removed = 0
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                (self.folder / name).unlink()
                removed += 1
        return removed

    def sweep(self, referenced: Collection[str]) -> int:
        """Remove the files no row names (left by a stop between write and commit, or
        between commit and removal, and the blank files made ahead); how many.  Only
        while nothing else writes."""
        with self._lock:
            self._blanks = []
        return self.remove(self.names() - set(referenced))


def spool_of(session: Session) -> Spool | None:
    """The spool of ``session``'s database, or None when its APDUs stay in rows."""
    spool = connection_of(session).get_execution_options().get(SPOOL_OPTION)
    return spool if isinstance(spool, Spool) else None


def apdu_columns(spool: Spool | None, session: Session, apdu: bytes) -> dict[str, Any]:
    """The ``apdu`` and ``apdu_file`` values of a new row holding ``apdu``: a large one
    goes to the spool (written and flushed now, in ``session``'s transaction)."""
    if spool is None or not spool.wants(apdu):
        return {"apdu": apdu, "apdu_file": None}
    return {"apdu": b"", "apdu_file": spool.put(session, apdu)}


def as_bytes(apdu: bytes | mmap.mmap) -> bytes:
    """``apdu`` as bytes, for what decodes, rewrites or keeps it whole: a mapped one
    (:meth:`Spool.mapped`) is copied."""
    return apdu if type(apdu) is bytes else apdu[:]


@overload
def stored_apdu(
    spool: Spool | None,
    apdu: bytes,
    apdu_file: str | None,
    what: str,
    session: Session | None = None,
    *,
    mapped: Literal[False] = False,
) -> bytes: ...


@overload
def stored_apdu(
    spool: Spool | None,
    apdu: bytes,
    apdu_file: str | None,
    what: str,
    session: Session | None = None,
    *,
    mapped: bool,
) -> bytes | mmap.mmap: ...


def stored_apdu(
    spool: Spool | None,
    apdu: bytes,
    apdu_file: str | None,
    what: str,
    session: Session | None = None,
    *,
    mapped: bool = False,
) -> bytes | mmap.mmap:
    """The APDU of a row (``what`` names it in an error): its ``apdu``, or its file's;
    when ``session``'s transaction wrote that file, the APDU it wrote (no copy read).
    ``mapped`` (an APDU read to be sent): a large file's mapping (:meth:`Spool.mapped`),
    even when the transaction wrote it, so that what the writer held is freed once the
    writer is done with it."""
    if apdu_file is None:
        return bytes(apdu)
    if spool is None:
        raise SpoolError(
            f"{what} is in APDU file {apdu_file}, but its database is opened without "
            "its spool folder"
        )
    if mapped:
        return spool.mapped(apdu_file)
    if session is not None:
        written: dict[str, bytes] | None = session.info.get(_WRITTEN)
        if written is not None and apdu_file in written:
            return written[apdu_file]
    return spool.get(apdu_file)


def _keep_written(session: Session, name: str, apdu: bytes) -> None:
    """Keep ``apdu``, just written to file ``name``, until the transaction ends (the
    oldest kept go first past :data:`MAX_WRITTEN_KEPT` octets)."""
    written: dict[str, bytes] = session.info.setdefault(_WRITTEN, {})
    written[name] = apdu
    total = sum(map(len, written.values()))
    for oldest in list(written):
        if total <= MAX_WRITTEN_KEPT:
            break
        total -= len(written.pop(oldest))


def _write_durably(path: Path, data: bytes) -> None:
    """Write ``data`` into the (blank) file ``path`` and flush it with its size."""
    descriptor = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view) :]
        _flush_data(descriptor)  # the data and what reading it needs (its size)
    finally:
        os.close(descriptor)


def _flush_folder(folder: Path) -> None:
    """Flush the folder's entries (a new file's name survives a power cut only so)."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


_File = tuple[Spool, str, SessionTransaction | None]
"""A spool file and the transaction (or savepoint) that wrote it or deleted its row."""


def _current(session: Session) -> SessionTransaction | None:
    """The session's innermost transaction, begun in the database (a savepoint is sent
    only when the session's connection is asked for in it)."""
    session.connection()
    return session.get_nested_transaction() or session.get_transaction()


def _take(session: Session, key: str) -> list[tuple[Spool, str]]:
    taken: list[_File] = session.info.pop(key, [])
    return [(spool, name) for spool, name, *_ in taken]


def _undone_by(
    files: list[_File], undone: SessionTransaction
) -> tuple[list[tuple[Spool, str]], list[_File]]:
    """Split ``files`` into those of ``undone`` (or of a savepoint inside it) and the
    others."""
    inside: list[tuple[Spool, str]] = []
    outside: list[_File] = []
    for spool, name, transaction in files:
        level = transaction
        while level is not None and level is not undone:
            level = level.parent
        if level is None:
            outside.append((spool, name, transaction))
        else:
            inside.append((spool, name))
    return inside, outside


def _remove_all(files: list[tuple[Spool, str]]) -> None:
    """Remove files after their transaction ended; a failure is logged, not raised (the
    transaction's outcome stands; the start-up sweep removes what is left)."""
    for spool, name in files:
        try:
            spool.remove((name,))
        except OSError as exc:
            log.warning("cannot remove APDU file %s: %s", spool.folder / name, exc.strerror)


@event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    if session.get_nested_transaction() is not None:
        return  # a savepoint released: its transaction may still roll back
    _take(session, _CREATED)  # named by committed rows now: kept
    session.info.pop(_WRITTEN, None)
    _remove_all(_take(session, _DOOMED))


@event.listens_for(Session, "after_soft_rollback")
def _after_soft_rollback(session: Session, previous_transaction: SessionTransaction) -> None:
    """A transaction or a savepoint was rolled back: the files written in it go, and
    the files of rows deleted in it stay (the rows are back).  (Not ``after_rollback``:
    that one fires for a savepoint too, without saying which.)"""
    written, session.info[_CREATED] = _undone_by(
        session.info.get(_CREATED, []), previous_transaction
    )
    _, session.info[_DOOMED] = _undone_by(session.info.get(_DOOMED, []), previous_transaction)
    kept: dict[str, bytes] = session.info.get(_WRITTEN, {})
    for _, name in written:
        kept.pop(name, None)
    _remove_all(written)
