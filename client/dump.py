"""``x400-dump``: decode an MTS-APDU, an IPM or an MTA-bind PDU and print it.

Input is a file (or ``-`` for standard input) holding the BER bytes, or the same bytes as
hex text (whitespace allowed).  The kind is auto-detected, or given with ``--as``:

* ``mts-apdu``: X.411 MTS-APDU (message, report or probe).  A message whose content is
  an IPM (P2, built-in 22, or P772, extended 1.3.26.0.4406.0.4.1) has its content decoded
  too, unless ``--no-content``.  Every extension of the envelope, of the report content
  and of each per-recipient field (X.411 clause 9.1) shows its ``name`` and its value
  decoded as its type (``value-decoded``: O/R names as text, enumerations by name,
  times in ISO 8601; :mod:`p1.mts.extension_view`) in place of the hex ``value``; one
  that does not decode, or of a type not known, keeps its hex ``value`` and says why
  (``value-error``).  A message-security-label (X.411 clause 8.5.9) shows its decoded
  value under ``security-label`` (classification by name, policy, privacy mark,
  categories and a one-line ``text``), or its hex and ``security-label-error``.
* ``ipm``: X.420 / STANAG 4406 IPM or IPN content (P772 heading extensions shown by name).
  Each body part also shows its type by name (``body-part-type``: ia5-text, adatp3,
  teletex, ...) and a text-like one its ``text`` when its data does not show it already.
* ``bind``: MTABindArgument, MTABindResult or MTABindError (X.411 clause 12.1.1), bare or
  inside its RTSE wrapper (``[16]``, ``[17]``, ``[18]``).

The text form shows every control character of the PDU's strings escaped (``\\xHH``,
``\\uHHHH``: terminal escapes, C1 controls, bidirectional overrides), a text of many lines
on lines of its own; ``--json`` writes them as JSON's ``\\uHHHH`` escapes, the values
whole.

Exit status (:data:`client.cli.EXIT_CODES`): 0 decoded, 1 the input is not a valid PDU
of the kind (the reason and where it was found go to standard error), 2 bad usage or an
unreadable file, 130 interrupted, 141 the reader of the output went away (``| head``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from client.cli import (
    EXIT_CODES_HELP,
    EXIT_INTERRUPTED,
    add_version,
    quiet_broken_pipe,
    terminal_text,
)
from p1.errors import DecodeError
from p1.render import HEX_LIMIT, TEXT_LIMIT, Plain, to_plain, to_text

if TYPE_CHECKING:
    from p1.mts.extensions import ExtensionField
    from p1.mts.security_label import SecurityLabel

KINDS = ("auto", "mts-apdu", "ipm", "bind")
_HEX_TEXT = re.compile(rb"\s*[0-9A-Fa-f][0-9A-Fa-f\s]*")


@dataclass(frozen=True, slots=True, kw_only=True)
class Decoded:
    """What the input turned out to be, and its plain rendering."""

    kind: str
    plain: Plain


@dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    """How to render: decode a message's content; print long byte strings whole."""

    with_content: bool = True
    full_bytes: bool = False


def _decode_mts_apdu(data: bytes, options: Options) -> Plain:
    from p1.mts.envelope import Message, decode_mts_apdu

    apdu = decode_mts_apdu(data)
    plain = to_plain(apdu, full_bytes=options.full_bytes)
    envelope = plain.get("envelope") if isinstance(plain, dict) else None
    _show_extensions(apdu, plain, options)
    if isinstance(apdu, Message) and isinstance(envelope, dict):
        # What priority and priority-level-qualifier stand for (STANAG 4406 Annex A).
        envelope["precedence"] = apdu.envelope.precedence.label
    if options.with_content and isinstance(apdu, Message) and isinstance(plain, dict):
        content = _content_plain(apdu, options)
        if content is not None:
            plain["content"] = content
    return plain


def _show_extensions(model: object, plain: Plain, options: Options) -> None:
    """Every extension of ``model`` (envelope, report content, per-recipient fields, at
    any depth) named and shown decoded in its plain form (X.411 clause 9.1)."""
    from p1.mts.extensions import ExtensionField

    if not dataclasses.is_dataclass(model) or not isinstance(plain, dict):
        return
    for field in dataclasses.fields(model):
        value = getattr(model, field.name)
        shown = plain.get(field.name.replace("_", "-"))
        if not isinstance(value, tuple):
            _show_extensions(value, shown, options)
        elif isinstance(shown, list) and len(shown) == len(value):
            for item, item_plain in zip(value, shown, strict=True):
                if isinstance(item, ExtensionField) and isinstance(item_plain, dict):
                    _show_extension(item, item_plain, options)
                else:
                    _show_extensions(item, item_plain, options)


def _show_extension(extension: ExtensionField, shown: dict[str, Plain], options: Options) -> None:
    """``name``, and ``value-decoded`` in place of the hex ``value`` or ``value-error``
    beside it; a message-security-label keeps its own keys, ``security-label`` (typed)
    or ``security-label-error``."""
    from p1.mts.extension_view import view_extension
    from p1.mts.security_label import is_message_security_label

    view = view_extension(extension, full_bytes=options.full_bytes)
    shown["name"] = view.label
    if is_message_security_label(extension):
        _show_security_label(extension.value is None, view.value, view.error, shown)
        return
    if view.error is not None:
        shown["value-error"] = view.error
    elif extension.value is not None:
        shown["value-decoded"] = view.value
    if view.error is None:
        shown.pop("value", None)


def _show_security_label(
    absent: bool, value: Plain, error: str | None, shown: dict[str, Plain]
) -> None:
    """The label typed in place of its hex, or why it is not (absent means NULL, which
    is no SecurityLabel)."""
    if absent:
        shown["security-label-error"] = "message-security-label: the extension has no value"
    elif error is not None:
        shown["security-label-error"] = error
    else:
        shown.pop("value", None)
        shown["security-label"] = value


def security_label_plain(label: SecurityLabel, full_bytes: bool = False) -> Plain:
    """A SecurityLabel for JSON and text (:func:`p1.mts.extension_view.security_label_plain`)."""
    from p1.mts import extension_view

    return extension_view.security_label_plain(label, full_bytes)


def _content_plain(message: object, options: Options) -> Plain | None:
    """The message's IPM, decoded for display, when its content type is P2 (22 or the
    1984 IPM's 2) or P772."""
    from p1.ipms.ipm import ContentKind, decode_ipm
    from p1.mts.envelope import Message

    assert isinstance(message, Message)
    content_type = message.envelope.content_type
    if content_type not in {kind.value for kind in ContentKind}:
        return None
    try:
        ipm = decode_ipm(message.content, content_type)
        return _content_object_plain(ipm, options)
    except DecodeError as exc:
        return {"undecodable-content": str(exc)}


def _decode_ipm(data: bytes, options: Options) -> Plain:
    from p1.ipms.ipm import ContentKind, decode_content

    # P772 and P2 share the IPM syntax; read as P772, the military heading extensions
    # are named and extended body parts are the expected form.
    return _content_object_plain(decode_content(data, ContentKind.P772), options)


def _content_object_plain(content: object, options: Options) -> Plain:
    """An IPM or IPN rendered; each body part of an IPM also says its type by name
    (``body-part-type``) and, if its text is not already shown as its data, its
    ``text`` (general text, ADatP-3 sets, ...)."""
    from p1.ipms.ipm import IPM
    from p1.ipms.models import body_part_text, body_part_type

    plain = to_plain(content, full_bytes=options.full_bytes)
    parts = plain.get("body", []) if isinstance(plain, dict) else None
    if not isinstance(content, IPM) or not isinstance(parts, list):
        return plain
    for part, part_plain in zip(content.body, parts, strict=True):
        if not isinstance(part_plain, dict):
            continue
        part_plain["body-part-type"] = body_part_type(part)
        text = body_part_text(part)
        if text is not None and part_plain.get("data") != text:
            part_plain["text"] = _text_plain(text, options.full_bytes)
    return plain


def _text_plain(text: str, full: bool) -> Plain:
    """Text as :func:`p1.render.to_plain` shows text octets: whole, or summarised."""
    if full or len(text) <= TEXT_LIMIT:
        return text
    return {"length": len(text), "text-prefix": text[:HEX_LIMIT]}


def _decode_bind(data: bytes, options: Options) -> Plain:
    from p1.association import mtabind

    # Inside its RTSE wrapper the PDU says what it is; bare, an argument and a result
    # share one syntax, so a bare one is shown as an argument.
    decoders: tuple[Callable[[bytes], object], ...] = (
        lambda d: mtabind.decode_bind_argument(mtabind.unwrap_bind_argument(d)),
        lambda d: mtabind.decode_bind_result(mtabind.unwrap_bind_result(d)),
        lambda d: mtabind.decode_bind_error(mtabind.unwrap_bind_error(d)),
        mtabind.decode_bind_argument,
        mtabind.decode_bind_error,
    )
    return to_plain(_first_that_decodes(data, decoders), full_bytes=options.full_bytes)


def _first_that_decodes(data: bytes, decoders: Sequence[Callable[[bytes], object]]) -> object:
    errors: list[str] = []
    for decode in decoders:
        try:
            return decode(data)
        except DecodeError as exc:
            errors.append(str(exc))
    raise DecodeError("; ".join(errors))


_DECODERS: dict[str, Callable[[bytes, Options], Plain]] = {
    "mts-apdu": _decode_mts_apdu,
    "ipm": _decode_ipm,
    "bind": _decode_bind,
}


def decode_any(data: bytes, kind: str = "auto", options: Options | None = None) -> Decoded:
    """Decode ``data`` as ``kind``; with ``auto`` try MTS-APDU, IPM, then MTA bind."""
    options = options or Options()
    chosen = list(_DECODERS) if kind == "auto" else [kind]
    reasons: list[str] = []
    for name in chosen:
        try:
            return Decoded(kind=name, plain=_DECODERS[name](data, options))
        except DecodeError as exc:
            reasons.append(f"as {name}: {exc}")
    raise DecodeError("\n  ".join(["", *reasons]) if len(reasons) > 1 else reasons[0])


def read_input(source: str) -> bytes:
    """The bytes of ``source`` (a path or ``-``); hex text is turned into its bytes."""
    raw = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    if _HEX_TEXT.fullmatch(raw):
        compact = b"".join(raw.split())
        if len(compact) % 2 == 0:
            return bytes.fromhex(compact.decode("ascii"))
    return raw


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="x400-dump",
        description=(
            "Decode an X.400 MTS-APDU (message, report, probe), an IPM/IPN (P2 or "
            "STANAG 4406 P772) or an MTA-bind PDU and print it: O/R names as text, "
            "precedence by name."
        ),
        epilog="Input may be raw BER or hex text.  Exit 1: the input is not a valid PDU of\n"
        "the kind.\n\n" + EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_version(parser)
    parser.add_argument("file", help="file with the PDU, or - for standard input")
    parser.add_argument(
        "--as", dest="kind", choices=KINDS, default="auto", help="what the input is (auto)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument(
        "--full", action="store_true", help="print long byte strings whole, not summarised"
    )
    parser.add_argument(
        "--no-content", action="store_true", help="do not decode a message's IPM content"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``x400-dump``; returns the exit status.

    Ctrl-C ends it with one line and 130; a reader of the output that went away
    (``x400-dump --full big.ber | head -1``) ends it quietly with 141, as SIGPIPE would."""
    args = _parser().parse_args(argv)
    try:
        return _dump(args)
    except KeyboardInterrupt:
        print("x400-dump: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return quiet_broken_pipe()


def _dump(args: argparse.Namespace) -> int:
    out, err = terminal_text(sys.stdout), terminal_text(sys.stderr)
    try:
        data = read_input(args.file)
    except OSError as exc:
        print(f"x400-dump: cannot read {args.file}: {exc.strerror or exc}", file=err)
        return 2
    options = Options(with_content=not args.no_content, full_bytes=args.full)
    try:
        decoded = decode_any(data, args.kind, options)
    except DecodeError as exc:
        print(f"x400-dump: {args.file}: not a valid PDU: {exc}", file=err)
        return 1
    if args.json:  # ASCII: every control and non-ASCII character a \uHHHH escape
        print(json.dumps({"kind": decoded.kind, "value": decoded.plain}, indent=2), file=out)
    else:
        model = decoded.plain.get("@type") if isinstance(decoded.plain, dict) else None
        print(f"kind: {decoded.kind}" + (f" ({model})" if model else ""), file=out)
        print(to_text(decoded.plain), file=out)
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
