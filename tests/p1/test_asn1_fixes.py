"""The asn1tools fixes in p1.asn1.fixes, shown by the bytes they change.

Each test compiles a small module; the unfixed behaviour is shown in a child process that
imports asn1tools without applying the fixes, so both sides are observed, not assumed.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from typing import Any

import asn1tools
import pytest

from p1.asn1 import fixes

OPEN_TYPES = """
B1 DEFINITIONS IMPLICIT TAGS ::= BEGIN
Open ::= ANY
TaggedAny ::= SEQUENCE { x [2] ANY }
TaggedOpen ::= SEQUENCE { x [2] Open }
Holder ::= SEQUENCE { v ANY }
Octets ::= SEQUENCE { body [4] OCTET STRING }
Oid ::= SEQUENCE { id [1] OBJECT IDENTIFIER }
END
"""

SET_WITH_CHOICE = """
B2 DEFINITIONS IMPLICIT TAGS ::= BEGIN
Alt ::= CHOICE { a [0] INTEGER, b [1] INTEGER }
WithChoice ::= SET { z [5] INTEGER, c Alt, y [3] INTEGER }
END
"""


def _fixed(module: str) -> Any:
    fixes.apply()
    return asn1tools.compile_string(module)


def _unfixed(module: str, snippet: str) -> str:
    """Run ``snippet`` against ``module`` compiled by asn1tools without the fixes."""
    program = f"import asn1tools\nspec = asn1tools.compile_string({module!r})\n{snippet}"
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120
    )
    return (result.stdout + result.stderr).strip()


def test_b1_tag_on_any_is_explicit() -> None:
    spec = _fixed(OPEN_TYPES)
    value = {"x": bytes.fromhex("020105")}
    assert spec.encode("TaggedAny", value).hex() == "3005a203020105"
    assert spec.encode("TaggedOpen", value).hex() == "3005a203020105"
    assert spec.decode("TaggedAny", bytes.fromhex("3005a203020105")) == value
    # Unfixed, the [2] tag is lost and the ANY's own tag goes out alone.
    unfixed = _unfixed(OPEN_TYPES, f"print(spec.encode('TaggedAny', {value!r}).hex())")
    assert unfixed == "3003020105"


def test_b2_set_with_untagged_choice_compiles_in_canonical_order() -> None:
    spec = _fixed(SET_WITH_CHOICE)
    value = {"z": 1, "c": ("b", 2), "y": 3}
    encoded = spec.encode("WithChoice", value)
    # The CHOICE sorts by its smallest alternative tag [0], before [3] and [5].
    assert encoded.hex() == "3109810102830103850101"
    assert spec.decode("WithChoice", encoded) == value
    assert "'NoneType' object is not subscriptable" in _unfixed(SET_WITH_CHOICE, "")


def test_b6_any_with_indefinite_length() -> None:
    spec = _fixed(OPEN_TYPES)
    inner = "2880a080040105" + "0000" + "0000"  # EXTERNAL { [0] { OCTET STRING } }, indefinite
    wire = bytes.fromhex("3080" + inner + "0000")
    assert spec.decode("Holder", wire) == {"v": bytes.fromhex(inner)}
    unfixed = _unfixed(OPEN_TYPES, f"spec.decode('Holder', bytes.fromhex({wire.hex()!r}))")
    assert "Expected definite length" in unfixed


def test_b6_truncated_indefinite_any_is_a_decode_error() -> None:
    spec = _fixed(OPEN_TYPES)
    with pytest.raises(asn1tools.DecodeError):
        spec.decode("Holder", bytes.fromhex("30802880a080040105"))


EXTENSIBLE = """
B7 DEFINITIONS IMPLICIT TAGS ::= BEGIN
Inner ::= SEQUENCE { a [0] INTEGER, ..., b [5] INTEGER OPTIONAL }
Outer ::= SEQUENCE { x Inner, y [5] INTEGER }
END
"""


def test_b7_indefinite_extensible_sequence_keeps_to_its_own_members() -> None:
    spec = _fixed(EXTENSIBLE)
    # Outer { x Inner { a 1 } (indefinite), y 7 }
    wire = bytes.fromhex("3080" + "3080800101" + "0000" + "850107" + "0000")
    assert spec.decode("Outer", wire) == {"x": {"a": 1}, "y": 7}
    unfixed = _unfixed(EXTENSIBLE, f"print(spec.decode('Outer', bytes.fromhex({wire.hex()!r})))")
    # Unfixed, the inner value swallows the outer y as its b and the outer runs dry.
    assert "Ran out of data when trying to find End of Contents" in unfixed


ADDITIONS = """
B8 DEFINITIONS IMPLICIT TAGS ::= BEGIN
Alt ::= CHOICE { n [0] INTEGER, s [1] IA5String }
Grown ::= SEQUENCE { a [0] INTEGER, ..., b [5] Alt OPTIONAL }
END
"""


def test_b8_a_bad_extension_addition_is_an_error_not_dropped() -> None:
    spec = _fixed(ADDITIONS)
    assert spec.encode("Grown", {"a": 1}).hex() == "3003800101"
    assert spec.encode("Grown", {"a": 1, "b": ("n", 2)}).hex() == "3008800101a503800102"
    with pytest.raises(asn1tools.EncodeError, match="Expected choice"):
        spec.encode("Grown", {"a": 1, "b": ("no-such", 2)}, check_types=False)
    unfixed = _unfixed(
        ADDITIONS,
        "print(spec.encode('Grown', {'a': 1, 'b': ('no-such', 2)}, check_types=False).hex())",
    )
    assert unfixed == "3003800101"  # unfixed: b vanishes without a word


def test_single_copy_encode_gives_the_same_bytes() -> None:
    spec = _fixed(OPEN_TYPES)
    body = bytes(range(256)) * 600  # 153,600 bytes: three-byte lengths
    encoded = spec.encode("Octets", {"body": body})
    assert encoded[:10].hex() == "30830258058483025800"
    assert bytes(encoded[10:]) == body
    unfixed = _unfixed(
        OPEN_TYPES,
        "import hashlib\n"
        "print(hashlib.sha256(spec.encode('Octets', {'body': bytes(range(256)) * 600}))"
        ".hexdigest())",
    )
    assert unfixed == hashlib.sha256(encoded).hexdigest()


def test_single_copy_encode_of_an_object_identifier() -> None:
    # An OBJECT IDENTIFIER's contents come back from asn1tools as a list of ints.
    spec = _fixed(OPEN_TYPES)
    assert spec.encode("Oid", {"id": "1.3.26.0.4406.0.8.0"}).hex() == "300a81082b1a00a236000800"


def test_apply_refuses_other_asn1tools_release(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fixes, "_applied", False)
    monkeypatch.setattr(asn1tools, "__version__", "0.0.1")
    with pytest.raises(RuntimeError, match=r"asn1tools==0\.169\.0"):
        fixes.apply()
