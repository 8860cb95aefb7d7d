// Files that survive a killed process or a full disk: checkpoints, `tessera run`'s results. A file is written whole
// under a temporary name (`<path>.tmp`), fsynced, then renamed over `<path>`: a reader sees the
// old file or the new one, never part of either. Every system call is checked; a failure is a
// UserError that names the file, the call and strerror(errno), and leaves no temporary behind.
//
// Tests inject faults into these operations (mkdir, open, write, fsync, close, rename, directory
// fsync), counted from the process's first, through the environment variable
// TESSERA_CHECKPOINT_FAULT (read at the first operation) or set_io_fault():
//   kill:K     operation K completes (a write: only half its bytes) and the process SIGKILLs itself
//   enospc:K   operation K fails with ENOSPC (a write: after writing half its bytes); eio:K: EIO
//   list       every operation is printed to stderr as "checkpoint io K: <op> <path>"
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::support {

// CRC-32C (Castagnoli polynomial 0x1EDC6F41, reflected, initial value and final xor ~0; the
// checksum of iSCSI, RFC 3720 B.4, and ext4): crc32c("123456789") == 0xE3069283. `crc` continues
// an earlier result over more bytes.
uint32_t crc32c(std::string_view bytes, uint32_t crc = 0);

// What a written file holds.
struct FileDigest {
  uint64_t bytes = 0;
  uint32_t crc32c = 0;
};

// Writes the concatenation of `parts` to `path` as above. With `sync_parent`, the directory is
// fsynced after the rename (so the new name itself survives a crash); without, the caller syncs
// it once after several files.
FileDigest write_file_atomically(const std::string& path, const std::vector<std::string_view>& parts,
                                 bool sync_parent = true);
// fsync on a directory: makes the entries created or renamed in it durable.
void sync_directory(const std::string& dir);
// mkdir of one level (the parent must exist). False when something of that name exists already.
bool make_directory(const std::string& path);
// All of a file's bytes; a failure names the file and strerror(errno).
std::string read_file_bytes(const std::string& path);

// For tests: replaces the fault plan (a spec as TESSERA_CHECKPOINT_FAULT takes, "" for none) and
// restarts the operation count.
void set_io_fault(std::string_view spec);

}  // namespace tessera::support
