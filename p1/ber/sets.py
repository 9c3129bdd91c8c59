"""SET members read by tag and written back in the received order, with the DEFAULT members
sent explicitly kept (X.690 8.11; the lossless relay of :mod:`p1.mts.envelope`).

Part of :mod:`p1.ber`, which re-exports its public names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from p1.ber.reader import FlatTlv, Tlv, View, read, tag_of, tlv_of
from p1.ber.tags import CONSTRUCTED, tag_name
from p1.ber.writer import constructed
from p1.errors import DecodeError

# --- SET members -----------------------------------------------------------------------


class SetMembers(dict[str, Tlv]):
    """The members of a received SET by name, and their order on the wire.

    A dict (name -> TLV) so that ``get`` costs no Python call: envelopes have dozens.
    """

    __slots__ = ("order",)
    order: tuple[str, ...]

    def __init__(self, found: Mapping[str, Tlv] | None = None, order: tuple[str, ...] = ()) -> None:
        super().__init__(found or {})
        self.order = order

    @property
    def found(self) -> Mapping[str, Tlv]:
        """The members present, by name."""
        return self

    def need(self, name: str, what: str) -> Tlv:
        """The member's TLV; a DecodeError when it is absent."""
        member = self.get(name)
        if member is None:
            raise DecodeError(f"missing {name.replace('_', '-')}", where=what)
        return member


def split_set(tlv: Tlv, members: Mapping[int, str], what: str) -> SetMembers:
    """Sort the children of a SET (or SEQUENCE read as a SET) into named members.

    ``members`` maps each tag to a member name (an untagged CHOICE member appears once
    per alternative).  An unknown tag or a repeated member is an error.
    """
    data, _, offset, end, _, tag, is_constructed = tlv
    if not is_constructed:
        raise DecodeError(f"{tag_name(tag)} must be constructed", where=what)
    found = _new_members(SetMembers)  # (no Python-level __init__)
    for name, item in _sort(data, offset, end, members, True, what).items():
        found[name] = tlv_of(data, item)
    found.order = tuple(found)  # a dict keeps the order of insertion: the wire order
    return found


def members(view: View, tlv: FlatTlv, names: Mapping[int, str], what: str) -> dict[str, FlatTlv]:
    """:func:`split_set` in the tuple form: ``names`` maps identifier octets (constructed
    bit clear; :func:`p1.ber.read`'s key for a tag number above 30) to names."""
    key, _, pos, end, _ = tlv
    if not key & CONSTRUCTED:
        raise DecodeError(f"{tag_name(tag_of(key))} must be constructed", where=what)
    return _sort(view, pos, end, names, False, what)


def _sort(
    view: View, pos: int, end: int, names: Mapping[int, str], by_tag: bool, what: str
) -> dict[str, FlatTlv]:
    """The TLVs that fill ``pos:end`` by member name, in the order read; ``names`` is by
    tag (``by_tag``) or by key.  An unknown or repeated member is reported once every
    member has been read (so a value that does not even parse says that first)."""
    found: dict[str, FlatTlv] = {}
    get = names.get
    problem = ""
    while pos < end:
        item = read(view, pos, end, 1)
        key = item[0]
        name = get(tag_of(key) if by_tag else key & ~CONSTRUCTED)
        if name is None or name in found:
            problem = problem or (
                f"unexpected {tag_name(tag_of(key))}"
                if name is None
                else f"{name.replace('_', '-')} appears twice"
            )
        else:
            found[name] = item
        pos = item[4]
    if problem:
        raise DecodeError(problem, where=what)
    return found


_new_members = dict.__new__


Member = tuple[str, bytes | None]
"""A SET member to encode: its name and its TLV (None: absent)."""


def encode_set(tag: int, members: Sequence[Member], wire_order: Sequence[str]) -> bytes:
    """A SET with its present members: those in ``wire_order`` first, in that order,
    then the others in the order given (the standard's definition order)."""
    if not wire_order:  # a value built in code: the definition order
        return constructed(tag, [encoding for _, encoding in members if encoding is not None])
    rank = {name: index for index, name in enumerate(wire_order)}
    last = len(rank)
    present = [
        (rank.get(name, last), index, encoding)
        for index, (name, encoding) in enumerate(members)
        if encoding is not None
    ]
    present.sort(key=lambda item: (item[0], item[1]))
    return constructed(tag, (item[2] for item in present))


def keep(name: str, is_default: bool, wire_order: Sequence[str]) -> bool:
    """Whether a DEFAULT (or empty OPTIONAL) member is encoded: when it is not the
    default, or when it was received explicitly."""
    return not is_default or name in wire_order
