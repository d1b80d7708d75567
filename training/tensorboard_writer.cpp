// TensorBoardWriter: Events of tensorboard_event.proto in TFRecord records, one file per writer.
#include "tessera/training/tensorboard_writer.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "tessera/training/tensorboard_event.pb.h"
#include "tessera/training/tfrecord.hpp"

namespace tessera {
namespace {

namespace pb = tessera::tensorboard;

double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

// "events.out.tfevents.1712345678.host", or with ".N" when taken.
std::filesystem::path new_event_file(const std::filesystem::path& dir) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%010lld",
                static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(
                                           std::chrono::system_clock::now().time_since_epoch())
                                           .count()));
  std::string name = "events.out.tfevents.";
  name += seconds;
  name += '.';
  name += host_name();
  std::filesystem::path path = dir / name;
  for (int n = 1; std::filesystem::exists(path); ++n) path = dir / (name + "." + std::to_string(n));
  return path;
}

float mib(std::int64_t bytes) { return static_cast<float>(static_cast<double>(bytes) / 1048576.0); }

}  // namespace

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create the directory " + dir + ": " + ec.message());
  path_ = new_event_file(dir).string();
  out_.open(path_, std::ios::binary | std::ios::trunc);
  if (!out_) throw std::runtime_error("cannot write the event file " + path_ + ": the directory is not writable");
  pb::Event version;
  version.set_wall_time(wall_time());
  version.set_file_version("brain.Event:2");
  write_record(version.SerializeAsString());
}

void TensorBoardWriter::write_record(const std::string& serialized_event) {
  out_ << tfrecord_frame(serialized_event);
  out_.flush();
  if (!out_) throw std::runtime_error("writing the event file " + path_ + " failed (is the disk full?)");
}

void TensorBoardWriter::write_scalars(std::int64_t step, const std::vector<TensorBoardScalar>& scalars) {
  pb::Event event;
  event.set_wall_time(wall_time());
  event.set_step(step);
  pb::Summary* summary = event.mutable_summary();
  for (const TensorBoardScalar& s : scalars) {
    pb::Summary::Value* value = summary->add_value();
    value->set_tag(s.tag);
    value->set_simple_value(s.value);
  }
  write_record(event.SerializeAsString());
}

void TensorBoardWriter::write_start(std::int64_t step, const std::string& message) {
  pb::Event event;
  event.set_wall_time(wall_time());
  event.set_step(step);
  event.mutable_session_log()->set_status(pb::SessionLog::START);
  event.mutable_session_log()->set_msg(message);
  write_record(event.SerializeAsString());
}

std::vector<TensorBoardScalar> tensorboard_scalars(const TrainRecord& r) {
  std::vector<TensorBoardScalar> s = {
      {"train/loss", r.loss},
      {"train/lr", r.lr},
      {"train/grad_norm", static_cast<float>(r.grad_norm)},
      {"train/skipped_steps", static_cast<float>(r.skipped_steps)},
      {"perf/tokens_per_s", static_cast<float>(r.tokens_per_s)},
      {"perf/mfu", static_cast<float>(r.mfu)},
      {"memory/current_mib", mib(r.memory_current_total)},
      {"memory/peak_mib", mib(r.memory_peak_total)},
  };
  for (MemoryCategory c : kAllMemoryCategories) {
    std::string name = memory_category_name(c);
    std::replace(name.begin(), name.end(), ' ', '_');
    s.push_back({"memory/peak_mib/" + name, mib(r.memory_peak[static_cast<std::size_t>(c)])});
  }
  return s;
}

std::vector<TensorBoardScalar> tensorboard_scalars(const ValidationRecord& r) { return {{"val/loss", r.val_loss}}; }

}  // namespace tessera
