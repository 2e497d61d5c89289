"""Spec validation: every mistake names the field and the fix; runs expand from the axes."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from pimcloud.runs.spec import SpecError, load_spec, parse_spec, run_id_of

BASE = """
[apps.kvstore]
max_rps = 1000
qos = "1ms"
[scenario]
apps = ["kvstore"]
load = 0.5
[length]
measured = "100ms"
"""


def spec_of(extra: str = "", base: str = BASE) -> object:
    return parse_spec(tomllib.loads(base + extra), source="t.toml", base_dir=Path("/"))


def error_of(text: str) -> str:
    with pytest.raises(SpecError) as caught:
        parse_spec(tomllib.loads(text), source="t.toml", base_dir=Path("/"))
    return str(caught.value)


def test_minimal_spec_is_one_run_with_defaults() -> None:
    spec = spec_of()
    runs = spec.runs()  # type: ignore[attr-defined]
    assert [r.run_id for r in runs] == ["single"]
    assert runs[0].scenario.manager == "pimcloud" and runs[0].topology == "paper"
    assert runs[0].scenario.rps_of(runs[0].apps[0]) == 500


def test_axes_expand_in_written_order_with_readable_ids() -> None:
    spec = spec_of('[axes]\nload = [0.2, 0.4]\nmanager = ["pimcloud", "default"]\n')
    ids = [r.run_id for r in spec.runs()]  # type: ignore[attr-defined]
    assert ids == ["load-0.2_manager-pimcloud", "load-0.2_manager-default",
                   "load-0.4_manager-pimcloud", "load-0.4_manager-default"]


def test_axes_record_is_the_analysis_format() -> None:
    spec = spec_of('[apps.oltp]\nmax_rps = 100\nqos = "5ms"\n'
                   '[axes]\napps = ["kvstore+oltp", ["kvstore"]]\n')
    mix, alone = spec.runs()  # type: ignore[attr-defined]
    record = mix.axes_record()
    assert record["apps"] == ["kvstore", "oltp"] and record["mix"] == "kvstore+oltp"
    assert record["rps"] == {"kvstore": 500, "oltp": 50}
    assert record["qos_ns"] == {"kvstore": 1e6, "oltp": 5e6}
    assert alone.axes_record()["app"] == "kvstore" and alone.axes_record()["rps"] == 500


def test_spec_hash_ignores_axes_and_limits_but_not_the_scenario() -> None:
    a = spec_of('[axes]\nload = [0.2]\n[limits]\nretries = 1\n')
    b = spec_of('[axes]\nload = [0.2, 0.3]\n[limits]\nretries = 3\n')
    assert a.spec_hash == b.spec_hash  # type: ignore[attr-defined]
    d = spec_of(base=BASE.replace('measured = "100ms"', 'measured = "200ms"'))
    assert d.spec_hash != a.spec_hash  # type: ignore[attr-defined]


@pytest.mark.parametrize(("extra", "field", "fix"), [
    ("[scenario]\nmanagr = 'x'\n", "scenario.managr", "did you mean 'manager'"),
    ("[axes]\nmanager = ['pimcloud', 'octopus']\n", "axes.manager", "choose among"),
    ("[axes]\nloads = [0.1]\n", "axes.loads", "did you mean 'load'"),
    ("[axes]\nload = [0.1, 0.1]\n", "axes.load", "listed twice"),
    ("[axes]\nload = []\n", "axes.load", "non-empty list"),
    ("[limits]\nhost_time = '6 hours'\n", "limits.host_time", "s, min, h, d"),
    ("[limits]\nmemory = '8GB'\n", "limits.memory", "GiB"),
    ("[system]\ntopology = 'papr'\n", "system.topology", "did you mean 'paper'"),
    ("[system]\nkernel = '/no/such/vmlinux'\n", "system.kernel", "no such file"),
    ("[system]\nbackend = 'kvm'\n", "system.backend", "'gem5'"),
    ("[executor]\nkind = 'pbs'\n", "executor.kind", "'slurm'"),
    ("[apps.Bad]\nmax_rps = 1\n", "apps.Bad", "lower case"),
])
def test_errors_name_the_field_and_the_fix(extra: str, field: str, fix: str) -> None:
    text = BASE + extra
    if extra.startswith("[scenario]"):
        text = BASE.replace('load = 0.5', 'load = 0.5\nmanagr = "x"')
    if extra.startswith("[system]") or extra.startswith("[apps.Bad]"):
        text = extra + BASE
    message = error_of(text)
    assert f"t.toml: {field}" in message and fix in message, message


def test_load_needs_max_rps() -> None:
    message = error_of(BASE.replace("max_rps = 1000\n", ""))
    assert "apps.kvstore.max_rps is missing" in message and "max_rps = N" in message


def test_measured_length_is_required() -> None:
    message = error_of(BASE.replace('measured = "100ms"', 'warmup = "1ms"'))
    assert "length.measured is missing" in message


def test_mix_rps_table_needs_every_app() -> None:
    text = BASE.replace("load = 0.5", "") + '[apps.oltp]\n[axes]\napps = ["kvstore+oltp"]\n' \
        'rps = [{ kvstore = 100 }]\n'
    assert "no rps for oltp" in error_of(text)


def test_shipped_specs_are_valid() -> None:
    for name in ("quickstart", "quickstart-qemu", "paper-load-sweep"):
        spec = load_spec(name)
        assert spec.runs()


def test_run_ids_are_folder_names() -> None:
    assert run_id_of({"apps": ["a", "b"], "rps": {"a": 1.5, "b": 2}}) == "apps-a+b_rps-a1.5+b2"
    assert "/" not in run_id_of({"topology": "/x/y.toml"})


def test_per_core_max_rps_reach_the_agent_config_or_are_refused_alone() -> None:
    from pimcloud.runs.guest_scenario import agent_config

    spec = spec_of(base=BASE.replace('qos = "1ms"', 'qos = "1ms"\nmax_rps_host_core = 900\n'
                                     'max_rps_pim_core = 300'))
    run = spec.runs()[0]  # type: ignore[attr-defined]
    entry = agent_config(run)["apps"][0]
    assert (entry["max_rps_host"], entry["max_rps_pim"]) == (900, 300)
    assert "max_rps_host" not in agent_config(spec_of().runs()[0])["apps"][0]  # type: ignore[attr-defined]
    message = error_of(BASE.replace('qos = "1ms"', 'qos = "1ms"\nmax_rps_host_core = 900'))
    assert "apps.kvstore.max_rps_host_core" in message and "together" in message


def test_tiered_placements_need_a_slow_tier_and_tiering_needs_them() -> None:
    tiered = spec_of('[system]\ntopology = "tiered"\n[axes]\n'
                     'placement = ["fast-preferred", "slow-always"]\ntiering = ["none", "agent"]\n')
    runs = tiered.runs()  # type: ignore[attr-defined]
    assert [r.run_id for r in runs][-1] == "placement-slow-always_tiering-agent"
    assert runs[-1].axes_record()["tiering"] == "agent"
    with pytest.raises(SpecError, match=r'has neither \(use topology = "tiered"'):
        spec_of('[axes]\nplacement = ["fast-always"]\n').runs()  # type: ignore[attr-defined]
    far = spec_of('[system]\ntopology = "tiered-far-mini"\n[axes]\nplacement = ["fast-always"]\n')
    assert len(far.runs()) == 1  # type: ignore[attr-defined]
    with pytest.raises(SpecError, match="set placement to one of fast-preferred"):
        spec_of('[axes]\ntiering = ["agent"]\n').runs()  # type: ignore[attr-defined]


def test_counting_off_needs_the_counters_and_is_an_axis() -> None:
    both = spec_of('[system]\nbackend = "gem5"\n[gem5]\ncounters = true\n'
                   '[axes]\ncounting = [true, false]\n')
    runs = both.runs()  # type: ignore[attr-defined]
    assert [r.scenario.counting for r in runs] == [True, False]
    assert [r.run_id for r in runs] == ["counting-true", "counting-false"]
    assert [r.axes_record()["counting"] for r in runs] == [True, False]
    assert "counting" not in spec_of("").runs()[0].axes_record()  # type: ignore[attr-defined]
    # A key added later leaves the hashes of campaigns made before it alone.
    assert "counting" not in spec_of("").science()["scenario"]  # type: ignore[attr-defined]
    with pytest.raises(SpecError, match="interference reads the counters"):
        spec_of('[system]\nbackend = "gem5"\n[gem5]\ncounters = true\n[axes]\n'
                'counting = [false]\nmanager = ["interference"]\n').runs()  # type: ignore[attr-defined]
    with pytest.raises(SpecError, match=r"add \[gem5\] counters = true"):
        spec_of('[axes]\ncounting = [false]\n').runs()  # type: ignore[attr-defined]
    with pytest.raises(SpecError, match="counting is true or false"):
        spec_of('[axes]\ncounting = ["no"]\n')


IMGDNN = BASE.replace("kvstore", "imgdnn")


def test_dynamic_placement_runs_the_agent_and_reaches_its_config() -> None:
    from pimcloud.runs.guest_scenario import agent_config

    both = spec_of('[axes]\n'
                   'dynamic = ["none", "migration", "replication", "migration+replication"]\n',
                   base=IMGDNN.replace("[scenario]\n", '[scenario]\ntiering_pages = 64\n'
                                       'manager = "default"\n'))
    runs = both.runs()  # type: ignore[attr-defined]
    placement = [agent_config(r)["placement"] for r in runs]
    assert [p.get("locality_pages") for p in placement] == [None, 64, None, 64]
    assert [p.get("replicate", False) for p in placement] == [False, False, True, True]
    assert runs[1].axes_record()["dynamic"] == "migration"
    # A key added later leaves the hashes of campaigns made before it alone.
    assert "dynamic" not in spec_of("").science()["scenario"]  # type: ignore[attr-defined]
    with pytest.raises(SpecError, match="dynamic placement is the agent's work; set manager"):
        spec_of(base=BASE.replace("[scenario]\n", '[scenario]\nmanager = "none"\n'
                                  'dynamic = "replication"\n')).runs()  # type: ignore[attr-defined]
    with pytest.raises(SpecError, match=r"page-access counters; add \[gem5\] counters"):
        spec_of('[system]\nbackend = "gem5"\n[axes]\ndynamic = ["migration"]\n').runs()  # type: ignore[attr-defined]
    with pytest.raises(SpecError, match="choose among"):
        spec_of('[axes]\ndynamic = ["teleport"]\n')
    with pytest.raises(SpecError, match="none of kvstore keeps shared read-only data"):
        spec_of('[axes]\ndynamic = ["replication"]\n',
                base=BASE.replace("[scenario]\n", '[scenario]\nmanager = "default"\n')
                ).runs()  # type: ignore[attr-defined]
    with pytest.raises(SpecError, match="dynamic migration reads the counters"):
        spec_of('[system]\nbackend = "gem5"\n[gem5]\ncounters = true\n[axes]\n'
                'counting = [false]\ndynamic = ["migration"]\n').runs()  # type: ignore[attr-defined]


VARIANTS = ('[system]\ntopology = "tiered"\n[axes]\nload = [0.2, 0.5]\nvariant = [\n'
            '  { name = "slow-only", placement = "slow-always" },\n'
            '  { name = "lru", placement = "fast-preferred", tiering = "heteroos-lru" },\n'
            '  { name = "pgm", manager = "balm", options = { balm = { mode = "pgm" } } },\n]\n')


def test_variants_are_named_points_whose_values_go_together() -> None:
    runs = spec_of(VARIANTS).runs()  # type: ignore[attr-defined]
    assert [r.run_id for r in runs[:3]] == ["load-0.2_variant-slow-only", "load-0.2_variant-lru",
                                            "load-0.2_variant-pgm"]
    lru = runs[1]
    assert (lru.scenario.placement, lru.scenario.tiering, lru.scenario.load) == (
        "fast-preferred", "heteroos-lru", 0.2)
    assert runs[0].scenario.tiering == "none"  # the template's value where a variant is silent
    assert runs[2].scenario.options_of("balm") == {"mode": "pgm"}
    assert lru.point == {"load": 0.2, "variant": "lru"}
    # An axis: dropping a variant keeps the spec hash (a campaign folder goes on), while
    # each run's hash holds its variant's values.
    fewer = spec_of(VARIANTS.replace('  { name = "slow-only", placement = "slow-always" },\n', ""))
    assert fewer.spec_hash == spec_of(VARIANTS).spec_hash  # type: ignore[attr-defined]
    assert fewer.runs()[0].run_hash == lru.run_hash  # type: ignore[attr-defined]


@pytest.mark.parametrize(("change", "fix"), [
    ('name = "a", placement = "nope"', r"axes.variant\[0\].placement = 'nope': choose among"),
    ('nme = "x"', r"axes.variant\[0\].name is missing: give each variant a name"),
    ('name = "a", placemnt = "cc"', r"axes.variant\[0\].placemnt .*a variant sets axis keys"),
    ('name = "a", load = 0.3', r"load is also an axis"),
])
def test_variant_errors_name_the_field_and_the_fix(change: str, fix: str) -> None:
    text = BASE + '[axes]\nload = [0.2]\nvariant = [{ ' + change + " }]\n"
    assert re.search(fix, error_of(text))
    assert "two variants" in error_of(BASE + '[axes]\nvariant = [{ name = "a" }, { name = "a" }]\n')
