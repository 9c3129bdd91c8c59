"""benchmarks/soak.py's own parts, without running it: the retention sections it adds are
a configuration both sites' loaders take (with the windows it asks for), its CSV reads
back as written, and its plateau check tells a flat series from a growing one."""

from __future__ import annotations

import csv
from dataclasses import asdict, fields, replace
from pathlib import Path

import pytest

from benchmarks.relay import _config
from benchmarks.soak import Sample, plateau, read_csv, retention_text, table
from config.loader import load_config


@pytest.mark.parametrize("window", [60, 600, 3600])
def test_the_retention_sections_load_with_the_windows_asked_for(
    tmp_path: Path, window: int
) -> None:
    ports = {d: 6000 + n for n, d in enumerate(("CS0", "CS1", "CS2", "CS3"))}
    text = _config("MTA-A", "C=GB;ADMD= ;PRMD=SITEA", "MTA-B", "C=GB;ADMD= ;PRMD=SITEB",
                   ports, ports, 2) + retention_text(window)  # fmt: skip
    path = tmp_path / "a.toml"
    path.write_text(text)
    config = load_config(path)
    assert config.retention.received == window
    assert config.retention.audit == window
    assert config.retention.finished == max(1, window // 5)
    assert config.retention.interval == 30
    assert config.max_age.routine == config.max_age.flash == window


def _samples(disk: list[float]) -> list[Sample]:
    base = Sample(0.0, 0, 0, 90.0, 90.0, 0.0, 0.0, 0, 0)
    return [
        replace(
            base,
            seconds=10.0 * (n + 1),
            submitted=150 * n,
            consumed=150 * n,
            a_disk_mib=value,
            b_disk_mib=value / 2,
        )
        for n, value in enumerate(disk)
    ]


def test_the_csv_reads_back_as_written(tmp_path: Path) -> None:
    samples = _samples([1.5, 2.25, 3.0])
    path = tmp_path / "soak.csv"
    with path.open("w", newline="") as file:
        writer = csv.DictWriter(file, [f.name for f in fields(Sample)])
        writer.writeheader()
        writer.writerows(asdict(s) for s in samples)
    assert read_csv(path) == samples


def test_the_plateau_check_tells_flat_from_growing() -> None:
    flat = plateau(_samples([100.0] * 40))
    growing = plateau(_samples([float(n) for n in range(1, 41)]))
    assert "| disk of A, MiB | 100.0 | 100.0 | +0.0 % |" in flat
    disk_a = next(line for line in growing.splitlines() if line.startswith("| disk of A"))
    assert "+" in disk_a.split("|")[-2] and "+0.0 %" not in disk_a
    assert table(_samples([1.0] * 40)).count("\n| ") == 10  # one row per tenth of the run


def test_a_run_too_short_for_quarters_says_so() -> None:
    assert plateau(_samples([1.0, 2.0, 3.0])).startswith("(no plateau check: 3 sample(s)")
