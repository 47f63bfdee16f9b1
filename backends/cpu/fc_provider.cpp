#include "backends/cpu/fc_provider.h"

#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace bertrt::cpu {

const char* fc_provider_name(FcProvider p) {
  switch (p) {
    case FcProvider::kOpenBlas:
      return "openblas";
    case FcProvider::kXnnpack:
      return "xnnpack";
    case FcProvider::kBertrt:
      return "bertrt";
    case FcProvider::kAuto:
      return "auto";
  }
  return "?";
}

FcProvider fc_provider_from_env() {
  const char* env = std::getenv("BERTRT_FC_PROVIDER");
  if (!env || !*env) return FcProvider::kAuto;
  for (FcProvider p :
       {FcProvider::kOpenBlas, FcProvider::kXnnpack, FcProvider::kBertrt, FcProvider::kAuto})
    if (std::strcmp(env, fc_provider_name(p)) == 0) return p;
  fail("BERTRT_FC_PROVIDER: '{}' is not a provider (expected openblas, xnnpack, bertrt or auto)",
       env);
}

}  // namespace bertrt::cpu
