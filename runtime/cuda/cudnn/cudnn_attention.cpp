// CudnnAttention: the cuDNN SDPA graphs (forward with statistics, deterministic backward), built
// once per shape and run with the caller's pointers.
#include "tessera/runtime/cuda/cudnn/cudnn_attention.hpp"

#include <cudnn.h>

#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>

// The frontend's JSON serialisation is not used (and its bundled JSON library would sit beside the one
// the rest of the project uses).
#define CUDNN_FRONTEND_SKIP_JSON_LIB 1
#include <cudnn_frontend.h>

#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_device_select.hpp"

namespace tessera {
namespace {

namespace fe = cudnn_frontend;
using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;

void check_cudnn(cudnnStatus_t status, const char* call, const char* file, int line) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  throw std::runtime_error(detail::error_location(file, line) + ": " + call +
                           " failed: " + cudnnGetErrorString(status));
}
#define TESSERA_CUDNN_CHECK(call) check_cudnn((call), #call, __FILE__, __LINE__)

// The frontend's error as text, empty when good.
std::string failure(fe::error_t error) { return error.is_good() ? std::string() : error.get_message(); }

std::string shape_text(const AttentionShape& s) {
  return "b=" + std::to_string(s.b) + " t=" + std::to_string(s.t) + " c=" + std::to_string(s.c) +
         " nh=" + std::to_string(s.nh);
}

// q, k or v of qkv (b,t,3c) as cuDNN's (b,nh,t,hs).
fe::graph::Tensor_attributes qkv_view(const char* name, const AttentionShape& s) {
  const std::int64_t hs = s.c / s.nh;
  return fe::graph::Tensor_attributes()
      .set_name(name)
      .set_dim({s.b, s.nh, s.t, hs})
      .set_stride({3 * s.t * s.c, hs, 3 * s.c, 1});
}

// out or dout (b,t,c) as (b,nh,t,hs).
std::vector<std::int64_t> out_dim(const AttentionShape& s) { return {s.b, s.nh, s.t, s.c / s.nh}; }
std::vector<std::int64_t> out_stride(const AttentionShape& s) { return {s.t * s.c, s.c / s.nh, s.c, 1}; }
std::vector<std::int64_t> stats_dim(const AttentionShape& s) { return {s.b, s.nh, s.t, 1}; }
std::vector<std::int64_t> stats_stride(const AttentionShape& s) { return {s.nh * s.t, s.t, 1, 1}; }

std::shared_ptr<fe::graph::Graph> new_graph() {
  auto graph = std::make_shared<fe::graph::Graph>();
  graph->set_io_data_type(fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return graph;
}

// Validates and builds `graph` for `handle` and reads the workspace its plan needs into `workspace`;
// the reason when it cannot be built.
std::string build(fe::graph::Graph& graph, cudnnHandle_t handle, std::size_t& workspace) {
  if (std::string e = failure(graph.validate()); !e.empty()) return "validate: " + e;
  if (std::string e = failure(graph.build_operation_graph(handle)); !e.empty()) return "operation graph: " + e;
  if (std::string e = failure(graph.create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}));
      !e.empty()) {
    return "execution plans: " + e;
  }
  if (std::string e = failure(graph.check_support(handle)); !e.empty()) return "support: " + e;
  if (std::string e = failure(graph.build_plans(handle)); !e.empty()) return "plans: " + e;
  std::int64_t bytes = 0;
  if (std::string e = failure(graph.get_workspace_size(bytes)); !e.empty()) return "workspace: " + e;
  workspace = static_cast<std::size_t>(bytes);
  return {};
}

struct ForwardGraph {
  std::shared_ptr<fe::graph::Graph> graph;
  TensorPtr q, k, v, out, stats;
  std::size_t workspace = 0;
};

struct BackwardGraph {
  std::shared_ptr<fe::graph::Graph> graph;
  TensorPtr q, k, v, out, dout, stats, dq, dk, dv;
  std::size_t workspace = 0;
};

struct ShapeGraphs {
  std::string unsupported;  // empty: both graphs built
  ForwardGraph forward;
  BackwardGraph backward;
};

float attention_scale(const AttentionShape& s) { return 1.0f / std::sqrt(static_cast<float>(s.c / s.nh)); }

std::string build_forward(ForwardGraph& g, const AttentionShape& s, cudnnHandle_t handle) {
  g.graph = new_graph();
  g.q = g.graph->tensor(qkv_view("q", s));
  g.k = g.graph->tensor(qkv_view("k", s));
  g.v = g.graph->tensor(qkv_view("v", s));
  auto options = fe::graph::SDPA_attributes()
                     .set_name("attention_forward")
                     .set_generate_stats(true)
                     .set_causal_mask(true)
                     .set_attn_scale(attention_scale(s));
  auto [out, stats] = g.graph->sdpa(g.q, g.k, g.v, options);
  out->set_output(true).set_dim(out_dim(s)).set_stride(out_stride(s));
  stats->set_output(true).set_data_type(fe::DataType_t::FLOAT).set_dim(stats_dim(s)).set_stride(stats_stride(s));
  g.out = out;
  g.stats = stats;
  if (std::string e = build(*g.graph, handle, g.workspace); !e.empty()) return "forward " + e;
  return {};
}

std::string build_backward(BackwardGraph& g, const AttentionShape& s, cudnnHandle_t handle) {
  g.graph = new_graph();
  g.q = g.graph->tensor(qkv_view("q", s));
  g.k = g.graph->tensor(qkv_view("k", s));
  g.v = g.graph->tensor(qkv_view("v", s));
  g.out = g.graph->tensor(fe::graph::Tensor_attributes().set_name("out").set_dim(out_dim(s)).set_stride(out_stride(s)));
  g.dout =
      g.graph->tensor(fe::graph::Tensor_attributes().set_name("dout").set_dim(out_dim(s)).set_stride(out_stride(s)));
  g.stats = g.graph->tensor(fe::graph::Tensor_attributes()
                                .set_name("stats")
                                .set_dim(stats_dim(s))
                                .set_stride(stats_stride(s))
                                .set_data_type(fe::DataType_t::FLOAT));
  auto options = fe::graph::SDPA_backward_attributes()
                     .set_name("attention_backward")
                     .set_causal_mask(true)
                     .set_attn_scale(attention_scale(s))
                     .set_deterministic_algorithm(true);
  auto [dq, dk, dv] = g.graph->sdpa_backward(g.q, g.k, g.v, g.out, g.dout, g.stats, options);
  const std::int64_t hs = s.c / s.nh;
  for (const TensorPtr& d : {dq, dk, dv}) {
    d->set_output(true).set_dim({s.b, s.nh, s.t, hs}).set_stride({3 * s.t * s.c, hs, 3 * s.c, 1});
  }
  g.dq = dq;
  g.dk = dk;
  g.dv = dv;
  if (std::string e = build(*g.graph, handle, g.workspace); !e.empty()) return "backward " + e;
  return {};
}

void run(const fe::graph::Graph& graph, cudnnHandle_t handle, std::unordered_map<TensorPtr, void*>& pointers,
         void* workspace, const char* what, const AttentionShape& s) {
  if (std::string e = failure(graph.execute(handle, pointers, workspace)); !e.empty()) {
    throw std::runtime_error(std::string("cuDNN attention ") + what + " (" + shape_text(s) + "): " + e);
  }
}

}  // namespace

struct CudnnAttention::State {
  int device = 0;
  cudnnHandle_t handle = nullptr;
  std::map<AttentionShape, ShapeGraphs> shapes;
  int graphs_built = 0;

  ShapeGraphs& graphs(const AttentionShape& s) {
    if (auto it = shapes.find(s); it != shapes.end()) return it->second;
    ShapeGraphs& g = shapes[s];
    if (s.b <= 0 || s.t <= 0) {
      g.unsupported = "an empty batch";
      return g;
    }
    if (s.nh <= 0 || s.c % s.nh != 0) {
      g.unsupported = "c=" + std::to_string(s.c) + " is not a multiple of nh=" + std::to_string(s.nh);
      return g;
    }
    const std::int64_t hs = s.c / s.nh;
    if (hs % 8 != 0 || hs > 256) {
      g.unsupported = "head size " + std::to_string(hs) + " (cuDNN's fused attention takes multiples of 8 up to 256)";
      return g;
    }
    select_cuda_device(device);
    g.unsupported = build_forward(g.forward, s, handle);
    if (g.unsupported.empty()) {
      ++graphs_built;
      g.unsupported = build_backward(g.backward, s, handle);
      if (g.unsupported.empty()) ++graphs_built;
    }
    return g;
  }

  ShapeGraphs& supported(const AttentionShape& s, const char* what) {
    ShapeGraphs& g = graphs(s);
    if (!g.unsupported.empty()) {
      throw std::invalid_argument(std::string("cuDNN attention ") + what + ": " + shape_text(s) +
                                  " is not supported: " + g.unsupported);
    }
    return g;
  }
};

CudnnAttention::CudnnAttention(int device, cudaStream_t stream) : state_(std::make_unique<State>()) {
  state_->device = device;
  select_cuda_device(device);
  TESSERA_CUDNN_CHECK(cudnnCreate(&state_->handle));
  if (cudnnStatus_t status = cudnnSetStream(state_->handle, stream); status != CUDNN_STATUS_SUCCESS) {
    cudnnDestroy(state_->handle);
    check_cudnn(status, "cudnnSetStream", __FILE__, __LINE__);
  }
}

CudnnAttention::~CudnnAttention() {
  state_->shapes.clear();  // the plans go before the handle
  select_cuda_device_noexcept(state_->device);
  cudnnDestroy(state_->handle);
}

std::string CudnnAttention::name() const {
  const std::size_t v = cudnnGetVersion();  // major * 10000 + minor * 100 + patch (cuDNN 9)
  return "cuDNN " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

bool CudnnAttention::supports(const AttentionShape& shape, std::string* why) {
  const ShapeGraphs& g = state_->graphs(shape);
  if (why != nullptr) *why = g.unsupported;
  return g.unsupported.empty();
}

std::size_t CudnnAttention::forward_workspace(const AttentionShape& shape) {
  return state_->supported(shape, "forward").forward.workspace;
}

std::size_t CudnnAttention::backward_workspace(const AttentionShape& shape) {
  return state_->supported(shape, "backward").backward.workspace;
}

void CudnnAttention::forward(__nv_bfloat16* out, float* lse, const __nv_bfloat16* qkv, const AttentionShape& s,
                             void* workspace) {
  if (s.b == 0 || s.t == 0) return;
  ForwardGraph& g = state_->supported(s, "forward").forward;
  auto* base = const_cast<__nv_bfloat16*>(qkv);  // cuDNN's pointer table is not const; qkv is only read
  std::unordered_map<TensorPtr, void*> pointers = {
      {g.q, base}, {g.k, base + s.c}, {g.v, base + 2 * s.c}, {g.out, out}, {g.stats, lse}};
  select_cuda_device(state_->device);
  run(*g.graph, state_->handle, pointers, workspace, "forward", s);
}

void CudnnAttention::backward(__nv_bfloat16* dqkv, const __nv_bfloat16* dout, const __nv_bfloat16* qkv,
                              const __nv_bfloat16* out, const float* lse, const AttentionShape& s, void* workspace) {
  if (s.b == 0 || s.t == 0) return;
  BackwardGraph& g = state_->supported(s, "backward").backward;
  auto* base = const_cast<__nv_bfloat16*>(qkv);  // read only, as the rest of the inputs
  std::unordered_map<TensorPtr, void*> pointers = {{g.q, base},
                                                   {g.k, base + s.c},
                                                   {g.v, base + 2 * s.c},
                                                   {g.out, const_cast<__nv_bfloat16*>(out)},
                                                   {g.dout, const_cast<__nv_bfloat16*>(dout)},
                                                   {g.stats, const_cast<float*>(lse)},
                                                   {g.dq, dqkv},
                                                   {g.dk, dqkv + s.c},
                                                   {g.dv, dqkv + 2 * s.c}};
  select_cuda_device(state_->device);
  run(*g.graph, state_->handle, pointers, workspace, "backward", s);
}

int CudnnAttention::graphs_built() const { return state_->graphs_built; }

}  // namespace tessera
