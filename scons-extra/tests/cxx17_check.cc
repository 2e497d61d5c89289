// gem5 v24 builds with -std=c++17: the headers the SimObjects include must compile
// there too. This program is built as C++17 and exercises each header once.
#include "pimcloud/acpi_table_check.hh"
#include "pimcloud/counters_model.hh"
#include "pimcloud/hpet_model.hh"
#include "pimcloud/link_model.hh"
#include "pimcloud/ready_queue.hh"

int
main()
{
    pimcloud::RouteTable table(2, {{0, 1, 5, 1.0}, {1, 0, 5, 1.0}}, {0, 0, 1, 2, 2}, {0, 1});
    pimcloud::LinkModel model(table);
    const bool ok = model.traverse(0, 1, 4, 0) == 9 &&
                    !pimcloud::checkAcpiTable("SRAT", std::vector<std::uint8_t>(36)).empty() &&
                    pimcloud::hpet::Registers(10'000'000, 3).read(0x4, 4, 0) == 10'000'000;
    pimcloud::counters::DeviceConfig config;
    config.stacks = {{{0x100, 4}}};
    config.stackNodes = {1};
    config.cpuPeriods = {500};
    const pimcloud::counters::Device device(config);
    const bool counters_ok = device.read(PIMC_MAGIC, 0) == PIMCLOUD_COUNTERS_MAGIC;
    pimcloud::ReadyQueue<int> queue;
    queue.insert(1, 10, 0x40);
    const bool queue_ok = queue.insert(2, 5, 0x40) == 10;
    return ok && counters_ok && queue_ok ? 0 : 1;
}
