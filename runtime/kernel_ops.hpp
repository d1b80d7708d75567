// The Kernels ops: the one list that the Kernels interface and every backend's declarations (cpu,
// cuda, meta, timed, simulated) are generated from, so a backend cannot miss or misspell an op. Each
// entry is
//
//   TESSERA_KERNEL_OP(name, group, (typed parameters), (parameter names))
//
// with `group` the op's KernelGroup (timed_kernels.hpp: what bench_train's breakdown counts it as).
// The compute ops (kernel_ops_typed.hpp: GEMMs, the layers, attention, the loss) are listed once
// with TESSERA_ACT for the element type of their activations, parameters and gradients, and come
// out of this file twice, as overloads: once for float (f32) and once for Bf16 (bf16; statistics
// kept for backward stay f32). The norms (kernel_ops_norm.hpp) come out three times: the two above,
// and bf16 activations with f32 weights and biases. A caller picks one by the pointers it passes; a
// backend implements each. The ops below them (reductions over gradients, optimizers, conversion) are f32 only.
// Include this file with TESSERA_KERNEL_OP defined; it undefines it at the end, so it has no include
// guard and is included once per use:
//
//   #define TESSERA_KERNEL_OP(name, group, params, args) void name params const override;
//   #include "tessera/runtime/kernel_ops.hpp"
//
// The conventions every op follows (pointers of the table's device, the element types of the
// signature, kernels never allocate, backward writes input gradients and accumulates parameter
// gradients, results independent of the thread count) are in kernels.hpp.
#ifndef TESSERA_KERNEL_OP
#error "define TESSERA_KERNEL_OP(name, group, params, args) before including tessera/runtime/kernel_ops.hpp"
#endif


// ---- the compute ops, for f32 and for bf16 -----------------------------------------------------
#define TESSERA_ACT float
#include "tessera/runtime/kernel_ops_typed.hpp"
#define TESSERA_PARAM float
#include "tessera/runtime/kernel_ops_norm.hpp"
#undef TESSERA_PARAM
#undef TESSERA_ACT
#define TESSERA_ACT ::tessera::Bf16
#include "tessera/runtime/kernel_ops_typed.hpp"
#define TESSERA_PARAM ::tessera::Bf16
#include "tessera/runtime/kernel_ops_norm.hpp"
#undef TESSERA_PARAM
// ---- the norms with bf16 activations and f32 parameters ----------------------------------------
#define TESSERA_PARAM float
#include "tessera/runtime/kernel_ops_norm.hpp"
#undef TESSERA_PARAM
#undef TESSERA_ACT

// ---- f32 ops -----------------------------------------------------------------------------------
// The vocabulary-sharded cross-entropy's combine (cross_entropy_shard_forward, kernel_ops_typed.hpp):
// lse_parts (parts,n) f32 the shards' lse in shard order, target_logit (n) f32 the target's logit
// (summed over the shards), targets (n) i32. lse (n) = m + log(sum_p exp(lse_parts[p][i] - m)), m
// the max over p, summed in p order in f32 (a row whose parts are all -inf gives -inf); losses (n) =
// lse - target_logit. A kIgnoredTarget row gets lse 0 and loss 0. With parts = 1, lse is lse_parts
// bit for bit.
TESSERA_KERNEL_OP(cross_entropy_shard_combine, kLoss,
                  (float* losses, float* lse, const float* lse_parts, const float* target_logit,
                   const std::int32_t* targets, std::int64_t n, std::int64_t parts),
                  (losses, lse, lse_parts, target_logit, targets, n, parts))

// x (n) *= s
TESSERA_KERNEL_OP(scale, kOptimizer, (float* x, float s, std::int64_t n), (x, s, n))

// Reductions write their result into device memory (no host round trip per call; the caller
// gathers several results and copies them to the host once).
// Sum of x (n) in double, written to out (one double in device memory). The CPU adds in index
// order (the loss of a batch: n is its rows).
TESSERA_KERNEL_OP(sum, kLoss, (const float* x, std::int64_t n, double* out), (x, n, out))
// out (1) f64 = sum of squares of x (n) in double, with a reduction order independent of thread
// count and of x's alignment. n == 0 writes 0.
TESSERA_KERNEL_OP(sum_squares, kOptimizer, (const float* x, std::int64_t n, double* out), (x, n, out))
// out (n) = a + b as add(), and sum_squares_out (1) f64 = the sum of squares of the new out, the
// bits sum_squares(out, n) would write (a gradient accumulation that also yields the gradient
// norm). out may alias a or b. A backend may do both in one pass over memory (the CPU does).
TESSERA_KERNEL_OP(add_sum_squares, kOptimizer,
                  (float* out, const float* a, const float* b, std::int64_t n, double* sum_squares_out),
                  (out, a, b, n, sum_squares_out))
// out (n) f32 = a (n) f32 + b (n) bf16 widened (out may alias a), and when sum_squares_out is not
// null, sum_squares_out (1) f64 = the sum of squares of the new out, as add_sum_squares: a bf16
// micro-batch gradient accumulated into an f32 accumulator, with the norm's pass when it is the last.
TESSERA_KERNEL_OP(add_bf16, kOptimizer,
                  (float* out, const float* a, const ::tessera::Bf16* b, std::int64_t n, double* sum_squares_out),
                  (out, a, b, n, sum_squares_out))
// out (1) i32 = 1 when any element of x (n) is inf or nan, else 0.
TESSERA_KERNEL_OP(has_non_finite, kOptimizer, (const float* x, std::int64_t n, std::int32_t* out), (x, n, out))

// AdamW on n elements: param, m, v updated in place from grad * s.grad_scale (decoupled weight
// decay). Each element's result does not depend on where the range starts.
TESSERA_KERNEL_OP(adamw_update, kOptimizer,
                  (float* param, const float* grad, float* m, float* v, std::int64_t n, const AdamWScalars& s),
                  (param, grad, m, v, n, s))

// 8-bit AdamW on n elements (a multiple of `block`) in blocks of `block` (<= kMaxQuantBlock):
// param (n) f32 and grad (n) f32; m_codes (n) i8 and v_codes (n) u8 the dynamic-map codes, with
// m_absmax and v_absmax (n / block) f32 one scale per block — all updated in place: per block,
// dequantize (quantization_math.hpp), the AdamW element update (adamw_math.hpp), requantize
// against the block's new absmax (values x 1/absmax). `segments` (host memory, sorted, relative to param) are the
// parameters in the range: their elements are updated with `decay` or `no_decay`; elements outside every segment
// (padding) are not.
TESSERA_KERNEL_OP(adamw8bit_update, kOptimizer,
                  (float* param, const float* grad, std::int8_t* m_codes, float* m_absmax, std::uint8_t* v_codes,
                   float* v_absmax, std::int64_t n, std::int64_t block, std::span<const ParamSegment> segments,
                   const AdamWScalars& no_decay, const AdamWScalars& decay),
                  (param, grad, m_codes, m_absmax, v_codes, v_absmax, n, block, segments, no_decay, decay))

// Element conversion between floating dtypes (f32, bf16, f16), round to nearest even.
TESSERA_KERNEL_OP(convert, kConversion, (const void* src, DType from, void* dst, DType to, std::int64_t n),
                  (src, from, dst, to, n))

#undef TESSERA_KERNEL_OP
