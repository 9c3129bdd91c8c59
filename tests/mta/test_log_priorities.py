"""Log lines carry their syslog priority when standard error is the journal (systemd's
``$JOURNAL_STREAM``, systemd.exec(5)) or ``--log-prefix-priorities`` asks, so that the
journal files a warning as a warning (sd-daemon(3)); each line stays one line."""

from __future__ import annotations

import io
import logging
import os
import sys
from pathlib import Path

import pytest

from mta.daemon import EXIT_OK, LineFormatter, log_handler, stderr_is_journal, syslog_priority
from tests.support.process import Daemon
from tests.support.sites import solo_site

FORM = "%(levelname)s %(name)s: %(message)s"


def record(level: int, message: str) -> logging.LogRecord:
    return logging.LogRecord("aiox400.test", level, __file__, 1, message, None, None)


@pytest.mark.parametrize(
    ("level", "priority"),
    [
        (logging.DEBUG, 7),
        (logging.INFO, 6),
        (logging.WARNING, 4),
        (logging.ERROR, 3),
        (logging.CRITICAL, 2),
        (logging.INFO + 5, 6),
        (logging.NOTSET, 7),
    ],
)
def test_each_level_has_its_syslog_priority(level: int, priority: int) -> None:
    assert syslog_priority(level) == priority


def test_a_prefixed_line_keeps_its_control_characters_escaped() -> None:
    formatter = LineFormatter(FORM, priorities=True)
    line = formatter.format(record(logging.WARNING, "from peer\nINFO forged"))
    assert line == "<4>WARNING aiox400.test: from peer\\x0aINFO forged"


def test_without_priorities_lines_are_as_before() -> None:
    line = LineFormatter(FORM).format(record(logging.ERROR, "bad"))
    assert line == "ERROR aiox400.test: bad"


def test_every_line_of_a_traceback_carries_the_records_priority() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        failed = record(logging.ERROR, "failed")
        failed.exc_info = sys.exc_info()
    lines = LineFormatter(FORM, priorities=True).format(failed).split("\n")
    assert len(lines) > 2
    assert all(line.startswith("<3>") for line in lines)


def test_the_handler_writes_prefixed_lines() -> None:
    stream = io.StringIO()
    handler = log_handler(stream, timestamps=False, priorities=True)
    handler.handle(record(logging.WARNING, "slot down"))
    assert stream.getvalue() == "<4>WARNING aiox400.test: slot down\n"


def test_journal_stream_is_recognised_by_device_and_inode(tmp_path: Path) -> None:
    with (tmp_path / "stream").open("wb") as stream:
        status = os.fstat(stream.fileno())
        named = {"JOURNAL_STREAM": f"{status.st_dev}:{status.st_ino}"}
        assert stderr_is_journal(named, stream.fileno())
        other = {"JOURNAL_STREAM": f"{status.st_dev}:{status.st_ino + 1}"}
        assert not stderr_is_journal(other, stream.fileno())
        assert not stderr_is_journal({"JOURNAL_STREAM": "journal"}, stream.fileno())
        assert not stderr_is_journal({}, stream.fileno())


@pytest.mark.slow
def test_a_daemon_whose_stderr_is_the_journal_prefixes_its_lines(tmp_path: Path) -> None:
    site = solo_site(tmp_path / "site")
    site.settings["log_level"] = "info"
    log = tmp_path / "mta.log"
    log.touch()
    status = log.stat()
    environ = dict(os.environ, JOURNAL_STREAM=f"{status.st_dev}:{status.st_ino}")
    daemon = Daemon(site.write(), log, env=environ, args=("--no-timestamps",)).start()
    try:
        assert daemon.wait_for_line(" started: ").startswith("<6>INFO aiox400.mta: ")
        assert daemon.stop() == EXIT_OK
    finally:
        daemon.kill()
    lines = daemon.text().splitlines()
    assert lines
    assert all(line.startswith("<") for line in lines), lines
