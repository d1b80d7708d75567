// ProgramOptions: a --config file fills what the command line did not set (command line wins);
// keys are long option names, [sections] and dotted prefixes only group them; every kind of bad
// input names the file, the line and what the option takes; the effective configuration records
// each value's origin and reads back as a config file; defaults print as written.
#include "flags/program_options.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "tessera/core/build_info.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera {
namespace {

struct Values {
  std::int64_t layers = 4;
  double lr = 1e-3, ratio = 0.1;
  std::uint64_t seed = 1337;
  bool guard = false;
  std::string name = "run";
  std::vector<std::string> data{"a.bin"};
};

// A program with a few options of each kind, parsing `args` (after the program name).
struct Program {
  Values v;
  ProgramOptions options{"prog", "prog: a test program"};
  Program() {
    po::options_description group("Options");
    // clang-format off
    group.add_options()
        ("layers", value_with_default(&v.layers), "blocks")
        ("lr", value_with_default(&v.lr), "learning rate")
        ("min-lr-ratio", value_with_default(&v.ratio), "floor")
        ("seed", value_with_default(&v.seed), "seed")
        ("spike-guard", po::bool_switch(&v.guard), "guard")
        ("name", value_with_default(&v.name), "name")
        ("data", po::value(&v.data)->multitoken()->default_value(v.data, "a.bin"), "files");
    // clang-format on
    options.add(group);
  }
  bool parse(std::vector<std::string> args) {
    args.insert(args.begin(), "prog");
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    return options.parse(static_cast<int>(argv.size()), argv.data(), false);
  }
};

std::string write(const testing::ScratchDir& dir, const std::string& name, const std::string& text) {
  const std::string path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

// The message of the std::invalid_argument that parsing `args` throws ("" when none).
std::string refusal(const std::vector<std::string>& args) {
  Program p;
  try {
    p.parse(args);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(ProgramOptions, PrefixesOfAFlagAreNotGuessed) {
  // Boost would take --lay as --layers (and --spike as --spike-guard): refused, with the flag meant.
  const std::string lay = refusal({"--lay", "3"});
  EXPECT_NE(lay.find("unrecognised option '--lay'"), std::string::npos) << lay;
  EXPECT_NE(lay.find("did you mean --layers?"), std::string::npos) << lay;
  EXPECT_NE(refusal({"--spike"}).find("unrecognised option '--spike'"), std::string::npos);
  Program p;
  EXPECT_TRUE(p.parse({"--layers", "3"}));
  EXPECT_EQ(p.v.layers, 3);
}

TEST(ProgramOptions, AMistypedFlagGetsTheNearestName) {
  const std::string typo = refusal({"--lyaers", "3"});
  EXPECT_NE(typo.find("did you mean --layers?"), std::string::npos) << typo;
  EXPECT_NE(typo.find("(see prog --help)"), std::string::npos) << typo;
  const std::string far = refusal({"--frobnicate"});
  EXPECT_EQ(far.find("did you mean"), std::string::npos) << far;
}

TEST(ProgramOptions, VersionNamesTheProgramTheVersionAndTheRevision) {
  Program p;
  EXPECT_FALSE(p.parse({"--version"}));
  const std::string text = p.options.version_text();
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(^prog \(Tessera [0-9]+\.[0-9]+\.[0-9]+, git [^\n]+\)\n)")))
      << text;
  EXPECT_NE(text.find(build_info().build_type), std::string::npos) << text;
  EXPECT_FALSE(build_info().git_revision.empty());
}

TEST(ProgramOptions, ConfigFileFillsWhatTheCommandLineLeaves) {
  testing::ScratchDir dir("po_precedence");
  const std::string ini = write(dir, "run.ini",
                                "# a run\n"
                                "[model]\n"
                                "layers = 6\n"
                                "train.lr = 0.002   # dotted\n"
                                "[anything]\n"
                                "seed = 7\n"
                                "spike-guard = true\n"
                                "data = x.bin y.bin\n");
  Program p;
  ASSERT_TRUE(p.parse({"--config", ini, "--seed", "9"}));
  EXPECT_EQ(p.v.layers, 6) << "a key inside a section";
  EXPECT_EQ(p.v.lr, 0.002) << "a dotted key";
  EXPECT_EQ(p.v.seed, 9u) << "the command line wins over the file";
  EXPECT_TRUE(p.v.guard);
  EXPECT_EQ(p.v.data, (std::vector<std::string>{"x.bin", "y.bin"}));
  EXPECT_EQ(p.v.ratio, 0.1) << "untouched: the default";

  std::map<std::string, OptionSetting> by_name;
  for (const OptionSetting& s : p.options.settings()) by_name[s.name] = s;
  EXPECT_EQ(by_name["layers"].origin, OptionOrigin::kConfigFile);
  EXPECT_EQ(by_name["layers"].file, ini);
  EXPECT_EQ(by_name["layers"].line, 3);
  EXPECT_EQ(by_name["lr"].line, 4);
  EXPECT_EQ(by_name["seed"].origin, OptionOrigin::kCommandLine);
  EXPECT_EQ(by_name["seed"].line, 6) << "the file's value it overrode";
  EXPECT_EQ(by_name["min-lr-ratio"].origin, OptionOrigin::kDefault);
  EXPECT_EQ(by_name["min-lr-ratio"].value, "0.1");
  EXPECT_EQ(by_name["seed"].value, "9");
  EXPECT_TRUE(p.options.given("layers"));
  EXPECT_FALSE(p.options.given("min-lr-ratio"));
}

TEST(ProgramOptions, EffectiveConfigurationReadsBack) {
  testing::ScratchDir dir("po_effective");
  Program first;
  ASSERT_TRUE(
      first.parse({"--layers", "3", "--lr", "3e-4", "--spike-guard", "--name", "my run", "--data", "p.bin", "q.bin"}));
  const std::string text = first.options.effective_config();
  EXPECT_NE(text.find("layers = 3"), std::string::npos) << text;
  EXPECT_NE(text.find("# command line"), std::string::npos) << text;
  EXPECT_NE(text.find("min-lr-ratio = 0.1"), std::string::npos) << text;
  EXPECT_NE(text.find("# default"), std::string::npos) << text;
  Program second;
  ASSERT_TRUE(second.parse({"--config", write(dir, "effective.ini", text)}));
  EXPECT_EQ(second.v.layers, 3);
  EXPECT_EQ(second.v.lr, 3e-4);
  EXPECT_TRUE(second.v.guard);
  EXPECT_EQ(second.v.name, "my run");
  EXPECT_EQ(second.v.data, (std::vector<std::string>{"p.bin", "q.bin"}));
}

TEST(ProgramOptions, EachKindOfBadInputNamesFileLineAndWhatIsAccepted) {
  testing::ScratchDir dir("po_bad");
  struct Case {
    std::string text;
    std::vector<std::string> parts;
  };
  const std::vector<Case> cases = {
      {"layers = 2\n[model]\nlayerz = 3\n", {"bad.ini:3: unknown key 'layerz'", "[model]", "did you mean 'layers'"}},
      {"\n\nlayers = six\n",
       {"bad.ini:3: layers = six: not a valid value", "layers takes a whole number", "default layers = 4"}},
      {"lr = fast\n", {"bad.ini:1: lr = fast", "lr takes a number"}},
      {"spike-guard = maybe\n", {"bad.ini:1:", "spike-guard takes true or false"}},
      {"seed = -1\n", {"bad.ini:1: seed = -1", "seed takes a whole number >= 0"}},
      {"layers = 99999999999999999999\n", {"bad.ini:1:", "layers takes a whole number"}},
      {"layers = 2\n# again\nlayers = 3\n", {"bad.ini:3: layers is set again (first at line 1)"}},
      {"layers 2\n", {"bad.ini:1: 'layers 2' is not a `key = value` line"}},
      {"config = other.ini\n", {"bad.ini:1: config can only be given on the command line"}},
  };
  for (const Case& c : cases) {
    const std::string message = refusal({"--config", write(dir, "bad.ini", c.text)});
    for (const std::string& part : c.parts) {
      EXPECT_NE(message.find(part), std::string::npos) << "file:\n"
                                                       << c.text << "expected: " << part << "\nactual: " << message;
    }
  }
  // A bad value in the file is refused even when the command line sets the option.
  const std::string overridden = refusal({"--config", write(dir, "bad.ini", "lr = fast\n"), "--lr", "0.1"});
  EXPECT_NE(overridden.find("bad.ini:1: lr = fast"), std::string::npos) << overridden;
  EXPECT_NE(refusal({"--config", (dir / "missing.ini").string()}).find("missing.ini: cannot open"), std::string::npos);
}

TEST(ProgramOptions, CommandLineErrorsSayWhatTheOptionTakes) {
  EXPECT_NE(refusal({"--layers", "six"}).find("--layers takes a whole number (default --layers 4)"), std::string::npos);
  EXPECT_NE(refusal({"--seed", "-3"}).find("--seed -3: --seed takes a whole number >= 0"), std::string::npos);
  EXPECT_NE(refusal({"--no-such"}).find("unrecognised option '--no-such' (see prog --help)"), std::string::npos);
}

TEST(ProgramOptions, ErrorsOfLaterChecksGetTheLineOfTheirValue) {
  testing::ScratchDir dir("po_locate");
  Program p;
  ASSERT_TRUE(p.parse({"--config", write(dir, "run.ini", "[train]\nmin-lr-ratio = 2\nlayers = 2\n"), "--lr", "5"}));
  const std::vector<OptionSetting> settings = p.options.settings();
  EXPECT_EQ(locate_config_values(settings, "--min-lr-ratio 2: must be in [0, 1]"),
            (dir / "run.ini").string() + ":2: min-lr-ratio = 2: --min-lr-ratio 2: must be in [0, 1]");
  EXPECT_EQ(locate_config_values(settings, "--lr 5: too high"), "--lr 5: too high") << "the command line set --lr";
  EXPECT_EQ(locate_config_values(settings, "--min-lr-ratios: no such"), "--min-lr-ratios: no such")
      << "only whole option names";
  try {
    p.options.locate_errors([]() -> int { throw std::invalid_argument("--layers 2 is too few"); });
    FAIL() << "nothing thrown";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "run.ini").string() + ":3: layers = 2: --layers 2 is too few");
  }
}

TEST(ProgramOptions, DefaultsPrintAsWritten) {
  EXPECT_EQ(option_value_text(0.1), "0.1");
  EXPECT_EQ(option_value_text(0.95), "0.95");
  EXPECT_EQ(option_value_text(1e-5), "1e-05");
  EXPECT_EQ(option_value_text(0.1f), "0.1");
  EXPECT_EQ(option_value_text(true), "true");
  EXPECT_EQ(option_value_text(std::int64_t{-3}), "-3");
  Program p;
  const std::string help = p.options.help();
  EXPECT_NE(help.find("(=0.1)"), std::string::npos) << help;
  EXPECT_NE(help.find("--config FILE"), std::string::npos) << help;
  EXPECT_FALSE(std::regex_search(help, std::regex(R"(\d\.\d{10,})"))) << help;
  EXPECT_FALSE(p.parse({"--help"})) << "--help asks to stop";
}

}  // namespace
}  // namespace tessera
