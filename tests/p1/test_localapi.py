"""The local API's framing (p1.localapi), alone and as the daemon's socket serves it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from client.api import ApiError, AsyncConnection, Connection
from mta.operator.control import ControlError, JsonObject, serve_control
from p1 import localapi as framing

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(framing.INTEGER_RANGE.start, framing.INTEGER_RANGE.stop - 1)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
headers = st.dictionaries(
    st.text(max_size=8).filter(lambda key: key != framing.CONTENT_LENGTH), json_values
)


@pytest.mark.slow
@given(headers, st.binary(max_size=64))
def test_what_is_encoded_parses_back_with_the_length_of_its_payload(
    header: JsonObject, payload: bytes
) -> None:
    data = framing.encode(header, payload)
    line, newline, rest = data.partition(b"\n")
    assert newline == b"\n" and rest == payload
    parsed, size = framing.parse_header(line + b"\n", max_payload=len(payload))
    assert size == len(payload)
    assert parsed == (header | {"content_length": len(payload)} if payload else header)


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b"submit please\n", "request is not JSON: "),
        (b"\xff\xfe\n", "request is not JSON: "),
        (b"[1, 2]\n", "request is not a JSON object"),
        (b'{"content_length": -1}\n', "content_length must be 0..100, an integer"),
        (b'{"content_length": 101}\n', "message refused: message is 101 octets; this MTA accepts "),
        (b'{"content_length": 1.5}\n', "content_length must be 0..100, an integer"),
        (b'{"content_length": true}\n', "content_length must be 0..100, an integer"),
        (b'{"content_length": "3"}\n', "content_length must be 0..100, an integer"),
        (b"[" * 100_000 + b"]" * 100_000 + b"\n", "request is nested too deeply"),
        (
            b'{"op": "read", "id": ' + b"7" * 5000 + b"}\n",
            "request holds the integer 777777777777777777777777... (5000 digits), outside "
            "-9223372036854775808..9223372036854775807",
        ),
        (b'{"id": -9223372036854775809}\n', "request holds the integer -9223372036854775809, "),
        (b'{"timeout": NaN}\n', "request holds NaN, which is not a JSON number"),
        (b'{"timeout": -Infinity}\n', "request holds -Infinity, which is not a JSON number"),
        (b'{"timeout": 1e400}\n', "request holds the number 1e400, too large"),
    ],
    ids=[
        "text",
        "not-utf8",
        "array",
        "negative",
        "too-big",
        "float",
        "bool",
        "string",
        "deep",
        "5000-digits",
        "below-int64",
        "nan",
        "infinity",
        "float-overflow",
    ],
)
def test_a_header_that_cannot_be_read_says_why(line: bytes, why: str) -> None:
    with pytest.raises(framing.FramingError) as caught:
        framing.parse_header(line, max_payload=100)
    assert str(caught.value).startswith(why)


def test_the_widest_integers_are_read() -> None:
    line = b'{"a": -9223372036854775808, "b": 9223372036854775807, "c": -0}'
    header, _ = framing.parse_header(line, max_payload=None)
    assert header == {"a": -(2**63), "b": 2**63 - 1, "c": 0}


def test_without_a_limit_any_length_is_taken() -> None:
    header, size = framing.parse_header(b'{"content_length": 99999999999}', max_payload=None)
    assert size == 99999999999 and header == {"content_length": 99999999999}


class Echo:
    """Answers every request with itself and its payload doubled; refuses op "no"."""

    socket_mode = 0o660

    async def handle(
        self, request: JsonObject, payload: bytes, caller: object
    ) -> tuple[JsonObject, bytes]:
        if request["op"] == "no":
            raise ControlError("refused as asked")
        return {"ok": True, "echo": request}, payload * 2


async def test_the_daemon_and_both_clients_read_each_other(tmp_path: Path) -> None:
    path = tmp_path / "api.sock"
    server = await serve_control(path, Echo())
    try:
        connection = await AsyncConnection.open(path)
        try:
            answer, data = await connection.call({"op": "x", "n": [1, {"a": None}]}, b"ab\n")
            assert answer["echo"] == {"op": "x", "n": [1, {"a": None}], "content_length": 3}
            assert data == b"ab\nab\n"
            with pytest.raises(ApiError, match="refused as asked"):
                await connection.call({"op": "no"})
        finally:
            await connection.close()

        def blocking() -> tuple[JsonObject, bytes]:
            with Connection(path, timeout=10) as sync:
                return sync.call({"op": "y"}, b"\x00" * 5)

        answer, data = await asyncio.to_thread(blocking)
        assert (answer["echo"]["op"], data) == ("y", b"\x00" * 10)
    finally:
        server.close()
        await server.wait_closed()


async def test_deeply_nested_json_on_the_socket_is_refused_without_an_internal_error(
    tmp_path: Path,
) -> None:
    path = tmp_path / "api.sock"
    server = await serve_control(path, Echo())
    try:
        reader, writer = await asyncio.open_unix_connection(str(path))
        writer.write(b"[" * 30_000 + b"]" * 30_000 + b"\n")
        await writer.drain()
        answer = json.loads(await reader.readline())
        writer.close()
        await writer.wait_closed()
    finally:
        server.close()
        await server.wait_closed()
    assert answer == {"ok": False, "error": "request is nested too deeply"}
