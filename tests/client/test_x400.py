"""The ``x400`` client against a running MTA: send, inbox, read, delete, and its exit codes.

The MTA is site A alone (no peers): messages between its own users are delivered into
its store.  ``x400.main`` blocks on the daemon's socket, so it runs in a worker thread
while the test's event loop serves the daemon.
"""

from __future__ import annotations

import asyncio
import io
import socket
from pathlib import Path

import pytest

from client import api, x400
from client.cli import EXIT_UNREACHABLE
from p1.mts.orname import format_orname, parse_orname
from tests.support.sites import Site, eventually, until

NOWHERE = "C=FR;ADMD= ;PRMD=NOWHERE;O=X;S=Nobody"


def smith(site: Site) -> str:
    return site.address("Smith")


def jones(site: Site) -> str:
    return site.address("Jones")


async def run(site: Site, command: str, *args: str) -> tuple[int, str, str]:
    """``x400 COMMAND --socket <site's> ARGS...``: exit code, output, errors."""
    return await site.x400(command, "--socket", str(site.socket), *args)


async def send(site: Site, *args: str) -> str:
    """Send from Smith to Jones; the MTS identifier printed."""
    code, out, err = await run(site, "send", "--from", smith(site), "--to", jones(site), *args)
    assert code == x400.EXIT_OK, err
    return out.strip()


async def inbox_ids(site: Site, user: str, count: int) -> list[int]:
    """The ids in ``user``'s mailbox, once it holds ``count`` entries."""
    found = await eventually(
        lambda: site.inbox(user), lambda m: len(m) == count, what=f"{count} in the mailbox"
    )
    return [m["id"] for m in found]


# --- send and the mailbox ------------------------------------------------------------------


async def test_send_prints_the_identifier_and_inbox_lists_the_message(site: Site) -> None:
    identifier = await send(site, "--precedence", "flash", "--subject", "SITREP 42")
    assert identifier.startswith("[GB; ;SITEA;")
    (entry_id,) = await inbox_ids(site, jones(site), 1)

    code, out, _ = await run(site, "inbox", "--user", jones(site))
    assert code == x400.EXIT_OK
    header, line, subject = out.splitlines()
    assert header.split() == ["ID", "PRECEDENCE", "KIND", "DELIVERED", "FROM", "/", "SUBJECT"]
    assert line.split()[:4] == [str(entry_id), "N", "flash", "message"]
    assert line.endswith(f"  {smith(site)}")
    assert subject.strip() == "SITREP 42"


async def test_inbox_follow_prints_each_delivery_until_the_mta_stops(site: Site) -> None:
    await send(site, "--precedence", "routine", "--subject", "BEFORE")
    (before,) = await inbox_ids(site, jones(site), 1)
    out, err = io.StringIO(), io.StringIO()
    argv = ["inbox", "--socket", str(site.socket), "--user", jones(site), "--follow"]
    following = asyncio.create_task(asyncio.to_thread(x400.main, argv, out=out, err=err))
    await until(lambda: site.running.watch.waiting == 1, what="x400 waiting for mail")
    assert "following the mailbox of" in err.getvalue()
    await send(site, "--precedence", "flash", "--subject", "ARRIVED")
    (after,) = set(await inbox_ids(site, jones(site), 2)) - {before}
    await until(lambda: "ARRIVED" in out.getvalue(), what="the new message printed")
    await site.stop()
    assert await following == x400.EXIT_FAILED
    header, old, old_subject, new, new_subject = out.getvalue().splitlines()
    assert header.split()[0] == "ID"
    assert (old.split()[:3], old_subject.strip()) == ([str(before), "N", "routine"], "BEFORE")
    assert (new.split()[:3], new_subject.strip()) == ([str(after), "N", "flash"], "ARRIVED")
    assert err.getvalue().endswith("x400: the MTA is stopping\n")


async def test_inbox_unread_follow_goes_on_after_the_newest_entry_read_or_not(
    site: Site,
) -> None:
    await send(site, "--precedence", "routine", "--subject", "UNREAD")
    (unread,) = await inbox_ids(site, jones(site), 1)
    await send(site, "--precedence", "routine", "--subject", "READ")
    (read,) = set(await inbox_ids(site, jones(site), 2)) - {unread}
    await site.read(jones(site), read)  # newer than the unread one, and read
    out, err = io.StringIO(), io.StringIO()
    argv = ["inbox", "--socket", str(site.socket), "-u", jones(site), "--unread", "--follow"]
    following = asyncio.create_task(asyncio.to_thread(x400.main, argv, out=out, err=err))
    await until(lambda: site.running.watch.waiting == 1, what="x400 waiting for mail")
    await send(site, "--precedence", "flash", "--subject", "NEW")
    await until(lambda: "NEW" in out.getvalue(), what="the new message printed")
    await site.stop()
    assert await following == x400.EXIT_FAILED
    subjects = [line.strip() for line in out.getvalue().splitlines()[2::2]]
    assert subjects == ["UNREAD", "NEW"]  # the read one is neither listed nor "new"


async def test_inbox_lists_in_the_order_its_help_says(
    site: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        x400._parser().parse_args(["inbox", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "The most urgent come first" in help_text
    assert "within a precedence the oldest first" in help_text
    for precedence, subject in [
        ("routine", "first routine"),
        ("flash", "the flash"),
        ("deferred", "the deferred"),
        ("routine", "second routine"),
        ("immediate", "the immediate"),
    ]:
        await send(site, "--precedence", precedence, "--subject", subject)
    await inbox_ids(site, jones(site), 5)
    code, out, _ = await run(site, "inbox", "--user", jones(site))
    assert code == x400.EXIT_OK
    subjects = [line.strip() for line in out.splitlines() if line.startswith(" " * 47)]
    assert subjects == [
        "the flash",
        "the immediate",
        "first routine",
        "second routine",
        "the deferred",
    ]


async def test_read_shows_the_message_and_marks_it_read(site: Site) -> None:
    identifier = await send(
        site, "-p", "immediate", "-s", "Orders", "--body", "Move at dawn.", "--cc", smith(site)
    )
    (entry_id,) = await inbox_ids(site, jones(site), 1)

    code, out, _ = await run(site, "read", str(entry_id), "--user", jones(site))
    assert code == x400.EXIT_OK
    assert f"MTS identifier: {identifier}\n" in out
    assert "precedence:     immediate\n" in out
    assert f"originator:     {smith(site)}\n" in out
    assert f"to:             {jones(site)}\n" in out
    assert f"cc:             {smith(site)}\n" in out
    assert "subject:        Orders\n" in out
    assert out.endswith("\nMove at dawn.\n")

    code, out, _ = await run(site, "inbox", "--user", jones(site), "--unread")
    given = format_orname(parse_orname(jones(site)))
    assert given != parse_orname(jones(site)).canonical  # the name has capitals
    assert (code, out) == (x400.EXIT_OK, f"no unread messages for {given}\n")


async def test_read_by_number_alone_needs_no_user_and_a_user_narrows_it(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("X400_USER", raising=False)
    identifier = await send(site, "-s", "By number")
    (entry_id,) = await inbox_ids(site, jones(site), 1)

    code, out, err = await run(site, "read", str(entry_id))
    assert (code, err) == (x400.EXIT_OK, "")
    assert f"MTS identifier: {identifier}\n" in out
    code, out, _ = await run(site, "inbox", "--user", jones(site), "--unread")
    assert out.startswith("no unread messages")  # marked read in Jones's mailbox

    code, _, err = await run(site, "read", str(entry_id), "--user", smith(site))
    assert code != x400.EXIT_OK
    assert f"no message {entry_id} in the mailbox of {parse_orname(smith(site)).canonical}" in err
    code, _, err = await run(site, "read", str(entry_id + 1))
    assert code != x400.EXIT_OK
    assert f"no message {entry_id + 1} in any mailbox" in err


async def test_delete_removes_messages_from_the_mailbox(site: Site) -> None:
    await send(site)
    await send(site)
    ids = await inbox_ids(site, jones(site), 2)

    code, out, _ = await run(site, "delete", *map(str, ids), "--user", jones(site))
    assert (code, out) == (x400.EXIT_OK, "deleted 2 message(s)\n")
    code, out, _ = await run(site, "inbox", "--user", jones(site))
    given = format_orname(parse_orname(jones(site)))
    assert (code, out) == (x400.EXIT_OK, f"no messages for {given}\n")


async def test_count_sends_that_many_messages(site: Site) -> None:
    code, out, err = await run(
        site, "send", "--from", smith(site), "--to", jones(site), "--count", "3"
    )
    assert code == x400.EXIT_OK
    assert len(set(out.splitlines())) == 3
    assert "x400: 3 messages submitted in " in err
    await inbox_ids(site, jones(site), 3)


async def test_p2_message_is_listed_at_its_envelope_precedence(site: Site) -> None:
    await send(site, "--p2", "--precedence", "priority", "--subject", "plain")
    (entry,) = await eventually(
        lambda: site.inbox(jones(site)), lambda m: len(m) == 1, what="the message"
    )
    assert (entry["precedence"], entry["subject"]) == ("priority", "plain")


async def test_size_and_body_file_give_the_body(site: Site, tmp_path: Path) -> None:
    body = tmp_path / "body.txt"
    body.write_text("Grüße aus dem Feld\n", encoding="utf-8")
    await send(site, "--size", "1k", "--subject", "sized")
    await send(site, "--body-file", str(body), "--subject", "from a file")
    messages = await eventually(
        lambda: site.inbox(jones(site)), lambda m: len(m) == 2, what="two messages"
    )
    by_subject = {m["subject"]: m for m in messages}
    assert by_subject["sized"]["size"] > 1024

    entry_id = str(by_subject["from a file"]["id"])
    code, out, _ = await run(site, "read", entry_id, "--user", jones(site))
    assert code == x400.EXIT_OK
    assert out.endswith("\nGrüße aus dem Feld\n\n")


# --- reports -------------------------------------------------------------------------------


async def test_delivery_report_reads_as_delivered(site: Site) -> None:
    identifier = await send(site, "--delivery-report")
    (report,) = await eventually(
        lambda: site.inbox(smith(site)), lambda m: len(m) == 1, what="the report"
    )
    assert report["kind"] == "report"

    code, out, _ = await run(site, "read", str(report["id"]), "--user", smith(site))
    assert code == x400.EXIT_OK
    assert f"report on:      {identifier}\n" in out
    assert f"  {jones(site)}: delivered\n" in out


async def test_no_route_is_announced_and_its_report_gives_the_reason(site: Site) -> None:
    code, out, err = await run(site, "send", "--from", smith(site), "--to", NOWHERE)
    assert code == x400.EXIT_OK
    assert err == f"x400: no route to {NOWHERE}: a non-delivery report follows\n"

    (report,) = await eventually(
        lambda: site.inbox(smith(site)), lambda m: len(m) == 1, what="the report"
    )
    code, out, _ = await run(site, "read", str(report["id"]), "--user", smith(site))
    assert code == x400.EXIT_OK
    assert ": not delivered: unable-to-transfer (unrecognised-or-name)\n" in out


# --- which MTA -----------------------------------------------------------------------------


async def test_config_file_and_environment_name_the_mta_and_the_user(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    await send(site)
    await inbox_ids(site, jones(site), 1)
    code, out, _ = await site.x400("inbox", "--config", str(site.config_file), "-u", jones(site))
    assert code == x400.EXIT_OK
    assert smith(site) in out

    monkeypatch.setenv("AIOX400_CONFIG", str(site.config_file))
    monkeypatch.setenv("X400_USER", jones(site))
    code, out, _ = await site.x400("inbox")
    assert code == x400.EXIT_OK
    assert smith(site) in out


async def test_without_mta_named_the_default_configuration_serves(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    await send(site)
    await inbox_ids(site, jones(site), 1)
    monkeypatch.delenv("AIOX400_CONFIG", raising=False)
    monkeypatch.setattr(api, "DEFAULT_CONFIG", site.config_file)
    code, out, err = await site.x400("inbox", "-u", jones(site))
    assert (code, err) == (x400.EXIT_OK, "")
    assert smith(site) in out


async def test_which_mta_config_then_socket_then_environment(
    site: Site, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    await send(site)
    await inbox_ids(site, jones(site), 1)
    nowhere = tmp_path / "nowhere"
    monkeypatch.setenv("AIOX400_CONFIG", str(nowhere / "mta.toml"))
    monkeypatch.setattr(api, "DEFAULT_CONFIG", nowhere / "default.toml")
    config, socket_ = str(site.config_file), str(site.socket)
    for argv in (
        ["--config", config, "--socket", str(nowhere / "control.sock")],
        ["--socket", socket_],
    ):
        code, out, err = await site.x400("inbox", "-u", jones(site), *argv)
        assert (code, err) == (x400.EXIT_OK, ""), argv
        assert smith(site) in out


async def test_only_the_control_socket_is_read_from_the_configuration(site: Site) -> None:
    # As an operator sees the MTA's file: readable, its password files not.
    text = site.config_file.read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.startswith("password ")]
    unreadable = site.directory / "mta.password"
    unreadable.write_text("secret\n", encoding="ascii")
    unreadable.chmod(0o644)  # (the daemon's loader refuses it; the client never opens it)
    operator = site.directory / "operator.toml"  # (relative paths as in the MTA's)
    operator.write_text(f'password_file = "{unreadable}"\n' + "\n".join(lines) + "\n")
    code, out, err = await site.x400("inbox", "-u", jones(site), "--config", str(operator))
    assert (code, err) == (x400.EXIT_OK, "")
    assert out.startswith("no messages for ")


# --- exit codes ------------------------------------------------------------------------------


def main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = x400.main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--to", "not an address"], "argument --to: 'not an address': "),
        (["--to", NOWHERE, "--precedence", "urgent"], "precedence 'urgent' is not one of"),
        (["--to", NOWHERE, "--size", "big"], "--size 'big': expected a number with k or M"),
        (["--to", NOWHERE, "--count", "0"], "'0': expected a count of 1 or more"),
        ([], "the following arguments are required: --to"),
    ],
    ids=["bad-address", "bad-precedence", "bad-size", "bad-count", "no-recipient"],
)
def test_bad_argument_exits_2_saying_which(
    args: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main("send", "--socket", "/nonexistent", "--from", "C=GB;ADMD= ;S=Smith", *args)
    assert stopped.value.code == x400.EXIT_USAGE
    assert error in capsys.readouterr().err


def test_mailbox_commands_without_a_user_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("X400_USER", raising=False)
    code, _, err = main("inbox", "--socket", "/nonexistent")
    assert (code, err) == (
        x400.EXIT_USAGE,
        "x400: say whose mailbox: --user OR-ADDRESS or $X400_USER\n",
    )


def test_no_mta_on_the_socket_exits_3(tmp_path: Path) -> None:
    missing = tmp_path / "none.sock"
    code, _, err = main("inbox", "--socket", str(missing), "--user", "C=GB;ADMD= ;S=Smith")
    assert (code, err) == (
        EXIT_UNREACHABLE,
        f"x400: the MTA is not running (no socket {missing})\n",
    )

    stale = tmp_path / "stale.sock"
    with socket.socket(socket.AF_UNIX) as left_behind:
        left_behind.bind(str(stale))  # a socket file nobody listens on, as after a crash
    code, _, err = main("inbox", "--socket", str(stale), "--user", "C=GB;ADMD= ;S=Smith")
    expected = f"x400: the MTA is not running (nothing listens on {stale})\n"
    assert (code, err) == (EXIT_UNREACHABLE, expected)


def test_no_mta_named_exits_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AIOX400_CONFIG", raising=False)
    monkeypatch.setattr(api, "DEFAULT_CONFIG", tmp_path / "etc" / "mta.toml")
    code, _, err = main("inbox", "--user", "C=GB;ADMD= ;S=Smith")
    expected = (
        "x400: say which MTA: --config FILE, --socket PATH or $AIOX400_CONFIG"
        f" (none given, and no {tmp_path / 'etc' / 'mta.toml'})\n"
    )
    assert (code, err) == (x400.EXIT_USAGE, expected)

    missing = tmp_path / "mta.toml"
    code, _, err = main("inbox", "--config", str(missing), "--user", "C=GB;ADMD= ;S=Smith")
    assert code == x400.EXIT_USAGE
    assert err.startswith(f"x400: {missing}: expected a readable file")


async def test_request_the_mta_refuses_exits_1_with_its_reason(site: Site) -> None:
    code, out, err = await run(site, "read", "999", "--user", jones(site))
    assert (code, out) == (x400.EXIT_FAILED, "")
    canonical = parse_orname(jones(site)).canonical
    assert err == f"x400: no message 999 in the mailbox of {canonical}\n"


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--category", "GBR"], "--category and --privacy-mark are parts of a label: give --label"),
        (
            ["--privacy-mark", "NATO"],
            "--category and --privacy-mark are parts of a label: give --label",
        ),
        (["--label", "SECRET", "--probe"], "--label: a probe carries no security label"),
    ],
    ids=["category-alone", "privacy-mark-alone", "probe"],
)
def test_label_parts_without_a_label_exit_2_before_the_mta_is_asked(
    args: list[str], error: str
) -> None:
    code, _, err = main(
        "send", "--socket", "/nonexistent", "--from", "C=GB;ADMD= ;S=Smith", "--to", NOWHERE, *args
    )
    assert (code, err) == (x400.EXIT_USAGE, f"x400: {error}\n")
