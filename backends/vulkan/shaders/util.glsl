// Helpers shared by the shaders (#included): byte access into 32-bit words, float → double bits,
// and a correctly rounded division (Vulkan allows 2.5 ulp for OpFDiv; the quantization rules
// need PyTorch's bits).

// Byte i of a uint[] storage buffer (std430 words, little-endian).
#define BYTE_U(buf, i) ((buf[(i) >> 2] >> (((i)&3u) * 8u)) & 0xffu)
#define BYTE_S(buf, i) (int(BYTE_U(buf, i) << 24) >> 24)

// The IEEE double equal to f, as (low word, high word); subnormal floats become ±0 (GPUs flush
// them in arithmetic anyway). Lets a float result land in a `double*` without shaderFloat64.
uvec2 double_bits(float f) {
  const uint u = floatBitsToUint(f), sign = u & 0x80000000u, e = (u >> 23) & 0xffu,
             m = u & 0x7fffffu;
  if (e == 0u) return uvec2(0u, sign);
  const uint de = e == 255u ? 2047u : e + 896u;  // rebias 127 → 1023
  return uvec2(m << 29, sign | (de << 20) | (m >> 3));
}

// a·b − fl(a·b), exactly (Dekker's product with Veltkamp's split; `precise` forbids the fused
// or reassociated forms that would break it). |a|, |b| < 2^100.
float product_error(float a, float b, float prod) {
  precise float ca = 4097.0 * a, cb = 4097.0 * b;
  precise float ah = ca - (ca - a), bh = cb - (cb - b);
  precise float al = a - ah, bl = b - bh;
  precise float e = ((ah * bh - prod) + ah * bl + al * bh) + al * bl;
  return e;
}

// a − q·b for q near a/b (a − fl(q·b) is exact by Sterbenz's lemma; the product error follows).
float div_residual(float a, float b, float q) {
  precise float prod = q * b;
  precise float r = (a - prod) - product_error(q, b, prod);
  return r;
}

// fl(a / b) rounded to nearest for a ≥ 0, b > 0, finite, normal results: a seed within a few
// ulp (a · (1/b): two roundings), then one-ulp steps while the exact residual shrinks. A quotient
// of two floats is never a tie, so the smallest residual is the rounded quotient.
float div_rn(float a, float b) {
  precise float q = a * (1.0 / b);
  if (a == 0.0 || isinf(q) || q < 1.1754944e-38) return a / b;
  float r = abs(div_residual(a, b, q));
  for (int step = 0; step < 8; ++step) {
    const bool up = div_residual(a, b, q) > 0.0;
    const float next = uintBitsToFloat(floatBitsToUint(q) + (up ? 1u : 0xffffffffu));
    const float rn = abs(div_residual(a, b, next));
    if (!(rn < r)) break;
    q = next;
    r = rn;
  }
  return q;
}
