// Checks on a complete ACPI system description table (header and checksum included)
// before PimAcpiTable installs it verbatim: a table the kernel would reject must stop
// the simulation at construction with a message that says what is wrong.
//
// Plain C++ without gem5 (C++17 like gem5 itself), tested on its own.
#ifndef PIMCLOUD_ACPI_TABLE_CHECK_HH
#define PIMCLOUD_ACPI_TABLE_CHECK_HH

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pimcloud
{

// Size of the standard ACPI description header (signature .. creator revision).
constexpr std::size_t acpiHeaderBytes = 36;

// Byte sum of the table modulo 256; zero for a valid table.
inline std::uint8_t
acpiByteSum(const std::vector<std::uint8_t> &bytes)
{
    std::uint8_t sum = 0;
    for (std::uint8_t b : bytes)
        sum = static_cast<std::uint8_t>(sum + b);
    return sum;
}

// Empty when `bytes` is a well-formed table with this signature, else what is wrong
// and how to fix it.
inline std::string
checkAcpiTable(const std::string &signature, const std::vector<std::uint8_t> &bytes)
{
    const std::string fix =
        "; pass the complete table bytes from pimcloud.topology.build_numa_tables()";
    if (signature.size() != 4)
        return "table_signature '" + signature + "' must have exactly 4 characters";
    if (bytes.size() < acpiHeaderBytes)
        return "table '" + signature + "' has " + std::to_string(bytes.size()) +
               " bytes, fewer than the 36-byte ACPI header" + fix;
    const std::string found(bytes.begin(), bytes.begin() + 4);
    if (found != signature)
        return "table bytes start with signature '" + found + "' but table_signature is '" +
               signature + "'" + fix;
    const std::uint32_t length = std::uint32_t(bytes[4]) | std::uint32_t(bytes[5]) << 8 |
                                 std::uint32_t(bytes[6]) << 16 |
                                 std::uint32_t(bytes[7]) << 24;
    if (length != bytes.size())
        return "table '" + signature + "' says its length is " + std::to_string(length) +
               " bytes but " + std::to_string(bytes.size()) + " bytes were given" + fix;
    if (const std::uint8_t sum = acpiByteSum(bytes); sum != 0)
        return "table '" + signature + "' has a bad checksum (bytes sum to " +
               std::to_string(sum) + " mod 256, not 0)" + fix;
    return {};
}

} // namespace pimcloud

#endif // PIMCLOUD_ACPI_TABLE_CHECK_HH
