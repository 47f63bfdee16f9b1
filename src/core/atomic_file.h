// Writes a file atomically: bytes go to a temp file in the destination folder, which commit()
// fsyncs and renames over `path` (rename is atomic within one filesystem, POSIX). Destroying an
// uncommitted AtomicFile removes the temp file, so a failed write leaves any old file untouched.
// A `path` that is a symbolic link is written through: the file it names is replaced (in that
// file's folder), and the link stays.
#pragma once

#include <cstddef>
#include <string>

namespace bertrt {

// The file an output path names: `path` with its chain of symbolic links followed (relative
// targets against the link's folder; a dangling link's target, which a write creates). Throws
// bertrt::Error naming `path` for a loop (more than 40 links) or a link that cannot be read.
std::string output_target(const std::string& path);

// Fails now, before any work, where AtomicFile(path) would fail later: a link loop, a missing
// folder, a folder or a device/FIFO/socket at the target, or a folder that takes no new file (a
// probe file is created and removed). Throws bertrt::Error that starts with `path` and names the
// link's target where it differs. The one check behind the CLI's, the converter's and the C API's
// output checks.
void check_writable(const std::string& path);

class AtomicFile {
 public:
  // Throws bertrt::Error as check_writable does: a missing or unwritable folder, or a target that
  // is not a regular file (a device or FIFO would be replaced by the rename).
  explicit AtomicFile(const std::string& path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t n);
  void write_zeros(size_t n);
  size_t written() const { return written_; }
  const std::string& path() const { return path_; }
  // fsync + close of the temp file; throws on failure (a full disk may only show here). For
  // outputs of several files: sync() them all, then commit() them all, so that no write error
  // leaves a mix of new and old files.
  void sync();
  // sync() if not done yet, then rename onto the final path + fsync of the folder; throws on
  // failure.
  void commit();

 private:
  std::string path_, target_, temp_path_, dir_;  // target_: path_ with its links followed
  int fd_ = -1;
  size_t written_ = 0;
  bool committed_ = false;
};

}  // namespace bertrt
