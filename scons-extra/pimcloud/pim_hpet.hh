// PimHpet: the gem5 face of hpet_model.hh, a counter-only HPET on the I/O bus.
#ifndef PIMCLOUD_PIM_HPET_HH
#define PIMCLOUD_PIM_HPET_HH

#include "dev/io_device.hh"
#include "params/PimHpet.hh"
#include "pimcloud/hpet_model.hh"

namespace gem5
{

class PimHpet : public BasicPioDevice
{
  public:
    PARAMS(PimHpet);
    explicit PimHpet(const Params &p);

    Tick read(PacketPtr pkt) override;
    Tick write(PacketPtr pkt) override;

    void serialize(CheckpointOut &cp) const override;
    void unserialize(CheckpointIn &cp) override;

  private:
    // Offset of an access inside the block, checking its size and alignment.
    std::uint64_t accessOffset(PacketPtr pkt) const;

    ::pimcloud::hpet::Registers registers;
};

} // namespace gem5

#endif // PIMCLOUD_PIM_HPET_HH
