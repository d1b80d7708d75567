// The metrics file: one JSON object per record with the documented fields (read back with
// nlohmann-json); a resumed run keeps the records up to its step, drops the later ones and the
// validation of the resume step (measured again), and appends; a torn last line is dropped; a
// fresh run starts the file over.
#include "tessera/training/metrics_log.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/scratch_dir.hpp"

namespace tessera {
namespace {

using Json = nlohmann::json;

std::vector<Json> records(const std::string& path) {
  std::vector<Json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(Json::parse(line));
  return out;
}

TrainRecord train_record(std::int64_t step, double elapsed) {
  TrainRecord r;
  r.step = step;
  r.loss = 2.5f;
  r.lr = 1e-3f;
  r.grad_norm = 0.75;
  r.tokens_per_s = 1000.0;
  r.mfu = 0.25;
  r.memory_current[static_cast<int>(MemoryCategory::kParameters)] = 4096;
  r.memory_peak[static_cast<int>(MemoryCategory::kActivations)] = 8192;
  r.memory_current_total = 4096;
  r.memory_peak_total = 12288;
  r.skipped_steps = 1;
  r.elapsed_s = elapsed;
  return r;
}

std::vector<std::pair<std::string, std::int64_t>> kinds_and_steps(const std::vector<Json>& rs) {
  std::vector<std::pair<std::string, std::int64_t>> out;
  for (const Json& r : rs) out.emplace_back(r.at("kind").get<std::string>(), r.at("step").get<std::int64_t>());
  return out;
}

TEST(MetricsLog, RecordsHaveTheDocumentedFields) {
  testing::ScratchDir dir("metrics_fields");
  const std::string path = (dir / "m.jsonl").string();
  {
    MetricsLog log(path, std::nullopt);
    log.append(train_record(10, 1.5));
    log.append(ValidationRecord{10, 2.25f, 1.75});
    TrainRecord skipped = train_record(11, 2.0);
    skipped.loss = std::nanf("");
    log.append(skipped);
  }
  const std::vector<Json> rs = records(path);
  ASSERT_EQ(rs.size(), 3u);
  const Json& t = rs[0];
  EXPECT_EQ(t.at("kind"), "train");
  EXPECT_EQ(t.at("step"), 10);
  EXPECT_EQ(t.at("loss"), 2.5);
  EXPECT_EQ(t.at("lr"), 0.001) << "floats are written in their shortest form: " << t.at("lr");
  EXPECT_EQ(t.at("grad_norm"), 0.75);
  EXPECT_EQ(t.at("skipped"), false);
  EXPECT_EQ(t.at("tokens_per_s"), 1000.0);
  EXPECT_EQ(t.at("mfu"), 0.25);
  EXPECT_EQ(t.at("skipped_steps"), 1);
  EXPECT_EQ(t.at("elapsed_s"), 1.5);
  const Json& memory = t.at("memory");
  for (const char* category :
       {"parameters", "gradients", "optimizer_state", "activations", "comm_buffers", "workspace", "total"}) {
    ASSERT_TRUE(memory.contains(category)) << category << " missing in " << memory;
    EXPECT_TRUE(memory.at(category).at("current").is_number_integer()) << category;
    EXPECT_TRUE(memory.at(category).at("peak").is_number_integer()) << category;
  }
  EXPECT_EQ(memory.at("parameters").at("current"), 4096);
  EXPECT_EQ(memory.at("activations").at("peak"), 8192);
  EXPECT_EQ(memory.at("total").at("peak"), 12288);
  EXPECT_EQ(rs[1], (Json{{"kind", "val"}, {"step", 10}, {"val_loss", 2.25}, {"elapsed_s", 1.75}}));
  EXPECT_TRUE(rs[2].at("loss").is_null()) << "a non-finite loss is null: " << rs[2];
}

TEST(MetricsLog, AResumedRunKeepsTheRecordsUpToItsStepAndAppends) {
  testing::ScratchDir dir("metrics_resume");
  const std::string path = (dir / "m.jsonl").string();
  {
    MetricsLog log(path, std::nullopt);
    for (int s = 0; s <= 8; s += 2) {
      if (s > 0) log.append(train_record(s, s * 1.0));
      log.append(ValidationRecord{s, 3.0f, s * 1.0});
    }
  }
  {
    std::ofstream torn(path, std::ios::app);
    torn << "{\"kind\":\"train\",\"step\":9,\"lo";  // killed while writing
  }
  {
    MetricsLog log(path, 4);  // resumed from the checkpoint of step 4
    EXPECT_EQ(log.elapsed_before(), 4.0) << "the last record kept";
    log.append(ValidationRecord{4, 2.0f, 4.5});
    log.append(train_record(5, 5.0));
  }
  const std::vector<std::pair<std::string, std::int64_t>> expected = {{"val", 0},   {"train", 2}, {"val", 2},
                                                                      {"train", 4}, {"val", 4},   {"train", 5}};
  EXPECT_EQ(kinds_and_steps(records(path)), expected)
      << "records of steps after 4 and the old validation of step 4 are dropped, the torn line too";
  EXPECT_EQ(records(path)[4].at("val_loss"), 2.0) << "the validation of step 4 is the resumed run's";
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  {
    MetricsLog log(path, 4);  // resumed at step 4 again: step 5 of the run before is trained again
    EXPECT_EQ(log.last_step_dropped(), 5);
    log.append(ResumeRecord{4, 2, 3, 16, 4.0, 1});
    log.append(train_record(5, 5.0));
    log.append(train_record(6, 6.0));
  }
  {
    MetricsLog log(path, 4);  // and once more, after reaching step 6
    EXPECT_EQ(log.last_step_dropped(), 6);
    log.append(ResumeRecord{4, 4, 1, 32, 4.0, 2});
  }
  const std::vector<Json> rs = records(path);
  ASSERT_EQ(rs.size(), 6u);  // steps 0-4 (the validation of step 4 measured again and not yet written), two resumes
  EXPECT_EQ(rs.back(), Json::parse(R"({"kind":"resume","step":4,"ranks":4,"zero_stage":1,"global_batch":32,)"
                                   R"("elapsed_s":4.0,"steps_redone":2})"));
  const MetricsSeries series = read_metrics_file(path);
  ASSERT_EQ(series.resumes.size(), 2u) << "both restarts from step 4 show";
  EXPECT_EQ(series.resumes[0].steps_redone, 1);
  EXPECT_EQ(series.resumes[1].steps_redone, 2);
  EXPECT_EQ(series.resumes[1].ranks, 4);
  EXPECT_EQ(series.resumes[1].zero_stage, 1);
  EXPECT_EQ(series.resumes[1].global_batch, 32);
  EXPECT_EQ(resume_label(series.resumes[1]), "4 ranks, ZeRO-1, global batch 32");
  EXPECT_EQ(resume_label(ResumeRecord{4, 1, 0, 8, 0.0}), "1 rank, ZeRO-0, global batch 8");

  {
    MetricsLog log(path, std::nullopt);  // a fresh run in the same place starts over
    log.append(train_record(1, 0.5));
  }
  EXPECT_EQ(kinds_and_steps(records(path)), (std::vector<std::pair<std::string, std::int64_t>>{{"train", 1}}));
}

TEST(MetricsLog, RewindDropsTheStepsAfterAReload) {
  testing::ScratchDir dir("metrics_rewind");
  const std::string path = (dir / "m.jsonl").string();
  MetricsLog log(path, std::nullopt);
  for (int s = 1; s <= 6; ++s) {
    log.append(train_record(s, s));
    if (s % 3 == 0) log.append(ValidationRecord{s, 1.0f, s * 1.0});
  }
  log.rewind(3);
  log.append(train_record(4, 7.0));
  EXPECT_EQ(kinds_and_steps(records(path)), (std::vector<std::pair<std::string, std::int64_t>>{
                                                {"train", 1}, {"train", 2}, {"train", 3}, {"val", 3}, {"train", 4}}))
      << "the validation of step 3 stays: the run does not measure it again after a reload";
  const MetricsSeries series = read_metrics_file(path);
  EXPECT_EQ(series.train_step, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(series.val_step, (std::vector<double>{3}));
  EXPECT_EQ(series.unreadable_lines, 0);
}

TEST(MetricsLog, UnwritablePathNamesIt) {
  try {
    MetricsLog log("/nonexistent_dir/m.jsonl", std::nullopt);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent_dir/m.jsonl"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera
