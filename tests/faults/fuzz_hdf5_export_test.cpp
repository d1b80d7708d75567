// HDF5 exports from elsewhere, mutated through HDF5 itself (byte flips would test HDF5's own parser,
// which Tessera does not own): /config/model fields and the root's kind and names set to hostile
// text or another attribute type, a tensor replaced by one of another shape (0 rows, 2^40 rows,
// more dimensions) or type (f64, int32, text), attributes of many values where one belongs, tensors
// and groups deleted, a tensor made a virtual
// dataset whose source is missing. Opening the source and importing it into the model it describes
// either succeeds or refuses naming the file; no crash, no model larger than the file can hold, and
// no allocation past 64 x the file's size + 1 MiB. Both name schemes (tessera, hf-gpt2). Byte
// mutations too, each batch in a forked child (a crash inside HDF5's parser is reported, not fatal).
// tessera-test-timeout: 60
// tessera-test-executable: own (it replaces the global operator new: faults/fuzz_support.hpp)
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/faults/fuzz_export_import_support.hpp"
#include "tests/faults/fuzz_support.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera::testing::fuzz {
namespace {

namespace fs = std::filesystem;
using detail::H5Id;

const std::vector<std::string> kHostileText = {
    "",  "-1", "0",      "1.5",     "12abc",   " 8", "9223372036854775807", "1000000", "4096",
    "3", "13", "export", "hf-gpt2", "tessera", "x"};

std::vector<std::string> dataset_names(hid_t model) {
  std::vector<std::string> names;
  H5Literate(
      model, H5_INDEX_NAME, H5_ITER_NATIVE, nullptr,
      [](hid_t, const char* name, const H5L_info_t*, void* out) {
        static_cast<std::vector<std::string>*>(out)->push_back(name);
        return herr_t{0};
      },
      &names);
  return names;
}

void set_string(hid_t loc, const std::string& name, const std::string& value) {
  if (H5Aexists(loc, name.c_str()) > 0) H5Adelete(loc, name.c_str());
  detail::write_attribute(loc, name, value);
}

// `name` as an attribute of `count` fixed-length strings (a reader expects one).
void set_strings(hid_t loc, const std::string& name, hsize_t count) {
  if (H5Aexists(loc, name.c_str()) > 0) H5Adelete(loc, name.c_str());
  H5Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), 8);
  H5Id space(H5Screate_simple(1, &count, nullptr), H5Sclose);
  H5Id attr(H5Acreate2(loc, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  const std::string values(8 * count, '7');
  H5Awrite(attr.get(), type.get(), values.data());
}

void replace_dataset(hid_t model, const std::string& name, Rng& rng, std::string& what) {
  static const hsize_t sizes[] = {0, 1, 2, 3, 8, 11, 13, 24, hsize_t{1} << 20, hsize_t{1} << 40};
  const int rank = static_cast<int>(rng.below(4));
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  for (hsize_t& d : dims) d = sizes[rng.below(std::size(sizes))];
  H5Id text(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(text.get(), 4);
  const hid_t types[] = {H5T_IEEE_F32LE, H5T_IEEE_F64LE, H5T_STD_I32LE, text.get()};
  const std::size_t type = rng.below(std::size(types));
  H5Ldelete(model, name.c_str(), H5P_DEFAULT);
  H5Id space(rank == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(rank, dims.data(), nullptr), H5Sclose);
  H5Id d(H5Dcreate2(model, name.c_str(), types[type], space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  what = "dataset " + name + " replaced: rank " + std::to_string(rank) + " type " + std::to_string(type);
}

void make_virtual(hid_t model, const std::string& name, Rng& rng, std::string& what) {
  H5Id old(H5Dopen2(model, name.c_str(), H5P_DEFAULT), H5Dclose);
  H5Id space(H5Dget_space(old.get()), H5Sclose);
  old.reset();
  H5Ldelete(model, name.c_str(), H5P_DEFAULT);
  H5Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  const bool own_file = rng.below(2) == 0;
  H5Pset_virtual(dcpl.get(), space.get(), own_file ? "." : "gone.h5", own_file ? "/nothing" : "x", space.get());
  H5Id d(H5Dcreate2(model, name.c_str(), H5T_IEEE_F32LE, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT), H5Dclose);
  what = "dataset " + name + " virtual over a missing source";
}

// One structural mutation of the export `valid`, made in `scratch` and returned as bytes.
Mutated mutate_export(const fs::path& scratch, const std::string& valid, Rng& rng) {
  write_file(scratch, valid);
  std::string what;
  {
    detail::Hdf5Guard guard;
    H5Id f = detail::open_file_readwrite(scratch.string());
    H5Id model(H5Gopen2(f.get(), "model", H5P_DEFAULT), H5Gclose);
    H5Id fields(H5Gopen2(f.get(), "config/model", H5P_DEFAULT), H5Gclose);
    const std::vector<std::string> names = dataset_names(model.get());
    const std::string& tensor = names[rng.below(names.size())];
    const std::string& text = kHostileText[rng.below(kHostileText.size())];
    switch (rng.below(8)) {
      case 0:
      case 1: {
        const std::vector<std::string> keys = detail::attribute_names(fields.get());
        const std::string& key = keys[rng.below(keys.size())];
        set_string(fields.get(), key, text);
        what = "config/model " + key + " = '" + text + "'";
        break;
      }
      case 2: {
        const std::string key = rng.below(2) == 0 ? "kind" : "names";
        set_string(f.get(), key, text);
        what = key + " = '" + text + "'";
        break;
      }
      case 3: replace_dataset(model.get(), tensor, rng, what); break;
      case 4: {
        const std::string link = rng.below(3) == 0 ? (rng.below(2) == 0 ? "config" : "model") : "model/" + tensor;
        H5Ldelete(f.get(), link.c_str(), H5P_DEFAULT);
        what = "deleted " + link;
        break;
      }
      case 5: make_virtual(model.get(), tensor, rng, what); break;
      case 6: {
        const bool root = rng.below(2) == 0;
        const std::vector<std::string> keys = detail::attribute_names(root ? f.get() : fields.get());
        const std::string& key = keys[rng.below(keys.size())];
        const hsize_t count = 1 + rng.below(2) * 999;
        set_strings(root ? f.get() : fields.get(), key, count);
        what =
            std::string(root ? "" : "config/model ") + key + " an attribute of " + std::to_string(count) + " strings";
        break;
      }
      default: {
        const std::vector<std::string> keys = detail::attribute_names(fields.get());
        const std::string& key = keys[rng.below(keys.size())];
        H5Adelete(fields.get(), key.c_str());
        detail::write_attribute(fields.get(), key, std::int64_t{-3});
        what = "config/model " + key + " an int64 attribute";
      }
    }
  }
  return {read_file(scratch), what};
}

void fuzz_export(const std::string& names, std::uint64_t seed) {
  ScratchDir dir("fuzz_hdf5_export");
  const fs::path file = dir / "export.h5";
  write_tiny_hdf5_export(file, names);
  ASSERT_NO_THROW(open_and_import(file)) << names;
  const std::string valid = read_file(file);
  const FuzzCounts counts = fuzz_reader(
      "HDF5 export (" + names + " names)", file, seed, 300,
      [&](Rng& rng) { return mutate_export(dir / "scratch.h5", valid, rng); }, [&] { open_and_import(file); },
      {file.string()});
  EXPECT_GT(counts.accepted, 0) << names;
  EXPECT_GT(counts.refused, 100) << names;
}

TEST(FuzzHdf5Export, MutatedTesseraNamesExportsAreImportedOrRefusedNamingTheFile) {
  fuzz_export(kTesseraNames, 0x4df5);
}

TEST(FuzzHdf5Export, MutatedHfNamesExportsAreImportedOrRefusedNamingTheFile) { fuzz_export(kHfGpt2Names, 0x4df6); }

// Byte mutations reach HDF5's own parser, which Tessera does not own: each batch runs in a forked
// child, so a crash there is reported (with the mutation) instead of ending the suite. The child
// checks the same outcome as fuzz_reader: success, or an error naming the file.
TEST(FuzzHdf5Export, ByteMutationsAreImportedOrRefusedWithoutACrash) {
  ScratchDir dir("fuzz_hdf5_export");
  const fs::path file = dir / "export.h5", log = dir / "last_mutation.txt";
  write_tiny_hdf5_export(file, kTesseraNames);
  const std::string valid = read_file(file);
  constexpr int kBatches = 8, kPerBatch = 40;
  for (int batch = 0; batch < kBatches; ++batch) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      Rng rng(0xb17e + static_cast<std::uint64_t>(batch));
      for (int i = 0; i < kPerBatch; ++i) {
        const Mutated m = mutate_bytes(valid, rng);
        write_file(log, "batch " + std::to_string(batch) + " iteration " + std::to_string(i) + ": " + m.what);
        write_file(file, m.bytes);
        try {
          open_and_import(file);
        } catch (const AcceptedBadFile&) {
          ::_exit(3);
        } catch (const std::exception& e) {
          if (std::string(e.what()).find(file.string()) == std::string::npos) {
            write_file(log, read_file(log) + ": an error that does not name the file: " + e.what());
            ::_exit(2);
          }
        } catch (...) {
          ::_exit(4);
        }
      }
      ::_exit(0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    if (WIFSIGNALED(status)) {
      ADD_FAILURE() << "signal " << WTERMSIG(status) << " at " << read_file(log);
    } else if (WEXITSTATUS(status) != 0) {
      ADD_FAILURE() << "exit " << WEXITSTATUS(status) << " at " << read_file(log);
    }
  }
}

}  // namespace
}  // namespace tessera::testing::fuzz
