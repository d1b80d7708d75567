// One list of Kernels ops (runtime/kernel_ops.hpp) declares the interface and every backend:
//  * every backend implements every op (none of the tables is abstract; the CUDA one is checked
//    where it is built, tests/runtime/cuda/cuda_kernel_ops_test.cpp);
//  * every entry's argument list names its parameters in order, and TimedKernels forwards every op
//    of the list to the same op of its inner table, once, with every argument, and counts it in the
//    op's group — a fused op such as add_sum_squares
//    reaches the inner table as itself, not as the ops it fuses;
//  * the compute ops come twice, as f32 and bf16 overloads, and each reaches its own overload;
//  * the meta device's table does nothing for every op (no pointer is touched).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tessera/runtime/meta/meta_kernels.hpp"
#include "tessera/runtime/timed_kernels.hpp"

namespace tessera {
namespace {

static_assert(!std::is_abstract_v<CpuKernels>, "the CPU table misses an op of kernel_ops.hpp");
static_assert(!std::is_abstract_v<MetaKernels>, "the meta table misses an op of kernel_ops.hpp");
static_assert(!std::is_abstract_v<TimedKernels>, "the timed table misses an op of kernel_ops.hpp");

// An argument as text, for comparing what was passed with what arrived.
template <typename T>
std::string text_of(const T& value) {
  if constexpr (std::is_pointer_v<T>) {
    return "ptr " + std::to_string(reinterpret_cast<std::uintptr_t>(value));
  } else if constexpr (std::is_same_v<T, AdamWScalars>) {
    return "scalars lr " + std::to_string(value.lr);
  } else if constexpr (std::is_same_v<T, DropoutMask>) {
    return "mask key " + std::to_string(value.key) + " threshold " + std::to_string(value.threshold);
  } else if constexpr (std::is_same_v<T, std::span<const ParamSegment>>) {
    return "segments " + std::to_string(reinterpret_cast<std::uintptr_t>(value.data())) + " x " +
           std::to_string(value.size());
  } else if constexpr (std::is_enum_v<T>) {
    return "enum " + std::to_string(static_cast<int>(value));
  } else {
    return std::to_string(value);
  }
}

// A distinct value of type T for the i-th argument (pointers are never dereferenced).
template <typename T>
T value_for(int i) {
  if constexpr (std::is_pointer_v<T>) {
    return reinterpret_cast<T>(static_cast<std::uintptr_t>(0x1000 * (i + 1)));
  } else if constexpr (std::is_same_v<T, AdamWScalars>) {
    AdamWScalars s;
    s.lr = static_cast<float>(i + 1);
    return s;
  } else if constexpr (std::is_same_v<T, DropoutMask>) {
    return DropoutMask{static_cast<std::uint64_t>(i + 1), static_cast<std::uint32_t>(i + 2), 1.0f};
  } else if constexpr (std::is_same_v<T, std::span<const ParamSegment>>) {
    return {reinterpret_cast<const ParamSegment*>(static_cast<std::uintptr_t>(0x1000 * (i + 1))),
            static_cast<std::size_t>(i + 1)};
  } else if constexpr (std::is_same_v<T, bool>) {
    return i % 2 == 1;
  } else if constexpr (std::is_enum_v<T>) {
    return static_cast<T>(i % 3);
  } else {
    return static_cast<T>(i + 1);
  }
}

// True when an argument of the list is a Bf16 pointer: the op is the bf16 overload.
template <typename... A>
constexpr bool takes_bf16() {
  return (std::is_same_v<std::remove_cv_t<std::remove_pointer_t<std::decay_t<A>>>, Bf16> || ...);
}

// The names of a parameter list's parameters, in order: "(float* out, std::int64_t n)" -> out, n.
std::vector<std::string> parameter_names(std::string list) {
  std::vector<std::string> names;
  list = list.substr(1, list.size() - 2);
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string part = list.substr(start, comma - start);
    std::size_t end = part.find_last_not_of(" ");
    std::size_t begin = end;
    while (begin > 0 && (std::isalnum(static_cast<unsigned char>(part[begin - 1])) || part[begin - 1] == '_')) --begin;
    names.push_back(part.substr(begin, end - begin + 1));
    start = comma + 1;
  }
  return names;
}

// True for the norms' third overload: bf16 activations with an f32 parameter named `weight`.
template <typename... A>
bool f32_weight_beside_bf16(const char* args) {
  if (!takes_bf16<A...>()) return false;
  const std::vector<std::string> names = parameter_names(args);
  const bool is_f32[] = {std::is_same_v<std::remove_cv_t<std::remove_pointer_t<std::decay_t<A>>>, float>..., false};
  for (std::size_t i = 0; i < names.size() && i < sizeof...(A); ++i) {
    if (names[i] == "weight") return is_f32[i];
  }
  return false;
}

// An op as the tests tell its overloads apart: "gemm", "gemm bf16", "layernorm_forward bf16 f32-weight".
template <typename... A>
std::string op_key(const char* name, const char* args) {
  return std::string(name) + (takes_bf16<A...>() ? " bf16" : "") +
         (f32_weight_beside_bf16<A...>(args) ? " f32-weight" : "");
}

// Records each call: the op (op_key) and its arguments as text.
class RecordingKernels final : public Kernels {
 public:
#define TESSERA_KERNEL_OP(name, group, params, args) \
  void name params const override { record(#name, #args, std::forward_as_tuple args); }
#include "tessera/runtime/kernel_ops.hpp"

  mutable std::vector<std::string> ops;
  mutable std::vector<std::string> arguments;  // of the last call

 private:
  template <typename... A>
  void record(const char* op, const char* names, const std::tuple<A...>& args) const {
    ops.push_back(op_key<A...>(op, names));
    arguments.clear();
    std::apply([this](const auto&... a) { (arguments.push_back(text_of(std::decay_t<decltype(a)>(a))), ...); }, args);
  }
};

// Calls `op` on `table` with a distinct value per argument; returns those values as text.
template <typename... P>
std::vector<std::string> call_with_distinct_values(const Kernels& table, void (Kernels::*op)(P...) const) {
  std::vector<std::string> passed;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    std::tuple<std::decay_t<P>...> values{value_for<std::decay_t<P>>(static_cast<int>(I))...};
    (passed.push_back(text_of(std::get<I>(values))), ...);
    std::apply([&](auto&... v) { (table.*op)(v...); }, values);
  }
  (std::index_sequence_for<P...>{});
  return passed;
}

// Calls `op` with every argument value-initialized (null pointers, zero sizes).
template <typename... P>
void call_with_zeros(const Kernels& table, void (Kernels::*op)(P...) const) {
  (table.*op)(std::decay_t<P>{}...);
}

// The key of the op `member` points to.
template <typename... P>
std::string key_of(const char* name, const char* args, void (Kernels::*)(P...) const) {
  return op_key<P...>(name, args);
}

struct OpEntry {
  std::string name;  // op_key: the name, and " bf16" for a bf16 overload
  const char* params;  // the entry's parameter list as written, "(float* out, const float* a, ...)"
  const char* args;    // its argument list, "(out, a, ...)"
  KernelGroup group;
  std::vector<std::string> (*call)(const Kernels&);
  void (*call_zeros)(const Kernels&);
};

const std::vector<OpEntry>& every_op() {
  static const std::vector<OpEntry> ops = {
#define TESSERA_KERNEL_OP(name, group, params, args)                                                                 \
  {key_of(#name, #args, static_cast<void (Kernels::*) params const>(&Kernels::name)),                                    \
   #params,                                                                                                          \
   #args,                                                                                                            \
   KernelGroup::group,                                                                                               \
   [](const Kernels& k) { return call_with_distinct_values(k, static_cast<void (Kernels::*) params const>(&Kernels::name)); }, \
   [](const Kernels& k) { call_with_zeros(k, static_cast<void (Kernels::*) params const>(&Kernels::name)); }},
#include "tessera/runtime/kernel_ops.hpp"
  };
  return ops;
}

TEST(KernelOps, TheListHoldsEveryOpOnce) {
  std::vector<std::string> names;
  for (const OpEntry& op : every_op()) names.push_back(op.name);
  EXPECT_GE(names.size(), 48u);
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "an op is listed twice";
  for (const char* op : {"gemm", "gemm bf16", "attention_backward", "attention_backward bf16", "add_sum_squares",
                         "add_bf16 bf16", "adamw8bit_update", "convert", "layernorm_backward bf16 f32-weight",
                         "rmsnorm_forward bf16 f32-weight"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), op), names.end()) << op;
  }
  // Every compute op has both overloads; the optimizer's and the reductions' are f32 only (add_bf16,
  // which adds a bf16 gradient into f32, is one op).
  for (const std::string& name : names) {
    if (name.size() > 5 && name.substr(name.size() - 5) == " bf16" && name != "add_bf16 bf16") {
      EXPECT_NE(std::find(names.begin(), names.end(), name.substr(0, name.size() - 5)), names.end()) << name;
    }
    // A norm's f32-weight overload sits beside its bf16 one.
    if (name.ends_with(" f32-weight")) {
      EXPECT_NE(std::find(names.begin(), names.end(), name.substr(0, name.size() - 11)), names.end()) << name;
    }
  }
  EXPECT_EQ(std::find(names.begin(), names.end(), "adamw_update bf16"), names.end());
}


// Each entry's argument list names its parameters in their order (what the backends that forward,
// TimedKernels, pass on), so no op can forward a swapped or missing argument.
TEST(KernelOps, EveryEntryForwardsItsParametersInOrder) {
  for (const OpEntry& op : every_op()) {
    EXPECT_EQ(parameter_names(op.args), parameter_names(op.params))
        << op.name << ": " << op.params << " vs " << op.args;
  }
}

TEST(KernelOps, TimedTableForwardsEveryOpAsItselfWithItsArgumentsAndCountsItsGroup) {
  RecordingKernels inner;
  TimedKernels timed(inner);
  for (const OpEntry& op : every_op()) {
    inner.ops.clear();
    const KernelTimes before = timed.times();
    const std::vector<std::string> passed = op.call(timed);
    ASSERT_EQ(inner.ops, std::vector<std::string>{op.name})
        << "TimedKernels::" << op.name << " reached the inner table as "
        << (inner.ops.empty() ? "nothing" : inner.ops.front());
    EXPECT_EQ(inner.arguments, passed) << "TimedKernels::" << op.name << " forwarded other arguments";
    const KernelTimes after = timed.times();
    for (KernelGroup g : kAllKernelGroups) {
      EXPECT_EQ(after.calls_of(g) - before.calls_of(g), g == op.group ? 1 : 0)
          << op.name << " counted in " << kernel_group_name(g);
    }
  }
}

TEST(KernelOps, MetaTableDoesNothingForEveryOp) {
  MetaKernels meta;
  for (const OpEntry& op : every_op()) {
    op.call(meta);  // pointers that would fault if touched
    op.call_zeros(meta);
  }
  SUCCEED();
}

}  // namespace
}  // namespace tessera
