"""p1.mts.downgrade: an MTS-APDU made fit for an X.410-1984 mode peer (X.419 Annex B)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from p1 import ber
from p1.errors import DecodeError
from p1.ipms.ipm import decode_content
from p1.mts.downgrade import Downgraded, NotDowngradable, ReportDiscarded, downgrade_to_1984
from p1.mts.envelope import (
    Criticality,
    DeliveryReport,
    EncodedInformationTypes,
    ExtensionField,
    GlobalDomainIdentifier,
    InternalTraceEntry,
    LastTraceInformation,
    Message,
    MessageEnvelope,
    MTSApdu,
    MTSIdentifier,
    OtherActions,
    PerRecipientIndicators,
    Probe,
    RecipientField,
    Report,
    ReportContent,
    ReportEnvelope,
    ReportRecipientField,
    TraceEntry,
    decode_mts_apdu,
    encode_message_envelope,
    encode_mts_apdu,
    internal_trace_extension,
    latest_delivery_time_extension,
)
from p1.mts.fields import BuiltInEncodedInformationTypes
from p1.mts.orname import ExtensionAttribute, ORName
from p1.mts.report import NonDeliveryDiagnostic, NonDeliveryReason
from tests.p1 import strategies
from tests.profiles import examples

HYPOTHESIS = settings(max_examples=examples(1), suppress_health_check=[HealthCheck.too_slow])

HERE = GlobalDomainIdentifier(country="GB", admd=" ", prmd="SITEA")
WHEN = datetime(2026, 11, 24, 10, 0, 0, tzinfo=UTC)
SMITH = ORName(country="GB", admd=" ", prmd="SITEA", organization="ACME", surname="Smith")
JONES = ORName(country="GB", admd=" ", prmd="SITEB", surname="Jones")
BROWN = ORName(country="GB", admd=" ", prmd="SITEB", surname="Brown")
TRACE = TraceEntry(global_domain_identifier=HERE, arrival_time=WHEN)
PRIVATE = ExtensionField(type="1.3.6.1.4.1.99.1", value=b"\x05\x00")
INTERNAL = internal_trace_extension(
    [InternalTraceEntry(global_domain_identifier=HERE, mta_name="MTA-A", arrival_time=WHEN)]
)


def recipient(name: ORName = JONES, number: int = 1, **changes: Any) -> RecipientField:
    fields: dict[str, Any] = {
        "recipient_name": name,
        "originally_specified_recipient_number": number,
        "per_recipient_indicators": PerRecipientIndicators(responsibility=True),
    }
    fields.update(changes)
    return RecipientField(**fields)


def envelope(**changes: Any) -> MessageEnvelope:
    fields: dict[str, Any] = {
        "mts_identifier": MTSIdentifier(global_domain_identifier=HERE, local_identifier="m1"),
        "originator_name": SMITH,
        "content_type": 2,
        "trace_information": (TRACE,),
        "recipients": (recipient(),),
    }
    fields.update(changes)
    return MessageEnvelope(**fields)


def message(**changes: Any) -> bytes:
    return encode_mts_apdu(Message(envelope=envelope(**changes), content=b"IPM"))


def report(*, envelope_changes: Any = None, **content_changes: Any) -> Report:
    reported = ReportRecipientField(
        actual_recipient_name=JONES,
        originally_specified_recipient_number=1,
        per_recipient_indicators=PerRecipientIndicators(responsibility=True),
        last_trace_information=LastTraceInformation(
            arrival_time=WHEN, report=DeliveryReport(message_delivery_time=WHEN)
        ),
    )
    fields: dict[str, Any] = {
        "subject_identifier": MTSIdentifier(global_domain_identifier=HERE, local_identifier="m1"),
        "recipients": (reported,),
    }
    fields.update(content_changes)
    envelope_fields: dict[str, Any] = {
        "report_identifier": MTSIdentifier(global_domain_identifier=HERE, local_identifier="r1"),
        "report_destination_name": SMITH,
        "trace_information": (TRACE,),
    }
    envelope_fields.update(envelope_changes or {})
    return Report(envelope=ReportEnvelope(**envelope_fields), content=ReportContent(**fields))


def downgraded(data: bytes, **options: bool) -> Downgraded:
    outcome = downgrade_to_1984(data, **options)
    assert isinstance(outcome, Downgraded), outcome
    return outcome


# --- what 1984 can carry, as the tests see it (independent of the module) ----------------


def name_1984(name: ORName) -> ORName | None:
    """``name`` as X.411 (1984) carries it, or None when it cannot."""
    if name.extension_attributes or name.common_name is not None:
        return None
    if name.numeric_user_identifier is not None and name.prmd is not None:
        return None
    address = dataclasses.replace(name, directory_name=None)
    return None if address == ORName() else address


def without(order: tuple[str, ...], *names: str) -> tuple[str, ...]:
    return tuple(name for name in order if name not in names)


def eits_1984(eits: EncodedInformationTypes | None) -> EncodedInformationTypes | None:
    if eits is None:
        return None
    return dataclasses.replace(eits, extended=(), wire_order=without(eits.wire_order, "extended"))


def trace_1984(entries: tuple[TraceEntry, ...]) -> tuple[TraceEntry, ...]:
    return tuple(
        dataclasses.replace(
            e,
            other_actions=OtherActions(),
            converted_encoded_information_types=eits_1984(e.converted_encoded_information_types),
            wire_order=without(e.wire_order, "other_actions"),
        )
        for e in entries
    )


def sure_1984(name: ORName) -> ORName:
    carried = name_1984(name)
    assert carried is not None
    return carried


def critical(extensions: tuple[ExtensionField, ...]) -> bool:
    return any(e.critical_for_transfer or e.critical_for_delivery for e in extensions)


def recipient_1984(field: RecipientField) -> RecipientField | None:
    name = name_1984(field.recipient_name)
    if name is None or critical(field.extensions):
        return None
    order = without(field.wire_order, "extensions")
    return dataclasses.replace(field, recipient_name=name, extensions=(), wire_order=order)


def expected_transfer(value: MessageEnvelope | Probe) -> tuple[Any, tuple[int, ...]] | None:
    """The down-graded envelope and the refused recipients, or None: not down-gradable.
    (A message of content type 22 is left to :func:`content_type_1984`.)"""
    originator = name_1984(value.originator_name)
    if isinstance(value.content_type, str) or originator is None or critical(value.extensions):
        return None
    kept = [r for r in map(recipient_1984, value.recipients) if r is not None]
    refused = tuple(
        r.originally_specified_recipient_number
        for r in value.recipients
        if r.responsible and recipient_1984(r) is None
    )
    if not kept or (refused and not any(r.responsible for r in kept)):
        return None
    new = dataclasses.replace(
        value,
        originator_name=originator,
        original_encoded_information_types=eits_1984(value.original_encoded_information_types),
        trace_information=trace_1984(value.trace_information),
        content_type=2 if value.content_type == 22 else value.content_type,
        extensions=(),
        recipients=tuple(kept),
        wire_order=without(value.wire_order, "extensions"),
    )
    return new, refused


def content_1984(apdu: MTSApdu) -> bool:
    """False for a message of content type 22 whose content is no IPM or IPN (it cannot
    be down-graded); one whose content is, the random contents of these strategies
    almost never, is judged by tests/p1/ipms/test_p2_1984.py, and skipped here."""
    if not isinstance(apdu, Message) or apdu.envelope.content_type != 22:
        return True
    try:
        decode_content(apdu.content, 22)
    except DecodeError:
        return False
    assume(False)
    return True


def expected_report(value: Report) -> Report | None:
    content = value.content
    names = [value.envelope.report_destination_name]
    extensions = [value.envelope.extensions, content.extensions]
    recipients = []
    for field in content.recipients:
        names.append(field.actual_recipient_name)
        if field.originally_intended_recipient_name is not None:
            names.append(field.originally_intended_recipient_name)
        extensions.append(field.extensions)
        last = field.last_trace_information
        recipients.append(
            dataclasses.replace(
                field,
                actual_recipient_name=field.actual_recipient_name,
                originally_intended_recipient_name=field.originally_intended_recipient_name,
                last_trace_information=dataclasses.replace(
                    last,
                    converted_encoded_information_types=eits_1984(
                        last.converted_encoded_information_types
                    ),
                ),
                extensions=(),
                wire_order=without(field.wire_order, "extensions"),
            )
        )
    if any(name_1984(n) is None for n in names) or any(critical(e) for e in extensions):
        return None
    recipients = [
        dataclasses.replace(
            r,
            actual_recipient_name=sure_1984(r.actual_recipient_name),
            originally_intended_recipient_name=None
            if r.originally_intended_recipient_name is None
            else sure_1984(r.originally_intended_recipient_name),
        )
        for r in recipients
    ]
    return Report(
        envelope=dataclasses.replace(
            value.envelope,
            report_destination_name=sure_1984(value.envelope.report_destination_name),
            trace_information=trace_1984(value.envelope.trace_information),
            extensions=(),
            wire_order=without(value.envelope.wire_order, "extensions"),
        ),
        content=dataclasses.replace(
            content,
            subject_intermediate_trace_information=trace_1984(
                content.subject_intermediate_trace_information
            ),
            original_encoded_information_types=None,
            content_type=None,
            extensions=(),
            recipients=tuple(recipients),
            wire_order=without(
                content.wire_order,
                "extensions",
                "content_type",
                "original_encoded_information_types",
            ),
        ),
    )


def assert_only_1984(apdu: MTSApdu) -> None:
    """No member X.411 (1984) lacks, anywhere in a decoded APDU."""
    if isinstance(apdu, Report):
        parts: list[Any] = [apdu.envelope, apdu.content, *apdu.content.recipients]
        names = [apdu.envelope.report_destination_name]
        names += [r.actual_recipient_name for r in apdu.content.recipients]
        trace = apdu.envelope.trace_information
        trace += apdu.content.subject_intermediate_trace_information
        eits = [r.last_trace_information.converted_encoded_information_types for r in parts[2:]]
        assert apdu.content.content_type is None
        assert apdu.content.original_encoded_information_types is None
    else:
        value = apdu.envelope if isinstance(apdu, Message) else apdu
        parts = [value, *value.recipients]
        names = [value.originator_name, *(r.recipient_name for r in value.recipients)]
        trace = value.trace_information
        eits = [value.original_encoded_information_types]
        assert isinstance(value.content_type, int)
    for part in parts:
        assert part.extensions == ()
        assert "extensions" not in part.wire_order
    for name in names:
        assert name_1984(name) == name
        assert name.directory_name is None
    for entry in trace:
        assert entry.other_actions.is_empty and "other_actions" not in entry.wire_order
        eits.append(entry.converted_encoded_information_types)
    assert all(e is None or e.extended == () for e in eits)


def map_transfer(apdu: Message | Probe, change: Callable[[Any], Any]) -> MTSApdu:
    """``apdu`` with ``change`` applied to its envelope (a probe is its envelope)."""
    if isinstance(apdu, Message):
        return Message(envelope=change(apdu.envelope), content=apdu.content)
    result: Probe = change(apdu)
    return result


def stripped(apdu: MTSApdu) -> MTSApdu:
    """``apdu`` with what 1984 lacks left out (names and content type made legal)."""
    if isinstance(apdu, Report):
        legal = expected_report(lawful_report_names(apdu))
        assert legal is not None
        return legal
    return map_transfer(apdu, transfer_1984)


def transfer_1984(value: MessageEnvelope | Probe) -> MessageEnvelope | Probe:
    """A message envelope or probe with what 1984 lacks left out."""
    legal = dataclasses.replace(
        value,
        originator_name=lawful(value.originator_name),
        content_type=2,
        extensions=(),
        recipients=tuple(
            dataclasses.replace(r, recipient_name=lawful(r.recipient_name), extensions=())
            for r in value.recipients
        ),
    )
    expected = expected_transfer(legal)
    assert expected is not None
    result: MessageEnvelope | Probe = expected[0]
    return result


def lawful(name: ORName) -> ORName:
    return dataclasses.replace(
        name, common_name=None, common_name_position=None, extension_attributes=()
    )


def lawful_report_names(value: Report) -> Report:
    content = value.content
    return Report(
        envelope=dataclasses.replace(
            value.envelope,
            report_destination_name=lawful(value.envelope.report_destination_name),
            extensions=(),
        ),
        content=dataclasses.replace(
            content,
            extensions=(),
            recipients=tuple(
                dataclasses.replace(
                    r,
                    actual_recipient_name=lawful(r.actual_recipient_name),
                    originally_intended_recipient_name=None
                    if r.originally_intended_recipient_name is None
                    else lawful(r.originally_intended_recipient_name),
                    extensions=(),
                )
                for r in content.recipients
            ),
        ),
    )


def names_made_lawful(apdu: MTSApdu) -> MTSApdu:
    """``apdu`` with legal names and content type but its extensions kept."""
    if isinstance(apdu, Report):
        made = lawful_report_names(apdu)
        return Report(
            envelope=dataclasses.replace(made.envelope, extensions=apdu.envelope.extensions),
            content=dataclasses.replace(made.content, extensions=apdu.content.extensions),
        )
    return map_transfer(
        apdu,
        lambda value: dataclasses.replace(
            value,
            originator_name=lawful(value.originator_name),
            content_type=2,
            recipients=tuple(
                dataclasses.replace(r, recipient_name=lawful(r.recipient_name))
                for r in value.recipients
            ),
        ),
    )


def recipients_alone_vary(apdu: MTSApdu) -> MTSApdu:
    """``apdu`` down-gradable but perhaps for its recipients (reports: names made lawful)."""
    if isinstance(apdu, Report):
        return names_made_lawful(apdu)
    return map_transfer(
        apdu,
        lambda value: dataclasses.replace(
            value,
            originator_name=lawful(value.originator_name),
            content_type=2,
            extensions=tuple(e for e in value.extensions if not critical((e,))),
        ),
    )


apdus_1988 = st.one_of(
    strategies.mts_apdus,
    strategies.mts_apdus.map(names_made_lawful),
    strategies.mts_apdus.map(recipients_alone_vary),
)


# --- properties ------------------------------------------------------------------------


@pytest.mark.slow
@HYPOTHESIS
@given(strategies.mts_apdus.map(stripped), st.booleans())
def test_1984_legal_apdu_comes_out_as_the_very_bytes(apdu: MTSApdu, cn_as_dda: bool) -> None:
    data = encode_mts_apdu(apdu)
    outcome = downgrade_to_1984(data, common_name_as_dda=cn_as_dda)
    assert outcome == Downgraded(apdu=data)


@pytest.mark.slow
@HYPOTHESIS
@given(strategies.mts_apdus.map(stripped))
def test_1984_legal_apdu_received_in_any_member_order_is_unchanged(apdu: MTSApdu) -> None:
    data = encode_mts_apdu(decode_mts_apdu(encode_mts_apdu(apdu)))
    assert downgraded(data).apdu == data


@pytest.mark.slow
@HYPOTHESIS
@given(apdus_1988)
def test_1988_apdu_is_refused_or_keeps_every_1984_member(apdu: MTSApdu) -> None:
    outcome = downgrade_to_1984(encode_mts_apdu(apdu))
    expected_value: MTSApdu | None
    if isinstance(apdu, Report):
        expected_value = expected_report(apdu)
        if expected_value is None:
            assert isinstance(outcome, ReportDiscarded)
            return
        assert isinstance(outcome, Downgraded)
        assert outcome.refused == ()
    else:
        value = apdu.envelope if isinstance(apdu, Message) else apdu
        expected = expected_transfer(value) if content_1984(apdu) else None
        if expected is None:
            assert isinstance(outcome, NotDowngradable)
            assert (outcome.reason, outcome.diagnostic) == (1, 47)
            return
        assert isinstance(outcome, Downgraded)
        assert outcome.refused == expected[1]
        expected_value = (
            Message(envelope=expected[0], content=apdu.content)
            if isinstance(apdu, Message)
            else expected[0]
        )
    decoded = decode_mts_apdu(outcome.apdu)
    assert_only_1984(decoded)
    assert decoded == expected_value
    assert bool(outcome.removed) == (outcome.apdu != encode_mts_apdu(apdu))


@pytest.mark.slow
@HYPOTHESIS
@given(apdus_1988)
def test_downgrading_twice_changes_nothing_more(apdu: MTSApdu) -> None:
    first = downgrade_to_1984(encode_mts_apdu(apdu))
    if isinstance(first, Downgraded):
        assert downgrade_to_1984(first.apdu) == Downgraded(apdu=first.apdu)


# --- rule 1: extensions ----------------------------------------------------------------


def test_non_critical_extensions_are_removed_and_the_rest_kept_byte_exact() -> None:
    result = downgraded(message(extensions=(PRIVATE, INTERNAL)))
    assert result.apdu == message()
    assert result.removed == (
        "extensions: private-extension 1.3.6.1.4.1.99.1",
        "extensions: internal-trace-information",
    )
    assert result.refused == ()


def test_extension_critical_for_submission_only_is_removed() -> None:
    field = dataclasses.replace(PRIVATE, criticality=Criticality(for_submission=True))
    assert downgraded(message(extensions=(field,))).apdu == message()


@pytest.mark.parametrize(
    "criticality", [Criticality(for_transfer=True), Criticality(for_delivery=True)]
)
def test_critical_extension_makes_the_message_not_downgradable(criticality: Criticality) -> None:
    field = dataclasses.replace(PRIVATE, criticality=criticality)
    outcome = downgrade_to_1984(message(extensions=(field,)))
    assert outcome == NotDowngradable("extensions: private-extension 1.3.6.1.4.1.99.1 is critical")
    assert outcome.reason == NonDeliveryReason.UNABLE_TO_TRANSFER
    assert outcome.diagnostic == NonDeliveryDiagnostic.UNABLE_TO_DOWNGRADE
    assert outcome.diagnostic == 47


def test_latest_delivery_time_as_recommended_is_critical_for_delivery() -> None:
    outcome = downgrade_to_1984(message(extensions=(latest_delivery_time_extension(WHEN),)))
    assert isinstance(outcome, NotDowngradable)
    assert "latest-delivery-time" in outcome.why


def test_empty_extensions_sent_explicitly_are_removed() -> None:
    order = ("mts_identifier", "originator_name", "content_type", "extensions")
    data = message(wire_order=order)
    assert b"\xa3\x00" in data
    result = downgraded(data)
    assert result.apdu == message(wire_order=order[:-1])
    assert result.removed == ("extensions: empty, sent explicitly",)


def test_per_recipient_extensions_are_removed() -> None:
    data = message(recipients=(recipient(extensions=(PRIVATE,)),))
    result = downgraded(data)
    assert result.apdu == message()
    assert result.removed == (
        "per-recipient-fields[0].extensions: private-extension 1.3.6.1.4.1.99.1",
    )


def test_recipient_with_a_critical_extension_is_refused_alone() -> None:
    bad = dataclasses.replace(PRIVATE, criticality=Criticality(for_transfer=True))
    data = message(recipients=(recipient(extensions=(bad,)), recipient(BROWN, 2)))
    result = downgraded(data)
    assert result.refused == (1,)
    assert result.apdu == message(recipients=(recipient(BROWN, 2),))


def test_message_content_keeps_its_received_encoding() -> None:
    segmented = b"\x24\x80" + ber.tlv(ber.OCTET_STRING, b"IP") + b"\x04\x01M" + b"\x00\x00"
    body = encode_message_envelope(envelope(extensions=(PRIVATE,))) + segmented
    data = b"\xa0" + ber.length_octets(len(body)) + body
    result = downgraded(data)
    assert result.apdu.endswith(segmented)
    decoded = decode_mts_apdu(result.apdu)
    assert isinstance(decoded, Message)
    assert decoded.content == b"IPM"
    assert decoded.envelope == envelope()


# --- rule 2: content type --------------------------------------------------------------


def test_extended_content_type_cannot_be_downgraded() -> None:
    outcome = downgrade_to_1984(message(content_type="1.3.26.0.4406.0.4.1"))
    assert outcome == NotDowngradable("content-type: extended content type 1.3.26.0.4406.0.4.1")


@pytest.mark.parametrize("content_type", [0, 2, 35, 1000])
def test_built_in_content_type_is_carried(content_type: int) -> None:
    data = message(content_type=content_type)
    assert downgrade_to_1984(data) == Downgraded(apdu=data)


def test_content_type_22_that_is_no_ipm_cannot_be_downgraded() -> None:
    outcome = downgrade_to_1984(message(content_type=22))
    assert isinstance(outcome, NotDowngradable)
    assert outcome.why.startswith("content: an IPM of content type 22 that does not decode")
    assert (outcome.reason, outcome.diagnostic) == (1, 47)


def test_probe_of_content_type_22_goes_as_2() -> None:
    probe = Probe(
        probe_identifier=MTSIdentifier(global_domain_identifier=HERE, local_identifier="p1"),
        originator_name=SMITH,
        content_type=22,
        content_length=1000,
        trace_information=(TRACE,),
        recipients=(recipient(),),
    )
    result = downgraded(encode_mts_apdu(probe))
    assert result.removed == ("content-type: interpersonal-messaging-1988 (22) as 1984 (2)",)
    assert decode_mts_apdu(result.apdu) == dataclasses.replace(probe, content_type=2)


# --- rule 3: O/R names -----------------------------------------------------------------

TELETEX_CN = ExtensionAttribute(type=2, value=ber.tlv(ber.universal(20), b"Smith"))


@pytest.mark.parametrize(
    ("name", "why"),
    [
        (
            dataclasses.replace(SMITH, extension_attributes=(TELETEX_CN,)),
            "originator-name: extension attribute(s) 2",
        ),
        (
            dataclasses.replace(SMITH, common_name="Duty Officer"),
            "originator-name: extension attribute common-name",
        ),
        (
            ORName(country="GB", admd="BT", prmd="SITEA", numeric_user_identifier="1234"),
            "originator-name: numeric form with a private domain name",
        ),
        (
            ORName(directory_name=bytes.fromhex("3000")),
            "originator-name: a directory name without an O/R address",
        ),
    ],
)
def test_originator_name_1984_cannot_carry_blocks_the_message(name: ORName, why: str) -> None:
    assert downgrade_to_1984(message(originator_name=name)) == NotDowngradable(why)


def test_numeric_form_without_private_domain_is_carried() -> None:
    name = ORName(country="GB", admd="BT", numeric_user_identifier="1234")
    data = message(originator_name=name)
    assert downgrade_to_1984(data) == Downgraded(apdu=data)


def test_directory_name_is_removed_from_a_name_with_an_address() -> None:
    name = dataclasses.replace(SMITH, directory_name=bytes.fromhex("3000"))
    result = downgraded(message(originator_name=name))
    assert result.apdu == message()
    assert result.removed == ("originator-name: directory-name",)


def test_common_name_becomes_a_common_dda_on_request() -> None:
    name = dataclasses.replace(SMITH, common_name="Duty Officer", domain_defined=(("ID", "7"),))
    result = downgraded(message(originator_name=name), common_name_as_dda=True)
    expected = dataclasses.replace(SMITH, domain_defined=(("ID", "7"), ("Common", "Duty Officer")))
    assert result.apdu == message(originator_name=expected)
    assert result.removed == ("originator-name: common-name, as DDA Common",)


def test_common_name_without_room_for_a_dda_is_not_downgradable() -> None:
    dda = tuple((f"T{n}", "v") for n in range(4))
    name = dataclasses.replace(SMITH, common_name="Duty Officer", domain_defined=dda)
    outcome = downgrade_to_1984(message(originator_name=name), common_name_as_dda=True)
    assert isinstance(outcome, NotDowngradable)


def test_recipient_name_1984_cannot_carry_is_refused_and_the_others_transferred() -> None:
    jones_cn = dataclasses.replace(JONES, common_name="Jones")
    data = message(recipients=(recipient(jones_cn, 1), recipient(BROWN, 2)))
    result = downgraded(data)
    assert result.refused == (1,)
    assert result.apdu == message(recipients=(recipient(BROWN, 2),))
    assert result.removed == (
        "recipient 1 left out (per-recipient-fields[0].recipient-name: "
        "extension attribute common-name)",
    )


def test_recipient_the_peer_is_not_responsible_for_is_left_out_silently() -> None:
    jones_cn = dataclasses.replace(JONES, common_name="Jones")
    passive = recipient(jones_cn, 1, per_recipient_indicators=PerRecipientIndicators())
    result = downgraded(message(recipients=(passive, recipient(BROWN, 2))))
    assert result.refused == ()
    assert result.apdu == message(recipients=(recipient(BROWN, 2),))


def test_no_responsible_recipient_left_makes_the_message_not_downgradable() -> None:
    jones_cn = dataclasses.replace(JONES, common_name="Jones")
    passive = recipient(BROWN, 2, per_recipient_indicators=PerRecipientIndicators())
    outcome = downgrade_to_1984(message(recipients=(recipient(jones_cn, 1), passive)))
    assert outcome == NotDowngradable(
        "no recipient can be down-graded: "
        "per-recipient-fields[0].recipient-name: extension attribute common-name"
    )


# --- rules 4 to 6: trace, encoded information types, bilateral information -------------


def test_internal_trace_and_trace_other_actions_are_removed() -> None:
    redirected = dataclasses.replace(TRACE, other_actions=OtherActions(redirected=True))
    result = downgraded(message(trace_information=(redirected,), extensions=(INTERNAL,)))
    assert result.apdu == message()
    assert result.removed == (
        "extensions: internal-trace-information",
        "trace-information[0]: other-actions",
    )


def test_extended_encoded_information_types_are_removed() -> None:
    ia5 = BuiltInEncodedInformationTypes(ia5_text=True)
    eits = EncodedInformationTypes(built_in=ia5, extended=("2.6.3.4.2",))
    converted = dataclasses.replace(TRACE, converted_encoded_information_types=eits)
    data = message(original_encoded_information_types=eits, trace_information=(converted,))
    plain = EncodedInformationTypes(built_in=ia5)
    expected = message(
        original_encoded_information_types=plain,
        trace_information=(dataclasses.replace(TRACE, converted_encoded_information_types=plain),),
    )
    assert downgraded(data).apdu == expected


def test_empty_extended_encoded_information_types_sent_explicitly_are_removed() -> None:
    ia5 = BuiltInEncodedInformationTypes(ia5_text=True)
    explicit = EncodedInformationTypes(built_in=ia5, wire_order=("built_in", "extended"))
    data = message(original_encoded_information_types=explicit)
    assert b"\xa4\x00" in data
    result = downgraded(data)
    assert result.apdu == message(
        original_encoded_information_types=EncodedInformationTypes(built_in=ia5)
    )
    assert result.removed == (
        "original-encoded-information-types: extended-encoded-information-types",
    )


def bilateral(domain: bytes) -> bytes:
    country = ber.constructed(ber.application(1), [ber.tlv(ber.PRINTABLE_STRING, b"GB")])
    return ber.constructed(ber.SEQUENCE, [country, domain, ber.tlv(ber.OCTET_STRING, b"x")])


def test_bilateral_information_for_a_private_domain_is_removed() -> None:
    admd = ber.tlv(ber.application(2), ber.tlv(ber.PRINTABLE_STRING, b"BT"), constructed=True)
    prmd = ber.tlv(ber.PRINTABLE_STRING, b"SITEA")
    private = ber.constructed(
        ber.SEQUENCE, [ber.constructed(ber.context(0), [admd[2:]]), ber.tlv(ber.context(1), prmd)]
    )
    public = bilateral(admd)
    result = downgraded(message(per_domain_bilateral_information=(bilateral(private), public)))
    assert result.apdu == message(per_domain_bilateral_information=(public,))
    assert result.removed == ("per-domain-bilateral-information: 1 for a PRMD",)


# --- probes ----------------------------------------------------------------------------


def test_probe_loses_its_extensions_and_stays_a_probe() -> None:
    probe = Probe(
        probe_identifier=MTSIdentifier(global_domain_identifier=HERE, local_identifier="p1"),
        originator_name=SMITH,
        content_type=2,
        trace_information=(TRACE,),
        recipients=(recipient(),),
    )
    data = encode_mts_apdu(dataclasses.replace(probe, extensions=(PRIVATE,)))
    assert downgraded(data).apdu == encode_mts_apdu(probe)


# --- reports ---------------------------------------------------------------------------


def test_1984_legal_report_is_unchanged() -> None:
    data = encode_mts_apdu(report())
    assert downgrade_to_1984(data) == Downgraded(apdu=data)


def test_report_loses_extensions_content_type_and_encoded_information_types() -> None:
    eits = EncodedInformationTypes(built_in=BuiltInEncodedInformationTypes(ia5_text=True))
    full = report(
        envelope_changes={"extensions": (INTERNAL,)},
        content_type="1.3.26.0.4406.0.4.1",
        original_encoded_information_types=eits,
        extensions=(PRIVATE,),
    )
    result = downgraded(encode_mts_apdu(full))
    assert result.apdu == encode_mts_apdu(report())
    assert result.removed == (
        "envelope.extensions: internal-trace-information",
        "content.extensions: private-extension 1.3.6.1.4.1.99.1",
        "content.content-type: 1.3.26.0.4406.0.4.1",
        "content.original-encoded-information-types",
    )


def test_report_with_a_critical_extension_is_discarded() -> None:
    field = dataclasses.replace(PRIVATE, criticality=Criticality(for_transfer=True))
    outcome = downgrade_to_1984(encode_mts_apdu(report(extensions=(field,))))
    assert outcome == ReportDiscarded(
        "content.extensions: private-extension 1.3.6.1.4.1.99.1 is critical"
    )


def test_report_to_a_name_1984_cannot_carry_is_discarded() -> None:
    name = dataclasses.replace(SMITH, common_name="Duty Officer")
    value = report(envelope_changes={"report_destination_name": name})
    outcome = downgrade_to_1984(encode_mts_apdu(value))
    assert outcome == ReportDiscarded("report-destination-name: extension attribute common-name")


# --- errors ----------------------------------------------------------------------------


def test_malformed_apdu_raises_decode_error() -> None:
    with pytest.raises(DecodeError, match="not message"):
        downgrade_to_1984(b"\xa5\x00")
