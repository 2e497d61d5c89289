// Tests of the checks PimAcpiTable applies to prebuilt ACPI tables.
#include "pimcloud/acpi_table_check.hh"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace pimcloud
{
namespace
{

// A well-formed table: header with signature and length, a body, checksum fixed up.
std::vector<std::uint8_t>
makeTable(const std::string &signature, std::size_t body_bytes)
{
    std::vector<std::uint8_t> t(acpiHeaderBytes + body_bytes);
    for (std::size_t i = 0; i < 4; ++i)
        t[i] = static_cast<std::uint8_t>(signature[i]);
    const auto length = static_cast<std::uint32_t>(t.size());
    for (int i = 0; i < 4; ++i)
        t[4 + i] = static_cast<std::uint8_t>(length >> (8 * i));
    t[8] = 1; // revision
    for (std::size_t i = acpiHeaderBytes; i < t.size(); ++i)
        t[i] = static_cast<std::uint8_t>(i * 7);
    t[9] = static_cast<std::uint8_t>(0x100 - acpiByteSum(t));
    return t;
}

bool
mentions(const std::string &error, const std::string &what)
{
    return error.find(what) != std::string::npos;
}

TEST(AcpiTableCheck, AcceptsAWellFormedTable)
{
    const auto t = makeTable("SLIT", 12);
    EXPECT_EQ(acpiByteSum(t), 0);
    EXPECT_EQ(checkAcpiTable("SLIT", t), "");
}

TEST(AcpiTableCheck, RejectsABadChecksum)
{
    auto t = makeTable("SRAT", 40);
    t.back() ^= 0x01;
    EXPECT_TRUE(mentions(checkAcpiTable("SRAT", t), "bad checksum"));
}

TEST(AcpiTableCheck, RejectsALengthThatDisagrees)
{
    auto t = makeTable("HMAT", 40);
    t.push_back(0); // one byte more than the header says; the sum is unchanged
    EXPECT_TRUE(mentions(checkAcpiTable("HMAT", t), "says its length is 76 bytes but 77"));
}

TEST(AcpiTableCheck, RejectsAnotherSignature)
{
    const auto t = makeTable("SLIT", 12);
    EXPECT_TRUE(mentions(checkAcpiTable("SRAT", t), "start with signature 'SLIT'"));
}

TEST(AcpiTableCheck, RejectsShortTablesAndBadSignatures)
{
    EXPECT_TRUE(mentions(checkAcpiTable("SRAT", std::vector<std::uint8_t>(20)),
                         "fewer than the 36-byte ACPI header"));
    EXPECT_TRUE(mentions(checkAcpiTable("SRATX", makeTable("SRAT", 0)),
                         "exactly 4 characters"));
}

} // namespace
} // namespace pimcloud
