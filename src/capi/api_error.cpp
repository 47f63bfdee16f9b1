#include "capi/api_error.h"

#include <new>

#include "core/error.h"
#include "core/utf8.h"
#include "core/version.h"

namespace bertrt::capi {

namespace {
thread_local std::string last_error;
}  // namespace

void set_last_error(const std::string& message) {
  try {
    last_error = message;
  } catch (...) {  // out of memory while reporting: keep the old text rather than throw
  }
}

void clear_last_error() { last_error.clear(); }

void require_utf8(const char* text, const char* fn, const char* name) {
  try {
    check_utf8_text(text, name);
  } catch (const Error& e) {
    api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: {}", fn, e.what());
  }
}

bertrt_status status_of_current_exception(bertrt_status fallback) noexcept {
  try {
    throw;
  } catch (const ApiError& e) {
    set_last_error(e.what());
    return e.status();
  } catch (const Error& e) {
    set_last_error(e.what());
    return fallback;
  } catch (const std::bad_alloc&) {
    set_last_error("out of memory (try a smaller batch)");
    return BERTRT_E_OUT_OF_MEMORY;
  } catch (const std::exception& e) {  // std::filesystem, nlohmann::json and the like
    set_last_error(e.what());
    return BERTRT_E_FAILED;
  } catch (...) {
    set_last_error("unknown error");
    return BERTRT_E_FAILED;
  }
}

}  // namespace bertrt::capi

extern "C" {

const char* bertrt_last_error(void) { return bertrt::capi::last_error.c_str(); }

const char* bertrt_status_string(bertrt_status status) {
  switch (status) {
    case BERTRT_OK:
      return "ok";
    case BERTRT_E_INVALID_ARGUMENT:
      return "invalid argument";
    case BERTRT_E_MODEL:
      return "model file error";
    case BERTRT_E_IO:
      return "i/o error";
    case BERTRT_E_UNSUPPORTED:
      return "unsupported";
    case BERTRT_E_STATE:
      return "invalid state";
    case BERTRT_E_OUT_OF_MEMORY:
      return "out of memory";
    case BERTRT_E_FAILED:
      return "failed";
    case BERTRT_E_CANCELLED:
      return "cancelled";
  }
  return "unknown status";
}

const char* bertrt_version(void) { return bertrt::version_string(); }

}  // extern "C"
