// EnvironmentReport: sections in order, the JSON a checkpoint stores reads back the same, the text
// lines up its values, a stored report that does not parse is shown as stored; and RunConfig
// writes floating values in the shortest text that reads back (0.001f as "0.001").
#include "tessera/checkpointing/format/environment_report.hpp"

#include <gtest/gtest.h>

#include "tessera/checkpointing/format/run_config.hpp"

namespace tessera {
namespace {

EnvironmentReport sample() {
  EnvironmentReport r;
  r.add("build", "version", "0.1.0");
  r.add("CPU", "model", "Some CPU \"quoted\"");
  r.add("build", "git revision", "1a2b3c");
  return r;
}

TEST(EnvironmentReport, SectionsKeepTheirOrderAndEntries) {
  const EnvironmentReport r = sample();
  ASSERT_EQ(r.sections.size(), 2u);
  EXPECT_EQ(r.sections[0].name, "build");
  EXPECT_EQ(r.sections[0].entries.size(), 2u);
  EXPECT_EQ(r.value("build", "git revision"), "1a2b3c");
  EXPECT_EQ(r.value("CPU", "absent"), "");
}

TEST(EnvironmentReport, JsonReadsBackAndTextLinesUpTheValues) {
  const EnvironmentReport back = environment_report_from_json(environment_report_json(sample()));
  EXPECT_EQ(back.value("CPU", "model"), "Some CPU \"quoted\"");
  EXPECT_EQ(environment_report_text(back),
            "build\n"
            "  version       0.1.0\n"
            "  git revision  1a2b3c\n"
            "CPU\n"
            "  model         Some CPU \"quoted\"\n");  // two spaces after the longest key
}

TEST(EnvironmentReport, AStoredReportThatDoesNotParseIsShownAsStored) {
  EXPECT_THROW(environment_report_from_json("{\"format\": 1}"), std::invalid_argument);
  EXPECT_THROW(environment_report_from_json("not json"), std::invalid_argument);
  const std::string shown = environment_report_text_of_json("{\"sections\": 3}");
  EXPECT_NE(shown.find("(as stored: "), std::string::npos) << shown;
  EXPECT_NE(shown.find("{\"sections\": 3}"), std::string::npos) << shown;
}

TEST(RunConfig, FloatingValuesAreStoredInTheirShortestForm) {
  RunConfig c;
  c.set_run("lr", 0.001f);
  c.set_run("ratio", 0.1);
  c.set_run("warmup", std::int64_t{100});
  EXPECT_EQ(c.run().at("lr"), "0.001");  // not 0.00100000005
  EXPECT_EQ(c.run().at("ratio"), "0.1");
  EXPECT_EQ(c.run().at("warmup"), "100");
}

}  // namespace
}  // namespace tessera
