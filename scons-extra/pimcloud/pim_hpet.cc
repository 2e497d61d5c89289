#include "pimcloud/pim_hpet.hh"

#include <string>

#include "base/logging.hh"
#include "base/trace.hh"
#include "debug/PimHpet.hh"
#include "mem/packet_access.hh"
#include "sim/serialize.hh"

namespace gem5
{

namespace
{

const PimHpetParams &
checked(const PimHpetParams &p)
{
    const auto error = ::pimcloud::hpet::checkParameters(p.counter_period_fs, p.num_timers);
    fatal_if(error.has_value(), "%s: %s\n", p.name, error.value_or(""));
    return p;
}

} // namespace

PimHpet::PimHpet(const Params &p)
    : BasicPioDevice(checked(p), ::pimcloud::hpet::kRegisterBlockSize),
      registers(p.counter_period_fs, p.num_timers)
{
}

std::uint64_t
PimHpet::accessOffset(PacketPtr pkt) const
{
    const Addr offset = pkt->getAddr() - pioAddr;
    const unsigned size = pkt->getSize();
    panic_if((size != 4 && size != 8) || offset % size != 0,
             "%s: HPET access of %u bytes at offset %#x; registers take aligned "
             "4- or 8-byte accesses\n", name(), size, offset);
    return offset;
}

Tick
PimHpet::read(PacketPtr pkt)
{
    const std::uint64_t offset = accessOffset(pkt);
    const std::uint64_t value = registers.read(offset, pkt->getSize(), curTick());
    DPRINTF(PimHpet, "read %u bytes at %#x: %#x\n", pkt->getSize(), offset, value);
    pkt->setUintX(value, ByteOrder::little);
    pkt->makeAtomicResponse();
    return pioDelay;
}

Tick
PimHpet::write(PacketPtr pkt)
{
    const std::uint64_t offset = accessOffset(pkt);
    const std::uint64_t value = pkt->getUintX(ByteOrder::little);
    DPRINTF(PimHpet, "write %u bytes at %#x: %#x\n", pkt->getSize(), offset, value);
    registers.write(offset, pkt->getSize(), value, curTick());
    pkt->makeAtomicResponse();
    return pioDelay;
}

void
PimHpet::serialize(CheckpointOut &cp) const
{
    const auto saved = registers.save();
    paramOut(cp, "config", saved.config);
    paramOut(cp, "counterBase", saved.counterBase);
    paramOut(cp, "enabledAtPs", saved.enabledAtPs);
    arrayParamOut(cp, "timerConfig", saved.timerConfig);
    arrayParamOut(cp, "timerComparator", saved.timerComparator);
}

void
PimHpet::unserialize(CheckpointIn &cp)
{
    auto saved = registers.save();
    paramIn(cp, "config", saved.config);
    paramIn(cp, "counterBase", saved.counterBase);
    paramIn(cp, "enabledAtPs", saved.enabledAtPs);
    arrayParamIn(cp, "timerConfig", saved.timerConfig);
    arrayParamIn(cp, "timerComparator", saved.timerComparator);
    registers.restore(saved);
}

} // namespace gem5
