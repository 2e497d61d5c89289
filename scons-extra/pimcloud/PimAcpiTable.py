# A prebuilt ACPI table (SRAT, SLIT, HMAT, ...) installed verbatim into gem5's x86
# RSDT/XSDT. The bytes come from pimcloud.topology.build_numa_tables(); put the object
# in workload.acpi_description_table_pointer.xsdt.entries next to the MADT.

from m5.objects.ACPI import X86ACPISysDescTable
from m5.params import Param, VectorParam


class PimAcpiTable(X86ACPISysDescTable):
    type = "PimAcpiTable"
    cxx_class = "gem5::PimAcpiTable"
    cxx_header = "pimcloud/pim_acpi_table.hh"

    table_signature = Param.String(
        "four-letter table signature, e.g. SRAT; must match the first bytes"
    )
    table_bytes = VectorParam.UInt8(
        "complete table: header (length, checksum) and body, written as is"
    )
