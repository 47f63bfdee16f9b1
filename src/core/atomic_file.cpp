#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/error.h"

namespace bertrt {

static std::string parent_dir(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Renaming over a link itself would replace the link with a plain file and leave the file it
// named as it was: AtomicFile writes the target.
std::string output_target(const std::string& path) {
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::vector<char> buf(static_cast<size_t>(st.st_size > 0 ? st.st_size : 255) + 1);
    const ssize_t n = ::readlink(p.c_str(), buf.data(), buf.size());
    if (n <= 0 || static_cast<size_t>(n) >= buf.size())
      fail("{}: cannot read the symbolic link '{}': {}", path, p,
           n < 0    ? std::strerror(errno)
           : n == 0 ? "it is empty"
                    : "it changed while read");
    const std::string target(buf.data(), static_cast<size_t>(n));
    p = target.front() == '/' ? target : parent_dir(p) + "/" + target;
  }
  fail("{}: cannot write: too many levels of symbolic links", path);
}

namespace {

// An output's target, with the checks that need no write: its folder exists, and nothing but a
// regular file is there. `via` gets " (the link's target T)" where the path is a link.
std::string checked_target(const std::string& path, std::string& via) {
  const std::string target = output_target(path);
  via = target == path ? "" : fmt::format(" (the link's target {})", target);
  const std::string dir = parent_dir(target);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) fail("{}{}: folder '{}' does not exist", path, via, dir);
    fail("{}{}: folder '{}': {}", path, via, dir, std::strerror(errno));  // a loop, EACCES
  }
  if (!S_ISDIR(st.st_mode)) fail("{}{}: '{}' is not a folder", path, via, dir);
  if (::stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    fail("{}{}: {}", path, via,
         S_ISDIR(st.st_mode) ? "is a folder, expected a file path"
                             : "is a device, FIFO or socket, not a regular file");
  return target;
}

// mkstemp of `target`.tmp.XXXXXX, 0644; returns the fd and sets temp_path. A name near NAME_MAX
// (255) gets a shortened stem, so that a name the folder takes also takes its temp file.
int make_temp(const std::string& path, const std::string& via, const std::string& target,
              std::string& temp_path) {
  constexpr size_t kNameMax = 255, kSuffix = sizeof(".tmp.XXXXXX") - 1;
  const size_t slash = target.find_last_of('/');
  const size_t name = target.size() - (slash == std::string::npos ? 0 : slash + 1);
  const size_t cut = name + kSuffix > kNameMax ? name + kSuffix - kNameMax : 0;
  std::string tmpl = target.substr(0, target.size() - cut) + ".tmp.XXXXXX";
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0)
    fail("{}{}: cannot write in folder '{}': {}", path, via, parent_dir(target),
         std::strerror(errno));
  ::fchmod(fd, 0644);  // mkstemp creates 0600; a model file is an ordinary readable file
  temp_path = tmpl;
  return fd;
}

}  // namespace

void check_writable(const std::string& path) {
  std::string via, temp;
  const std::string target = checked_target(path, via);
  ::close(make_temp(path, via, target, temp));
  ::unlink(temp.c_str());
}

AtomicFile::AtomicFile(const std::string& path) : path_(path) {
  std::string via;
  target_ = checked_target(path, via);
  dir_ = parent_dir(target_);
  fd_ = make_temp(path, via, target_, temp_path_);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
}

void AtomicFile::write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::write(fd_, p, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      fail("{}: write failed after {} bytes: {}", path_, written_, std::strerror(errno));
    }
    p += k;
    n -= static_cast<size_t>(k);
    written_ += static_cast<size_t>(k);
  }
}

void AtomicFile::write_zeros(size_t n) {
  static const char zeros[256] = {};
  while (n > 0) {
    const size_t k = n < sizeof zeros ? n : sizeof zeros;
    write(zeros, k);
    n -= k;
  }
}

void AtomicFile::sync() {
  if (fd_ < 0) return;
  if (::fsync(fd_) != 0) fail("{}: fsync failed: {}", path_, std::strerror(errno));
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) fail("{}: close failed: {}", path_, std::strerror(errno));
}

void AtomicFile::commit() {
  sync();
  if (::rename(temp_path_.c_str(), target_.c_str()) != 0)
    fail("{}: cannot rename temp file into place: {}", path_, std::strerror(errno));
  committed_ = true;
  // Make the rename itself durable (best effort: some filesystems refuse fsync on folders).
  const int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace bertrt
