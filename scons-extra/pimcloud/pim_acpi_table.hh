// PimAcpiTable: a complete ACPI table made outside gem5 (by the topology model)
// installed into the x86 RSDT/XSDT. gem5 v24 has no SRAT/SLIT/HMAT of its own.
#ifndef PIMCLOUD_PIM_ACPI_TABLE_HH
#define PIMCLOUD_PIM_ACPI_TABLE_HH

#include <cstdint>
#include <vector>

#include "arch/x86/bios/acpi.hh"
#include "params/PimAcpiTable.hh"

namespace gem5
{

class PimAcpiTable : public X86ISA::ACPI::SysDescTable
{
  public:
    PARAMS(PimAcpiTable);
    explicit PimAcpiTable(const Params &p);

  protected:
    // Writes the bytes as given; SysDescTable::writeBuf would rewrite the header.
    Addr writeBuf(PortProxy &phys_proxy, X86ISA::ACPI::Allocator &alloc,
                  std::vector<uint8_t> &mem) const override;

  private:
    const std::vector<uint8_t> bytes;
};

} // namespace gem5

#endif // PIMCLOUD_PIM_ACPI_TABLE_HH
