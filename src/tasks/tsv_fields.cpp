#include "tasks/tsv_fields.h"

#include "core/error.h"
#include "core/utf8.h"

namespace bertrt {

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  size_t begin = 0;
  for (;;) {
    const size_t tab = line.find('\t', begin);
    out.push_back(line.substr(begin, tab - begin));
    if (tab == std::string::npos) return out;
    begin = tab + 1;
  }
}

std::vector<std::string> read_tsv_header(std::istream& in, const std::string& path,
                                         const std::string& what) {
  std::string line;
  if (!std::getline(in, line)) fail("{}: empty (expected a header line naming {})", path, what);
  if (line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return split_tabs(line);
}

bool next_tsv_line(std::istream& in, const std::string& path, std::string& line, size_t& n) {
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (first_invalid_utf8(line) != std::string::npos) fail("{}: line {}: not valid UTF-8", path, n);
    return true;
  }
  return false;
}

}  // namespace bertrt
