// Printing float32 values the way the user wrote them. A float32 config value such as
// layer_norm_eps = 1e-12 widened to double prints as 9.999999960041972e-13; the shortest decimal
// that reads back as the same float32 is what the user (and config.json) wrote: 1e-12.
#pragma once

#include <string>

namespace bertrt {

// The shortest decimal that parses back to exactly `v` as a float32 (std::to_chars' shortest
// round-trip form, locale-independent): 0.1f → "0.1", 1e-12f → "1e-12", 3e-5f → "3e-05";
// "inf", "-inf", "nan" for non-finite values.
std::string float_decimal(float v);

// The double nearest to float_decimal(v), so JSON writers (which print a double's own shortest
// form) write "0.1" instead of 0.10000000149011612. Converting it back to float gives `v`.
// Non-finite values come back unchanged.
double float_as_written(float v);

}  // namespace bertrt
