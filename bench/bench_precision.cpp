// bench_precision: how closely bf16 compute follows f32 compute on a real training run. Per model it
// runs train_gpt twice on the same data, seed and settings (--compute-dtype f32, then bf16), reads
// both metrics files and prints, at every logged step, both losses, their relative difference and that
// difference over a moving window of logged steps (the step losses of one small batch carry the noise
// of two slightly different trajectories; the window shows the drift under it); then the largest
// differences after step 50, how many logged steps differ by more than --step-tolerance, and the final
// validation losses. With --control-kernels LEVEL it also runs f32 again on another CPU kernel level
// (the same arithmetic, other last bits where FMA or the vector width rounds differently): how far two
// f32 runs drift apart, the scale bf16's drift is read on.
// Usage: bench_precision [--data data/corpus.bin] [--model gpt2|llama]... [--steps 800] [--log-every 20]
//                        [--window 5] [--step-tolerance 2] [--out DIR] [--train-gpt PATH] [--control-kernels avx2]
//                        [-- extra train_gpt flags]
#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "flags/program_path.hpp"

namespace po = boost::program_options;

namespace tessera {
namespace {

struct Run {
  std::map<std::int64_t, double> train;  // step -> loss
  double final_val = NAN;
  double seconds = 0.0;
};

Run read_metrics(const std::string& path) {
  std::ifstream in(path);
  Run r;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    const std::string kind = j.value("kind", "");
    if (kind == "train") r.train[j.at("step").get<std::int64_t>()] = j.at("loss").get<double>();
    if (kind == "val") r.final_val = j.at("val_loss").get<double>();
    if (j.contains("elapsed_s")) r.seconds = j.at("elapsed_s").get<double>();
  }
  return r;
}

// Runs train_gpt in `dtype` (under TESSERA_CPU_KERNELS=`kernels` unless empty); exits naming the
// command and its log when it fails.
Run train(const std::string& train_gpt, const std::string& model, const std::string& dtype, const po::variables_map& vm,
          const std::vector<std::string>& extra, const std::string& kernels = "") {
  const std::filesystem::path out = vm["out"].as<std::string>();
  const std::string stem = (out / (model + "_" + dtype + (kernels.empty() ? "" : "_" + kernels))).string();
  std::vector<std::string> words = {train_gpt,
                                    "--data",
                                    vm["data"].as<std::string>(),
                                    "--model",
                                    model,
                                    "--steps",
                                    std::to_string(vm["steps"].as<int>()),
                                    "--log-every",
                                    std::to_string(vm["log-every"].as<int>()),
                                    "--compute-dtype",
                                    dtype,
                                    "--sample-tokens",
                                    "0",
                                    "--progress",
                                    "plain",
                                    "--metrics",
                                    stem + ".jsonl"};
  words.insert(words.end(), extra.begin(), extra.end());
  std::string command = kernels.empty() ? "" : "TESSERA_CPU_KERNELS=" + shell_word(kernels);
  for (const std::string& w : words) command.append(command.empty() ? "" : " ").append(shell_word(w));
  std::fprintf(stderr, "bench_precision: %s\n", command.c_str());
  std::filesystem::remove(stem + ".jsonl");
  const std::string redirected = command + " > " + shell_word(stem + ".log") + " 2>&1";
  if (std::system(redirected.c_str()) != 0) {
    std::fprintf(stderr, "bench_precision: train_gpt failed; its output is in %s.log\n", stem.c_str());
    std::exit(1);
  }
  return read_metrics(stem + ".jsonl");
}

// `b` against the reference `a` (labels `a_name`, `b_name`) at every logged step, then the summary.
void compare(const std::string& model, const Run& f32, const std::string& a_name, const Run& bf16,
             const std::string& b_name, int window, double tolerance) {
  std::vector<std::int64_t> steps;
  std::vector<double> diff;  // relative, bf16 over f32
  for (const auto& [step, loss] : f32.train) {
    const auto it = bf16.train.find(step);
    if (it == bf16.train.end()) continue;
    steps.push_back(step);
    diff.push_back((it->second - loss) / loss);
  }
  std::printf("\n%s, %s against %s: train loss at every logged step (window: mean of the last %d logged differences)\n",
              model.c_str(), b_name.c_str(), a_name.c_str(), window);
  std::printf("%8s %10s %10s %9s %9s\n", "step", a_name.c_str(), b_name.c_str(), "diff", "window");
  double worst = 0.0, worst_window = 0.0, sum = 0.0;
  std::int64_t worst_step = 0, worst_window_step = 0;
  int counted = 0, over = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const std::size_t first = i + 1 >= static_cast<std::size_t>(window) ? i + 1 - window : 0;
    double w = 0.0;
    for (std::size_t k = first; k <= i; ++k) w += diff[k];
    w /= static_cast<double>(i - first + 1);
    std::printf("%8lld %10.4f %10.4f %+8.2f%% %+8.2f%%\n", static_cast<long long>(steps[i]), f32.train.at(steps[i]),
                bf16.train.at(steps[i]), 100.0 * diff[i], 100.0 * w);
    if (steps[i] <= 50) continue;
    sum += diff[i];
    ++counted;
    if (std::fabs(diff[i]) > tolerance) ++over;
    if (std::fabs(diff[i]) > worst) worst = std::fabs(diff[i]), worst_step = steps[i];
    if (std::fabs(w) > worst_window) worst_window = std::fabs(w), worst_window_step = steps[i];
  }
  std::printf(
      "%s, %s against %s after step 50 (%d logged steps): mean diff %+.2f%%, largest |diff| %.2f%% (step %lld), "
      "%d over %.2f%%, largest |window| %.2f%% (step %lld)\n",
      model.c_str(), b_name.c_str(), a_name.c_str(), counted, counted > 0 ? 100.0 * sum / counted : 0.0, 100.0 * worst,
      static_cast<long long>(worst_step), over, 100.0 * tolerance, 100.0 * worst_window,
      static_cast<long long>(worst_window_step));
  std::printf("%s final validation loss: %s %.4f, %s %.4f (%+.2f%%); run time %.0f s, %.0f s\n", model.c_str(),
              a_name.c_str(), f32.final_val, b_name.c_str(), bf16.final_val,
              100.0 * (bf16.final_val - f32.final_val) / f32.final_val, f32.seconds, bf16.seconds);
}

int run(int argc, char** argv) {
  po::options_description options("bench_precision options");
  options.add_options()("help", "this text")("data", po::value<std::string>()->default_value("data/corpus.bin"),
                                             "training data (scripts/train prepares data/corpus.bin)")(
      "model", po::value<std::vector<std::string>>()->multitoken()->default_value({"gpt2", "llama"}, "gpt2 llama"),
      "models to compare")("steps", po::value<int>()->default_value(800), "steps per run")(
      "log-every", po::value<int>()->default_value(20), "logged step interval")(
      "window", po::value<int>()->default_value(5), "logged steps in the moving window")(
      "step-tolerance", po::value<double>()->default_value(2.0),
      "percent: the summary counts the logged steps after step 50 whose |diff| exceeds it")(
      "out", po::value<std::string>()->default_value("bench_precision"), "directory for the metrics and logs")(
      "train-gpt", po::value<std::string>()->default_value(""), "train_gpt to run (default: the build's)")(
      "control-kernels", po::value<std::string>()->default_value(""),
      "also run f32 under TESSERA_CPU_KERNELS=LEVEL (avx2, portable): the same arithmetic with other last bits, "
      "to show how far two f32 runs drift apart")("extra", po::value<std::vector<std::string>>()->default_value({}, ""),
                                                  "train_gpt flags after --");
  po::positional_options_description positional;
  positional.add("extra", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(options).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "bench_precision: " << e.what() << "\n" << options;
    return 2;
  }
  if (vm.count("help") != 0) {
    std::cout << options;
    return 0;
  }
  const double tolerance = vm["step-tolerance"].as<double>() / 100.0;
  if (!(tolerance >= 0.0)) {
    std::cerr << "bench_precision: --step-tolerance " << vm["step-tolerance"].as<double>()
              << ": give a percentage of 0 or more\n";
    return 2;
  }
  if (vm["window"].as<int>() < 1) {
    std::cerr << "bench_precision: --window " << vm["window"].as<int>() << ": give 1 or more logged steps\n";
    return 2;
  }
  std::string train_gpt = vm["train-gpt"].as<std::string>();
  if (train_gpt.empty()) train_gpt = sibling_program("../examples/train_gpt");
  std::filesystem::create_directories(vm["out"].as<std::string>());
  for (const std::string& model : vm["model"].as<std::vector<std::string>>()) {
    const std::vector<std::string>& extra = vm["extra"].as<std::vector<std::string>>();
    const Run f32 = train(train_gpt, model, "f32", vm, extra);
    const Run bf16 = train(train_gpt, model, "bf16", vm, extra);
    compare(model, f32, "f32", bf16, "bf16", vm["window"].as<int>(), tolerance);
    const std::string control = vm["control-kernels"].as<std::string>();
    if (!control.empty()) {
      const Run other = train(train_gpt, model, "f32", vm, extra, control);
      compare(model, f32, "f32", other, "f32/" + control, vm["window"].as<int>(), tolerance);
    }
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) { return tessera::run(argc, argv); }
