"""ACPI NUMA tables as exact bytes: SRAT (rev 3), SLIT (rev 1) and HMAT (rev 2, ACPI 6.3+).

The same bytes serve gem5 (installed into the XSDT by the scons-extra object) and QEMU
(added through Linux's initrd table upgrade), so the guest kernel stays topology-agnostic.
Proximity domain numbers equal NUMA node ids.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .interconnect import access_matrix, local_initiator, slit_distances
from .layout import cpus, numa_nodes
from .model import Topology

OEM_ID = b"PIMCLD"
OEM_TABLE_ID = b"PIMCLOUD"
OEM_REVISION = 1
CREATOR_ID = b"PIMC"
CREATOR_REVISION = 1
HEADER_SIZE = 36

SRAT_REVISION = 3
SLIT_REVISION = 1
HMAT_REVISION = 2

SRAT_CPU_ENABLED = 1
SRAT_MEMORY_ENABLED = 1
HMAT_INITIATOR_VALID = 1
HMAT_DATA_ACCESS_LATENCY = 0
HMAT_DATA_ACCESS_BANDWIDTH = 3
MAX_HMAT_ENTRY = 0xFFFE  # entries are 16 bits; 0xFFFF would mean "no information"


@dataclass(frozen=True)
class AcpiTable:
    """One table: its four-letter signature and complete bytes, checksum included."""

    signature: str
    data: bytes

    @property
    def filename(self) -> str:
        return f"{self.signature.lower()}.aml"


def checksum_ok(data: bytes) -> bool:
    """ACPI tables sum to zero modulo 256."""
    return sum(data) % 256 == 0


def _table(signature: str, revision: int, body: bytes) -> AcpiTable:
    length = HEADER_SIZE + len(body)
    header = struct.pack(
        "<4sIBB6s8sI4sI", signature.encode(), length, revision, 0, OEM_ID, OEM_TABLE_ID,
        OEM_REVISION, CREATOR_ID, CREATOR_REVISION,
    )
    data = bytearray(header + body)
    data[9] = (-sum(data)) % 256
    return AcpiTable(signature, bytes(data))


def build_srat(topology: Topology) -> AcpiTable:
    """Static Resource Affinity Table: a Local APIC entry per CPU, a Memory entry per range."""
    body = bytearray(struct.pack("<IQ", 1, 0))  # reserved (1 for compatibility), reserved
    for cpu in cpus(topology):
        domain = cpu.node
        body += struct.pack("<BBBBIB3sI", 0, 16, domain & 0xFF, cpu.apic_id, SRAT_CPU_ENABLED,
                            0, (domain >> 8).to_bytes(3, "little"), 0)
    for node in numa_nodes(topology):
        for mem in node.ranges:
            body += struct.pack("<BBIHIIIIIIQ", 1, 40, node.node_id, 0,
                                mem.start & 0xFFFFFFFF, mem.start >> 32,
                                mem.size & 0xFFFFFFFF, mem.size >> 32,
                                0, SRAT_MEMORY_ENABLED, 0)
    return _table("SRAT", SRAT_REVISION, bytes(body))


def build_slit(topology: Topology) -> AcpiTable:
    """System Locality Information Table from the link model's distances."""
    matrix = slit_distances(topology)
    body = struct.pack("<Q", len(matrix)) + bytes(v for row in matrix for v in row)
    return _table("SLIT", SLIT_REVISION, body)


def hmat_base_unit(values: list[int]) -> int:
    """The smallest power of ten that lets every value fit a 16-bit entry."""
    base = 1
    while max(values) // base > MAX_HMAT_ENTRY:
        base *= 10
    return base


def _locality_structure(data_type: int, initiators: list[int], targets: list[int],
                        values: dict[tuple[int, int], int]) -> bytes:
    """Latency values in picoseconds, bandwidth values in MB/s (ACPI 6.3 units)."""
    base_unit = hmat_base_unit(list(values.values()))
    entries = [max(1, round(values[(i, t)] / base_unit)) for i in initiators for t in targets]
    length = 32 + 4 * len(initiators) + 4 * len(targets) + 2 * len(entries)
    padding = (-length) % 4
    out = struct.pack("<HHIBBBBIIIQ", 1, 0, length + padding, 0, data_type, 0, 0,
                      len(initiators), len(targets), 0, base_unit)
    out += struct.pack(f"<{len(initiators)}I", *initiators)
    out += struct.pack(f"<{len(targets)}I", *targets)
    out += struct.pack(f"<{len(entries)}H", *entries)
    return out + bytes(padding)


def build_hmat(topology: Topology) -> AcpiTable:
    """Heterogeneous Memory Attribute Table: each memory node's nearest initiator, and
    access latency (ps) and bandwidth (MB/s) from every CPU node to every memory node."""
    body = bytearray(struct.pack("<I", 0))
    cells = access_matrix(topology)
    initiators = sorted({c.initiator_node for c in cells})
    targets = sorted({c.target_node for c in cells})
    for target in targets:
        initiator = local_initiator(topology, target)
        flags = HMAT_INITIATOR_VALID if initiator is not None else 0
        body += struct.pack("<HHIHHIIIQQ", 0, 0, 40, flags, 0, initiator or 0, target, 0, 0, 0)
    latency = {(c.initiator_node, c.target_node): c.latency_ps for c in cells}
    bandwidth = {(c.initiator_node, c.target_node): c.bandwidth // 10**6 for c in cells}
    body += _locality_structure(HMAT_DATA_ACCESS_LATENCY, initiators, targets, latency)
    body += _locality_structure(HMAT_DATA_ACCESS_BANDWIDTH, initiators, targets, bandwidth)
    return _table("HMAT", HMAT_REVISION, bytes(body))


def build_numa_tables(topology: Topology) -> list[AcpiTable]:
    """SRAT, SLIT and HMAT for a topology (HMAT only when some node has CPUs and memory)."""
    return [build_srat(topology), build_slit(topology), build_hmat(topology)]


HPET_REVISION = 1
HPET_BASE_ADDRESS = 0xFED00000
ACPI_SPACE_MEMORY = 0
HPET_MIN_TICK = 0x80  # clock ticks a periodic timer needs, as firmware usually states


def build_hpet(address: int = HPET_BASE_ADDRESS, num_timers: int = 3) -> AcpiTable:
    """HPET table for the gem5 board's counter-only HPET (scons-extra PimHpet).

    The event timer block id repeats what the device's capabilities register says
    (revision 1, last timer, 64-bit counter, vendor 0x8086), as the spec requires.
    """
    if not 3 <= num_timers <= 32:
        raise ValueError(f"HPET with {num_timers} timers: the specification allows 3..32")
    block_id = (0x8086 << 16) | (1 << 13) | ((num_timers - 1) << 8) | 0x01
    # Generic address structure: memory space, 64-bit register width, offset 0.
    address_structure = struct.pack("<BBBBQ", ACPI_SPACE_MEMORY, 64, 0, 0, address)
    body = struct.pack("<I", block_id) + address_structure + struct.pack(
        "<BHB", 0, HPET_MIN_TICK, 0)
    return _table("HPET", HPET_REVISION, body)


COUNTERS_BASE_ADDRESS = 0xFEB00000  # below the I/O APIC, behind the I/O bridge


def build_counters_table(address: int, size: int) -> AcpiTable:
    """The "PIMC" table that tells the guest driver where the PimCounters block is
    (scons-extra/pimcloud/pim_counters_abi.h, struct pimcloud_counters_acpi_body)."""
    if address % 8 or size <= 0:
        raise ValueError(f"PimCounters block at {address:#x}, {size} bytes: give an 8-byte "
                         "aligned address and a positive size")
    return _table("PIMC", 1, struct.pack("<QQ", address, size))
