// Thin helpers over the HDF5 C API for the checkpoint code: owning handles, a guard that serialises
// Tessera's HDF5 calls (an async writer thread and the training thread may both use HDF5) and keeps
// HDF5 from printing its error stack, checked calls that throw CheckpointError naming the file and
// object, and typed attribute / 1-D dataset reads and writes.
//
// Files are created with libver bounds [1.8, latest] so object headers carry HDF5's own metadata
// checksums; raw data is checked by the checkpoint's per-chunk checksums (checksum.hpp).
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "tessera/checkpointing/format/checkpoint_error.hpp"

namespace tessera::detail {

// Owns one HDF5 identifier and closes it with the matching H5?close. Move-only.
class H5Id {
 public:
  using Closer = herr_t (*)(hid_t);
  H5Id() = default;
  H5Id(hid_t id, Closer close) : id_(id), close_(close) {}
  ~H5Id() { reset(); }
  H5Id(H5Id&& other) noexcept : id_(other.id_), close_(other.close_) { other.id_ = H5I_INVALID_HID; }
  H5Id& operator=(H5Id&& other) noexcept;
  H5Id(const H5Id&) = delete;
  H5Id& operator=(const H5Id&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset() noexcept;
  // Closes now and returns the close call's status (an error on close is a failed write).
  herr_t close() noexcept;

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer close_ = nullptr;
};

// Holds the process-wide HDF5 lock and silences HDF5's automatic error printing on this thread
// while alive. The first one in a process turns off HDF5's clean-up at exit (H5dont_atexit), so a
// file whose close failed on a full disk never crashes the process at exit. Every function below expects one to be
// alive on the calling thread. Recursive.
class Hdf5Guard {
 public:
  Hdf5Guard();
  ~Hdf5Guard();
  Hdf5Guard(const Hdf5Guard&) = delete;
  Hdf5Guard& operator=(const Hdf5Guard&) = delete;

 private:
  std::unique_lock<std::recursive_mutex> lock_;
  H5E_auto2_t old_func_ = nullptr;
  void* old_data_ = nullptr;
};

// The HDF5 library's version, "1.10.8", asked under an Hdf5Guard (asking first would start the library
// before the guard could turn off its clean-up at exit).
std::string hdf5_library_version();

// The innermost message on this thread's HDF5 error stack ("" when empty).
std::string hdf5_error_text();
// Throws CheckpointError(kind, what + ": " + HDF5's message) when id < 0 / status < 0.
hid_t check_id(hid_t id, CheckpointErrorKind kind, const std::string& what);
void check_status(herr_t status, CheckpointErrorKind kind, const std::string& what);

// Files. create_file truncates; open_file_read fails with kMissingFile when the path does not exist
// and kCorruptData when HDF5 cannot parse it.
H5Id create_file(const std::string& path);
H5Id open_file_read(const std::string& path);
H5Id open_file_readwrite(const std::string& path);  // for tools and tests that edit a file
H5Id create_group(hid_t loc, const std::string& name, const std::string& where);
H5Id open_group(hid_t loc, const std::string& name, const std::string& where);
bool link_exists(hid_t loc, const std::string& name);
H5Id open_dataset(hid_t loc, const std::string& name, const std::string& where);

// Attributes (scalars). `where` names the file/object for messages.
bool has_attribute(hid_t loc, const std::string& name);
void write_attribute(hid_t loc, const std::string& name, std::int64_t value);
void write_attribute(hid_t loc, const std::string& name, double value);
void write_attribute(hid_t loc, const std::string& name, const std::string& value);
std::int64_t read_int_attribute(hid_t loc, const std::string& name, const std::string& where);
double read_double_attribute(hid_t loc, const std::string& name, const std::string& where);
std::string read_string_attribute(hid_t loc, const std::string& name, const std::string& where);
std::vector<std::string> attribute_names(hid_t loc);

// Contiguous 1-D datasets of small tables (i64, i32, u64, f32 and fixed-length strings).
void write_vector(hid_t loc, const std::string& name, const std::vector<std::int64_t>& values);
void write_vector(hid_t loc, const std::string& name, const std::vector<std::int32_t>& values);
void write_vector(hid_t loc, const std::string& name, const std::vector<std::uint64_t>& values);
void write_strings(hid_t loc, const std::string& name, const std::vector<std::string>& values);
std::vector<std::int64_t> read_i64_vector(hid_t loc, const std::string& name, const std::string& where);
std::vector<std::int32_t> read_i32_vector(hid_t loc, const std::string& name, const std::string& where);
std::vector<std::uint64_t> read_u64_vector(hid_t loc, const std::string& name, const std::string& where);
std::vector<std::string> read_strings(hid_t loc, const std::string& name, const std::string& where);
std::int64_t dataset_length(hid_t dataset, const std::string& where);  // elements of a 1-D dataset

// A 2-byte little-endian HDF5 float type with bf16's layout (sign 15, exponent 7..14 biased 127,
// mantissa 0..6): HDF5 converts it to f32 on read like any float type.
H5Id bf16_file_type();
// IEEE half precision, little-endian.
H5Id f16_file_type();

}  // namespace tessera::detail
