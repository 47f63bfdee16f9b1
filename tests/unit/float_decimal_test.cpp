// float_decimal / float_as_written: float32 config values printed as written (0.1, 1e-12), checked
// against NumPy's shortest float32 repr (str(np.float32(x)), Dragon4 "unique" mode) and Python's
// json.dumps of that value, for the config values BERT files hold, a few awkward ones and
// denormals.
#include "core/float_decimal.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace bertrt {
namespace {

// The inputs as decimal literals: both sides parse the same text to float32.
const std::vector<std::string> kValues = {
    "0.1",
    "1e-12",
    "0.02",
    "1e-5",
    "3e-5",
    "1e-6",
    "0.0001",
    "0.9",
    "2e-5",
    "5e-5",
    "1e-45",           // the smallest denormal (1.4e-45 is the same float32)
    "1e-40",           // a denormal with a few digits
    "1.1754942e-38",   // the largest denormal
    "1.17549435e-38",  // the smallest normal
    "3.4028235e38",    // the largest float32
    "0.3333333333",
    "123456.789",
    "16777216",
    "1e16",
    "-0.02",
    "0"};

float parse_float(const std::string& s) { return std::strtof(s.c_str(), nullptr); }

double parse_double(const std::string& s) {
  double d = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), d);
  EXPECT_EQ(r.ec, std::errc()) << s;
  return d;
}

std::vector<std::string> python_lines(const std::string& script) {
  const std::string cmd = std::string(test::kPython) + " -c '" + script + "'";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    if (pclose(p) != 0) out.clear();
  }
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

TEST(FloatDecimal, RoundTripsAndIsShortest) {
  for (const std::string& s : kValues) {
    const float v = parse_float(s);
    const std::string d = float_decimal(v);
    EXPECT_EQ(parse_float(d), v) << s << " → " << d;
    // No shorter significand reads back as v: one digit less of precision gives another float.
    std::string digits;
    for (char c : d.substr(0, d.find('e')))
      if (c >= '0' && c <= '9') digits += c;
    const size_t sig = digits.find_first_not_of('0') == std::string::npos
                           ? 1
                           : digits.size() - digits.find_first_not_of('0');
    if (sig > 1) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.*e", int(sig) - 2, double(v));
      EXPECT_NE(parse_float(buf), v) << s << ": " << buf << " is shorter than " << d;
    }
    EXPECT_EQ(float(float_as_written(v)), v) << s;
  }
  EXPECT_EQ(float_decimal(std::numeric_limits<float>::infinity()), "inf");
  EXPECT_EQ(float_decimal(-std::numeric_limits<float>::infinity()), "-inf");
  EXPECT_EQ(float_decimal(std::nanf("")), "nan");
  EXPECT_TRUE(std::isnan(float_as_written(std::nanf(""))));
}

TEST(FloatDecimal, MatchesNumpyShortestFloat32) {
  if (!test::have_torch()) GTEST_SKIP() << "python3 with numpy (python3-torch) missing";
  std::string list;
  for (const std::string& s : kValues) list += "\"" + s + "\",";
  // str(np.float32) is the shortest float32 decimal; json.dumps prints that value as Python does.
  const std::vector<std::string> lines = python_lines(
      "import json, numpy as np\n"
      "for s in [" +
      list +
      "]:\n"
      "    r = str(np.float32(s)); print(r, json.dumps(float(r)))\n");
  ASSERT_EQ(lines.size(), kValues.size()) << "python reference failed";
  for (size_t i = 0; i < kValues.size(); ++i) {
    const float v = parse_float(kValues[i]);
    std::istringstream in(lines[i]);
    std::string numpy_repr, python_json;
    in >> numpy_repr >> python_json;
    // The same decimal value (NumPy may pick fixed where to_chars picks exponent notation).
    EXPECT_EQ(parse_double(float_decimal(v)), parse_double(numpy_repr)) << kValues[i];
    EXPECT_EQ(float_as_written(v), parse_double(numpy_repr)) << kValues[i];
    // What a JSON file gets: the text Python writes for the value the user wrote.
    EXPECT_EQ(nlohmann::json(float_as_written(v)).dump(), python_json) << kValues[i];
    // And not the widened double (the bug: 0.10000000149011612).
    if (parse_double(numpy_repr) != double(v)) {
      EXPECT_NE(nlohmann::json(double(v)).dump(), python_json) << kValues[i];
    }
  }
}

}  // namespace
}  // namespace bertrt
