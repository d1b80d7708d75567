// What a checkpoint stores beyond the engine's state, as the training program hands it over:
//  * TrainingProgress — where the loop stands: step, tokens seen, the data loader's position
//    (global sample index + seed: the loader has no other state) and this rank's RNG words.
//  * RunConfig — the run's settings as key/value strings in two sections. `model` fields must match
//    when resuming (a differing vocab or layer count refuses the checkpoint, naming the field);
//    `run` fields (batch plan, LR schedule, data) are recorded and shown by `tessera_ckpt info` only;
//    beside them, the program's effective configuration as text (every option's final value and
//    where it came from: train_gpt's is an INI file that --config reads back), shown by info, and
//    the environment report (versions, build options, CPU, GPUs), also shown by info.
// The engine's own settings (ZeRO stage, precision, world size, AdamW, clip, loss scaler) are
// stored by the checkpoint code itself.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessera/core/number_text.hpp"

namespace tessera {

struct TrainingProgress {
  std::int64_t step = 0;          // optimizer steps completed (skipped steps included); resume runs this step next
  std::int64_t tokens_seen = 0;   // tokens consumed by all ranks
  std::int64_t samples_seen = 0;  // global sample index where the loader continues
  std::uint64_t data_seed = 0;    // the loader's seed
  std::vector<std::uint64_t> rng_state;  // this rank's generator words (e.g. Rng::State), may be empty
};

class RunConfig {
 public:
  void set_model(const std::string& key, const std::string& value) { model_[key] = value; }
  void set_run(const std::string& key, const std::string& value) { run_[key] = value; }
  template <typename T>
  requires std::is_arithmetic_v<T>
  void set_model(const std::string& key, T value) { model_[key] = format_value(value); }
  template <typename T>
  requires std::is_arithmetic_v<T>
  void set_run(const std::string& key, T value) { run_[key] = format_value(value); }

  const std::map<std::string, std::string>& model() const { return model_; }
  const std::map<std::string, std::string>& run() const { return run_; }

  // The program's effective configuration, as text; "" when none was recorded.
  void set_effective_config(std::string text) { effective_config_ = std::move(text); }
  const std::string& effective_config() const { return effective_config_; }
  // The environment the run saved it in (versions, build options, CPU, GPUs), as the JSON text of
  // run/environment_report.hpp; "" when none was recorded (a checkpoint older than the report).
  void set_environment_report(std::string json) { environment_report_ = std::move(json); }
  const std::string& environment_report() const { return environment_report_; }

  // Integers exactly, floating values in the shortest text that reads back as the same value of
  // their own type (a float 0.001f as "0.001").
  template <typename T>
  static std::string format_value(T value) {
    if constexpr (std::is_integral_v<T>) {
      return std::to_string(value);
    } else {
      return shortest_number_text(value);
    }
  }

 private:
  std::map<std::string, std::string> model_, run_;
  std::string effective_config_;
  std::string environment_report_;
};

}  // namespace tessera
