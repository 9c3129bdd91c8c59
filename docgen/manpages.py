"""The manual pages: x400-mta(1), x400(1), x400ctl(1), x400-dump(1) from the commands'
argparse parsers, and aiox400.toml(5) from the configuration schema.

What a parser does not hold (the files a command reads, its environment, the pages to
see also) is in :data:`COMMANDS`; everything else (options, subcommands and theirs, the
descriptions and examples) is read from the parser, so a command or option added there is
on its page once the pages are made again.  The exit status section is
:data:`client.cli.EXIT_CODES`, the table every ``--help`` ends with.

Public API::

    COMMANDS                   each command: its parser, files, environment, see also
    command_page(command) -> str   its section 1 page (roff)
    config_page() -> str           aiox400.toml(5) (roff)
    pages() -> dict[str, str]      file name under man/ -> roff, every page
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass

from client import dump, x400, x400ctl
from client.cli import EXIT_CODES
from config import doc
from docgen.roff import Page, bold, commands, escape, italic, option_tag, options, usage
from mta import command as mta_command

__all__ = ["COMMANDS", "CONFIG_PAGE", "Command", "command_page", "config_page", "pages"]

CONFIG_PAGE = "aiox400.toml"
"""The name of the configuration's page (section 5)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Command:
    """What a command's page says beside what its parser holds."""

    name: str
    summary: str
    parser: Callable[[], argparse.ArgumentParser]
    files: tuple[tuple[str, str], ...]
    environment: tuple[tuple[str, str], ...] = ()
    signals: tuple[tuple[str, str], ...] = ()


_CONFIG = ("/etc/aiox400/mta.toml", "the MTA's configuration (" + CONFIG_PAGE + "(5))")
_CLIENT = (
    "/etc/aiox400/client.toml",
    "a configuration for operators and users that names the control socket and holds no "
    "secret (deploy/README.md)",
)
_SOCKET = (
    "/var/lib/aiox400/control.sock",
    "the MTA's control socket (control_socket), through which x400 and x400ctl ask it",
)
_WHICH = (
    "AIOX400_CONFIG",
    "the configuration file to read when neither --config nor --socket is given",
)
_CACHE = (
    "AIOX400_CACHE_DIR",
    "where the compiled ASN.1 modules are cached (else $XDG_CACHE_HOME/aiox400, else "
    "~/.cache/aiox400)",
)

_CONFIG_FILES = (
    (
        "/etc/aiox400/mta.toml",
        "the MTA's file, read by x400-mta, and by x400 and x400ctl given --config",
    ),
    _CLIENT,
    (
        "/etc/aiox400/mta.password",
        "a password_file: mode 0600, owned by the account the MTA runs as",
    ),
)

COMMANDS: tuple[Command, ...] = (
    Command(
        name="x400-mta",
        summary="the aiox400 X.400 / STANAG 4406 message transfer agent",
        parser=mta_command.parser,
        files=(
            _CONFIG,
            ("/var/lib/aiox400/", "the state directory: database, APDU files, lock, socket"),
            ("/var/lib/aiox400/aiox400.db", "the SQLite store (with its -wal and -shm)"),
            ("/var/lib/aiox400/x400-mta.lock", "held by the one daemon of the directory"),
            _SOCKET,
            ("/etc/systemd/system/aiox400-mta.service", "the systemd unit (deploy/systemd/)"),
        ),
        signals=(
            (
                "SIGTERM, SIGINT",
                "stop cleanly: every transfer a peer confirmed is marked transferred, what "
                "was in flight goes back to the queue, idle associations are released and "
                "the others aborted as temporary-problem; nothing is lost",
            ),
            (
                "SIGHUP",
                "re-read the configuration file and apply the peers and their slots, the "
                "routes, [limits], [retention], [max_age], [retry], [dscp], the log level "
                "and [quarantine] without dropping a message; end the associations a peer "
                "bound with credentials that changed (a rotated password takes effect "
                "without a restart); log the keys that need a restart, each by name; a "
                "file that no longer loads is one error line and the running "
                "configuration is kept (systemctl reload aiox400-mta)",
            ),
        ),
        environment=(
            (
                "JOURNAL_STREAM",
                "set by systemd when standard error is the journal: each log line then "
                "starts with its syslog priority",
            ),
            ("NOTIFY_SOCKET", "set by systemd: readiness, status and the watchdog go there"),
            _CACHE,
        ),
    ),
    Command(
        name="x400",
        summary="send, list and read X.400 / STANAG 4406 messages through a local MTA",
        parser=x400._parser,
        files=(_CONFIG, _CLIENT, _SOCKET),
        environment=(_WHICH, ("X400_USER", "whose mailbox, when --user is not given"), _CACHE),
    ),
    Command(
        name="x400ctl",
        summary="the operator's tool for aiox400 MTAs",
        parser=x400ctl._parser,
        files=(_CONFIG, _CLIENT, _SOCKET),
        environment=(_WHICH,),
    ),
    Command(
        name="x400-dump",
        summary="decode an X.400 MTS-APDU, IPM/IPN or MTA-bind PDU",
        parser=dump._parser,
        files=(
            (
                "~/.cache/aiox400/",
                "the compiled ASN.1 modules, made on first use (see AIOX400_CACHE_DIR)",
            ),
        ),
        environment=(_CACHE,),
    ),
)
"""The four installed commands, in the order of the SEE ALSO sections."""


def pages() -> dict[str, str]:
    """Every page: its file name under ``man/`` and its roff text."""
    made = {f"{c.name}.1": command_page(c) for c in COMMANDS}
    made[f"{CONFIG_PAGE}.5"] = config_page()
    return made


def command_page(command: Command) -> str:
    """The section 1 page of ``command``."""
    parser = command.parser()
    shared = frozenset(flag for option in options(parser) for flag in option.flags)
    page = Page(command.name, 1, command.summary)
    page.heading("SYNOPSIS")
    page.raw(usage(command.name, parser))
    for path, sub in _leaves(parser):
        page.raw(".br", usage(f"{command.name} {path}", sub, shared))
    page.heading("DESCRIPTION")
    page.paragraphs(_without_examples(parser.description or ""))
    _options(page, parser)
    if commands(parser):
        page.heading("COMMANDS")
        _commands(page, command.name, "", parser, shared)
    _examples(page, parser.description or "")
    _pairs(page, "SIGNALS", command.signals)
    _exit_status(page)
    _pairs(page, "ENVIRONMENT", command.environment)
    _pairs(page, "FILES", command.files)
    _see_also(page, command.name)
    return page.text()


def _leaves(
    parser: argparse.ArgumentParser, path: str = ""
) -> list[tuple[str, argparse.ArgumentParser]]:
    """The subcommands that have none of their own, by their path from ``parser``."""
    found: list[tuple[str, argparse.ArgumentParser]] = []
    for name, _, sub in commands(parser):
        here = f"{path} {name}".strip()
        found += _leaves(sub, here) if commands(sub) else [(here, sub)]
    return found


def _options(page: Page, parser: argparse.ArgumentParser) -> None:
    found = options(parser)
    if found:
        page.heading("OPTIONS")
        for option in found:
            page.item(option_tag(option), option.help)


def _commands(
    page: Page, prog: str, path: str, parser: argparse.ArgumentParser, shared: frozenset[str]
) -> None:
    """Each subcommand: its synopsis, its description with its examples, and the options
    it adds (those of the command itself, which every subcommand takes, are not repeated:
    they are under OPTIONS)."""
    for name, summary, sub in commands(parser):
        here = f"{path} {name}".strip()
        page.subheading(escape(here))
        page.raw(".PP", usage(f"{prog} {here}", sub, shared))
        described = (sub.description or "").strip() or summary
        page.paragraphs(described[:1].upper() + described[1:])
        for option in options(sub, shared):
            page.item(option_tag(option), option.help)
        _commands(page, prog, here, sub, shared)


_EXAMPLES = re.compile(r"^examples?:\n", re.MULTILINE)


def _without_examples(text: str) -> str:
    return _EXAMPLES.split(text, maxsplit=1)[0].strip()


def _examples(page: Page, description: str) -> None:
    """The examples of the command's own help, a section of their own."""
    parts = _EXAMPLES.split(description, maxsplit=1)
    if len(parts) == 2:
        lines = [line.removeprefix("  ") for line in parts[1].strip("\n").split("\n")]
        page.heading("EXAMPLES")
        page.raw(".RS 4", ".nf", *(escape(line) for line in lines), ".fi", ".RE")


def _exit_status(page: Page) -> None:
    page.heading("EXIT STATUS")
    for code, meaning in EXIT_CODES:
        page.item(bold(str(code)), meaning)


def _pairs(page: Page, heading: str, pairs: tuple[tuple[str, str], ...]) -> None:
    if pairs:
        page.heading(heading)
        for name, meaning in pairs:
            page.item(italic(name) if "/" in name else bold(name), meaning)


def _see_also(page: Page, name: str) -> None:
    others = [f"{c.name}(1)" for c in COMMANDS if c.name != name]
    if name != CONFIG_PAGE:
        others.append(f"{CONFIG_PAGE}(5)")
    page.heading("SEE ALSO")
    page.raw(", ".join(_reference(other) for other in others) + ",")
    page.raw("systemd.service(5); the project's docs/operating.md and deploy/README.md.")


def _reference(name_section: str) -> str:
    name, _, section = name_section.partition("(")
    return f"{bold(name)}({section}"


def config_page() -> str:
    """aiox400.toml(5): the values' forms, then every key of every table."""
    page = Page(CONFIG_PAGE, 5, "configuration file of the aiox400 MTA, x400 and x400ctl")
    page.heading("SYNOPSIS")
    page.raw(italic("/etc/aiox400/mta.toml"))
    page.heading("DESCRIPTION")
    page.raw(*markdown(doc.VALUES))
    for section in doc.sections():
        page.heading(section.header.upper() if section.header[0] != "[" else section.header)
        if section.intro:
            page.raw(".PP", *_inline(" ".join(section.intro)).split("\n"))
        for key, kind, default, meaning in section.rows:
            tag = f"{bold(key)} ({escape(kind)}; default {_inline(default)})"
            page.raw(".TP", tag, *_inline(meaning).split("\n"))
    _pairs(page, "FILES", _CONFIG_FILES)
    _see_also(page, CONFIG_PAGE)
    return page.text()


def markdown(text: str) -> list[str]:
    """A little Markdown (paragraphs, ``- `` lists, code, bold, links) as roff lines."""
    lines: list[str] = []
    for block in re.split(r"\n\s*\n", text.strip()):
        if block.startswith("- "):
            for entry in re.split(r"\n(?=- )", block):
                lines += [".IP \\(bu 2", *_inline(" ".join(entry[2:].split())).split("\n")]
        else:
            lines += [".PP", *_inline(" ".join(block.split())).split("\n")]
    return lines


_SPANS = re.compile(r"`([^`]*)`|\*\*([^*]*)\*\*|\[([^]]*)\]\([^)]*\)")


def _inline(text: str) -> str:
    """Markdown's code and bold in bold, a link as its text; the rest escaped."""
    out: list[str] = []
    at = 0
    for span in _SPANS.finditer(text):
        out.append(escape(text[at : span.start()]))
        code, strong, link = span.groups()
        out.append(escape(link) if link is not None else bold(code if code is not None else strong))
        at = span.end()
    out.append(escape(text[at:]))
    return "".join(out)
