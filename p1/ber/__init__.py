"""BER reading and writing (X.690 clause 8): the project's BER toolkit.

The envelope codec (:mod:`p1.mts.envelope`, :mod:`p1.mts.report`) walks the MTS-APDU's
TLVs itself instead of handing whole PDUs to asn1tools, because a relaying MTA must
re-encode what it received unchanged: asn1tools re-sorts SET members into tag order, drops
members that were sent explicitly with their DEFAULT value, rewrites UTCTime text, and
copies the content octets once per nesting level.

Modules (their public names are re-exported here: ``from p1 import ber`` then ``ber.x``)::

    tags    tag classes and numbers, the universal tags, tag_name(tag)
    reader  Tlv, read_tlv(data, offset, limit), read_single(data, what), children(tlv),
            expect / only_child / constructed_contents / read_octets
    writer  identifier(tag, constructed), length_octets(n), tlv(tag, contents),
            constructed(tag, parts), retag(encoding, tag)
    values  read_int / int_contents, read_bits / bits_contents, read_oid / oid_contents,
            read_text / text_contents, WireTime, read_utctime / utctime_text
    sets    split_set: a SET by member tag, keeping the received member order;
            encode_set(tag, members, wire_order)
    flat    the flat reader of the IPM codecs: FlatTlv = (key, start, body, end, stop),
            read / single / items / members / exact, the primitive values, and the
            writers header / tlv_bytes / wrap / oid_tlv

Both readers accept definite and indefinite lengths and constructed strings.  Every
malformed input raises :class:`p1.errors.DecodeError` (with where/why); values that cannot
be encoded raise :class:`p1.errors.EncodeError`.
"""

from __future__ import annotations

from p1.ber.flat import (
    FlatTlv,
    View,
    bits,
    boolean,
    exact,
    header,
    integer,
    items,
    members,
    octets,
    oid,
    oid_tlv,
    read,
    single,
    text,
    tlv_bytes,
    utctime,
    wrap,
)
from p1.ber.reader import (
    Tlv,
    as_view,
    check_single_tlv,
    children,
    constructed_contents,
    expect,
    only_child,
    read_octets,
    read_single,
    read_tlv,
)
from p1.ber.sets import (
    Member,
    SetMembers,
    encode_set,
    keep,
    split_set,
)
from p1.ber.tags import (
    APPLICATION,
    BIT_STRING,
    CONSTRUCTED,
    CONTEXT,
    ENUMERATED,
    IA5_STRING,
    INTEGER,
    MAX_DEPTH,
    NULL,
    NUMERIC_STRING,
    OBJECT_IDENTIFIER,
    OCTET_STRING,
    PRINTABLE_STRING,
    PRIVATE,
    SEQUENCE,
    SET,
    UNIVERSAL,
    UTC_TIME,
    application,
    context,
    tag_name,
    universal,
)
from p1.ber.values import (
    UTCTIME_PIVOT,
    Memo,
    WireTime,
    bits_contents,
    bits_to_numbers,
    check_int,
    int_contents,
    is_oid,
    numbers_to_bits,
    oid_contents,
    parse_utctime,
    read_bits,
    read_bounded_int,
    read_int,
    read_oid,
    read_text,
    read_utctime,
    text_contents,
    utctime_contents,
    utctime_text,
)
from p1.ber.writer import (
    constructed,
    identifier,
    length_octets,
    retag,
    short_headers,
    tlv,
)

__all__ = [
    "APPLICATION",
    "BIT_STRING",
    "CONSTRUCTED",
    "CONTEXT",
    "ENUMERATED",
    "IA5_STRING",
    "INTEGER",
    "MAX_DEPTH",
    "NULL",
    "NUMERIC_STRING",
    "OBJECT_IDENTIFIER",
    "OCTET_STRING",
    "PRINTABLE_STRING",
    "PRIVATE",
    "SEQUENCE",
    "SET",
    "UNIVERSAL",
    "UTCTIME_PIVOT",
    "UTC_TIME",
    "FlatTlv",
    "Member",
    "Memo",
    "SetMembers",
    "Tlv",
    "View",
    "WireTime",
    "application",
    "as_view",
    "bits",
    "bits_contents",
    "bits_to_numbers",
    "boolean",
    "check_int",
    "check_single_tlv",
    "children",
    "constructed",
    "constructed_contents",
    "context",
    "encode_set",
    "exact",
    "expect",
    "header",
    "identifier",
    "int_contents",
    "integer",
    "is_oid",
    "items",
    "keep",
    "length_octets",
    "members",
    "numbers_to_bits",
    "octets",
    "oid",
    "oid_contents",
    "oid_tlv",
    "only_child",
    "parse_utctime",
    "read",
    "read_bits",
    "read_bounded_int",
    "read_int",
    "read_octets",
    "read_oid",
    "read_single",
    "read_text",
    "read_tlv",
    "read_utctime",
    "retag",
    "short_headers",
    "single",
    "split_set",
    "tag_name",
    "text",
    "text_contents",
    "tlv",
    "tlv_bytes",
    "universal",
    "utctime",
    "utctime_contents",
    "utctime_text",
    "wrap",
]
