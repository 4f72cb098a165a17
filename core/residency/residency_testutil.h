// ResidencyFixture: a ResidencyManager over a FakeDevice, and the ops residency tests run on it
// (write a fill, read back, check the state). Shared by residency_test.cc and
// residency_plan_test.cc; each test file's Init chooses the options.
#ifndef POOCH_CORE_RESIDENCY_RESIDENCY_TESTUTIL_H_
#define POOCH_CORE_RESIDENCY_RESIDENCY_TESTUTIL_H_

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/testing/fake_device.h"
#include "core/residency/residency.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch::testing {

class ResidencyFixture : public ::testing::Test {
 public:
  static constexpr int64_t kG = 64 << 10;  // the fake device's granularity

 protected:
  using Mode = AccessRange::Mode;

  // The options the residency tests share: a limit of `limit` bytes, allocations of a granule
  // and more swappable, a short wait for pins, and the reuse cache off unless asked for.
  static ResidencyOptions Options(int64_t limit, std::optional<int64_t> host_limit = std::nullopt,
                                  std::optional<int64_t> reuse_cache_bytes = 0) {
    ResidencyOptions r;
    r.memory_limit = limit;
    r.min_swap_bytes = kG;
    r.host_memory_limit = host_limit;
    r.pinned_wait = absl::Milliseconds(50);
    r.reuse_cache_bytes = reuse_cache_bytes;
    return r;
  }

  // `bytes` of a pattern in which a copy to the wrong offset shows.
  static std::vector<uint8_t> Pattern(int64_t bytes) {
    std::vector<uint8_t> p(static_cast<size_t>(bytes));
    for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>(i * 7 + i / 251);
    return p;
  }

  // A device of 64 granules in `mode` (with `device` for the rest) and a manager with `options`.
  void Start(FakeDevice::Options device, const ResidencyOptions& options,
             ResidencyObserver* observer = nullptr) {
    device.granularity = kG;
    device.capacity = 64 * kG;
    device_ = std::make_unique<FakeDevice>(device);
    stream_ = *device_->CreateStream();
    auto m = ResidencyManager::Create(*device_, options, observer);
    ASSERT_TRUE(m.ok()) << m.status();
    manager_ = *std::move(m);
  }

  // Every test ends with nothing mapped and no hazard on the device.
  void TearDown() override {
    manager_.reset();
    if (device_ != nullptr) {
      EXPECT_THAT(device_->violations(), ::testing::IsEmpty());
      EXPECT_EQ(device_->physical_bytes(), 0);
      EXPECT_EQ(device_->mapped_bytes(), 0);
    }
  }

  // An op on `stream` (default stream_) that writes `fill` over the allocation, touching it with
  // `mode`.
  absl::Status Fill(DeviceAddress address, int64_t bytes, uint8_t fill, Mode mode = Mode::kWrite,
                    std::optional<StreamHandle> stream = std::nullopt) {
    const StreamHandle s = stream.value_or(stream_);
    absl::StatusOr<OpTicket> t = manager_->BeforeOp(s, {{address, bytes, mode}});
    if (!t.ok()) return t.status();
    absl::Status st = device_->Launch(s, {{address, bytes}}, [=](FakeDevice::Memory& m) {
      std::vector<uint8_t> data(static_cast<size_t>(bytes), fill);
      m.Write(address, data.data(), bytes).IgnoreError();
    });
    st.Update(manager_->AfterOp(*std::move(t)));
    return st;
  }

  // An op on `stream` that reads [address, address + bytes) back; waits for it.
  absl::StatusOr<std::vector<uint8_t>> ReadBack(DeviceAddress address, int64_t bytes,
                                                std::optional<StreamHandle> stream = std::nullopt) {
    const StreamHandle s = stream.value_or(stream_);
    absl::StatusOr<OpTicket> t = manager_->BeforeOp(s, {{address, bytes, Mode::kRead}});
    if (!t.ok()) return t.status();
    auto out = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(bytes));
    absl::Status st = device_->Launch(s, {{address, bytes}}, [=](FakeDevice::Memory& m) {
      m.Read(address, out->data(), bytes).IgnoreError();
    });
    st.Update(manager_->AfterOp(*std::move(t)));
    st.Update(device_->SynchronizeStream(s));
    if (!st.ok()) return st;
    return *out;
  }

  bool Holds(DeviceAddress address, int64_t bytes, uint8_t fill) {
    absl::StatusOr<std::vector<uint8_t>> data = ReadBack(address, bytes);
    EXPECT_TRUE(data.ok()) << data.status();
    return data.ok() && *data == std::vector<uint8_t>(static_cast<size_t>(bytes), fill);
  }

  ResidencyState StateOf(DeviceAddress address) {
    std::optional<AllocationInfo> info = manager_->Lookup(address);
    EXPECT_TRUE(info.has_value());
    return info.has_value() ? info->state : ResidencyState::kResident;
  }

  std::unique_ptr<FakeDevice> device_;
  StreamHandle stream_ = 0;
  std::unique_ptr<ResidencyManager> manager_;
};

}  // namespace pooch::testing

#endif  // POOCH_CORE_RESIDENCY_RESIDENCY_TESTUTIL_H_
