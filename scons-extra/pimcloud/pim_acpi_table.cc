#include "pimcloud/pim_acpi_table.hh"

#include <string>

#include "base/logging.hh"
#include "base/trace.hh"
#include "debug/ACPI.hh"
#include "mem/port_proxy.hh"
#include "pimcloud/acpi_table_check.hh"

namespace gem5
{

namespace
{

const PimAcpiTableParams &
checked(const PimAcpiTableParams &p)
{
    const std::string error = ::pimcloud::checkAcpiTable(p.table_signature, p.table_bytes);
    fatal_if(!error.empty(), "%s: %s\n", p.name, error);
    return p;
}

} // namespace

PimAcpiTable::PimAcpiTable(const Params &p)
    // The signature and revision given to the base are only informative here: the
    // header inside the bytes is the one the guest reads. The params outlive us.
    : SysDescTable(checked(p), p.table_signature.c_str(),
                   p.table_bytes.size() > 8 ? p.table_bytes[8] : 0),
      bytes(p.table_bytes)
{}

Addr
PimAcpiTable::writeBuf(PortProxy &phys_proxy, X86ISA::ACPI::Allocator &alloc,
                       std::vector<uint8_t> &mem) const
{
    // Tables are only ever written whole; `mem` exists for tables that extend others.
    panic_if(!mem.empty(), "%s: PimAcpiTable cannot be extended by another table\n",
             name());
    // 8-byte alignment keeps the 64-bit fields of SRAT/HMAT entries aligned.
    const Addr addr = alloc.alloc(bytes.size(), 8);
    DPRINTF(ACPI, "Writing prebuilt table %s (%d bytes) at %#x\n",
            params().table_signature, bytes.size(), addr);
    phys_proxy.writeBlob(addr, bytes.data(), bytes.size());
    return addr;
}

} // namespace gem5
