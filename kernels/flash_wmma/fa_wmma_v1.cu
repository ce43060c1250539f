// FlashAttention forward with WMMA tensor-core tiles, version 1 (correctness first).
//
// For one (batch, head) and a block of BLOCK_M query rows, with scale = 1/sqrt(D):
//
//   O = softmax(scale * Q K^T + mask) V
//
// computed over key tiles j of BLOCK_N keys with the streaming (online) softmax
// of FlashAttention: per query row, a running maximum m and sum l,
//
//   S_j   = scale * Q K_j^T                    (WMMA, fp16 in, fp32 accumulate)
//   m'    = max(m, rowmax(S_j))
//   P_j   = exp(S_j - m')                      (fp32, rounded to fp16 for the MMA)
//   l'    = l * exp(m - m') + rowsum(P_j)
//   O'    = O * exp(m - m') + P_j V_j          (WMMA)
//
// and at the end O / l. The mask sets S = -inf where key > query (causal).
//
// WMMA fragments have no defined element -> (row, col) map, so the row-wise
// softmax cannot work on the S fragments in registers. Each warp therefore
// stores its S fragments to a shared-memory scratch in row-major order,
// runs the softmax on plain rows, writes P (fp16) to a second scratch, and
// loads P back as a matrix_a fragment (store -> softmax -> rebuild). The
// running O lives in shared memory as fp32 for the same reason: the per-row
// rescale needs rows.
//
// Shapes: Q, K, V, O are [B, H, N, D] fp16, contiguous; D in {64, 128};
// N a multiple of 64. Grid: (N / BLOCK_M, B * H); 4 warps, each owning 16
// query rows. K and V tiles are loaded synchronously (16-byte vectors) into
// rows padded by 8 halves (16 bytes), so that ldmatrix rows fall in
// distinct banks.
//
// Shared memory per CTA: Q, K, V tiles (BLOCK x (D+8) fp16 each), O
// (BLOCK_M x (D+4) fp32), per-warp S (16 x 68 fp32) and P (16 x 72 fp16):
// 70 KiB at D=64, 110 KiB at D=128.
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

constexpr int BLOCK_M = 64;  // query rows per CTA
constexpr int BLOCK_N = 64;  // keys per tile
constexpr int WARPS = 4;     // each warp owns 16 query rows
constexpr int THREADS = WARPS * 32;
constexpr int LDS = BLOCK_N + 4;  // fp32 row stride of the S scratch
constexpr int LDP = BLOCK_N + 8;  // fp16 row stride of the P scratch

template <int D>
struct Layout {
  static constexpr int LDH = D + 8;  // fp16 row stride of Q, K, V tiles
  static constexpr int LDO = D + 4;  // fp32 row stride of O
  static constexpr size_t q = 0;
  static constexpr size_t k = q + sizeof(half) * BLOCK_M * LDH;
  static constexpr size_t v = k + sizeof(half) * BLOCK_N * LDH;
  static constexpr size_t o = v + sizeof(half) * BLOCK_N * LDH;
  static constexpr size_t s = o + sizeof(float) * BLOCK_M * LDO;
  static constexpr size_t p = s + sizeof(float) * WARPS * 16 * LDS;
  static constexpr size_t bytes = p + sizeof(half) * WARPS * 16 * LDP;
};

// Copies a [rows x D] fp16 tile from global (row stride D) to shared (row
// stride ldh) with 16-byte vectors spread over the CTA.
template <int D>
__device__ __forceinline__ void load_tile(half* dst, int ldh, const half* src, int rows) {
  constexpr int VEC = D / 8;  // 16-byte vectors per row
  for (int i = threadIdx.x; i < rows * VEC; i += THREADS) {
    const int r = i / VEC, c = (i % VEC) * 8;
    *reinterpret_cast<uint4*>(dst + r * ldh + c) =
        *reinterpret_cast<const uint4*>(src + static_cast<size_t>(r) * D + c);
  }
}

template <int D>
__global__ void __launch_bounds__(THREADS)
fa_wmma_v1_kernel(const half* __restrict__ Q, const half* __restrict__ K,
                  const half* __restrict__ V, half* __restrict__ O, int N,
                  float scale_log2, bool causal) {
  using L = Layout<D>;
  constexpr int LDH = L::LDH, LDO = L::LDO;
  extern __shared__ __align__(128) unsigned char smem[];
  half* sQ = reinterpret_cast<half*>(smem + L::q);  // [BLOCK_M][LDH]
  half* sK = reinterpret_cast<half*>(smem + L::k);  // [BLOCK_N][LDH]
  half* sV = reinterpret_cast<half*>(smem + L::v);  // [BLOCK_N][LDH]
  float* sO = reinterpret_cast<float*>(smem + L::o);  // [BLOCK_M][LDO]

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* S = reinterpret_cast<float*>(smem + L::s) + warp * 16 * LDS;  // [16][LDS]
  half* P = reinterpret_cast<half*>(smem + L::p) + warp * 16 * LDP;    // [16][LDP]
  const half* Qw = sQ + warp * 16 * LDH;
  float* Ow = sO + warp * 16 * LDO;

  const size_t head = static_cast<size_t>(blockIdx.y) * N * D;
  const int q0 = blockIdx.x * BLOCK_M;
  load_tile<D>(sQ, LDH, Q + head + static_cast<size_t>(q0) * D, BLOCK_M);
  for (int i = threadIdx.x; i < BLOCK_M * LDO; i += THREADS) sO[i] = 0.f;

  // Softmax ownership: lane -> (row r of the warp's 16, half of the 64 columns).
  const int r = lane >> 1, half_idx = lane & 1;
  const int row_g = q0 + warp * 16 + r;
  float m_i = -INFINITY, l_i = 0.f;

  const int tiles = causal ? (q0 + BLOCK_M) / BLOCK_N : N / BLOCK_N;
  for (int t = 0; t < tiles; ++t) {
    const int k0 = t * BLOCK_N;
    __syncthreads();  // every warp is done with the previous K, V tile
    load_tile<D>(sK, LDH, K + head + static_cast<size_t>(k0) * D, BLOCK_N);
    load_tile<D>(sV, LDH, V + head + static_cast<size_t>(k0) * D, BLOCK_N);
    __syncthreads();

    // S = Q_w K^T: [16 x 64] as four 16x16 accumulators.
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> s_frag[BLOCK_N / 16];
#pragma unroll
    for (int j = 0; j < BLOCK_N / 16; ++j) wmma::fill_fragment(s_frag[j], 0.f);
#pragma unroll
    for (int kk = 0; kk < D; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
      wmma::load_matrix_sync(a, Qw + kk, LDH);
#pragma unroll
      for (int j = 0; j < BLOCK_N / 16; ++j) {
        // K^T(k, n) = K[n][k]: column-major with leading dimension LDH.
        wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
        wmma::load_matrix_sync(b, sK + j * 16 * LDH + kk, LDH);
        wmma::mma_sync(s_frag[j], a, b, s_frag[j]);
      }
    }
#pragma unroll
    for (int j = 0; j < BLOCK_N / 16; ++j)
      wmma::store_matrix_sync(S + j * 16, s_frag[j], LDS, wmma::mem_row_major);
    __syncwarp();

    // Online softmax on row r, columns [32*half_idx, 32*half_idx + 32).
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
    const float m_use = m_new == -INFINITY ? 0.f : m_new;  // a row with no key yet
    const float alpha = exp2f(m_i - m_use);
    half* prow = P + r * LDP + half_idx * 32;
    float sum = 0.f;
#pragma unroll
    for (int c = 0; c < 32; ++c) {
      const float p = exp2f(x[c] - m_use);
      sum += p;
      prow[c] = __float2half(p);
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    l_i = l_i * alpha + sum;
    m_i = m_new;
    float* orow = Ow + r * LDO + half_idx * (D / 2);
#pragma unroll
    for (int c = 0; c < D / 2; ++c) orow[c] *= alpha;
    __syncwarp();

    // O_w += P V: P [16 x 64] from the scratch, V tile [64 x D].
#pragma unroll
    for (int dd = 0; dd < D; dd += 16) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> o;
      wmma::load_matrix_sync(o, Ow + dd, LDO, wmma::mem_row_major);
#pragma unroll
      for (int kk = 0; kk < BLOCK_N; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
        wmma::load_matrix_sync(a, P + kk, LDP);
        wmma::load_matrix_sync(b, sV + kk * LDH + dd, LDH);
        wmma::mma_sync(o, a, b, o);
      }
      wmma::store_matrix_sync(Ow + dd, o, LDO, wmma::mem_row_major);
    }
    __syncwarp();
  }

  // O / l, rounded to fp16, two halves per store.
  const float inv = 1.f / l_i;
  const float* orow = Ow + r * LDO + half_idx * (D / 2);
  half2* out = reinterpret_cast<half2*>(O + head + static_cast<size_t>(row_g) * D + half_idx * (D / 2));
#pragma unroll
  for (int c = 0; c < D / 2; c += 2) out[c / 2] = __floats2half2_rn(orow[c] * inv, orow[c + 1] * inv);
}

template <int D>
void launch(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
            torch::Tensor& o, bool causal) {
  const int B = q.size(0), H = q.size(1), N = q.size(2);
  const size_t smem = Layout<D>::bytes;
  static bool configured = false;  // one attribute call per instantiation
  if (!configured) {
    C10_CUDA_CHECK(cudaFuncSetAttribute(fa_wmma_v1_kernel<D>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    configured = true;
  }
  const float scale_log2 = 1.4426950408889634f / std::sqrt(static_cast<float>(D));
  dim3 grid(N / BLOCK_M, B * H);
  fa_wmma_v1_kernel<D><<<grid, THREADS, smem, at::cuda::getCurrentCUDAStream()>>>(
      reinterpret_cast<const half*>(q.data_ptr<at::Half>()),
      reinterpret_cast<const half*>(k.data_ptr<at::Half>()),
      reinterpret_cast<const half*>(v.data_ptr<at::Half>()),
      reinterpret_cast<half*>(o.data_ptr<at::Half>()), N, scale_log2, causal);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

// forward(q, k, v, causal) -> o; q, k, v [B, H, N, D] fp16 CUDA contiguous.
torch::Tensor forward(torch::Tensor q, torch::Tensor k, torch::Tensor v, bool causal) {
  TORCH_CHECK(q.is_cuda() && k.is_cuda() && v.is_cuda(), "fa_wmma_v1: q, k, v must be CUDA tensors");
  TORCH_CHECK(q.scalar_type() == at::kHalf && k.scalar_type() == at::kHalf && v.scalar_type() == at::kHalf,
              "fa_wmma_v1: q, k, v must be float16");
  TORCH_CHECK(q.dim() == 4 && q.sizes() == k.sizes() && q.sizes() == v.sizes(),
              "fa_wmma_v1: q, k, v must share one [B, H, N, D] shape");
  TORCH_CHECK(q.size(2) % BLOCK_M == 0, "fa_wmma_v1: N must be a multiple of ", BLOCK_M);
  q = q.contiguous();
  k = k.contiguous();
  v = v.contiguous();
  auto o = torch::empty_like(q);
  switch (q.size(3)) {
    case 64: launch<64>(q, k, v, o, causal); break;
    case 128: launch<128>(q, k, v, o, causal); break;
    default: TORCH_CHECK(false, "fa_wmma_v1: head dim must be 64 or 128, got ", q.size(3));
  }
  return o;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &forward, "FlashAttention forward with WMMA, v1 (store -> softmax -> rebuild)",
        py::arg("q"), py::arg("k"), py::arg("v"), py::arg("causal"));
}
