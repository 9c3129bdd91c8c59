"""``[access]`` with a running daemon and real callers: processes forked from the test
that become other accounts of this host (``bin``, ``daemon``, ``nobody``; groups ``staff``
and ``adm``) before they connect, so the kernel's credentials are theirs.

The daemon runs as root in the test; ``staff`` is its operators group and the account
``daemon`` its user Alice.  The socket's folder is made with :mod:`tempfile` and opened
to others (pytest's own folders are 0700).
"""

from __future__ import annotations

import asyncio
import contextlib
import grp
import io
import logging
import multiprocessing
import os
import pwd
import shutil
import stat
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest

from client import x400, x400ctl
from client.api import ApiError, call
from p1.ipms.ipm import (
    IPM,
    ContentKind,
    Heading,
    IPMIdentifier,
    ORDescriptor,
    Recipient,
    TextBodyPart,
    encode_ipm,
)
from p1.mts.orname import parse_orname
from tests.support.sites import Site, eventually, solo_site

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="becoming other accounts needs root")

ALICE = "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Alice"
BOB = "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=Bob"


@dataclass(frozen=True, slots=True)
class Account:
    """Who a forked caller becomes."""

    user: str
    group: str | None = None
    """Its primary group (default: the account's own)."""
    extra: tuple[str, ...] = ()
    """Its supplementary groups."""


OPERATOR = Account("bin", extra=("staff",))
"""An operator by a supplementary group."""
OPERATOR_BY_GID = Account("nobody", group="staff")
"""An operator by its primary group."""
USER = Account("daemon")
"""Alice, a user."""
OUTSIDER = Account("bin", extra=("adm",))
"""Neither."""


@dataclass(frozen=True, slots=True)
class Outcome:
    code: int
    out: str
    err: str


def _become(account: Account) -> None:
    entry = pwd.getpwnam(account.user)
    gid = grp.getgrnam(account.group).gr_gid if account.group else entry.pw_gid
    os.setgroups([grp.getgrnam(name).gr_gid for name in account.extra])
    os.setgid(gid)
    os.setuid(entry.pw_uid)


def _child(pipe: Connection, account: Account, run: Callable[[], Outcome]) -> None:
    try:
        _become(account)
        outcome = run()
    except BaseException as error:  # reported to the test, which fails with it
        outcome = Outcome(-1, "", f"child failed: {error!r}")
    pipe.send(outcome)
    pipe.close()


def _forked(account: Account, run: Callable[[], Outcome]) -> Outcome:
    """``run()`` in a child process that has become ``account``."""
    context = multiprocessing.get_context("fork")
    parent, child = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(child, account, run))
    process.start()
    child.close()
    try:
        if not parent.poll(60):
            pytest.fail(f"the process of {account} did not answer")
        outcome: Outcome = parent.recv()
    finally:
        process.join(60)
        if process.is_alive():
            process.kill()
    return outcome


def _client(program: Callable[..., int], argv: Sequence[str]) -> Callable[[], Outcome]:
    def run() -> Outcome:
        out, err = _stream(), _stream()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = program(list(argv))
        return Outcome(code, _text(out), _text(err))

    return run


def _stream() -> io.TextIOWrapper:
    """A text stream with a ``buffer``, as the clients' standard streams have."""
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    data = stream.buffer
    assert isinstance(data, io.BytesIO)
    return data.getvalue().decode("utf-8")


def _raw(socket: Path, request: dict[str, Any]) -> Callable[[], Outcome]:
    def run() -> Outcome:
        try:
            response, _ = call(socket, request)
        except ApiError as error:
            return Outcome(1, "", str(error))
        return Outcome(0, repr(response), "")

    return run


async def as_account(account: Account, run: Callable[[], Outcome]) -> Outcome:
    outcome = await asyncio.to_thread(_forked, account, run)
    assert not outcome.err.startswith("child failed"), outcome.err
    return outcome


@contextlib.asynccontextmanager
async def open_folder() -> AsyncIterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="aiox400-access-", dir="/tmp"))
    try:
        folder.chmod(0o755)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    """Site A with ``[access]``, running."""
    async with open_folder() as folder:
        site = solo_site(folder)
        site.settings["access"] = {"operators": ["staff"], "users": {"daemon": ALICE}}
        await site.start()
        try:
            yield site
        finally:
            await site.stop()


class Caller:
    """A forked account's way to the site."""

    def __init__(self, site: Site, account: Account) -> None:
        self.site, self.account = site, account

    async def x400(self, *argv: str) -> Outcome:
        where = ["--socket", str(self.site.socket)]
        return await as_account(self.account, _client(x400.main, [*argv[:1], *where, *argv[1:]]))

    async def x400ctl(self, *argv: str) -> Outcome:
        where = ["--socket", str(self.site.socket)]
        return await as_account(self.account, _client(x400ctl.main, [*where, *argv]))

    async def api(self, **request: Any) -> Outcome:
        return await as_account(self.account, _raw(self.site.socket, request))

    async def send(self, sender: str, to: str) -> Outcome:
        return await self.x400("send", "--from", sender, "--to", to, "-s", "hi", "-b", "text")


async def delivered(site: Site, user: str, count: int) -> list[dict[str, Any]]:
    return await eventually(lambda: site.inbox(user), lambda found: len(found) >= count, what=user)


def one_line(outcome: Outcome) -> str:
    """The client's refusal: exit 1, one line on standard error, nothing on output."""
    assert outcome.code == 1 and outcome.out == "", outcome
    assert outcome.err.count("\n") == 1, outcome.err
    return outcome.err.rstrip("\n")


async def test_the_socket_is_open_to_all_and_root_is_an_operator(site: Site) -> None:
    assert stat.S_IMODE(site.socket.stat().st_mode) == 0o666
    status = await site.api({"op": "status"})
    assert status["ok"] is True


async def test_operators_may_do_everything(site: Site) -> None:
    for account in (OPERATOR, OPERATOR_BY_GID):
        operator = Caller(site, account)
        assert (await operator.x400ctl("status")).code == 0
        assert (await operator.x400ctl("queue")).code == 0
        assert (await operator.x400ctl("config")).code == 0
        sent = await operator.send(BOB, BOB)
        assert sent.code == 0, sent
    assert len(await delivered(site, BOB, 2)) == 2
    listing = await Caller(site, OPERATOR).x400("inbox", "--user", BOB)
    assert listing.code == 0 and listing.out.count("hi") == 2, listing
    anywhere = await Caller(site, OPERATOR_BY_GID).api(op="read", id=1)
    assert anywhere.code == 0, anywhere


@pytest.mark.slow
async def test_a_user_acts_only_as_itself(site: Site, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="aiox400.api")
    alice = Caller(site, USER)
    await site.send(BOB, BOB)
    (bobs,) = await delivered(site, BOB, 1)
    sent = await alice.send(ALICE, ALICE)
    assert sent.code == 0 and sent.out.strip(), sent
    (own,) = await delivered(site, ALICE, 1)

    refused = one_line(await alice.send(BOB, ALICE))
    assert refused == (
        f"x400: account daemon (uid 1) may submit only as {ALICE} (its O/R names in "
        f"[access.users]), not as {BOB}"
    )
    assert one_line(await alice.x400("inbox", "--user", BOB)) == (
        f"x400: account daemon (uid 1) may use only the mailbox of {ALICE}, not that of {BOB}"
    )
    assert one_line(await alice.x400("read", str(bobs["id"]), "--user", BOB)).startswith(
        "x400: account daemon (uid 1) may use only the mailbox of"
    )
    assert one_line(await alice.x400("delete", str(bobs["id"]), "--user", BOB)).startswith(
        "x400: account daemon (uid 1) may use only the mailbox of"
    )
    nowhere = await alice.api(op="read", id=bobs["id"])
    assert nowhere.code == 1 and nowhere.err == f"no message {bobs['id']} in the mailbox of {ALICE}"
    for op in ("status", "queue", "messages", "channels", "config", "quarantine", "track"):
        answer = await alice.api(op=op, mts_identifier="x")
        assert answer.err == (
            f"account daemon (uid 1) may not {op}: only operators (groups staff) may"
        ), answer
    assert one_line(await alice.x400ctl("hold", "--all")).startswith(
        "x400ctl hold: account daemon (uid 1) may not hold"
    )

    listing = await alice.x400("inbox", "--user", ALICE)
    assert listing.code == 0 and "hi" in listing.out, listing
    mine = await alice.api(op="inbox")
    assert mine.code == 0 and f"'id': {own['id']}" in mine.out, mine
    assert (await alice.api(op="read", id=own["id"])).code == 0
    assert (await alice.x400("read", str(own["id"]), "--user", ALICE)).code == 0
    assert (await alice.x400("delete", str(own["id"]), "--user", ALICE)).code == 0
    assert await site.inbox(ALICE) == []
    assert [entry["id"] for entry in await site.inbox(BOB)] == [bobs["id"]]

    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("refused submit to account daemon (uid 1)" in line for line in warned), warned
    assert any("refused status to account daemon (uid 1)" in line for line in warned), warned


async def test_an_unknown_account_is_refused_everything(
    site: Site, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="aiox400.control")
    bob = Caller(site, OUTSIDER)
    why = (
        "account bin (uid 2) may not use this MTA: it is neither in an operators group "
        f"(groups staff) nor in [access.users] of {site.config_file.absolute()}"
    )
    assert one_line(await bob.x400ctl("status")) == f"x400ctl status: {why}"
    assert one_line(await bob.send(BOB, BOB)) == f"x400: {why}"
    assert one_line(await bob.x400("inbox", "--user", BOB)) == f"x400: {why}"
    for op in ("inbox", "read", "wait", "delete", "queue_delete", "flush"):
        answer = await bob.api(op=op)
        assert answer.code == 1 and answer.err == why, answer
    assert await site.inbox(BOB) == []
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(line == f"refused a local API connection: {why}" for line in warned), warned


def _submitted(socket: Path, content: bytes, content_type: int | str) -> Callable[[], Outcome]:
    def run() -> Outcome:
        request = {
            "op": "submit",
            "originator": ALICE,
            "recipients": [BOB],
            "content_type": content_type,
        }
        try:
            response, _ = call(socket, request, content)
        except ApiError as error:
            return Outcome(1, "", str(error))
        return Outcome(0, repr(response), "")

    return run


def _ipm(originator: ORDescriptor | None, kind: ContentKind) -> bytes:
    heading = Heading(
        this_ipm=IPMIdentifier(user=parse_orname(ALICE), user_relative_identifier="1"),
        originator=originator,
        primary_recipients=(Recipient(name=parse_orname(BOB)),),
        subject="orders",
    )
    return encode_ipm(IPM(heading=heading, body=(TextBodyPart(data=b"text"),)), kind)


COMMANDER = "C=GB;ADMD= ;PRMD=SITEA;O=HQ;S=commander"


@pytest.mark.slow
@pytest.mark.parametrize("kind", [ContentKind.P772, ContentKind.P2], ids=["p772", "p2"])
async def test_a_user_gives_only_its_own_name_as_the_headings_originator(
    site: Site, kind: ContentKind
) -> None:
    def submit(originator: ORDescriptor | None) -> Awaitable[Outcome]:
        content = _ipm(originator, kind)
        return as_account(USER, _submitted(site.socket, content, kind.value))

    forged = await submit(ORDescriptor(formal_name=parse_orname(COMMANDER)))
    assert forged.code == 1 and forged.err == (
        f"account daemon (uid 1) may give as the heading's originator only {ALICE} (its O/R "
        f"names in [access.users]), not {COMMANDER}"
    ), forged
    free = await submit(ORDescriptor(free_form_name="commander"))
    assert free.code == 1 and free.err.endswith("not the free-form name 'commander'"), free
    garbled = await as_account(USER, _submitted(site.socket, b"\xa0\x80junk", kind.value))
    assert garbled.code == 1 and "may submit only an IPM whose heading reads" in garbled.err
    assert (await submit(ORDescriptor(formal_name=parse_orname(ALICE)))).code == 0
    assert (await submit(None)).code == 0  # no originator in the heading: the envelope's
    entries = await delivered(site, BOB, 2)
    assert sorted(entry["originator"] for entry in entries) == [ALICE, ALICE]
    operator = await as_account(OPERATOR, _submitted(site.socket, _ipm(None, kind), kind.value))
    assert operator.code == 0, operator  # an operator's submission is not read


async def test_a_user_may_neither_reload_stop_show_non_deliver_nor_search(site: Site) -> None:
    alice = Caller(site, USER)
    await site.send(ALICE, "C=GB;ADMD= ;PRMD=SITEZ;O=HQ;S=Nobody")
    requests: dict[str, dict[str, Any]] = {
        "reload": {},
        "stop": {},
        "queue_show": {"message_id": 1},
        "non_deliver": {"all": True, "reason": "gone"},
        "track_find": {"since": "2026-01-01T00:00:00+00:00"},
    }
    for op, request in requests.items():
        answer = await alice.api(op=op, **request)
        assert answer.err == (
            f"account daemon (uid 1) may not {op}: only operators (groups staff) may"
        ), answer
    for argv in (("reload",), ("stop",), ("show", "1"), ("non-deliver", "--all", "--reason", "x")):
        refused = one_line(await alice.x400ctl(*argv))
        assert refused.startswith(f"x400ctl {argv[0]}: account daemon (uid 1) may not "), refused
    assert (await site.api({"op": "status"}))["ok"] is True
    assert (await Caller(site, OPERATOR).x400ctl("show", "1")).code == 0
