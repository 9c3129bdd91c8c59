"""SIGHUP re-reads the configuration file (mta/reload.py): the log level and the
quarantine's bounds change in place; a change that needs a restart is named as such;
a file that no longer loads is reported and the daemon keeps its configuration.  (The
peers, routes, limits and retention a reload applies: test_reload_peers.py.)"""

from __future__ import annotations

import logging
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from config.loader import load_config
from mta.daemon import EXIT_OK
from mta.operator.reload import Changes, Reloader, compare
from tests.p1.security.policies import EXAMPLE_SPIF
from tests.support.process import Daemon
from tests.support.sites import ReservedPorts, solo_site


@pytest.fixture
def root_level() -> Iterator[None]:
    """The root logger's level, put back after the test."""
    root = logging.getLogger()
    level = root.level
    try:
        yield
    finally:
        root.setLevel(level)


def test_compare_names_the_changed_keys_as_the_file_writes_them(tmp_path: Path) -> None:
    site = solo_site(tmp_path)
    config = load_config(site.write())
    site.settings |= {"log_level": "error", "state_dir": "elsewhere", "dscp": {"flash": "EF"}}
    changed = load_config(site.write())
    assert compare(config, config) == Changes(applied=(), restart=())
    assert compare(config, changed) == Changes(
        applied=("dscp", "log_level"), restart=("state_dir", "database")
    )


def test_a_security_policy_takes_effect_at_the_next_start(tmp_path: Path) -> None:
    site = solo_site(tmp_path)
    config = load_config(site.write())
    shutil.copy(EXAMPLE_SPIF, tmp_path / "policy.xml")
    site.settings["security"] = {"policy": str(tmp_path / "policy.xml")}
    assert compare(config, load_config(site.write())) == Changes(applied=(), restart=("security",))


async def test_a_reload_applies_the_log_level_and_the_quarantine_bounds(
    tmp_path: Path, root_level: None, caplog: pytest.LogCaptureFixture
) -> None:
    site = solo_site(tmp_path / "site")
    site.settings["log_level"] = "info"
    service = await site.start()
    try:
        logging.getLogger().setLevel(logging.INFO)
        site.settings["log_level"] = "debug"
        site.settings["quarantine"] = {"max_messages": 7}
        site.write()
        Reloader(service)()
        assert logging.getLogger().level == logging.DEBUG
        assert service.config.quarantine.max_messages == 7
        status = await site.api({"op": "status"})
        assert status["quarantine"]["max_messages"] == 7
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    finally:
        await site.stop()


async def test_log_level_given_on_the_command_line_wins_over_a_reload(
    tmp_path: Path, root_level: None
) -> None:
    site = solo_site(tmp_path / "site")
    service = await site.start()
    try:
        logging.getLogger().setLevel(logging.WARNING)
        site.settings["log_level"] = "info"
        site.write()
        Reloader(service, level_override="warning")()
        assert logging.getLogger().level == logging.WARNING
    finally:
        await site.stop()


@pytest.mark.slow
def test_sighup_reloads_names_what_needs_a_restart_and_survives_a_bad_file(
    tmp_path: Path,
) -> None:
    ports = ReservedPorts(1)
    site = solo_site(tmp_path / "site")
    site.settings["log_level"] = "info"
    args = ("--no-timestamps", "--log-prefix-priorities")
    daemon = Daemon(site.write(), tmp_path / "mta.log", args=args).start()
    try:
        daemon.wait_answering()
        site.settings["log_level"] = "debug"
        site.settings["listeners"] = [{"address": "127.0.0.1", "port": ports.ports[0]}]
        site.write()
        daemon.signal(signal.SIGHUP)
        daemon.wait_for_line("reloaded ")
        restart = daemon.wait_for_line("needs a restart")
        assert restart == (
            f"<4>WARNING aiox400.mta: reload: {site.config_file}: listeners changed: "
            "needs a restart to take effect"
        )
        assert daemon.wait_for_line("log_level is") == (
            "<6>INFO aiox400.mta: reload: log_level is debug now (was info)"
        )

        site.settings["listeners"] = [{"address": "127.0.0.1", "port": ports.ports[0]}]
        site.settings["listeners"][0]["dscp"] = "CS9"
        site.write()
        daemon.signal(signal.SIGHUP)
        refused = daemon.wait_for_line("reload refused")
        assert refused.startswith("<3>ERROR aiox400.mta: reload refused, the previous ")
        assert f'{site.config_file}: listeners[0].dscp = "CS9": expected' in refused
        assert daemon.answers()
        assert daemon.stop() == EXIT_OK
    finally:
        daemon.kill()
        ports.close()
    assert "Traceback" not in daemon.text()
