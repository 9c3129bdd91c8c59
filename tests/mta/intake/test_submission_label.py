"""A local submission's security label goes into the envelope the MTA builds as the
message-security-label extension (X.411 12.2.1.1.1, standard-extension 20)."""

from __future__ import annotations

from p1.mts.envelope import Message, decode_mts_apdu, encode_mts_apdu
from p1.mts.extensions import StandardExtension, find_extension
from p1.mts.fields import Criticality
from p1.mts.security_label import message_security_label
from p1.security.naming import label_from_names
from tests.mta.intake.test_intake import submit
from tests.p1.security.policies import EXAMPLE


def test_the_label_is_in_the_envelope_critical_for_delivery() -> None:
    made = label_from_names(EXAMPLE, "SECRET", ["GBR"], "EYES ONLY")
    message = submit(security_label=made)
    extension = find_extension(
        message.envelope.extensions, StandardExtension.MESSAGE_SECURITY_LABEL
    )
    assert extension is not None
    assert extension.criticality == Criticality(for_delivery=True)
    sent = decode_mts_apdu(encode_mts_apdu(message))
    assert isinstance(sent, Message)
    assert message_security_label(sent.envelope.extensions) == made
