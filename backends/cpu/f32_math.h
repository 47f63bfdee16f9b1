// Branch-free scalar exp and erf that GCC/Clang vectorise at -O3 when called in a loop (no libm
// calls, selects instead of branches), for the CPU backend's GELU, softmax and cross-entropy.
//
// Accuracy, measured against double std::exp / std::erf in tests/unit/ops_test.cpp:
//   exp_f32:  relative error ≤ 1.2e-7 on [−87, 0] (≈ 1 ulp), exactly 0 below −87.3;
//   erf_f32:  absolute error ≤ 1e-7 on all floats (measured max ≈ 4.8e-8; rounding the exact value
//             to float alone costs up to 3e-8 near |erf| = 1).
#pragma once

#include <cstdint>
#include <cstring>

namespace bertrt::cpu {

// e^z for z ≤ 0 (Cephes expf: Cody–Waite reduction z = n·ln2 + r, degree-7 polynomial in r,
// then scaling by 2^n built in the exponent bits). Returns 0 for z < −87.3 (and −inf).
inline float exp_nonpos_f32(float z) {
  // Clamped below (keeps 2^n a normal float); NaN (a diverged run) is kept out of the int
  // conversion, whose result would be undefined (UBSan), and returned as NaN at the end.
  const float zc = z < -87.3f ? -87.3f : (z == z && z < 88.0f ? z : 0.0f);
  const int n = -static_cast<int>(-zc * 1.44269504088896341f + 0.5f);  // round(z / ln2), z ≤ 0
  const float fn = static_cast<float>(n);
  float r = zc - fn * 0.693359375f;  // ln2 split in a short high part and a correction
  r = r - fn * -2.12194440e-4f;
  const float r2 = r * r;
  const float p = (((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r +
                     4.1665795894e-2f) * r + 1.6666665459e-1f) * r + 5.0000001201e-1f) * r2 +
                  r + 1.0f;
  const int32_t bits = (n + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return z < -87.3f ? 0.0f : (z == z ? p * scale : z);
}

// erf(x) for a double argument, accurate to float precision (see above). Cephes ndtr.c double
// rational approximations, evaluated in double so that their rounding stays far below a float ulp:
//   |x| < 1:  erf(x) = x·T(x²)/U(x²);
//   |x| ≥ 1:  erf(x) = ±(1 − e^{−x²}·P(|x|)/Q(|x|)), |x| clamped to 5 (erfc(5) ≈ 1.5e-12).
// e^{−x²} comes from exp_nonpos_f32: its relative error times erfc(1) ≈ 0.16 stays below 2e-8.
inline double erf_f64_fast(double x) {
  const double a = x < 0.0 ? -x : x;
  const double z = x * x;
  const double t = (((9.60497373987051638749e0 * z + 9.00260197203842689217e1) * z +
                     2.23200534594684319226e3) * z + 7.00332514112805075473e3) * z +
                   5.55923013010394962768e4;
  const double u = ((((z + 3.35617141647503099647e1) * z + 5.21357949780152679795e2) * z +
                     4.59432382970980127987e3) * z + 2.26290000613890934246e4) * z +
                   4.92673942608635921086e4;
  const double small = x * t / u;

  const double c = a < 1.0 ? 1.0 : (a > 5.0 ? 5.0 : a);
  const double p = (((((((2.46196981473530512524e-10 * c + 5.64189564831068821977e-1) * c +
                         7.46321056442269912687e0) * c + 4.86371970985681366614e1) * c +
                       1.96520832956077098242e2) * c + 5.26445194995477358631e2) * c +
                     9.34528527171957607540e2) * c + 1.02755188689515710272e3) * c +
                   5.57535335369399327526e2;
  const double q = (((((((c + 1.32281951154744992508e1) * c + 8.67072140885989742329e1) * c +
                        3.54937778887819891062e2) * c + 9.75708501743205489753e2) * c +
                      1.82390916687909736289e3) * c + 2.24633760818710981792e3) * c +
                    1.65666309194161350182e3) * c + 5.57535340817727675546e2;
  const double e = exp_nonpos_f32(static_cast<float>(-c * c));
  const double big = 1.0 - e * p / q;
  return a < 1.0 ? small : (x < 0.0 ? -big : big);
}

inline float erf_f32(float x) { return static_cast<float>(erf_f64_fast(x)); }

}  // namespace bertrt::cpu
