// The TensorBoard event file, read back record by record: every record's framing and both CRCs,
// each Event parsed with libprotobuf from TensorBoard's schema — the file version first, then the
// steps with their tags and values, a SessionLog START where a run continues. A second writer in
// the same directory starts a second file; a directory that cannot be made is named.
#include "tessera/training/tensorboard_writer.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "tessera/training/tensorboard_event.pb.h"
#include "tessera/training/tfrecord.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
namespace pb = tessera::tensorboard;

std::uint64_t little_endian(const std::string& bytes, std::size_t at, int count) {
  std::uint64_t value = 0;
  for (int i = 0; i < count; ++i) value |= std::uint64_t{static_cast<unsigned char>(bytes.at(at + i))} << (8 * i);
  return value;
}

// Every Event of an event file; a framing or CRC error fails the test with the byte offset.
std::vector<pb::Event> read_events(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<pb::Event> events;
  for (std::size_t at = 0; at < bytes.size();) {
    EXPECT_GE(bytes.size() - at, 16u) << path << ": record at byte " << at << " cut short";
    if (bytes.size() - at < 16) break;
    const std::uint64_t length = little_endian(bytes, at, 8);
    EXPECT_EQ(little_endian(bytes, at + 8, 4), masked_crc32c(std::string_view(bytes).substr(at, 8)))
        << path << ": the length's CRC of the record at byte " << at;
    EXPECT_LE(at + 16 + length, bytes.size()) << path << ": record at byte " << at << " announces " << length;
    if (at + 16 + length > bytes.size()) break;
    const std::string data = bytes.substr(at + 12, length);
    EXPECT_EQ(little_endian(bytes, at + 12 + length, 4), masked_crc32c(data))
        << path << ": the data's CRC of the record at byte " << at;
    pb::Event event;
    EXPECT_TRUE(event.ParseFromString(data)) << path << ": record at byte " << at << " is not an Event";
    events.push_back(event);
    at += 16 + length;
  }
  return events;
}

std::map<std::string, float> values_of(const pb::Event& event) {
  std::map<std::string, float> out;
  for (const auto& v : event.summary().value()) {
    EXPECT_EQ(v.value_case(), pb::Summary::Value::kSimpleValue) << v.tag();
    out[v.tag()] = v.simple_value();
  }
  return out;
}

std::vector<fs::path> event_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(TensorBoardWriter, FileVersionThenOneEventPerStepWithItsScalars) {
  testing::ScratchDir dir("tensorboard_writer");
  const fs::path logdir = dir / "tb" / "run1";  // made with its parents
  std::string path;
  {
    TensorBoardWriter writer(logdir.string());
    path = writer.path();
    writer.write_scalars(1, {{"train/loss", 2.5f}, {"train/lr", 1e-3f}});
    writer.write_scalars(5, {{"train/loss", 1.25f}, {"val/loss", NAN}});
    EXPECT_EQ(read_events(path).size(), 3u) << "flushed at each step, before the writer closes";
  }
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  EXPECT_TRUE(std::regex_match(fs::path(path).filename().string(),
                               std::regex(R"(events\.out\.tfevents\.\d{10}\.)" + std::string(host))))
      << path;
  EXPECT_EQ(fs::path(path).parent_path(), logdir);

  const std::vector<pb::Event> events = read_events(path);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_GT(events[0].wall_time(), 1.5e9) << "seconds since the epoch";
  EXPECT_EQ(events[1].step(), 1);
  EXPECT_EQ(values_of(events[1]), (std::map<std::string, float>{{"train/loss", 2.5f}, {"train/lr", 1e-3f}}));
  EXPECT_GE(events[1].wall_time(), events[0].wall_time());
  EXPECT_EQ(events[2].step(), 5);
  const auto last = values_of(events[2]);
  EXPECT_EQ(last.at("train/loss"), 1.25f);
  EXPECT_TRUE(std::isnan(last.at("val/loss"))) << "a non-finite value stays so";
}

TEST(TensorBoardWriter, AContinuingRunAddsAFileThatStartsWithASessionStart) {
  testing::ScratchDir dir("tensorboard_writer");
  TensorBoardWriter first(dir.path().string());
  first.write_scalars(1, {{"train/loss", 3.0f}});
  TensorBoardWriter second(dir.path().string());
  second.write_start(5, "resumed at step 4");
  second.write_scalars(5, {{"train/loss", 2.0f}});
  ASSERT_NE(first.path(), second.path());
  EXPECT_EQ(event_files(dir.path()).size(), 2u);
  EXPECT_NE(fs::path(second.path()).filename().string().find("events.out.tfevents."), std::string::npos);
  const std::vector<pb::Event> events = read_events(second.path());
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  ASSERT_TRUE(events[1].has_session_log());
  EXPECT_EQ(events[1].session_log().status(), pb::SessionLog::START);
  EXPECT_EQ(events[1].session_log().msg(), "resumed at step 4");
  EXPECT_EQ(events[1].step(), 5);
  EXPECT_EQ(values_of(events[2]), (std::map<std::string, float>{{"train/loss", 2.0f}}));
}

TEST(TensorBoardWriter, TheMetricsRecordsQuantities) {
  TrainRecord r;
  r.step = 3;
  r.loss = 2.75f;
  r.lr = 5e-4f;
  r.grad_norm = 0.5;
  r.tokens_per_s = 1234.0;
  r.mfu = 0.25;
  r.skipped_steps = 2;
  r.memory_current_total = 3 * 1048576;
  r.memory_peak_total = 8 * 1048576;
  r.memory_peak[static_cast<std::size_t>(MemoryCategory::kParameters)] = 1048576 / 2;
  std::map<std::string, float> s;
  for (const TensorBoardScalar& x : tensorboard_scalars(r)) s[x.tag] = x.value;
  EXPECT_EQ(s.at("train/loss"), 2.75f);
  EXPECT_EQ(s.at("train/lr"), 5e-4f);
  EXPECT_EQ(s.at("train/grad_norm"), 0.5f);
  EXPECT_EQ(s.at("train/skipped_steps"), 2.0f);
  EXPECT_EQ(s.at("perf/tokens_per_s"), 1234.0f);
  EXPECT_EQ(s.at("perf/mfu"), 0.25f);
  EXPECT_EQ(s.at("memory/current_mib"), 3.0f);
  EXPECT_EQ(s.at("memory/peak_mib"), 8.0f);
  EXPECT_EQ(s.at("memory/peak_mib/parameters"), 0.5f);
  EXPECT_EQ(s.count("memory/peak_mib/optimizer_state"), 1u);
  const auto v = tensorboard_scalars(ValidationRecord{3, 2.5f, 0.0});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].tag, "val/loss");
  EXPECT_EQ(v[0].value, 2.5f);
}

TEST(TensorBoardWriter, ADirectoryThatCannotBeMadeIsNamed) {
  testing::ScratchDir dir("tensorboard_writer");
  std::ofstream(dir / "file") << "in the way";
  const std::string bad = (dir / "file" / "tb").string();
  try {
    TensorBoardWriter writer(bad);
    FAIL() << "no error for " << bad;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera
