"""Names and text a peer sends, on their way to the log and the store: the daemon's log
lines stay one per record whatever a message quotes, a name outside its alphabet is
not taken in (kept in the quarantine), text that may hold control characters is stored
with them escaped, mailboxes are named by canonical O/R names, and with ``local_users``
configured a name under a local domain that is none of them is non-delivered
(unrecognised O/R name).

Two MTAs on loopback (:mod:`tests.support.sites`) for what a peer transfers; the store and
the log handler on their own for the rest.
"""

from __future__ import annotations

import contextlib
import io
import logging
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from config.loader import load_config
from mta import daemon
from p1.ipms.ipm import (
    ORDescriptor,
)
from p1.mts.envelope import (
    Report,
)
from p1.mts.orname import ORName, format_orname, parse_orname
from p1.mts.precedence import Precedence
from p1.mts.report import NonDeliveryDiagnostic, NonDeliveryReason, NonDeliveryReport
from store.db import open_database, transaction
from store.mailbox import Delivery, MessageStore
from tests.support import store_samples as samples
from tests.support.sites import A, B, Lab, Site, eventually, message_from_a, transfer_as_a

EXAMPLES = Path(__file__).resolve().parents[2] / "config" / "examples"
SENT = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
FORGED = "eth\nFAKE line"
"""A value that, written as it is, would start a log line of its own."""


def lines_starting_with_fake(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("FAKE")]


# --- the daemon's log lines ------------------------------------------------------------


@pytest.fixture
def root_logging() -> Iterator[logging.Logger]:
    """The root logger, its handlers and level put back after the test."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield root
    finally:
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
                handler.close()
        for handler in handlers:
            if handler not in root.handlers:
                root.addHandler(handler)
        root.setLevel(level)


@contextlib.contextmanager
def daemon_logger() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    """A logger writing through the daemon's handler alone, and what it wrote."""
    stream = io.StringIO()
    logger = logging.getLogger("aiox400.test-names")
    logger.addHandler(daemon.log_handler(stream, timestamps=False))
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    try:
        yield logger, stream
    finally:
        logger.handlers.clear()
        logger.propagate = True
        logger.setLevel(logging.NOTSET)


def test_a_record_quoting_a_newline_stays_on_one_line() -> None:
    with daemon_logger() as (logger, stream):
        logger.warning("non-delivered %s to %s: %s", "[GB; ;A;x]", f"CN={FORGED}", "no route")
        logger.info("peer said %r then %s", "\r\x1b[2K", "x\u2028y\x85z")
    assert stream.getvalue().splitlines() == [
        "WARNING aiox400.test-names: non-delivered [GB; ;A;x] to CN=eth\\x0aFAKE line: no route",
        "INFO aiox400.test-names: peer said '\\r\\x1b[2K' then x\\u2028y\\x85z",
    ]


def test_a_traceback_keeps_its_lines_with_their_control_characters_escaped() -> None:
    with daemon_logger() as (logger, stream):
        try:
            raise ValueError("bad\rvalue")
        except ValueError:
            logger.exception("failed on %s", FORGED)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "ERROR aiox400.test-names: failed on eth\\x0aFAKE line"
    assert lines[1] == "Traceback (most recent call last):"
    assert lines[-1] == "ValueError: bad\\x0dvalue"


def test_the_daemon_configures_its_log_with_the_line_formatter(
    root_logging: logging.Logger, capsys: pytest.CaptureFixture[str]
) -> None:
    config = load_config(EXAMPLES / "site-a.toml")
    daemon._configure_logging(config, "info", timestamps=True)
    logging.getLogger("aiox400.mta").warning("received %s", FORGED)
    err = capsys.readouterr().err
    assert lines_starting_with_fake(err) == []
    assert err.count("\n") == 1 and err.endswith("received eth\\x0aFAKE line\n")
    (handler,) = root_logging.handlers
    assert isinstance(handler.formatter, daemon.LineFormatter)


# --- the store -------------------------------------------------------------------------


def test_the_store_escapes_a_subject_and_a_free_form_originator(tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path / 'store.db'}")
    apdu = samples.ipm_apdu(
        "names-1",
        subject=f"SITREP\n{FORGED}\x85",
        originator=ORDescriptor(free_form_name=f"Smith\r{FORGED}"),
    )
    user = samples.JONES.canonical
    try:
        with transaction(engine) as session:
            MessageStore(session).deliver(user, apdu, SENT)
        with transaction(engine) as session:
            (entry,) = MessageStore(session).list(user)
    finally:
        engine.dispose()
    assert entry.subject == "SITREP\\x0aeth\\x0aFAKE line\\x85"
    assert entry.originator == "Smith\\x0deth\\x0aFAKE line"


def test_the_store_refuses_a_mailbox_name_with_a_control_character(tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        with (
            pytest.raises(ValueError, match=r"mailbox name C=GB;CN=eth\\x0aFAKE has a control"),
            transaction(engine) as session,
        ):
            delivery = Delivery(user="C=GB;CN=eth\nFAKE", apdu=samples.ipm_apdu("names-2"))
            MessageStore(session).deliver_many((delivery,), SENT)
    finally:
        engine.dispose()


# --- what a peer transfers -------------------------------------------------------------


@pytest.fixture
def logs(root_logging: logging.Logger) -> Iterator[tuple[io.StringIO, io.StringIO]]:
    """What the daemons log, through the daemon's handler and through a plain one."""
    through_daemon, plain = io.StringIO(), io.StringIO()
    root_logging.addHandler(daemon.log_handler(through_daemon, timestamps=True))
    plain_handler = logging.StreamHandler(plain)
    plain_handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root_logging.addHandler(plain_handler)
    root_logging.setLevel(logging.DEBUG)
    yield through_daemon, plain


SMITH_AT_A = parse_orname(f"{A.domain};O=HQ;S=Smith")
TELETEX_CN = bytes((0x14, len(FORGED))) + FORGED.encode("latin-1")
"""teletex-common-name (X.411 18.5, extension attribute 2): any T.61 octet is legal."""
TELETEX_USER = parse_orname(f"{B.domain};O=HQ;EXT:2=#{TELETEX_CN.hex()}")
PRINTABLE_CN = ORName(country="GB", admd=" ", prmd="SITEB", organization="HQ", common_name=FORGED)
"""Encoded as given (the writer does not check alphabets): a PrintableString holding a
newline, which no PrintableString may."""
NOBODY_AT_B = f"{B.domain};O=HQ;S=Nobody"


def mailbox_names(site: Site) -> list[str]:
    """Every mailbox the site's store holds an entry for."""
    with sqlite3.connect(site.directory / "state" / "aiox400.db") as database:
        rows = database.execute("SELECT DISTINCT user FROM mailbox").fetchall()
    return sorted(str(user) for (user,) in rows)


@pytest.mark.slow
async def test_names_a_peer_sends_reach_neither_log_nor_store_with_a_control_character(
    lab: Lab, logs: tuple[io.StringIO, io.StringIO]
) -> None:
    jones_at_b = f"{B.domain};O=HQ;S=Jones"
    lab.b.list_users(jones_at_b, format_orname(TELETEX_USER))
    await lab.start()

    # A PrintableString holding a newline: the envelope does not decode, the transfer
    # is confirmed and kept in the quarantine as received, and nothing is delivered.
    refused = message_from_a(
        "names-printable",
        PRINTABLE_CN,
        subject="refused",
        originator=ORDescriptor(formal_name=SMITH_AT_A),
    )
    assert b"\x13\x0d" + FORGED.encode() in refused
    await transfer_as_a(lab.b, refused)
    (kept,) = (await lab.b.api({"op": "quarantine"}))["entries"]
    assert kept["size"] == len(refused)
    assert kept["reason"].isprintable()

    # A TeletexString common name may hold one: the name is kept as received and shown
    # in hex; the subject, the free-form originator and the MTS identifier (IA5String,
    # which may too) are escaped in what is logged and listed.
    await transfer_as_a(
        lab.b,
        message_from_a(
            f"names-{FORGED}",
            TELETEX_USER,
            subject=f"subject {FORGED}",
            originator=ORDescriptor(free_form_name=f"Smith {FORGED}"),
        ),
    )
    (entry,) = await eventually(
        lambda: lab.b.inbox(format_orname(TELETEX_USER)),
        lambda found: len(found) == 1,
        what="the teletex user's message at B",
    )
    assert entry["subject"] == "subject eth\\x0aFAKE line"
    assert entry["originator"] == "Smith eth\\x0aFAKE line"

    # A user B does not have: non-delivered at B, the report comes back to A's user.
    await lab.a.send(SMITH_AT_A.canonical, NOBODY_AT_B, Precedence.FLASH)
    await lab.a.send(SMITH_AT_A.canonical, jones_at_b, Precedence.FLASH)
    (report,) = await eventually(
        lambda: lab.a.reports(format_orname(SMITH_AT_A)),
        lambda found: len(found) == 1,
        what="a non-delivery report at A",
    )
    assert isinstance(report, Report)
    (recipient,) = report.content.recipients
    assert recipient.actual_recipient_name.canonical == parse_orname(NOBODY_AT_B).canonical
    assert recipient.last_trace_information.report == NonDeliveryReport(
        reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER,
        diagnostic_code=NonDeliveryDiagnostic.UNRECOGNISED_OR_NAME,
    )
    await eventually(
        lambda: lab.b.inbox(jones_at_b), lambda found: len(found) == 1, what="Jones's at B"
    )

    names = mailbox_names(lab.b)
    assert names == sorted([parse_orname(jones_at_b).canonical, TELETEX_USER.canonical])
    assert TELETEX_USER.canonical == f"C=gb;ADMD= ;PRMD=siteb;O=hq;EXT:2=#{TELETEX_CN.hex()}"
    assert all(name.isprintable() for name in names)
    through_daemon, plain = logs[0].getvalue(), logs[1].getvalue()
    assert "names-eth\\x0aFAKE line" in through_daemon
    assert "common-name: 0x0a at 3 is not a PrintableString character" in through_daemon
    assert lines_starting_with_fake(plain)  # what the same records would have forged
    assert lines_starting_with_fake(through_daemon) == []
