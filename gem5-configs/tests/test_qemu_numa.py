"""A real guest agrees with the model: Debian's stock 6.1 kernel under QEMU TCG, booted
once with QEMU's own -numa options and once with our SRAT/SLIT/HMAT from the initrd.

Memory is divided (the divisor keeps each layout's shape; paper's still spans the x86
hole) so that a boot takes seconds: QEMU allocates guest RAM lazily, but Linux
initialises every page it is given.
"""

import shutil

import pytest
from pimcloud.guest.numa_probe import mismatches, probe
from pimcloud.guest.stock_kernel import stock_kernel
from pimcloud.topology import load_topology

pytestmark = [
    pytest.mark.qemu,
    pytest.mark.skipif(shutil.which("qemu-system-x86_64") is None,
                       reason="qemu-system-x86_64 missing: install Debian's qemu-system-x86"),
]

CHECKED = [("paper", 2), ("arch9", 16), ("tiered", 4)]


@pytest.fixture(scope="module")
def kernel():  # type: ignore[no-untyped-def]
    return stock_kernel()


@pytest.mark.parametrize("mode", ["qemu", "tables"])
@pytest.mark.parametrize(("name", "divisor"), CHECKED)
def test_guest_numa_layout_matches_model(kernel, name: str, divisor: int,  # type: ignore[no-untyped-def]
                                         mode: str) -> None:
    topology = load_topology(name).with_memory_divided(divisor)
    result = probe(kernel, topology, mode)  # type: ignore[arg-type]
    assert mismatches(topology, result, mode) == [], result.console[-4000:]  # type: ignore[arg-type]
    assert result.clocksource == "tsc"
