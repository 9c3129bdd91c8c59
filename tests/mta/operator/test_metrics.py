"""The daemon's metrics without a daemon: rendering, label sets, counting on commit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text

from mta.metrics import WAITING_STATES, Figures, Metrics, SlotFigure
from p1.mts.precedence import Precedence
from p1.mts.report import DeliveryReport, NonDeliveryReason, NonDeliveryReport
from store import RecipientState, open_database, transaction
from store.figures import QueueFigure

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples(metrics: Metrics, figures: Figures) -> Samples:
    found: Samples = {}
    for family in text_string_to_metric_families(metrics.render(figures).decode()):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def series(found: Samples, name: str) -> list[dict[str, str]]:
    return [dict(labels) for n, labels in found if n == name]


def value(found: Samples, name: str, **labels: str) -> float:
    return found[(name, frozenset(labels.items()))]


def row(
    route: str, precedence: Precedence, state: RecipientState, n: int, age: float
) -> QueueFigure:
    oldest = NOW - timedelta(seconds=age)
    return QueueFigure(route=route, precedence=precedence, state=state, recipients=n, oldest=oldest)


def test_waiting_counts_are_shown_at_zero_for_every_route_and_precedence() -> None:
    found = samples(Metrics(), Figures(now=NOW, routes=("MTA-B", "local")))
    queue = series(found, "aiox400_queue_recipients")
    assert len(queue) == 2 * 6 * len(WAITING_STATES)
    assert {s["state"] for s in queue} == {"pending", "in_flight", "held"}
    assert all(value(found, "aiox400_queue_recipients", **s) == 0 for s in queue)
    ages = series(found, "aiox400_queue_oldest_age_seconds")
    assert len(ages) == 12
    assert {s["precedence"] for s in ages} == {p.label for p in Precedence}


def test_the_oldest_age_is_of_waiting_recipients_only() -> None:
    queue = (
        row("MTA-B", Precedence.FLASH, RecipientState.PENDING, 2, 30.0),
        row("MTA-B", Precedence.FLASH, RecipientState.HELD, 1, 90.0),
        row("MTA-B", Precedence.FLASH, RecipientState.TRANSFERRED, 7, 3600.0),
        row("MTA-B", Precedence.ROUTINE, RecipientState.TRANSFERRED, 4, 600.0),
    )
    found = samples(Metrics(), Figures(now=NOW, routes=("MTA-B", "local"), queue=queue))
    age = "aiox400_queue_oldest_age_seconds"
    assert value(found, age, peer="MTA-B", precedence="flash") == 90.0
    assert value(found, age, peer="MTA-B", precedence="routine") == 0.0
    count = "aiox400_queue_recipients"
    assert value(found, count, peer="MTA-B", precedence="flash", state="held") == 1
    assert value(found, count, peer="MTA-B", precedence="flash", state="transferred") == 7
    assert value(found, count, peer="MTA-B", precedence="routine", state="pending") == 0


def test_slots_connections_and_store() -> None:
    slot = SlotFigure(
        peer="MTA-B",
        slot="override+flash",
        state="up",
        backlog=3,
        connections={"connecting": 0, "idle": 1, "transferring": 1},
    )
    figures = Figures(
        now=NOW,
        routes=("MTA-B",),
        slots=(slot,),
        slot_states=("closed", "up", "connecting", "down"),
        inbound=5,
        unbound=2,
        store_bytes={"database": 4096, "wal": 0, "spool": 100},
        quarantine_messages=1,
        quarantine_bytes=20,
        store_up=False,
        degraded=2,
    )
    found = samples(Metrics(), figures)
    labels = {"peer": "MTA-B", "slot": "override+flash"}
    assert value(found, "aiox400_slot_connections", **labels, state="idle") == 1
    assert value(found, "aiox400_slot_connections", **labels, state="connecting") == 0
    states = {
        s["state"]: value(found, "aiox400_slot_state", **s)
        for s in series(found, "aiox400_slot_state")
    }
    assert states == {"closed": 0, "up": 1, "connecting": 0, "down": 0}
    assert value(found, "aiox400_slot_backlog", **labels) == 3
    assert value(found, "aiox400_inbound_connections", state="bound") == 3
    assert value(found, "aiox400_inbound_connections", state="unbound") == 2
    assert value(found, "aiox400_store_bytes", part="spool") == 100
    assert value(found, "aiox400_quarantine_messages") == 1
    assert value(found, "aiox400_quarantine_bytes") == 20
    assert value(found, "aiox400_store_up") == 0
    assert value(found, "aiox400_parts_degraded") == 2


def test_each_metrics_has_its_own_registry_and_not_the_global_one() -> None:
    one, other = Metrics(), Metrics()
    one.bind_refused("MTA-B", "in", "wrong-password")
    figures = Figures(now=NOW, routes=())
    name = "aiox400_bind_failures_total"
    assert (
        value(samples(one, figures), name, peer="MTA-B", direction="in", reason="wrong-password")
        == 1
    )
    assert series(samples(other, figures), name) == []
    assert REGISTRY.get_sample_value(name, {"peer": "MTA-B"}) is None
    assert not any(n.startswith("aiox400_") for n in REGISTRY._names_to_collectors)


def test_process_figures_only_when_asked() -> None:
    figures = Figures(now=NOW, routes=())
    assert not series(samples(Metrics(), figures), "process_resident_memory_bytes")
    assert series(samples(Metrics(process=True), figures), "process_resident_memory_bytes")


_NDR = NonDeliveryReport(reason_code=NonDeliveryReason.UNABLE_TO_TRANSFER)
_DR = DeliveryReport(message_delivery_time=NOW)


def _reports(metrics: Metrics) -> dict[str, float]:
    found = samples(metrics, Figures(now=NOW, routes=()))
    return {
        s["kind"]: value(found, "aiox400_reports_sent_total", **s)
        for s in series(found, "aiox400_reports_sent_total")
    }


def test_a_report_counts_once_its_transaction_commits(tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path / 'store.db'}")
    metrics = Metrics()
    try:
        with transaction(engine) as session:
            metrics.report_queued(session, _NDR)
            assert _reports(metrics) == {"delivery": 0, "non-delivery": 0}  # (not committed)
        assert _reports(metrics) == {"delivery": 0, "non-delivery": 1}
        with pytest.raises(RuntimeError), transaction(engine) as session:
            metrics.report_queued(session, _DR)
            raise RuntimeError("undone")
        assert _reports(metrics) == {"delivery": 0, "non-delivery": 1}
        with transaction(engine) as session:
            metrics.report_queued(session, _DR)
            nested = session.begin_nested()
            session.execute(text("SELECT 1"))
            metrics.report_queued(session, _NDR)
            nested.rollback()
            with session.begin_nested():
                session.execute(text("SELECT 1"))
                metrics.report_queued(session, _DR)
        assert _reports(metrics) == {"non-delivery": 1, "delivery": 2}
    finally:
        engine.dispose()


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["MTA-B", "MTA-C", "local"]),
            st.sampled_from(list(Precedence)),
            st.sampled_from(list(RecipientState)),
            st.integers(min_value=1, max_value=10_000),
            st.floats(min_value=0, max_value=10 * 86400),
        ),
        unique_by=lambda r: (r[0], r[1], r[2]),
        max_size=20,
    )
)
def test_rendered_counts_are_the_figures_and_labels_stay_bounded(
    rows: list[tuple[str, Precedence, RecipientState, int, float]],
) -> None:
    queue = tuple(row(*r) for r in rows)
    found = samples(Metrics(), Figures(now=NOW, routes=("MTA-B", "local"), queue=queue))
    rendered = series(found, "aiox400_queue_recipients")
    total = sum(value(found, "aiox400_queue_recipients", **s) for s in rendered)
    assert total == sum(r[3] for r in rows)
    assert {s["peer"] for s in rendered} <= {"MTA-B", "MTA-C", "local"}
    assert {s["precedence"] for s in rendered} <= {p.label for p in Precedence}
    assert {s["state"] for s in rendered} <= {s.value for s in RecipientState}
    for (route, precedence), group in _groups(rows).items():
        waiting = [r[4] for r in group if r[2] in WAITING_STATES]
        labels = frozenset({"peer": route, "precedence": precedence}.items())
        shown = found.get(("aiox400_queue_oldest_age_seconds", labels), 0.0)  # (none: none waits)
        assert shown == pytest.approx(max(waiting, default=0.0), abs=1e-3)


def _groups(
    rows: list[tuple[str, Precedence, RecipientState, int, float]],
) -> dict[tuple[str, str], list[tuple[str, Precedence, RecipientState, int, float]]]:
    groups: dict[tuple[str, str], list[tuple[str, Precedence, RecipientState, int, float]]] = {}
    for r in rows:
        groups.setdefault((r[0], r[1].label), []).append(r)
    return groups
