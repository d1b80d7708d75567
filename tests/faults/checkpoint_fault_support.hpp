// Shared pieces of the checkpoint fault tests: the train_gpt and tessera_ckpt binaries (found
// through TESSERA_BIN_DIR, as tests/examples does), a token file, the command line of a tiny
// train_gpt run, child processes under a time limit, and small HDF5 edits that damage a file the
// way a flipped bit or a stray copy would.
#pragma once

#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "tessera/checkpointing/format/hdf5_util.hpp"
#include "tessera/text/data/token_file.hpp"
#include "tests/launch/child_job.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera::testing {

inline std::string bin_dir() {
  const char* dir = std::getenv("TESSERA_BIN_DIR");
  return dir != nullptr ? dir : (std::filesystem::path(self_executable()).parent_path() / "../../examples").string();
}
inline std::string train_gpt_bin() { return bin_dir() + "/train_gpt"; }
inline std::string tessera_ckpt_bin() { return bin_dir() + "/tessera_ckpt"; }

// 20000 tokens below 40 (the tests' vocabulary is 64), written once per test directory.
inline std::string write_tokens(const std::filesystem::path& dir) {
  const std::string path = (dir / "tokens.bin").string();
  write_token_file(path, random_tokens(20000, 40));
  return path;
}

// train_gpt on a 2-layer, 32-channel GPT: a step and a save take milliseconds.
inline std::string tiny_train_gpt(const std::string& data, int steps) {
  return train_gpt_bin() + " --data " + data +
         " --layers 2 --dim 32 --heads 2 --seq-len 16 --vocab 64 --global-batch 4 --sample-tokens 0 --eval-every 0"
         " --log-every 1 --threads 1 --steps " +
         std::to_string(steps);
}

// The step numbers of "step     3/8  loss ..." lines.
inline std::vector<int> logged_steps(const std::string& output) {
  std::vector<int> steps;
  const std::regex line(R"(step +([0-9]+)/[0-9]+  loss)");
  for (auto it = std::sregex_iterator(output.begin(), output.end(), line); it != std::sregex_iterator(); ++it) {
    steps.push_back(std::stoi((*it)[1]));
  }
  return steps;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Flips bit `mask` of byte `byte` of the (contiguous) dataset `name` in `file`, on disk, the way a
// failing disk or memory would: nothing else in the file changes.
inline void flip_stored_bit(const std::filesystem::path& file, const std::string& name, std::size_t byte,
                            unsigned char mask) {
  haddr_t address = HADDR_UNDEF;
  {
    detail::Hdf5Guard guard;
    detail::H5Id f = detail::open_file_read(file.string());
    detail::H5Id d(H5Dopen2(f.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
    ASSERT_GE(d.get(), 0) << file << ":" << name;
    address = H5Dget_offset(d.get());
  }
  ASSERT_NE(address, HADDR_UNDEF) << file << ":" << name << " is not stored contiguously";
  std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
  io.seekg(static_cast<std::streamoff>(address + byte));
  char value = 0;
  io.read(&value, 1);
  value = static_cast<char>(value ^ static_cast<char>(mask));
  io.seekp(static_cast<std::streamoff>(address + byte));
  io.write(&value, 1);
}

// Overwrites the 1-D i64 dataset `name` of `file` with `values` (through HDF5: no checksum updated).
inline void rewrite_i64_table(const std::filesystem::path& file, const std::string& name,
                              const std::vector<std::int64_t>& values) {
  detail::Hdf5Guard guard;
  detail::H5Id f = detail::open_file_readwrite(file.string());
  detail::H5Id d(H5Dopen2(f.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
  ASSERT_GE(d.get(), 0) << file << ":" << name;
  ASSERT_GE(H5Dwrite(d.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0) << name;
}

inline std::vector<std::int64_t> read_i64_table(const std::filesystem::path& file, const std::string& name) {
  detail::Hdf5Guard guard;
  detail::H5Id f = detail::open_file_read(file.string());
  return detail::read_i64_vector(f.get(), name, file.string());
}

}  // namespace tessera::testing
