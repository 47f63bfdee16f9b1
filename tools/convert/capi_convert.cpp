// bertrt_convert (bertrt/bertrt.h): the host converter as one C call, what `bertrt-convert`
// does without its command line (warnings go to stderr as there).
#include <fmt/format.h>

#include <cstring>
#include <filesystem>

#include "bertrt/bertrt.h"
#include "capi/api_error.h"
#include "convert/convert_input.h"
#include "convert/export_hf.h"
#include "convert/export_st.h"
#include "convert/hf_import.h"
#include "convert/tensor_encode.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "io/model_file.h"

using namespace bertrt;
using namespace bertrt::capi;

extern "C" bertrt_status bertrt_convert(const char* input, const char* output, const char* to,
                                        const char* dtype, const char* vocab) {
  return guard(BERTRT_E_FAILED, [&] {
    const char* fn = "bertrt_convert";
    require(input, fn, "input");
    require(output, fn, "output");
    if (!*output) api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: output is an empty path", fn);
    const std::string target = to ? to : "brt", type = dtype ? dtype : "f32";
    std::error_code ec;
    if (!std::filesystem::exists(input, ec))
      api_fail(BERTRT_E_IO, "{}: input {}: no such file or folder", fn, input);
    std::vector<std::string> warnings;
    if (target == "hf" || target == "sentence-transformers") {
      if (type != "f32")
        api_fail(BERTRT_E_INVALID_ARGUMENT,
                 "{}: dtype applies to conversions into .brt, not to \"{}\"", fn, target);
      if (vocab)
        api_fail(BERTRT_E_INVALID_ARGUMENT,
                 "{}: vocab applies to conversions into .brt; \"{}\" writes the .brt's own "
                 "vocabulary",
                 fn, target);
      warnings = target == "hf" ? convert::export_hf(input, output)
                                : convert::export_sentence_transformers(input, output);
    } else if (target == "brt") {
      const auto parsed = convert::parse_float_dtype(type);
      if (!parsed)
        api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: dtype must be f32, f16 or bf16, got {}", fn, type);
      // Before the import, which reads the whole checkpoint (the CLI's order).
      try {
        check_writable(output);
      } catch (const Error& e) {
        api_fail(BERTRT_E_IO, "{}: output {}", fn, e.what());
      }
      convert::check_replaceable_brt("output", output);
      if (vocab && !std::filesystem::is_regular_file(vocab, ec))
        api_fail(BERTRT_E_IO, "{}: vocab {}: {}", fn, vocab, not_a_file_reason(vocab));
      convert::ConvertOptions opts;
      opts.dtype = *parsed;
      opts.vocab = vocab ? vocab : "";
      convert::ConvertedModel m = convert::import_checkpoint(input, opts);
      warnings = m.warnings;
      write_model_file(output, m.contents);
    } else {
      api_fail(BERTRT_E_INVALID_ARGUMENT,
               "{}: to must be \"brt\", \"hf\" or \"sentence-transformers\", got \"{}\"", fn,
               target);
    }
    for (const std::string& w : warnings) fmt::print(stderr, "bertrt_convert: warning: {}\n", w);
  });
}
