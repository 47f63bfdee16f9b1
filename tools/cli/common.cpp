#include "common.h"

#include <filesystem>
#include <iostream>

#include "core/error.h"

namespace bertrt::cli {

namespace fs = std::filesystem;

void check_output_path(const std::string& flag, const std::string& path) {
  if (path.empty()) fail("{}: an output path is required", flag);
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir))
    fail("{} {}: folder '{}' does not exist", flag, path, dir.string());
  if (fs::is_directory(p)) fail("{} {}: is a folder, expected a file path", flag, path);
}

void check_input_file(const std::string& flag, const std::string& path) {
  if (!fs::exists(path)) fail("{} {}: no such file", flag, path);
  if (!fs::is_regular_file(path)) fail("{} {}: not a regular file", flag, path);
}

void for_each_stdin_line(const std::function<void(const std::string&, size_t)>& fn) {
  std::string line;
  size_t n = 0;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    fn(line, ++n);
  }
}

void BackendChoice::add_to(CLI::App* app) {
  app->add_option("--backend", name, "compute backend: cpu (OpenBLAS) or reference (scalar)")
      ->capture_default_str();
}

}  // namespace bertrt::cli
