"""lab.hf_scenario without a network: its messages carry N random octets in one
bilaterally defined body part, its link use is payload bits over the link's capacity in
the time, the wire's counters are differenced per message, and its table puts Isode's
figures beside the rows they match (rate, size and bit error rate) and nowhere else."""

from __future__ import annotations

import zlib
from datetime import UTC, datetime, timedelta

import pytest

from lab import __main__ as lab_main
from lab.hf import HfSettings
from lab.hf_scenario import HfMessage, _difference, binary_ipm, render_hf, summary_hf
from lab.sites import Transfer
from p1.ipms.ipm import ContentKind, decode_ipm
from p1.ipms.models import BinaryBodyPart

START = datetime(2026, 11, 29, tzinfo=UTC)


def _message(size: int, seconds: float, quiet: float, rate: float = 9600) -> HfMessage:
    transfer = Transfer(size, "flash", START, START + timedelta(seconds=seconds))
    counted = {
        "air_a": 1.0, "air_b": 0.5, "octets_a": 1.5 * size, "turnarounds": 2.0,
        "turnaround_seconds": 8.0, "lost": 0.0, "dropped": 0.0,
    }  # fmt: skip
    return HfMessage(transfer, rate, quiet, counted)


def test_the_body_is_one_binary_part_of_random_octets() -> None:
    content = binary_ipm(10_000, seed=3)
    (part,) = decode_ipm(content, ContentKind.P772).body
    assert isinstance(part, BinaryBodyPart) and len(part.data) == 10_000
    assert len(zlib.compress(part.data, 9)) > 10_000  # (incompressible)
    assert binary_ipm(10_000, seed=3) == content != binary_ipm(10_000, seed=4)


def test_link_use_is_payload_bits_over_capacity_in_the_time() -> None:
    message = _message(1200, seconds=2.0, quiet=10.0)  # 9600 bits: 1 s at 9600 bit/s
    assert message.link_use == pytest.approx(0.5)
    assert message.link_use_quiet == pytest.approx(0.1)


def test_the_counters_are_taken_per_message_both_ways() -> None:
    def line(busy_a: float, octets: int, turns: int, lost: int, dropped: int) -> dict[str, object]:
        end = {"busy_seconds": busy_a, "sent_octets": octets, "lost_packets": lost,
               "dropped_packets": dropped}  # fmt: skip
        return {
            "turnarounds": turns, "turnaround_seconds": 4.0 * turns,
            "from": {"a0": end, "ra": {**end, "busy_seconds": busy_a / 10}},
        }  # fmt: skip

    counted = _difference(line(1.0, 100, 1, 0, 1), line(3.0, 2100, 4, 2, 1))
    assert counted == pytest.approx(
        {"air_a": 2.0, "air_b": 0.2, "octets_a": 2000, "turnarounds": 3,
         "turnaround_seconds": 12.0, "lost": 4, "dropped": 0}
    )  # fmt: skip


def test_isode_s_figures_stand_beside_the_rows_they_match_only() -> None:
    messages = [_message(1_000, 1.35, 9.5), _message(100_000, 105.0, 114.2)]
    clear = render_hf(messages, HfSettings(rate=9600), START)
    assert "| 1 KB | 1.35 | 61.7 % |" in clear and "| 46 % | 55.5 % |" in clear
    assert "| 89.5 % | 88 % |" in clear
    noisy = render_hf(messages, HfSettings(rate=9600, ber=1e-5), START)
    assert "| 72 % | 64 % |" in noisy and "| 46 % |" not in noisy
    faster = render_hf(messages, HfSettings(rate=57_600), START)
    assert "%" in faster and "| 46 % |" not in faster and "| - | - |" in faster
    figures = summary_hf(messages, HfSettings(rate=9600, seed=5))
    assert figures["hf"]["seed"] == 5 and figures["messages"][1]["size"] == 100_000


def _hf_of(options: list[str]) -> HfSettings | None:
    p = lab_main.parser()
    return lab_main.hf_of(p.parse_args(options), p)


def test_the_hf_options_make_the_wire_s_profile() -> None:
    assert _hf_of([]) is None
    assert _hf_of(["--hf-scenario"]) == HfSettings(rate=9600)
    assert _hf_of(["--hf-rate", "2400", "--hf-ber", "1e-5", "--hf-queue-packets", "0"]) == (
        HfSettings(rate=2400, ber=1e-5, queue_packets=None)
    )
    args = lab_main.parser().parse_args(["--hf-scenario", "1,10,100,1000"])
    assert args.hf_scenario == (1_000, 10_000, 100_000, 1_000_000)


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--hf-ber", "1e-5"], "--hf-ber needs --hf-rate"),
        (["--hf-rate", "9600", "--delay", "50"], "give one"),
        (["--hf-rate", "300000"], "rate 300000"),
        (["--hf-scenario", "0"], "sizes must be > 0"),
    ],
)
def test_hf_options_that_make_no_sense_end_the_lab_before_it_builds(
    options: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        lab_main.main(options)
    assert exited.value.code == 2
    assert said in capsys.readouterr().err
