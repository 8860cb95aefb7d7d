// Durable, checked file writes and CRC-32C (see durable_file.h).
#include "support/durable_file.h"

#include <errno.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "support/error.h"

namespace tessera::support {

namespace {

using support::fail;

// The byte-at-a-time table of the reflected polynomial 0x82F63B78.
constexpr std::array<uint32_t, 256> kCrcTable = [] {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}();

// The injected fault plan and the operation count (durable_file.h).
struct Faults {
  enum Kind { kNone, kKill, kFail, kList } kind = kNone;
  int error = 0;      // errno for kFail
  int64_t at = 0;     // the operation it hits
  int64_t count = 0;  // operations so far
};

Faults parse_faults(std::string_view spec) {
  Faults f;
  if (spec.empty()) return f;
  if (spec == "list") {
    f.kind = Faults::kList;
    return f;
  }
  size_t colon = spec.find(':');
  std::string kind(spec.substr(0, colon)), at(colon == std::string_view::npos ? "" : spec.substr(colon + 1));
  char* end = nullptr;
  long long k = at.empty() ? 0 : std::strtoll(at.c_str(), &end, 10);
  if (at.empty() || *end != '\0' || k < 1)
    fail("TESSERA_CHECKPOINT_FAULT={}: expected kill:K, enospc:K, eio:K (K >= 1) or list", spec);
  f.at = k;
  if (kind == "kill") f.kind = Faults::kKill;
  else if (kind == "enospc") f.kind = Faults::kFail, f.error = ENOSPC;
  else if (kind == "eio") f.kind = Faults::kFail, f.error = EIO;
  else fail("TESSERA_CHECKPOINT_FAULT={}: unknown fault \"{}\" (kill, enospc, eio or list)", spec, kind);
  return f;
}

std::mutex faults_mutex;
Faults& faults() {
  static Faults f = [] {
    const char* env = std::getenv("TESSERA_CHECKPOINT_FAULT");
    return parse_faults(env ? env : "");
  }();
  return f;
}

// What operation `op` on `path` must do: 0 go on, -1 be killed after it completes, or an errno
// to fail with.
int next_operation(const char* op, const std::string& path) {
  std::lock_guard<std::mutex> lock(faults_mutex);
  Faults& f = faults();
  ++f.count;
  if (f.kind == Faults::kList) fmt::print(stderr, "checkpoint io {}: {} {}\n", f.count, op, path);
  if (f.count != f.at) return 0;
  return f.kind == Faults::kKill ? -1 : f.kind == Faults::kFail ? f.error : 0;
}

[[noreturn]] void die() {
  ::kill(::getpid(), SIGKILL);
  std::abort();  // not reached
}

[[noreturn]] void fail_errno(const std::string& path, const char* op, int error) {
  fail("{}: {} failed: {}", path, op, std::strerror(error));
}

// Runs the system call `call` (returning -1 and setting errno on failure) as operation `op`,
// with the injected fault if it is this one.
template <typename Call>
void checked(const char* op, const std::string& path, Call call) {
  int fault = next_operation(op, path);
  if (fault > 0) fail_errno(path, op, fault);
  if (call() == -1) fail_errno(path, op, errno);
  if (fault < 0) die();
}

// Closes a descriptor left open by an error (its own error is moot then).
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

void write_all(int fd, const std::string& path, std::string_view data) {
  constexpr size_t kChunk = size_t(1) << 24;  // one write call (one counted operation) per 16 MiB
  while (!data.empty()) {
    size_t n = std::min(data.size(), kChunk);
    int fault = next_operation("write", path);
    if (fault != 0) {  // a write cut short: half the bytes reach the file, then the fault
      [[maybe_unused]] ssize_t half = ::write(fd, data.data(), n / 2);
      if (fault < 0) die();
      fail_errno(path, "write", fault);
    }
    ssize_t w = ::write(fd, data.data(), n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) fail_errno(path, "write", errno);
    if (w == 0) fail_errno(path, "write", ENOSPC);  // no progress: the device is full
    data.remove_prefix(static_cast<size_t>(w));
  }
}

std::string parent_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

uint32_t crc32c(std::string_view bytes, uint32_t crc) {
  crc = ~crc;
  for (char ch : bytes) crc = kCrcTable[(crc ^ static_cast<unsigned char>(ch)) & 0xff] ^ (crc >> 8);
  return ~crc;
}

FileDigest write_file_atomically(const std::string& path, const std::vector<std::string_view>& parts,
                                 bool sync_parent) {
  const std::string tmp = path + ".tmp";
  FileDigest digest;
  try {
    Fd fd;
    checked("open", tmp, [&] { return fd.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644); });
    for (std::string_view part : parts) {
      write_all(fd.fd, tmp, part);
      digest.bytes += part.size();
      digest.crc32c = crc32c(part, digest.crc32c);
    }
    // fsync before the rename: otherwise a crash may leave the new name on a file whose data never
    // reached the disk.
    checked("fsync", tmp, [&] { return ::fsync(fd.fd); });
    // close reports write-back errors some file systems (NFS) defer to it.
    checked("close", tmp, [&] {
      int r = ::close(fd.fd);
      fd.fd = -1;  // released even when close fails
      return r;
    });
    checked("rename", path, [&] { return ::rename(tmp.c_str(), path.c_str()); });
  } catch (const support::UserError&) {
    ::unlink(tmp.c_str());  // best effort: the old file (if any) is untouched
    throw;
  }
  if (sync_parent) sync_directory(parent_of(path));
  return digest;
}

void sync_directory(const std::string& dir) {
  Fd fd;
  checked("open", dir, [&] { return fd.fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); });
  checked("fsync", dir, [&] { return ::fsync(fd.fd); });
}

bool make_directory(const std::string& path) {
  int fault = next_operation("mkdir", path);
  if (fault > 0) fail_errno(path, "mkdir", fault);
  if (::mkdir(path.c_str(), 0755) == -1) {
    if (errno == EEXIST) return false;
    fail_errno(path, "mkdir", errno);
  }
  if (fault < 0) die();
  return true;
}

std::string read_file_bytes(const std::string& path) {
  Fd fd;
  fd.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd.fd < 0) fail("{}: cannot read the file: {}", path, std::strerror(errno));
  struct stat st;
  if (::fstat(fd.fd, &st) != 0) fail("{}: cannot read the file: {}", path, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail("{}: cannot read the file: it is a directory", path);
  std::string out;
  if (S_ISREG(st.st_mode)) out.reserve(static_cast<size_t>(st.st_size));
  char buffer[1 << 16];
  while (true) {
    ssize_t r = ::read(fd.fd, buffer, sizeof buffer);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail("{}: cannot read the file: {}", path, std::strerror(errno));
    if (r == 0) return out;
    out.append(buffer, static_cast<size_t>(r));
  }
}

void set_io_fault(std::string_view spec) {
  Faults f = parse_faults(spec);
  std::lock_guard<std::mutex> lock(faults_mutex);
  faults() = f;
}

}  // namespace tessera::support
