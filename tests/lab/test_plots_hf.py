"""lab.plots' HF plot without a network: link use against message size is drawn from the
HF scenario's figures (as ``--json`` writes them, or written by hand from a table), also
by ``python -m lab.plots`` from several files, and a file that holds no such figures is
refused in one line.  matplotlib comes with the test extra: these tests do not skip.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lab import __main__ as lab_main
from lab import plots
from lab.hf import HfSettings
from lab.hf_scenario import summary_hf
from tests.lab.test_hf_scenario import _message

PNG = b"\x89PNG\r\n\x1a\n"


def _run(transport: str, uses: dict[int, float], rate: float = 9600) -> dict[str, Any]:
    """A run's figures as summary_hf gives them (only what the plot reads besides)."""
    return {
        "transport": transport,
        "hf": {"rate": rate, "ber": 0.0},
        "messages": [{"size": size, "link_use": use} for size, use in uses.items()],
    }


def _assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG and len(data) > 5000, path


def test_link_use_is_drawn_per_transport(tmp_path: Path) -> None:
    runs = [
        _run("acp142", {1_000: 0.682, 10_000: 0.928}),
        _run("p1", {10_000: 0.912, 1_000: 0.619}),
    ]
    written = plots.write_link_use(runs, tmp_path / "out" / "link-use.png")
    assert written == tmp_path / "out" / "link-use.png"
    _assert_png(written)


def test_nothing_to_draw_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no HF figures"):
        plots.write_link_use([_run("p1", {})], tmp_path / "link-use.png")
    assert not (tmp_path / "link-use.png").exists()


def test_the_scenario_s_own_figures_are_drawn(tmp_path: Path) -> None:
    settings = HfSettings(rate=1200)
    messages = [_message(1_000, 9.7, 14.0, rate=1200), _message(10_000, 73.0, 98.0, rate=1200)]
    lab_main._hf_plots(summary_hf(messages, settings, transport="acp142"), tmp_path)
    _assert_png(tmp_path / "link-use.png")
    (run,) = plots.read_runs([tmp_path / "link-use.json"])
    assert run["transport"] == "acp142" and run["hf"]["rate"] == 1200
    assert [m["size"] for m in run["messages"]] == [1_000, 10_000]


def test_python_m_lab_plots_draws_runs_of_several_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, both = tmp_path / "one.json", tmp_path / "both.json"
    one.write_text(json.dumps(_run("acp142", {1_000: 0.5}, rate=1200)))
    both.write_text(json.dumps([_run("acp142", {1_000: 0.68}), _run("p1", {1_000: 0.62})]))
    out = tmp_path / "link-use.png"
    assert plots.main([str(one), str(both), "--out", str(out)]) == 0
    _assert_png(out)
    assert len(plots.read_runs([one, both])) == 3
    assert capsys.readouterr().out.strip() == str(out)


@pytest.mark.parametrize(
    "text",
    ["{}", "[1]", '{"transport": "x25", "hf": {}, "messages": []}', "not json"],
)
def test_other_files_are_refused_in_one_line(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    assert plots.main([str(bad), "--out", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lab.plots: ") and err.count("\n") == 1, err
    assert not (tmp_path / "x.png").exists()
