// HDF5 handle, guard, checked calls, attributes and small tables.
#include "tessera/checkpointing/format/hdf5_util.hpp"

#include <filesystem>
#include <utility>

namespace tessera::detail {
namespace {

std::recursive_mutex& hdf5_mutex() {
  static std::recursive_mutex mutex;
  return mutex;
}

herr_t innermost_message(unsigned n, const H5E_error2_t* err, void* out) {
  if (n == 0 && err != nullptr && err->desc != nullptr) {
    std::string& text = *static_cast<std::string*>(out);
    text = err->desc;
    if (err->func_name != nullptr) text += std::string(" (in ") + err->func_name + ")";
  }
  return 0;
}

H5Id file_access_list() {
  H5Id fapl(check_id(H5Pcreate(H5P_FILE_ACCESS), CheckpointErrorKind::kIo, "H5Pcreate"), H5Pclose);
  check_status(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST), CheckpointErrorKind::kIo,
               "H5Pset_libver_bounds");
  // Readers of other ranks' files and file systems without flock (NFS, Lustre): no locking needed,
  // a checkpoint is never written and read at the same time.
  check_status(H5Pset_file_locking(fapl.get(), 0, 1), CheckpointErrorKind::kIo, "H5Pset_file_locking");
  return fapl;
}

template <typename T>
void write_plain_vector(hid_t loc, const std::string& name, hid_t type, const std::vector<T>& values) {
  const hsize_t dims[1] = {values.size()};
  H5Id space(check_id(H5Screate_simple(1, dims, nullptr), CheckpointErrorKind::kIo, "H5Screate_simple"), H5Sclose);
  H5Id dset(check_id(H5Dcreate2(loc, name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                     CheckpointErrorKind::kIo, "creating dataset " + name),
            H5Dclose);
  if (!values.empty()) {
    check_status(H5Dwrite(dset.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), CheckpointErrorKind::kIo,
                 "writing dataset " + name);
  }
}

template <typename T>
std::vector<T> read_plain_vector(hid_t loc, const std::string& name, hid_t type, const std::string& where) {
  H5Id dset = open_dataset(loc, name, where);
  std::vector<T> values(static_cast<std::size_t>(dataset_length(dset.get(), where + ":" + name)));
  if (!values.empty()) {
    check_status(H5Dread(dset.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
                 CheckpointErrorKind::kCorruptData, "reading " + where + ":" + name);
  }
  return values;
}

H5Id string_type(std::size_t size) {
  H5Id type(check_id(H5Tcopy(H5T_C_S1), CheckpointErrorKind::kIo, "H5Tcopy"), H5Tclose);
  check_status(H5Tset_size(type.get(), size == 0 ? 1 : size), CheckpointErrorKind::kIo, "H5Tset_size");
  check_status(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), CheckpointErrorKind::kIo, "H5Tset_strpad");
  return type;
}

H5Id open_attribute(hid_t loc, const std::string& name, const std::string& where) {
  if (H5Aexists(loc, name.c_str()) <= 0) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData, where + " has no attribute '" + name + "'");
  }
  H5Id attr(check_id(H5Aopen(loc, name.c_str(), H5P_DEFAULT), CheckpointErrorKind::kCorruptData,
                     "opening attribute " + where + ":" + name),
            H5Aclose);
  // The scalar reads below fill one value: an attribute of several (a file from elsewhere) would
  // overrun it.
  H5Id space(
      check_id(H5Aget_space(attr.get()), CheckpointErrorKind::kCorruptData, "H5Aget_space " + where + ":" + name),
      H5Sclose);
  const hssize_t values = H5Sget_simple_extent_npoints(space.get());
  if (values != 1) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData, where + ":" + name + " holds " + std::to_string(values) +
                                                                 " values; it must be a single value");
  }
  return attr;
}

template <typename T>
void write_scalar_attribute(hid_t loc, const std::string& name, hid_t type, const T& value) {
  if (H5Aexists(loc, name.c_str()) > 0) H5Adelete(loc, name.c_str());
  H5Id space(check_id(H5Screate(H5S_SCALAR), CheckpointErrorKind::kIo, "H5Screate"), H5Sclose);
  H5Id attr(check_id(H5Acreate2(loc, name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                     CheckpointErrorKind::kIo, "creating attribute " + name),
            H5Aclose);
  check_status(H5Awrite(attr.get(), type, &value), CheckpointErrorKind::kIo, "writing attribute " + name);
}

}  // namespace

H5Id& H5Id::operator=(H5Id&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = std::exchange(other.id_, H5I_INVALID_HID);
    close_ = other.close_;
  }
  return *this;
}

void H5Id::reset() noexcept {
  if (id_ >= 0 && close_ != nullptr) close_(id_);
  id_ = H5I_INVALID_HID;
}

herr_t H5Id::close() noexcept {
  herr_t status = 0;
  if (id_ >= 0 && close_ != nullptr) status = close_(id_);
  id_ = H5I_INVALID_HID;
  return status;
}

Hdf5Guard::Hdf5Guard() : lock_(hdf5_mutex()) {
  // A file whose close failed (a full disk) stays open inside HDF5, and closing it again in HDF5's
  // own exit handler crashes the process: Tessera closes every file it opens itself, so HDF5 is
  // told not to clean up at exit. Must come before HDF5's first call in the process (later, it is
  // refused and changes nothing).
  static const bool no_cleanup_at_exit = [] {
    H5dont_atexit();
    return true;
  }();
  (void)no_cleanup_at_exit;
  H5Eget_auto2(H5E_DEFAULT, &old_func_, &old_data_);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

Hdf5Guard::~Hdf5Guard() { H5Eset_auto2(H5E_DEFAULT, old_func_, old_data_); }

std::string hdf5_error_text() {
  std::string text;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, innermost_message, &text);
  return text;
}

std::string hdf5_library_version() {
  Hdf5Guard guard;
  unsigned major = 0, minor = 0, release = 0;
  if (H5get_libversion(&major, &minor, &release) < 0) return "unknown";
  std::string text = std::to_string(major);
  text += '.';
  text += std::to_string(minor);
  text += '.';
  text += std::to_string(release);
  return text;
}

hid_t check_id(hid_t id, CheckpointErrorKind kind, const std::string& what) {
  if (id < 0) {
    const std::string detail = hdf5_error_text();
    H5Eclear2(H5E_DEFAULT);
    throw CheckpointError(kind, what + " failed" + (detail.empty() ? "" : ": " + detail));
  }
  return id;
}

void check_status(herr_t status, CheckpointErrorKind kind, const std::string& what) {
  if (status < 0) check_id(-1, kind, what);
}

H5Id create_file(const std::string& path) {
  H5Id fapl = file_access_list();
  return H5Id(check_id(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), CheckpointErrorKind::kIo,
                       "creating " + path),
              H5Fclose);
}

H5Id open_file_read(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw CheckpointError(CheckpointErrorKind::kMissingFile, path + " does not exist");
  }
  H5Id fapl = file_access_list();
  return H5Id(check_id(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), CheckpointErrorKind::kCorruptData,
                       "opening " + path + " as HDF5"),
              H5Fclose);
}

H5Id open_file_readwrite(const std::string& path) {
  H5Id fapl = file_access_list();
  return H5Id(check_id(H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl.get()), CheckpointErrorKind::kIo,
                       "opening " + path + " for writing"),
              H5Fclose);
}

H5Id create_group(hid_t loc, const std::string& name, const std::string& where) {
  return H5Id(check_id(H5Gcreate2(loc, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), CheckpointErrorKind::kIo,
                       "creating group " + where + ":" + name),
              H5Gclose);
}

bool link_exists(hid_t loc, const std::string& name) { return H5Lexists(loc, name.c_str(), H5P_DEFAULT) > 0; }

H5Id open_group(hid_t loc, const std::string& name, const std::string& where) {
  if (!link_exists(loc, name)) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData, where + " has no group '" + name + "'");
  }
  return H5Id(check_id(H5Gopen2(loc, name.c_str(), H5P_DEFAULT), CheckpointErrorKind::kCorruptData,
                       "opening group " + where + ":" + name),
              H5Gclose);
}

H5Id open_dataset(hid_t loc, const std::string& name, const std::string& where) {
  if (!link_exists(loc, name)) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData, where + " has no dataset '" + name + "'");
  }
  return H5Id(check_id(H5Dopen2(loc, name.c_str(), H5P_DEFAULT), CheckpointErrorKind::kCorruptData,
                       "opening dataset " + where + ":" + name),
              H5Dclose);
}

bool has_attribute(hid_t loc, const std::string& name) { return H5Aexists(loc, name.c_str()) > 0; }

void write_attribute(hid_t loc, const std::string& name, std::int64_t value) {
  write_scalar_attribute(loc, name, H5T_NATIVE_INT64, value);
}

void write_attribute(hid_t loc, const std::string& name, double value) {
  write_scalar_attribute(loc, name, H5T_NATIVE_DOUBLE, value);
}

void write_attribute(hid_t loc, const std::string& name, const std::string& value) {
  if (H5Aexists(loc, name.c_str()) > 0) H5Adelete(loc, name.c_str());
  H5Id type = string_type(value.size());
  H5Id space(check_id(H5Screate(H5S_SCALAR), CheckpointErrorKind::kIo, "H5Screate"), H5Sclose);
  H5Id attr(check_id(H5Acreate2(loc, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                     CheckpointErrorKind::kIo, "creating attribute " + name),
            H5Aclose);
  std::string padded = value.empty() ? std::string(1, '\0') : value;
  check_status(H5Awrite(attr.get(), type.get(), padded.data()), CheckpointErrorKind::kIo, "writing attribute " + name);
}

std::int64_t read_int_attribute(hid_t loc, const std::string& name, const std::string& where) {
  H5Id attr = open_attribute(loc, name, where);
  std::int64_t value = 0;
  check_status(H5Aread(attr.get(), H5T_NATIVE_INT64, &value), CheckpointErrorKind::kCorruptData,
               "reading attribute " + where + ":" + name);
  return value;
}

double read_double_attribute(hid_t loc, const std::string& name, const std::string& where) {
  H5Id attr = open_attribute(loc, name, where);
  double value = 0;
  check_status(H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &value), CheckpointErrorKind::kCorruptData,
               "reading attribute " + where + ":" + name);
  return value;
}

std::string read_string_attribute(hid_t loc, const std::string& name, const std::string& where) {
  H5Id attr = open_attribute(loc, name, where);
  H5Id file_type(check_id(H5Aget_type(attr.get()), CheckpointErrorKind::kCorruptData, "H5Aget_type"), H5Tclose);
  if (H5Tget_class(file_type.get()) != H5T_STRING || H5Tis_variable_str(file_type.get()) > 0) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData,
                          where + ":" + name + " is not a fixed-length string attribute");
  }
  const std::size_t size = H5Tget_size(file_type.get());
  H5Id type = string_type(size);
  std::string value(size, '\0');
  check_status(H5Aread(attr.get(), type.get(), value.data()), CheckpointErrorKind::kCorruptData,
               "reading attribute " + where + ":" + name);
  value.resize(value.find('\0') == std::string::npos ? size : value.find('\0'));
  return value;
}

std::vector<std::string> attribute_names(hid_t loc) {
  std::vector<std::string> names;
  auto collect = [](hid_t, const char* name, const H5A_info_t*, void* out) -> herr_t {
    static_cast<std::vector<std::string>*>(out)->push_back(name);
    return 0;
  };
  H5Aiterate2(loc, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect, &names);
  return names;
}

void write_vector(hid_t loc, const std::string& name, const std::vector<std::int64_t>& values) {
  write_plain_vector(loc, name, H5T_NATIVE_INT64, values);
}
void write_vector(hid_t loc, const std::string& name, const std::vector<std::int32_t>& values) {
  write_plain_vector(loc, name, H5T_NATIVE_INT32, values);
}
void write_vector(hid_t loc, const std::string& name, const std::vector<std::uint64_t>& values) {
  write_plain_vector(loc, name, H5T_NATIVE_UINT64, values);
}

void write_strings(hid_t loc, const std::string& name, const std::vector<std::string>& values) {
  std::size_t width = 1;
  for (const std::string& v : values) width = std::max(width, v.size());
  std::vector<char> packed(values.size() * width, '\0');
  for (std::size_t i = 0; i < values.size(); ++i) values[i].copy(packed.data() + i * width, values[i].size());
  H5Id type = string_type(width);
  const hsize_t dims[1] = {values.size()};
  H5Id space(check_id(H5Screate_simple(1, dims, nullptr), CheckpointErrorKind::kIo, "H5Screate_simple"), H5Sclose);
  H5Id dset(check_id(H5Dcreate2(loc, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                     CheckpointErrorKind::kIo, "creating dataset " + name),
            H5Dclose);
  if (!values.empty()) {
    check_status(H5Dwrite(dset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, packed.data()),
                 CheckpointErrorKind::kIo, "writing dataset " + name);
  }
}

std::vector<std::int64_t> read_i64_vector(hid_t loc, const std::string& name, const std::string& where) {
  return read_plain_vector<std::int64_t>(loc, name, H5T_NATIVE_INT64, where);
}
std::vector<std::int32_t> read_i32_vector(hid_t loc, const std::string& name, const std::string& where) {
  return read_plain_vector<std::int32_t>(loc, name, H5T_NATIVE_INT32, where);
}
std::vector<std::uint64_t> read_u64_vector(hid_t loc, const std::string& name, const std::string& where) {
  return read_plain_vector<std::uint64_t>(loc, name, H5T_NATIVE_UINT64, where);
}

std::vector<std::string> read_strings(hid_t loc, const std::string& name, const std::string& where) {
  H5Id dset = open_dataset(loc, name, where);
  H5Id file_type(check_id(H5Dget_type(dset.get()), CheckpointErrorKind::kCorruptData, "H5Dget_type"), H5Tclose);
  if (H5Tget_class(file_type.get()) != H5T_STRING || H5Tis_variable_str(file_type.get()) > 0) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData,
                          where + ":" + name + " is not a fixed-length string table");
  }
  const std::size_t width = H5Tget_size(file_type.get());
  const auto count = static_cast<std::size_t>(dataset_length(dset.get(), where + ":" + name));
  std::vector<char> packed(count * width);
  H5Id type = string_type(width);
  if (count > 0) {
    check_status(H5Dread(dset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, packed.data()),
                 CheckpointErrorKind::kCorruptData, "reading " + where + ":" + name);
  }
  std::vector<std::string> values(count);
  for (std::size_t i = 0; i < count; ++i) {
    std::string s(packed.data() + i * width, width);
    values[i] = s.substr(0, s.find('\0'));
  }
  return values;
}

std::int64_t dataset_length(hid_t dataset, const std::string& where) {
  H5Id space(check_id(H5Dget_space(dataset), CheckpointErrorKind::kCorruptData, "H5Dget_space " + where), H5Sclose);
  if (H5Sget_simple_extent_ndims(space.get()) != 1) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData, where + " is not a 1-D dataset");
  }
  hsize_t dims[1] = {0};
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  return static_cast<std::int64_t>(dims[0]);
}

namespace {

// A 2-byte float type: sign bit 15, `exponent_bits` bits below it with exponent bias `bias`, the
// rest mantissa.
H5Id two_byte_float_type(std::size_t exponent_bits, std::size_t bias) {
  H5Id type(check_id(H5Tcopy(H5T_IEEE_F32LE), CheckpointErrorKind::kIo, "H5Tcopy"), H5Tclose);
  const hid_t t = type.get();
  const std::size_t mantissa = 15 - exponent_bits;
  check_status(H5Tset_fields(t, 15, mantissa, exponent_bits, 0, mantissa), CheckpointErrorKind::kIo, "H5Tset_fields");
  check_status(H5Tset_offset(t, 0), CheckpointErrorKind::kIo, "H5Tset_offset");
  check_status(H5Tset_precision(t, 16), CheckpointErrorKind::kIo, "H5Tset_precision");
  check_status(H5Tset_size(t, 2), CheckpointErrorKind::kIo, "H5Tset_size");
  check_status(H5Tset_ebias(t, bias), CheckpointErrorKind::kIo, "H5Tset_ebias");
  return type;
}

}  // namespace

H5Id bf16_file_type() { return two_byte_float_type(8, 127); }

H5Id f16_file_type() { return two_byte_float_type(5, 15); }

}  // namespace tessera::detail
