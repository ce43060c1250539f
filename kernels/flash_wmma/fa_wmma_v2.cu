// FlashAttention forward with WMMA tensor-core tiles, version 2 (overlap).
//
// The same math as version 1 (fa_wmma_v1.cu), with scale = 1/sqrt(D):
//
//   S_j = scale * Q K_j^T,  m' = max(m, rowmax S_j),  P_j = exp(S_j - m'),
//   l'  = l * exp(m - m') + rowsum P_j,  O' = O * exp(m - m') + P_j V_j,
//   O   = O / l at the end (mask: S = -inf where key > query when causal),
//
// and the same store -> softmax -> rebuild of S and P through a per-warp
// shared-memory scratch. Three changes:
//
// 1. K and V tiles arrive by cp.async (16-byte cp.async.cg, straight from L2
//    to shared memory) into STAGES buffers: while the warps compute tile j,
//    tile j+1 is in flight (STAGES = 2). STAGES = 1 keeps cp.async with no
//    overlap, to separate the two effects.
// 2. The running O stays in WMMA accumulator fragments in registers instead
//    of a shared-memory fp32 array. WMMA does not define which (row, col) an
//    accumulator element holds, so each warp learns it once: it loads a
//    16x16 matrix whose element (i, j) is i into an accumulator fragment;
//    element e of that fragment then holds its own row number. The per-row
//    rescale exp(m - m') and the final 1/l are read from a 16-entry table by
//    that row number. This is a property of the fragment type on the running
//    device, read at run time, not an assumption about the layout.
// 3. P is written over the S scratch it was computed from (every lane has
//    read its S row into registers before the first P store), so the two
//    scratches share one buffer.
//
// Shared-memory layout of K (and Q, V): row-major [rows][D + PAD] fp16. WMMA
// loads (ldmatrix) need a plain strided layout with a leading dimension that
// is a multiple of 8 halves, so an XOR-swizzled K layout cannot be read by
// wmma::load_matrix_sync; PAD = 8 (16 bytes per row) gives the rows of one
// 8x8 ldmatrix distinct banks, PAD = 0 is the unpadded layout, kept to
// measure what the padding buys.
//
// Shapes: Q, K, V, O are [B, H, N, D] fp16, contiguous; D in {64, 128};
// N a multiple of 64. Grid: (N / 64, B * H); 4 warps, 16 query rows each.
// Shared memory (STAGES = 2, PAD = 8): Q tile + 2 x (K, V) tiles + S/P
// scratch = 62 KiB at D=64, 102 KiB at D=128 (two CTAs per SM at D=128).
//
// Reference: flash_wmma/reference.py (float32 math).

#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <cmath>

using namespace nvcuda;

namespace {

constexpr int BLOCK_M = 64;
constexpr int BLOCK_N = 64;
constexpr int WARPS = 4;
constexpr int THREADS = WARPS * 32;
constexpr int LDS = BLOCK_N + 4;  // fp32 row stride of the S scratch (P aliases it)

template <int D, int STAGES, int PAD>
struct Layout {
  static constexpr int LDH = D + PAD;
  static constexpr size_t tile = sizeof(half) * BLOCK_N * LDH;
  static constexpr size_t q = 0;
  static constexpr size_t k = q + sizeof(half) * BLOCK_M * LDH;
  static constexpr size_t v = k + STAGES * tile;
  static constexpr size_t s = v + STAGES * tile;
  static constexpr size_t bytes = s + sizeof(float) * WARPS * 16 * LDS;
};

__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING));
}

// Issues the copy of a [rows x D] fp16 tile (global row stride D) into
// shared memory (row stride ldh), 16 bytes per cp.async.
template <int D>
__device__ __forceinline__ void issue_tile(half* dst, int ldh, const half* src, int rows) {
  constexpr int VEC = D / 8;
  for (int i = threadIdx.x; i < rows * VEC; i += THREADS) {
    const int r = i / VEC, c = (i % VEC) * 8;
    cp_async16(dst + r * ldh + c, src + static_cast<size_t>(r) * D + c);
  }
}

using Acc = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

template <int D, int STAGES, int PAD>
__global__ void __launch_bounds__(THREADS)
fa_wmma_v2_kernel(const half* __restrict__ Q, const half* __restrict__ K,
                  const half* __restrict__ V, half* __restrict__ O, int N,
                  float scale_log2, bool causal) {
  using L = Layout<D, STAGES, PAD>;
  constexpr int LDH = L::LDH;
  constexpr int DT = D / 16;  // 16-wide output tiles per warp
  extern __shared__ __align__(128) unsigned char smem[];
  half* sQ = reinterpret_cast<half*>(smem + L::q);
  half* sK = reinterpret_cast<half*>(smem + L::k);  // [STAGES][BLOCK_N][LDH]
  half* sV = reinterpret_cast<half*>(smem + L::v);  // [STAGES][BLOCK_N][LDH]
  __shared__ float s_row_scale[WARPS][16];  // exp(m - m') then 1/l, per row

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* S = reinterpret_cast<float*>(smem + L::s) + warp * 16 * LDS;  // [16][LDS] fp32
  half* P = reinterpret_cast<half*>(S);  // [16][2*LDS] fp16, over S
  constexpr int LDP = 2 * LDS;
  const half* Qw = sQ + warp * 16 * LDH;

  const size_t head = static_cast<size_t>(blockIdx.y) * N * D;
  const int q0 = blockIdx.x * BLOCK_M;
  const int tiles = causal ? (q0 + BLOCK_M) / BLOCK_N : N / BLOCK_N;
  constexpr size_t TILE = BLOCK_N * LDH;

  // Prologue: Q and the first STAGES-1 K, V tiles (one group each).
  issue_tile<D>(sQ, LDH, Q + head + static_cast<size_t>(q0) * D, BLOCK_M);
  if (STAGES == 1) cp_async_commit();
#pragma unroll
  for (int st = 0; st < STAGES - 1; ++st) {
    if (st < tiles) {
      issue_tile<D>(sK + st * TILE, LDH, K + head + static_cast<size_t>(st) * BLOCK_N * D, BLOCK_N);
      issue_tile<D>(sV + st * TILE, LDH, V + head + static_cast<size_t>(st) * BLOCK_N * D, BLOCK_N);
    }
    cp_async_commit();
  }

  // Learn each accumulator element's row: load rows[i][j] = i.
  for (int i = lane; i < 16 * 16; i += 32) S[(i / 16) * LDS + i % 16] = static_cast<float>(i / 16);
  __syncwarp();
  Acc rowmap;
  wmma::load_matrix_sync(rowmap, S, LDS, wmma::mem_row_major);
  int row_of[Acc::num_elements];
#pragma unroll
  for (int e = 0; e < Acc::num_elements; ++e) row_of[e] = static_cast<int>(rowmap.x[e]);
  __syncwarp();

  Acc o_frag[DT];
#pragma unroll
  for (int f = 0; f < DT; ++f) wmma::fill_fragment(o_frag[f], 0.f);

  const int r = lane >> 1, half_idx = lane & 1;
  const int row_g = q0 + warp * 16 + r;
  float m_i = -INFINITY, l_i = 0.f;

  for (int t = 0; t < tiles; ++t) {
    // Issue tile t + STAGES - 1 into the buffer freed at the end of t - 1.
    const int nt = t + STAGES - 1;
    if (STAGES > 1) {
      if (nt < tiles) {
        const int st = nt % STAGES;
        issue_tile<D>(sK + st * TILE, LDH, K + head + static_cast<size_t>(nt) * BLOCK_N * D, BLOCK_N);
        issue_tile<D>(sV + st * TILE, LDH, V + head + static_cast<size_t>(nt) * BLOCK_N * D, BLOCK_N);
      }
      cp_async_commit();  // an empty group keeps the count uniform
      cp_async_wait<STAGES - 1>();
    } else {
      issue_tile<D>(sK, LDH, K + head + static_cast<size_t>(t) * BLOCK_N * D, BLOCK_N);
      issue_tile<D>(sV, LDH, V + head + static_cast<size_t>(t) * BLOCK_N * D, BLOCK_N);
      cp_async_commit();
      cp_async_wait<0>();
    }
    __syncthreads();  // tile t is in shared memory for every warp
    const half* k_t = sK + (t % STAGES) * TILE;
    const half* v_t = sV + (t % STAGES) * TILE;
    const int k0 = t * BLOCK_N;

    Acc s_frag[BLOCK_N / 16];
#pragma unroll
    for (int j = 0; j < BLOCK_N / 16; ++j) wmma::fill_fragment(s_frag[j], 0.f);
#pragma unroll
    for (int kk = 0; kk < D; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
      wmma::load_matrix_sync(a, Qw + kk, LDH);
#pragma unroll
      for (int j = 0; j < BLOCK_N / 16; ++j) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
        wmma::load_matrix_sync(b, k_t + j * 16 * LDH + kk, LDH);
        wmma::mma_sync(s_frag[j], a, b, s_frag[j]);
      }
    }
#pragma unroll
    for (int j = 0; j < BLOCK_N / 16; ++j)
      wmma::store_matrix_sync(S + j * 16, s_frag[j], LDS, wmma::mem_row_major);
    __syncwarp();

    const float* srow = S + r * LDS + half_idx * 32;
    float x[32];
    float mx = -INFINITY;
#pragma unroll
    for (int c = 0; c < 32; ++c) {
      float sv = srow[c] * scale_log2;
      if (causal && k0 + half_idx * 32 + c > row_g) sv = -INFINITY;
      x[c] = sv;
      mx = fmaxf(mx, sv);
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    const float m_new = fmaxf(m_i, mx);
    const float m_use = m_new == -INFINITY ? 0.f : m_new;
    const float alpha = exp2f(m_i - m_use);
    __syncwarp();  // every lane holds its S row: P may overwrite the scratch
    half* prow = P + r * LDP + half_idx * 32;
    float sum = 0.f;
#pragma unroll
    for (int c = 0; c < 32; c += 2) {
      const float p0 = exp2f(x[c] - m_use), p1 = exp2f(x[c + 1] - m_use);
      sum += p0 + p1;
      *reinterpret_cast<half2*>(prow + c) = __floats2half2_rn(p0, p1);
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    l_i = l_i * alpha + sum;
    m_i = m_new;
    if (half_idx == 0) s_row_scale[warp][r] = alpha;
    __syncwarp();

    // O = O * alpha(row) + P V, with O in registers.
    float a_e[Acc::num_elements];
#pragma unroll
    for (int e = 0; e < Acc::num_elements; ++e) a_e[e] = s_row_scale[warp][row_of[e]];
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> p_frag[BLOCK_N / 16];
#pragma unroll
    for (int kk = 0; kk < BLOCK_N / 16; ++kk) wmma::load_matrix_sync(p_frag[kk], P + kk * 16, LDP);
#pragma unroll
    for (int f = 0; f < DT; ++f) {
#pragma unroll
      for (int e = 0; e < Acc::num_elements; ++e) o_frag[f].x[e] *= a_e[e];
#pragma unroll
      for (int kk = 0; kk < BLOCK_N / 16; ++kk) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
        wmma::load_matrix_sync(b, v_t + kk * 16 * LDH + f * 16, LDH);
        wmma::mma_sync(o_frag[f], p_frag[kk], b, o_frag[f]);
      }
    }
    __syncthreads();  // every warp is done with buffer t % STAGES (and its scratch)
  }
  cp_async_wait<0>();

  // O / l: scale the fragments by row, stage them through the scratch four
  // 16x16 tiles (64 columns) at a time, write fp16 rows with 4-byte stores.
  if (half_idx == 0) s_row_scale[warp][r] = 1.f / l_i;
  __syncwarp();
  float inv_e[Acc::num_elements];
#pragma unroll
  for (int e = 0; e < Acc::num_elements; ++e) inv_e[e] = s_row_scale[warp][row_of[e]];
  half* out_row = O + head + static_cast<size_t>(row_g) * D;
#pragma unroll
  for (int f0 = 0; f0 < DT; f0 += 4) {
#pragma unroll
    for (int f = f0; f < f0 + 4 && f < DT; ++f) {
#pragma unroll
      for (int e = 0; e < Acc::num_elements; ++e) o_frag[f].x[e] *= inv_e[e];
      wmma::store_matrix_sync(S + (f - f0) * 16, o_frag[f], LDS, wmma::mem_row_major);
    }
    __syncwarp();
    const float* srow = S + r * LDS + half_idx * 32;
    half2* dst = reinterpret_cast<half2*>(out_row + f0 * 16 + half_idx * 32);
#pragma unroll
    for (int c = 0; c < 32; c += 2) dst[c / 2] = __floats2half2_rn(srow[c], srow[c + 1]);
    __syncwarp();
  }
}

template <int D, int STAGES, int PAD>
void launch(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
            torch::Tensor& o, bool causal) {
  const int B = q.size(0), H = q.size(1), N = q.size(2);
  const size_t smem = Layout<D, STAGES, PAD>::bytes;
  static bool configured = false;  // one attribute call per instantiation
  if (!configured) {
    C10_CUDA_CHECK(cudaFuncSetAttribute(fa_wmma_v2_kernel<D, STAGES, PAD>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    configured = true;
  }
  const float scale_log2 = 1.4426950408889634f / std::sqrt(static_cast<float>(D));
  dim3 grid(N / BLOCK_M, B * H);
  fa_wmma_v2_kernel<D, STAGES, PAD><<<grid, THREADS, smem, at::cuda::getCurrentCUDAStream()>>>(
      reinterpret_cast<const half*>(q.data_ptr<at::Half>()),
      reinterpret_cast<const half*>(k.data_ptr<at::Half>()),
      reinterpret_cast<const half*>(v.data_ptr<at::Half>()),
      reinterpret_cast<half*>(o.data_ptr<at::Half>()), N, scale_log2, causal);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <int STAGES, int PAD>
void dispatch(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
              torch::Tensor& o, bool causal) {
  switch (q.size(3)) {
    case 64: launch<64, STAGES, PAD>(q, k, v, o, causal); break;
    case 128: launch<128, STAGES, PAD>(q, k, v, o, causal); break;
    default: TORCH_CHECK(false, "fa_wmma_v2: head dim must be 64 or 128, got ", q.size(3));
  }
}

}  // namespace

// forward(q, k, v, causal, stages=2, pad=8) -> o; q, k, v [B, H, N, D] fp16
// CUDA contiguous. (stages, pad) in {(2, 8), (2, 0), (1, 8)}.
torch::Tensor forward(torch::Tensor q, torch::Tensor k, torch::Tensor v, bool causal,
                      int64_t stages, int64_t pad) {
  TORCH_CHECK(q.is_cuda() && k.is_cuda() && v.is_cuda(), "fa_wmma_v2: q, k, v must be CUDA tensors");
  TORCH_CHECK(q.scalar_type() == at::kHalf && k.scalar_type() == at::kHalf && v.scalar_type() == at::kHalf,
              "fa_wmma_v2: q, k, v must be float16");
  TORCH_CHECK(q.dim() == 4 && q.sizes() == k.sizes() && q.sizes() == v.sizes(),
              "fa_wmma_v2: q, k, v must share one [B, H, N, D] shape");
  TORCH_CHECK(q.size(2) % BLOCK_M == 0, "fa_wmma_v2: N must be a multiple of ", BLOCK_M);
  q = q.contiguous();
  k = k.contiguous();
  v = v.contiguous();
  auto o = torch::empty_like(q);
  if (stages == 2 && pad == 8) {
    dispatch<2, 8>(q, k, v, o, causal);
  } else if (stages == 2 && pad == 0) {
    dispatch<2, 0>(q, k, v, o, causal);
  } else if (stages == 1 && pad == 8) {
    dispatch<1, 8>(q, k, v, o, causal);
  } else {
    TORCH_CHECK(false, "fa_wmma_v2: (stages, pad) must be (2, 8), (2, 0) or (1, 8); got (",
                stages, ", ", pad, ")");
  }
  return o;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &forward,
        "FlashAttention forward with WMMA, v2 (cp.async K/V pipeline, O in registers)",
        py::arg("q"), py::arg("k"), py::arg("v"), py::arg("causal"), py::arg("stages") = 2,
        py::arg("pad") = 8);
}
