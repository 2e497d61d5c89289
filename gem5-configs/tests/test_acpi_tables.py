"""The ACPI tables round-trip through Debian's iasl disassembler and match the model."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from pimcloud.topology import build_hpet, build_numa_tables, cpus, load_topology, numa_nodes
from pimcloud.topology.acpi import checksum_ok
from pimcloud.topology.interconnect import access_matrix, local_initiator, slit_distances
from pimcloud.topology.parse import preset_names

pytestmark = pytest.mark.skipif(shutil.which("iasl") is None,
                                reason="iasl missing: install Debian's acpica-tools")

# "[030h 0048   1]   Subtable Type : 00 [...]", or a decoded flag "   Enabled : 1".
FIELD = re.compile(r"^(?:\[[0-9A-F]+h \d+ +\d+\])? +(\S.*?) : (.*)$")


def disassemble(tmp_path: Path, name: str, data: bytes) -> list[tuple[str, str]]:
    """(field, value) pairs from iasl -d, in table order; fails on any iasl complaint."""
    aml = tmp_path / f"{name}.aml"
    aml.write_bytes(data)
    done = subprocess.run(["iasl", "-d", str(aml)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    text = (tmp_path / f"{name}.dsl").read_text()
    assert "Invalid" not in text and "**** " not in text, text
    return [(m.group(1).strip(), m.group(2).strip()) for line in text.splitlines()
            if (m := FIELD.match(line))]


def subtables(fields: list[tuple[str, str]], starter: str) -> list[dict[str, list[str]]]:
    groups: list[dict[str, list[str]]] = []
    for key, value in fields:
        if key == starter:
            groups.append({})
        if groups:
            groups[-1].setdefault(key, []).append(value.split()[0])
    return groups


def hexint(text: str) -> int:
    return int(text, 16)


@pytest.mark.parametrize("name", sorted(preset_names()))
def test_tables_disassemble_to_the_model(tmp_path: Path, name: str) -> None:
    topology = load_topology(name)
    tables = {t.signature: t for t in build_numa_tables(topology)}
    for table in tables.values():
        assert checksum_ok(table.data)
        assert int.from_bytes(table.data[4:8], "little") == len(table.data)

    srat = disassemble(tmp_path, "srat", tables["SRAT"].data)
    entries = subtables(srat, "Subtable Type")
    apic = [e for e in entries if e["Subtable Type"] == ["00"]]
    memory = [e for e in entries if e["Subtable Type"] == ["01"]]
    assert [(hexint(e["Apic ID"][0]), hexint(e["Proximity Domain Low(8)"][0]))
            for e in apic] == [(c.apic_id, c.node) for c in cpus(topology)]
    assert all(e["Enabled"] == ["1"] for e in apic + memory)
    expected_memory = [(n.node_id, r.start, r.size) for n in numa_nodes(topology)
                       for r in n.ranges]
    assert [(hexint(e["Proximity Domain"][0]), hexint(e["Base Address"][0]),
             hexint(e["Address Length"][0])) for e in memory] == expected_memory

    slit = dict(disassemble(tmp_path, "slit", tables["SLIT"].data))
    matrix = slit_distances(topology)
    assert hexint(slit["Localities"]) == len(matrix)
    for i, row in enumerate(matrix):
        assert [hexint(v) for v in slit[f"Locality {i:3d}"].split()] == row

    hmat = disassemble(tmp_path, "hmat", tables["HMAT"].data)
    structures = subtables(hmat, "Structure Type")
    attributes = [s for s in structures if s["Structure Type"] == ["0000"]]
    for s in attributes:
        target = hexint(s["Memory Proximity Domain"][0])
        assert hexint(s["Attached Initiator Proximity Domain"][0]) == local_initiator(
            topology, target)
    cells = {(c.initiator_node, c.target_node): c for c in access_matrix(topology)}
    localities = [s for s in structures if s["Structure Type"] == ["0001"]]
    assert [hexint(s["Data Type"][0]) for s in localities] == [0, 3]
    for s, unit in zip(localities, ("latency_ps", "bandwidth"), strict=True):
        base = hexint(s["Entry Base Unit"][0])
        initiators = [hexint(v) for v in s["Initiator Proximity Domain List"]]
        targets = [hexint(v) for v in s["Target Proximity Domain List"]]
        values = [hexint(v) * base for v in s["Entry"]]
        pairs = [(i, t) for i in initiators for t in targets]
        assert sorted(pairs) == sorted(cells)
        for pair, value in zip(pairs, values, strict=True):
            expected = (cells[pair].latency_ps if unit == "latency_ps"
                        else cells[pair].bandwidth // 10**6)
            assert abs(value - expected) <= base / 2, (pair, unit)


def test_hpet_table_disassembles_to_the_device(tmp_path: Path) -> None:
    table = build_hpet(0xFED00000, num_timers=3)
    assert checksum_ok(table.data)
    fields = dict(disassemble(tmp_path, "hpet", table.data))
    assert fields["Signature"].startswith('"HPET"')
    assert hexint(fields["Address"]) == 0xFED00000
    assert hexint(fields["Space ID"].split()[0]) == 0  # system memory
    block_id = hexint(fields["Hardware Block ID"])
    assert block_id >> 16 == 0x8086
    assert (block_id >> 8) & 0x1F == 2  # last timer of three
    with pytest.raises(ValueError, match=r"3\.\.32"):
        build_hpet(num_timers=2)
