// Tab-separated files with a header line, as the task and embedding readers take them: fields
// split on every tab (no quoting, as GLUE's files), a UTF-8 byte-order mark and \r dropped.
#pragma once

#include <istream>
#include <string>
#include <vector>

namespace bertrt {

// The fields of one line: every tab splits ("a\t\tb" has 3 fields, "" one).
std::vector<std::string> split_tabs(const std::string& line);

// The header's fields (a byte-order mark and a trailing \r dropped). Throws bertrt::Error naming
// `path` when the file is empty; `what` says what the header should name.
std::vector<std::string> read_tsv_header(std::istream& in, const std::string& path,
                                         const std::string& what);

// The next non-empty data line (a trailing \r dropped) into `line`, n its 1-based line number;
// false at the end. Throws bertrt::Error naming the file and line when it is not UTF-8.
bool next_tsv_line(std::istream& in, const std::string& path, std::string& line, size_t& n);

}  // namespace bertrt
