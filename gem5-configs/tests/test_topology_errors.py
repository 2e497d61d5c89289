"""Invalid topologies are rejected with an error naming the field, the value and the fix."""

import subprocess
import sys
from pathlib import Path

import pytest
from pimcloud.topology import TopologyError, load_topology


def write(tmp_path: Path, body: str, extends: str = "paper") -> Path:
    path = tmp_path / "custom.toml"
    header = f'extends = "{extends}"\n' if extends else ""
    path.write_text(header + body)
    return path


CASES = [
    # (TOML body, field named in the error, words of the fix)
    ("[host]\ncores = 0\n[stacks]\npim_cores = 0\n", "host.cores", "at least one core"),
    ("[host]\ncores = 300\n", "host.cores", "at most 255"),
    ("[stacks]\npim_cores = 200\n", "stacks.pim_cores", "8 bits"),
    ("[host]\ncores = \"four\"\n", "host.cores", "whole number"),
    ("[host]\ncroes = 4\n", "host.croes", "did you mean 'cores'"),
    ("[host]\ncore_type = \"huge\"\n", "host.core_type", "brawny, wimpy"),
    ("[stacks]\ncapacity = \"8GB\"\n", "stacks.capacity", "GiB"),
    ("[stacks]\ncapacity = \"101MiB\"\n", "stacks.capacity", "multiples of 2MiB"),
    ("[stacks]\ncapacity = \"300GiB\"\n", "stacks.capacity", "I/O space"),
    ("[links.cpu_stack]\nlatency = \"-4ns\"\n", "links.cpu_stack.latency", "negative"),
    ("[links.stack_stack]\nnetwork = \"ring\"\n", "links.stack_stack.network", "at least 3"),
    ("[links.stack_stack]\nnetwork = \"mesh\"\n", "links.stack_stack.network", "'full'"),
    ("[links.stack_stack]\nlatency_overrides = [{from = 0, to = 1, latency = \"9ns\"}]\n",
     "links.stack_stack.latency_overrides", "asymmetric"),
    ("[links.stack_stack]\nlatency_overrides = [{from = 0, to = 5, latency = \"9ns\"}]\n",
     "latency_overrides[0].to", "numbered 0..1"),
    ("[stacks]\ncount = 4\n[links.stack_stack]\nnetwork = \"chain\"\nlatency_overrides = ["
     "{from = 0, to = 2, latency = \"9ns\"}, {from = 2, to = 0, latency = \"9ns\"}]\n",
     "links.stack_stack.latency_overrides", "no direct link in a chain network"),
    ("[stacks.caches]\nl2 = { size = \"256KiB\", assoc = 8, latency = 7 }\n",
     "stacks.caches.l2", "shallow hierarchy has L1s only"),
    ("[host.caches]\nl1d = { size = \"48KiB\", assoc = 8, latency = 3 }\n",
     "host.caches.l1d.size", "power of two"),
    ("[stacks.dram]\ntRAS = \"5ns\"\n", "stacks.dram.tRAS", "at least tRCD"),
    ("[memory]\nranges = [{node = \"stack0\", start = \"0B\", size = \"8GiB\"},"
     "{node = \"stack1\", start = \"12GiB\", size = \"8GiB\"}]\n",
     "memory.ranges", "device hole"),
    ("[memory]\nranges = [{node = \"stack0\", start = \"0B\", size = \"3GiB\"},"
     "{node = \"stack0\", start = \"4GiB\", size = \"5GiB\"},"
     "{node = \"stack1\", start = \"8GiB\", size = \"8GiB\"}]\n",
     "memory.ranges", "overlaps node stack0"),
    ("[memory]\nranges = [{node = \"stack0\", start = \"1MiB\", size = \"3GiB\"}]\n",
     "memory.ranges", "multiples of 2MiB"),
    ("[memory]\nranges = [{node = \"stack0\", start = \"0B\", size = \"2GiB\"},"
     "{node = \"stack1\", start = \"4GiB\", size = \"8GiB\"}]\n",
     "memory.ranges (node stack0)", "add up to the node's capacity 8GiB"),
    ("[memory]\nranges = [{node = \"stack9\", start = \"0B\", size = \"2GiB\"}]\n",
     "memory.ranges[0].node", "stack0, stack1"),
    ("unset = [\"host.nothing\"]\n", "unset", "no such key"),
    ("[far]\ncapacity = \"1GiB\"\n[far.link]\nlatency = \"9ns\"\n"
     "bidirectional_bandwidth = \"9GB/s\"\n", "far.dram", "add a [far.dram] table"),
]


@pytest.mark.parametrize(("body", "field", "fix"), CASES)
def test_invalid_topology_names_field_and_fix(tmp_path: Path, body: str, field: str,
                                               fix: str) -> None:
    with pytest.raises(TopologyError) as caught:
        load_topology(str(write(tmp_path, body)))
    assert field in caught.value.field
    assert fix in str(caught.value)


@pytest.mark.parametrize(("body", "field", "fix"), [
    ("[far]\ncapacity = \"10MiB\"\n", "far.capacity", "at least 64MiB"),
    ("[far.link]\nlatency = \"-1ns\"\n", "far.link.latency", "negative"),
    ("[memory]\nranges = [{node = \"fra\", start = \"0B\", size = \"2GiB\"}]\n",
     "memory.ranges[0].node", "stack1, far"),
])
def test_invalid_far_memory_names_field_and_fix(tmp_path: Path, body: str, field: str,
                                                fix: str) -> None:
    with pytest.raises(TopologyError) as caught:
        load_topology(str(write(tmp_path, body, extends="tiered-far-mini")))
    assert field in caught.value.field
    assert fix in str(caught.value)


def test_missing_field(tmp_path: Path) -> None:
    path = write(tmp_path, "[host]\ncores = 1\n", extends="")
    with pytest.raises(TopologyError, match="core_types is missing: add a"):
        load_topology(str(path))


def test_toml_syntax_error(tmp_path: Path) -> None:
    with pytest.raises(TopologyError, match="fix the TOML syntax"):
        load_topology(str(write(tmp_path, "[host\n")))


def test_unknown_preset_suggests_a_name() -> None:
    with pytest.raises(TopologyError, match="did you mean 'paper'"):
        load_topology("papper")


def test_explicit_ranges_that_fit_are_accepted(tmp_path: Path) -> None:
    body = ("[memory]\nranges = [{node = \"stack1\", start = \"0B\", size = \"3GiB\"},"
            "{node = \"stack1\", start = \"4GiB\", size = \"5GiB\"},"
            "{node = \"stack0\", start = \"16GiB\", size = \"8GiB\"}]\n")
    topology = load_topology(str(write(tmp_path, body)))
    assert topology.explicit_ranges[0].owner == "stack1"


def test_cli_reports_errors_without_traceback(tmp_path: Path) -> None:
    path = write(tmp_path, "[host]\ncores = -1\n")
    done = subprocess.run([sys.executable, "-m", "pimcloud.cli", "topology", "validate",
                           str(path)], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "host.cores = -1: must be at least 0" in done.stderr
