// Compute dtypes: the dtypes the layers run in (f32 and bf16), which one a device takes by default,
// and with_element_type, which runs a templated body once with the C++ element type of a compute
// dtype — float for f32, Bf16 for bf16, the two types the Kernels' compute ops take (kernel_ops.hpp) —
// so a module writes each kernel call once for both:
//
//   with_element_type(x.dtype(), "Linear", [&]<typename T>() {
//     kernels.linear_forward(y.data_as<T>(), x.data_as<T>(), w.data_as<T>(), nullptr, n, c, oc);
//   });
//
// with_norm_types does the same for the norms, whose parameters may be f32 under bf16 activations.
#pragma once

#include <stdexcept>
#include <string>

#include "tessera/precision/bf16.hpp"
#include "tessera/precision/dtype.hpp"

namespace tessera {

class Device;

// The dtypes modules compute in.
inline bool is_compute_dtype(DType dtype) { return dtype == DType::kF32 || dtype == DType::kBF16; }

// The compute dtype a run on `device` takes unless told otherwise: bf16 on a GPU (its tensor cores,
// half the bytes every pass moves), f32 on the CPU (whose GEMMs widen bf16 to f32: bf16 saves memory
// there, not time) and on the simulated GPU (a CPU device in disguise, kept bit-comparable with it).
DType default_compute_dtype(const Device& device);

// Calls body.template operator()<T>() with T = float (f32) or Bf16 (bf16); any other dtype throws
// std::invalid_argument naming `who`.
template <typename Body>
void with_element_type(DType dtype, const char* who, Body&& body) {
  switch (dtype) {
    case DType::kF32: body.template operator()<float>(); return;
    case DType::kBF16: body.template operator()<Bf16>(); return;
    default: break;
  }
  throw std::invalid_argument(std::string(who) + ": tensors of " + dtype_name(dtype) +
                              "; the compute ops take f32 or bf16 tensors");
}

// The norms' (activation, parameter) element types: calls body.template operator()<T, W>() with
// (float, float) for (f32, f32), (Bf16, Bf16) for (bf16, bf16) and (Bf16, float) for bf16
// activations with f32 parameters (kernel_ops_norm.hpp); any other pair throws std::invalid_argument
// naming `who`.
template <typename Body>
void with_norm_types(DType activations, DType parameters, const char* who, Body&& body) {
  if (activations == DType::kF32 && parameters == DType::kF32) return body.template operator()<float, float>();
  if (activations == DType::kBF16 && parameters == DType::kBF16) return body.template operator()<Bf16, Bf16>();
  if (activations == DType::kBF16 && parameters == DType::kF32) return body.template operator()<Bf16, float>();
  throw std::invalid_argument(std::string(who) + ": " + dtype_name(activations) + " activations with " +
                              dtype_name(parameters) +
                              " parameters; the norms take f32 with f32, bf16 with bf16, or bf16 with f32");
}

}  // namespace tessera
