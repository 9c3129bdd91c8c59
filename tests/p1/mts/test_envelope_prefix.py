"""The envelope of a message read from the first octets of its MTS-APDU (X.411 12.2.1.1).

:func:`p1.mts.envelope.envelope_from_prefix` reads what a receiving MTA kept of a message
too long to be taken in.  For any legal message APDU (random field values, written in
random legal length forms: short, long with extra zero octets, indefinite) and any cut at
or after the envelope's last octet, it gives the envelope the whole APDU has; for a cut
before that, a DecodeError that says the envelope does not end within the octets kept.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks import samples
from p1 import ber
from p1.errors import DecodeError
from p1.mts.envelope import (
    Message,
    MessageEnvelope,
    encode_mts_apdu,
    envelope_from_prefix,
    peek_envelope,
)
from tests.p1 import ber_forms, strategies
from tests.support import store_samples

_LENGTHS_ONLY = ber_forms.Rules(string=lambda path, octet: False)
"""Every TLV's length in a random legal form; strings stay in one piece."""


def _envelope_end(apdu: bytes) -> int:
    """The offset just past the message's envelope, read with the whole APDU."""
    view = ber.as_view(apdu)
    _, body, _ = ber.read_header(view, 0, len(view))
    return ber.read(view, body, len(view))[4]


@pytest.mark.slow
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(message=strategies.messages, seed=st.integers(0, 2**32 - 1), data=st.data())
def test_any_cut_after_the_envelope_reads_the_same_envelope(
    message: Message, seed: int, data: st.DataObject
) -> None:
    apdu = ber_forms.reform(encode_mts_apdu(message), random.Random(seed), _LENGTHS_ONLY)
    whole = peek_envelope(apdu)
    assert isinstance(whole, MessageEnvelope)
    end = _envelope_end(apdu)
    cut = data.draw(st.integers(end, len(apdu)), label="cut after")
    assert envelope_from_prefix(apdu[:cut]) == whole
    assert envelope_from_prefix(memoryview(apdu)[:cut]) == whole
    early = data.draw(st.integers(0, end - 1), label="cut before")
    with pytest.raises(DecodeError) as caught:
        envelope_from_prefix(apdu[:early])
    assert "truncated" in str(caught.value) or "end-of-contents" in str(caught.value)


def test_a_large_content_cut_anywhere_after_the_envelope() -> None:
    apdu = _message(100_000)
    envelope = peek_envelope(apdu)
    end = _envelope_end(apdu)
    for cut in (end, end + 1, end + 5, 70_000, len(apdu)):
        assert envelope_from_prefix(apdu[:cut]) == envelope


def test_a_cut_inside_the_envelope_says_so() -> None:
    apdu = _message(5000)
    end = _envelope_end(apdu)
    with pytest.raises(DecodeError) as caught:
        envelope_from_prefix(apdu[: end - 1])
    assert str(caught.value).startswith(
        f"MessageTransferEnvelope: the envelope does not end within the first {end - 1} octets"
    )


@pytest.mark.parametrize(
    ("apdu", "kind"),
    [
        (store_samples.report_apdu("r1"), "a report"),
        (store_samples.probe_apdu("p1"), "a probe"),
        (bytes.fromhex("30 03 02 01 00"), "[UNIVERSAL 16]"),
        (bytes.fromhex("80 01 00"), "a message"),  # [0] primitive
    ],
    ids=["report", "probe", "sequence", "primitive"],
)
def test_what_is_not_a_message_is_named(apdu: bytes, kind: str) -> None:
    with pytest.raises(DecodeError) as caught:
        envelope_from_prefix(apdu[:40])
    assert str(caught.value) == f"MTS-APDU: the MTS-APDU is {kind}, not a message"


def test_nothing_at_all_is_truncated() -> None:
    with pytest.raises(DecodeError, match="truncated"):
        envelope_from_prefix(b"")
    with pytest.raises(DecodeError, match="truncated"):
        envelope_from_prefix(b"\xa0")


def _message(content_size: int) -> bytes:
    return samples.message_bytes(content_size)
