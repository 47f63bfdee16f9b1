// core/crc32c.h: published vectors, every length and alignment against the bit-at-a-time
// definition, and leveldb's mask. The converter checks TF bundles with it, the .brt loader every
// tensor segment (model_file_checksum_test).
#include "core/crc32c.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "test_util.h"

namespace bertrt {
namespace {

using test::crc32c_bitwise;

TEST(Crc32c, PublishedVectors) {
  // RFC 3720 (iSCSI) appendix B.4 and leveldb util/crc32c_test.cc.
  uint8_t buf[32];
  std::memset(buf, 0, sizeof buf);
  EXPECT_EQ(crc32c::value(buf, 32), 0x8a9136aau);
  std::memset(buf, 0xff, sizeof buf);
  EXPECT_EQ(crc32c::value(buf, 32), 0x62a8ab43u);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(crc32c::value(buf, 32), 0x46dd794eu);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(31 - i);
  EXPECT_EQ(crc32c::value(buf, 32), 0x113fdb5cu);
  EXPECT_EQ(crc32c::value("123456789", 9), 0xe3069283u);
  const uint8_t iscsi_read[48] = {0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                  0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00,
                                  0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00,
                                  0x00, 0x18, 0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                  0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  EXPECT_EQ(crc32c::value(iscsi_read, 48), 0xd9963a56u);
}

TEST(Crc32c, ExtendAndEveryLengthMatchTheBitwiseDefinition) {
  EXPECT_EQ(crc32c::extend(crc32c::value("hello ", 6), "world", 5),
            crc32c::value("hello world", 11));
  std::vector<uint8_t> data(300);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 37 + 11);
  for (size_t start = 0; start < 9; ++start)  // unaligned starts exercise the 8-byte loop's tail
    for (size_t n = 0; n + start <= 80; ++n) {
      const uint32_t want = crc32c_bitwise(data.data() + start, n);
      ASSERT_EQ(crc32c::value(data.data() + start, n), want) << start << " " << n;
      ASSERT_EQ(crc32c::extend_portable(0, data.data() + start, n), want) << start << " " << n;
    }
  EXPECT_EQ(crc32c::extend(crc32c::value(data.data(), 123), data.data() + 123, 177),
            crc32c::value(data.data(), 300));
  EXPECT_EQ(crc32c::extend_portable(crc32c::value(data.data(), 123), data.data() + 123, 177),
            crc32c::value(data.data(), 300));
}

// The hardware instructions this CPU has (SSE4.2 or ARMv8 CRC32; CI runs the aarch64 build under
// qemu) against the table-driven reference over buffers of model-file size classes.
TEST(Crc32c, HardwarePathEqualsThePortableOneOnLongBuffers) {
  std::vector<uint8_t> data(size_t(1) << 20 | 13);
  uint64_t x = 0x9e3779b97f4a7c15u;
  for (uint8_t& b : data) x ^= x << 13, x ^= x >> 7, x ^= x << 17, b = uint8_t(x);
  for (size_t n : {size_t(4096), size_t(65536 + 5), data.size()})
    for (size_t start : {size_t(0), size_t(3)})
      EXPECT_EQ(crc32c::value(data.data() + start, n - start),
                crc32c::extend_portable(0, data.data() + start, n - start))
          << crc32c::implementation() << " " << n << " " << start;
}

TEST(Crc32c, MaskAsLeveldb) {
  // leveldb crc32c_test.cc "Mask": masking changes the value, twice too, and unmask inverts it.
  const uint32_t crc = crc32c::value("foo", 3);
  EXPECT_NE(crc, crc32c::mask(crc));
  EXPECT_NE(crc, crc32c::mask(crc32c::mask(crc)));
  EXPECT_EQ(crc, crc32c::unmask(crc32c::mask(crc)));
  EXPECT_EQ(crc, crc32c::unmask(crc32c::unmask(crc32c::mask(crc32c::mask(crc)))));
  EXPECT_EQ(crc32c::mask(0), 0xa282ead8u);  // rotate(0) + delta
}

}  // namespace
}  // namespace bertrt
