// Tessera against Hugging Face transformers itself, both ways, for GPT-2 and Llama models, from a
// virtual environment with torch and transformers (TESSERA_HF_MODELS_VENV, which ctest sets; torch
// is about 3 GB, so the test does not install it: without it the test skips and says how to make it).
//   Tessera -> transformers: train_gpt trains a GPT-2 and a Llama (grouped-query attention) a few
//     steps; tessera_ckpt exports each as a Hugging Face model directory (f32 and bf16);
//     AutoModelForCausalLM and AutoTokenizer load it; logits on a token sequence within 1e-4 of
//     tessera_eval's on the same directory, the same tokenizer ids.
//   transformers -> Tessera: random LlamaForCausalLM (grouped-query attention, rope_theta 500000,
//     rms_norm_eps 1e-6, untied head) and GPT2LMHeadModel with non-default fields (n_inner,
//     layer_norm_epsilon, untied head), saved f32, bf16 and f16 by save_pretrained; tessera_eval on the
//     directory within 1e-4 of transformers' logits (computed in f32 from the file's weights); a
//     field Tessera does not compute (activation_function relu, scale_attn_by_inverse_layer_idx) is
//     refused naming the field.
// Each case prints a line of the interop table: direction, model, dtype, max |logit difference|
// and the next-token loss of the sequence from both.
// tessera-test-timeout: 300
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/python_venv.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using testing::run_bounded;

constexpr const char* kTokens = "256,72,101,108,108,111,44,32,119,111,114,108,100,33,32,84,104,101";

// make-llama DIR DTYPE | make-gpt2 DIR DTYPE FIELDS_JSON: a random model, weights drawn large
// enough that every path moves the logits, saved by save_pretrained in DTYPE.
// logits DIR TOKENS: {"logits": [[...] per position], "loss": next-token loss, "ids": tokenizer ids of
// "Hello, world!" or null} from AutoModelForCausalLM in f32.
const char* kScript = R"PY(
import json, sys, torch
from transformers import (AutoModelForCausalLM, AutoTokenizer, GPT2Config, GPT2LMHeadModel, LlamaConfig,
                          LlamaForCausalLM)

def save(model, out, dtype):
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or ".ln_" in name:
                p.uniform_(0.5, 1.5)
            else:
                p.normal_(0.0, 0.2)
    dtypes = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
    model.to(dtypes[dtype]).save_pretrained(out, safe_serialization=True)

cmd = sys.argv[1]
if cmd == "make-llama":
    config = LlamaConfig(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                         num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=64,
                         rope_theta=500000.0, rms_norm_eps=1e-6, tie_word_embeddings=False)
    save(LlamaForCausalLM(config), sys.argv[2], sys.argv[3])
elif cmd == "make-gpt2":
    fields = dict(vocab_size=300, n_positions=64, n_embd=48, n_layer=2, n_head=4)
    fields.update(json.loads(sys.argv[4]))
    save(GPT2LMHeadModel(GPT2Config(**fields)), sys.argv[2], sys.argv[3])
elif cmd == "logits":
    model = AutoModelForCausalLM.from_pretrained(sys.argv[2], dtype=torch.float32).eval()
    tokens = torch.tensor([[int(t) for t in sys.argv[3].split(",")]])
    with torch.no_grad():
        out = model(tokens, labels=tokens)
    ids = None
    try:
        ids = AutoTokenizer.from_pretrained(sys.argv[2]).encode("Hello, world!", add_special_tokens=False)
    except Exception:
        pass
    print(json.dumps({"logits": out.logits[0].tolist(), "loss": out.loss.item(), "ids": ids}))
)PY";

struct Logits {
  std::vector<std::vector<double>> rows;
  double loss = 0;
};

// Next-token cross-entropy of `tokens` under `rows` (row t predicts token t + 1), mean over positions.
double next_token_loss(const std::vector<std::vector<double>>& rows, const std::vector<int>& tokens) {
  double total = 0;
  for (std::size_t t = 0; t + 1 < tokens.size(); ++t) {
    double max = rows[t][0], sum = 0;
    for (double v : rows[t]) max = std::max(max, v);
    for (double v : rows[t]) sum += std::exp(v - max);
    total += std::log(sum) + max - rows[t][static_cast<std::size_t>(tokens[t + 1])];
  }
  return total / static_cast<double>(tokens.size() - 1);
}

std::vector<int> token_list() {
  std::vector<int> tokens;
  std::stringstream in(kTokens);
  for (std::string t; std::getline(in, t, ',');) tokens.push_back(std::stoi(t));
  return tokens;
}

class HfModels : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("TESSERA_BIN_DIR");
    const char* venv = std::getenv("TESSERA_HF_MODELS_VENV");
    if (bin == nullptr || venv == nullptr)
      GTEST_SKIP() << "TESSERA_BIN_DIR / TESSERA_HF_MODELS_VENV not set (ctest sets them)";
    bin_ = bin;
    python_ = std::string(venv) + "/bin/python";
    if (run_bounded(python_ + " -c 'import torch, transformers'", 120).exit_code != 0) {
      GTEST_SKIP() << "torch and transformers are not installed in " << venv << "; make it with: python3 -m venv "
                   << venv << " && " << venv << "/bin/pip install torch transformers (about 3 GB)";
    }
    std::ofstream(dir_ / "hf.py") << kScript;
  }

  // Runs the script; fails the test (and returns "") when it fails.
  std::string python(const std::string& args) {
    const testing::ProcessResult r = run_bounded(python_ + " " + (dir_ / "hf.py").string() + " " + args, 180);
    EXPECT_EQ(r.exit_code, 0) << args << ":\n" << r.output;
    return r.exit_code == 0 ? r.output : "";
  }

  Logits transformers_logits(const fs::path& model, std::vector<int>* ids = nullptr) {
    const std::string out = python("logits " + model.string() + " " + kTokens);
    const std::size_t start = out.rfind("\n{\"logits\"");
    const Json j = Json::parse(out.substr(start == std::string::npos ? out.find("{\"logits\"") : start + 1));
    if (ids != nullptr && !j["ids"].is_null()) *ids = j["ids"].get<std::vector<int>>();
    return {j["logits"].get<std::vector<std::vector<double>>>(), j["loss"].get<double>()};
  }

  Logits tessera_logits(const fs::path& model) {
    const testing::ProcessResult r = run_bounded(
        bin_ + "/tessera_eval " + model.string() + " --tokens " + kTokens + " --print-logits 2>/dev/null", 120);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    if (r.exit_code != 0) return {};
    const Json j = Json::parse(r.output.substr(r.output.find('{')));
    Logits l{j["logits"].get<std::vector<std::vector<double>>>(), 0};
    l.loss = next_token_loss(l.rows, token_list());
    return l;
  }

  // Both sides' logits on the token sequence; prints the table line and checks 1e-4.
  void expect_same_logits(const std::string& direction, const std::string& model, const std::string& dtype,
                          const fs::path& dir, std::vector<int>* ids = nullptr) {
    const Logits theirs = transformers_logits(dir, ids), ours = tessera_logits(dir);
    ASSERT_EQ(ours.rows.size(), theirs.rows.size()) << model << " " << dtype;
    double max_diff = 0;
    for (std::size_t t = 0; t < ours.rows.size(); ++t) {
      ASSERT_EQ(ours.rows[t].size(), theirs.rows[t].size()) << model << " " << dtype;
      for (std::size_t v = 0; v < ours.rows[t].size(); ++v) {
        max_diff = std::max(max_diff, std::abs(ours.rows[t][v] - theirs.rows[t][v]));
      }
    }
    std::printf("interop: %-22s %-6s %-5s max |logit diff| %.2e  loss tessera %.6f transformers %.6f\n",
                direction.c_str(), model.c_str(), dtype.c_str(), max_diff, ours.loss, theirs.loss);
    EXPECT_LE(max_diff, 1e-4) << direction << " " << model << " " << dtype;
    EXPECT_NEAR(ours.loss, theirs.loss, 1e-4) << direction << " " << model << " " << dtype;
  }

  testing::ScratchDir dir_{"hf_models"};
  std::string bin_, python_;
};

TEST_F(HfModels, TesseraExportsLoadInTransformers) {
  const std::string corpus = (dir_ / "corpus.bin").string();  // the default corpus, made as a first run does
  const testing::ProcessResult prepared = run_bounded(bin_ + "/tessera_prepare --out " + corpus, 120);
  ASSERT_EQ(prepared.exit_code, 0) << prepared.output;
  const std::pair<const char*, const char*> models[] = {
      {"gpt2", "--model gpt2 --layers 2 --dim 48 --heads 4"},
      {"llama", "--model llama --layers 2 --dim 64 --heads 8 --kv-heads 2 --ffn-dim 96"}};
  for (const auto& [model, flags] : models) {
    const fs::path run = dir_ / (std::string(model) + "_run");
    const testing::ProcessResult trained =
        run_bounded(bin_ + "/train_gpt --data " + corpus + " " + flags +
                        " --seq-len 32 --steps 8 --lr 3e-3 --sample-tokens 0 --eval-every 0 --log-every 8 --threads 1 "
                        "--checkpoint-dir " +
                        run.string(),
                    120);
    ASSERT_EQ(trained.exit_code, 0) << trained.output;
    for (const char* dtype : {"f32", "bf16"}) {
      const fs::path out = dir_ / (std::string(model) + "_" + dtype);
      const testing::ProcessResult exported = run_bounded(
          bin_ + "/tessera_ckpt export " + run.string() + " " + out.string() + " --format safetensors --dtype " + dtype,
          120);
      ASSERT_EQ(exported.exit_code, 0) << exported.output;
      std::vector<int> ids;
      expect_same_logits("tessera -> transformers", model, dtype, out, &ids);
      // The byte tokenizer as tokenizer.json: AutoTokenizer gives the bytes.
      EXPECT_EQ(ids, (std::vector<int>{72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100, 33}));
    }
  }
}

TEST_F(HfModels, TransformersModelsLoadInTessera) {
  for (const char* dtype : {"f32", "bf16", "f16"}) {
    const fs::path llama = dir_ / (std::string("hf_llama_") + dtype);
    python(std::string("make-llama ") + llama.string() + " " + dtype);
    expect_same_logits("transformers -> tessera", "llama", dtype, llama);
    const fs::path gpt2 = dir_ / (std::string("hf_gpt2_") + dtype);
    python(std::string("make-gpt2 ") + gpt2.string() + " " + dtype +
           " '{\"n_inner\": 80, \"layer_norm_epsilon\": 0.001, \"tie_word_embeddings\": false}'");
    expect_same_logits("transformers -> tessera", "gpt2", dtype, gpt2);
  }
}

TEST_F(HfModels, FieldsTesseraDoesNotComputeAreRefused) {
  const std::pair<const char*, const char*> cases[] = {
      {R"('{"activation_function": "relu"}')", "field activation_function is '\"relu\"'"},
      {R"('{"scale_attn_by_inverse_layer_idx": true}')", "field scale_attn_by_inverse_layer_idx is 'true'"}};
  int n = 0;
  for (const auto& [fields, message] : cases) {
    const fs::path model = dir_ / ("refused_" + std::to_string(n++));
    python("make-gpt2 " + model.string() + " f32 " + fields);
    const testing::ProcessResult r =
        run_bounded(bin_ + "/tessera_eval " + model.string() + " --tokens " + kTokens + " --print-logits", 60);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
    EXPECT_NE(r.output.find((model / "config.json").string()), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace tessera
