"""Selectors in the configuration: listeners' TSELs, peers' and slots' selectors, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from config import ConfigError, MtaConfig, load_config

HEAD = 'name = "MTA-A"\nglobal_domain = "C=GB;ADMD= ;PRMD=SITEA"\naccept_any_recipient = true\n'
ALL = '"override", "flash", "immediate", "priority", "routine", "deferred"'
PEER = '[[peers]]\nname = "PP"\nhost = "127.0.0.1"\n'
SLOT = "[[peers.slots]]\nprecedences = [{}]\nport = {}\n"


def load(tmp_path: Path, text: str) -> MtaConfig:
    path = tmp_path / "site-a.toml"
    path.write_text(HEAD + text, encoding="utf-8")
    return load_config(path)


def test_a_listener_serves_any_tsel_unless_told(tmp_path: Path) -> None:
    config = load(
        tmp_path, '[[listeners]]\nport = 5000\n[[listeners]]\nport = 5001\ntsel = "x400"\n'
    )
    assert config.listeners[0].tsels is None
    assert config.listeners[1].tsels == frozenset({b"x400"})


def test_a_listener_takes_a_list_of_tsels_and_none(tmp_path: Path) -> None:
    config = load(tmp_path, '[[listeners]]\nport = 5000\ntsel = ["591", "x400", "hex:0591", ""]\n')
    assert config.listeners[0].tsels == frozenset({b"591", b"x400", b"\x05\x91", b""})


def test_a_listener_serves_any_ssel_and_psel_unless_told(tmp_path: Path) -> None:
    text = '[[listeners]]\nport = 5000\n[[listeners]]\nport = 5001\nssel = ["hex:0001", ""]\n'
    text += 'psel = "P"\n'
    config = load(tmp_path, text)
    assert config.listeners[0].ssels is config.listeners[0].psels is None
    assert config.listeners[1].ssels == frozenset({b"\x00\x01", b""})
    assert config.listeners[1].psels == frozenset({b"P"})


def test_slots_inherit_the_peers_selectors_and_may_set_their_own(tmp_path: Path) -> None:
    text = PEER + 'tsel = "x400"\nssel = "hex:0001"\npsel = "P"\ncalling_tsel = "hex:0591"\n'
    text += SLOT.format('"override", "flash", "immediate", "priority"', 5003)
    text += 'tsel = "X400-88"\ncalling_psel = "us"\n'
    text += SLOT.format('"routine", "deferred"', 5000) + 'tsel = ""\n'
    peer = load(tmp_path, text).peers[0]
    assert (peer.selectors.tsel, peer.selectors.calling_tsel) == (b"x400", b"\x05\x91")
    urgent, routine = peer.slots
    assert urgent.selectors.tsel == b"X400-88"
    assert (urgent.selectors.ssel, urgent.selectors.psel) == (b"\x00\x01", b"P")
    assert (urgent.selectors.calling_tsel, urgent.selectors.calling_psel) == (b"\x05\x91", b"us")
    assert routine.selectors.tsel == b""  # none sent on this slot
    assert routine.selectors.ssel == b"\x00\x01"


def test_no_selector_by_default(tmp_path: Path) -> None:
    peer = load(tmp_path, PEER + SLOT.format(ALL, 5000)).peers[0]
    assert peer.slots[0].selectors == peer.selectors
    assert peer.selectors.tsel == peer.selectors.calling_psel == b""


TSEL = "a TSEL (X.224 TSAP-ID, up to 32 octets)"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            PEER + 'tsel = "hex:059"\n' + SLOT.format(ALL, 5000),
            f'peers[0].tsel = "hex:059": expected {TSEL}: an even, non-zero number of '
            "hexadecimal digits after hex:",
        ),
        (
            PEER + 'tsel = "hex:zz"\n' + SLOT.format(ALL, 5000),
            f'peers[0].tsel = "hex:zz": expected {TSEL}: an even, non-zero number of '
            "hexadecimal digits after hex:",
        ),
        (
            PEER + SLOT.format(ALL, 5000) + f'calling_tsel = "{"t" * 33}"\n',
            f'peers[0].slots[0].calling_tsel = "{"t" * 33}": expected {TSEL}: at most 32 '
            "octets (33 given)",
        ),
        (
            PEER + 'ssel = "seventeen octets!"\n' + SLOT.format(ALL, 5000),
            'peers[0].ssel = "seventeen octets!": expected an SSEL (X.225 session selector, '
            "up to 16 octets): at most 16 octets (17 given)",
        ),
        (
            PEER + 'psel = "café"\n' + SLOT.format(ALL, 5000),
            'peers[0].psel = "café": expected a PSEL (X.226 presentation selector, up to 64 '
            "octets): printable ASCII text, or hex: and hexadecimal digits",
        ),
        (
            '[[listeners]]\nport = 5000\ntsel = ["x400", "hex:5"]\n',
            'listeners[0].tsel = ["x400", "hex:5"]: expected a TSEL (X.224 TSAP-ID, up to 32 '
            "octets): an even, non-zero number of hexadecimal digits after hex:",
        ),
        (
            "[[listeners]]\nport = 5000\ntsel = []\n",
            "listeners[0].tsel = []: expected a TSEL or a non-empty list of TSELs",
        ),
        (
            "[[listeners]]\nport = 5000\nssel = []\n",
            "listeners[0].ssel = []: expected an SSEL or a non-empty list of SSELs",
        ),
        (
            f'[[listeners]]\nport = 5000\npsel = ["{"p" * 65}"]\n',
            f'listeners[0].psel = ["{"p" * 65}"]: expected a PSEL (X.226 presentation selector, '
            "up to 64 octets): at most 64",
        ),
        (
            PEER + "tsel = 591\n" + SLOT.format(ALL, 5000),
            f"peers[0].tsel = 591: expected {TSEL}: text such as",
        ),
    ],
)
def test_a_bad_selector_names_file_key_and_value(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, text)
    assert str(raised.value).startswith(f"{tmp_path / 'site-a.toml'}: {message}"), str(raised.value)
