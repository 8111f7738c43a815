"""The zone list is the layer's pinned tzdata, whatever the machine's own zoneinfo directory holds."""

from __future__ import annotations

import shutil
import zoneinfo
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path

import pytest
from lambda_agents.timezones import is_timezone, known_timezones, zone


@pytest.fixture
def a_host_zoneinfo(tmp_path: Path) -> Iterator[Path]:
    """A system zoneinfo directory with what Debian hosts and other images add: a zone tzdata
    does not list and the ``localtime`` symlink to the host's own zone."""
    tokyo = resources.files("tzdata.zoneinfo.Asia").joinpath("Tokyo")
    utc = resources.files("tzdata.zoneinfo").joinpath("UTC")
    (tmp_path / "Asia").mkdir()
    (tmp_path / "Asia" / "Tokyo").write_bytes(utc.read_bytes())  # rules this host disagrees on
    (tmp_path / "Mars").mkdir()
    (tmp_path / "Mars" / "Olympus").write_bytes(tokyo.read_bytes())
    shutil.copyfile(tmp_path / "Mars" / "Olympus", tmp_path / "localtime")
    zoneinfo.reset_tzpath(to=[str(tmp_path)])
    zoneinfo.ZoneInfo.clear_cache()
    known_timezones.cache_clear()
    zone.cache_clear()
    try:
        yield tmp_path
    finally:
        zoneinfo.reset_tzpath()
        zoneinfo.ZoneInfo.clear_cache()
        known_timezones.cache_clear()
        zone.cache_clear()


def test_given_a_host_zoneinfo_with_extra_names_when_zones_are_listed_then_only_tzdatas_count(
    a_host_zoneinfo: Path,
) -> None:
    assert {"Mars/Olympus", "localtime"} <= zoneinfo.available_timezones()

    zones = known_timezones()

    assert "Mars/Olympus" not in zones
    assert not is_timezone("localtime")
    assert is_timezone("Asia/Tokyo") and is_timezone("America/Argentina/Buenos_Aires")


def test_the_list_is_tzdatas_zones_file_less_names_no_one_lives_in() -> None:
    listed = set(resources.files("tzdata").joinpath("zones").read_text(encoding="utf-8").split())

    assert known_timezones() == listed - {"Factory"}


def test_given_a_host_whose_rules_differ_when_a_zone_is_read_then_the_layers_tzdata_answers(
    a_host_zoneinfo: Path,
) -> None:
    noon_utc = datetime(2026, 11, 27, 12, tzinfo=UTC)
    assert noon_utc.astimezone(zoneinfo.ZoneInfo("Asia/Tokyo")).utcoffset() == timedelta(0)

    assert noon_utc.astimezone(zone("Asia/Tokyo")).utcoffset() == timedelta(hours=9)
    assert zone("Asia/Tokyo") is zone("Asia/Tokyo")


@pytest.mark.parametrize("name", ["localtime", "Asia", "posix/Asia/Tokyo", "../etc/passwd", ""])
def test_a_name_tzdata_does_not_list_is_not_found(name: str) -> None:
    with pytest.raises(zoneinfo.ZoneInfoNotFoundError):
        zone(name)
