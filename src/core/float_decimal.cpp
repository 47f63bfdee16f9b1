#include "core/float_decimal.h"

#include <charconv>
#include <cmath>
#include <system_error>

namespace bertrt {

std::string float_decimal(float v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip for float
  return std::string(buf, r.ptr);
}

double float_as_written(float v) {
  if (!std::isfinite(v)) return double(v);
  const std::string s = float_decimal(v);
  double d = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), d);
  return r.ec == std::errc() ? d : double(v);
}

}  // namespace bertrt
