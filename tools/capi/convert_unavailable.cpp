// bertrt_convert in builds without the host converter (cross builds: BERTRT_BUILD_CONVERT=OFF).
#include "bertrt/bertrt.h"
#include "capi/api_error.h"

extern "C" bertrt_status bertrt_convert(const char* input, const char* output, const char* to,
                                        const char* dtype, const char* vocab) {
  bertrt::capi::set_last_error(
      "bertrt_convert: this build has no converter (host builds only: BERTRT_BUILD_CONVERT=ON)");
  return BERTRT_E_UNSUPPORTED;
}
