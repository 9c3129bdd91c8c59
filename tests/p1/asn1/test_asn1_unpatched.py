"""asn1tools as published reads the project's ASN.1 modules as the standards mean them.

No library is patched at run time: the modules are adapted instead (``-- aiox400:``
comments), wire-identically, where asn1tools would otherwise write the wrong bytes or
fail to compile.  These tests show the bytes each adaptation is there for.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from p1 import asn1, ber

ROOT = Path(__file__).resolve().parents[3]
ROS = "Remote-Operations-Generic-ROS-PDUs"
MTS = "MTSAbstractService"
MTA = "MTAAbstractService"


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


@pytest.mark.parametrize("folder", ["p1", "mta", "client", "config", "store"])
def test_no_code_reaches_into_asn1tools_internals(folder: str) -> None:
    """Only the package's public API (``import asn1tools``) is used, never its codecs."""
    reaching = {
        str(path.relative_to(ROOT)): sorted(m for m in modules if m.startswith("asn1tools."))
        for path in (ROOT / folder).rglob("*.py")
        if (modules := _imported_modules(path))
    }
    assert {path: names for path, names in reaching.items() if names} == {}


def test_the_yardstick_is_not_pinned_to_one_release() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert '"asn1tools>=' in text
    assert "asn1tools==" not in text


# X.680 31.2.7: a tag on an open type is explicit, whatever the module's default.


def test_a_tag_on_an_open_type_is_explicit() -> None:
    # bind-invoke [16] ANY holding NULL: b0 02 05 00, the NULL kept whole inside [16]
    assert asn1.encode(ROS, "Bind", ("bind-invoke", b"\x05\x00")).hex() == "b0020500"
    assert asn1.decode(ROS, "Bind", bytes.fromhex("b0020500")) == ("bind-invoke", b"\x05\x00")


def test_an_extension_value_keeps_its_own_tag_inside_value_2() -> None:
    # ExtensionField { type standard-extension [0] 2, value [2] ANY: BOOLEAN TRUE }
    field = {"type": ("standard-extension", 2), "value": b"\x01\x01\xff"}
    encoded = asn1.encode(MTS, "ExtensionField", field)
    assert encoded.hex() == "3008800102a2030101ff"
    decoded = asn1.decode(MTS, "ExtensionField", encoded)
    assert decoded == {**field, "criticality": (b"", 0)}  # (the DEFAULT {} filled in)


# X.690 8.11: a SET with an untagged CHOICE member keeps the SET's tag and is read with its
# members in any order.


def test_a_set_with_an_untagged_choice_member_keeps_its_tag() -> None:
    name = {"character-encoding": ("two-octets", "Zo\u00eb"), "iso-639-language-code": "fr"}
    encoded = asn1.encode(MTS, "UniversalCommonName", name)
    assert encoded[:1] == b"\x31"
    tlv = ber.read_single(encoded, "UniversalCommonName")
    members = [child.raw() for child in ber.children(tlv, "UniversalCommonName")]
    assert len(members) == 2
    swapped = ber.constructed(ber.SET, reversed(members))
    assert swapped != encoded
    assert asn1.decode(MTS, "UniversalCommonName", swapped) == name


def test_mta_supplied_information_with_its_untagged_choice() -> None:
    value = {"arrival-time": "2405011230Z", "routing-action": "relayed", "attempted": ("mta", "B")}
    encoded = asn1.encode(MTA, "MTASuppliedInformation", value)
    assert encoded[:1] == b"\x31"
    decoded = asn1.decode(MTA, "MTASuppliedInformation", encoded)
    assert decoded == {**value, "other-actions": (b"", 0)}  # (the DEFAULT {} filled in)
