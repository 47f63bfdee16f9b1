// `bertrt forward` stdin: JSON lines {"input_ids", "token_type_ids", "attention_mask"}, each line
// through the CLI's own parser (tools/cli/forward_input.cpp).
#include <string_view>

#include "cli/forward_input.h"
#include "fuzz_target.h"

BERTRT_FUZZ_TARGET(forward_jsonl) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  size_t line_no = 0;
  for (size_t pos = 0; pos <= all.size();) {
    size_t end = all.find('\n', pos);
    if (end == std::string_view::npos) end = all.size();
    ++line_no;
    const std::string line(all.substr(pos, end - pos));
    if (!line.empty()) {
      try {
        (void)bertrt::cli::parse_forward_line(line, line_no);
      } catch (const bertrt::Error&) {
      }
    }
    pos = end + 1;
  }
}
