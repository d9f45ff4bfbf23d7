// Launchers of every CUDA kernel of the runtime. Each enqueues on `stream` and checks the launch; none
// allocates or synchronizes. Row-major layouts throughout; bf16 activations, f32 where noted.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ferrum {

using bf16 = __nv_bfloat16;

/**
 * Whether kernels are launched with programmatic dependent launch (launch.cuh): on for compute capability 9.0
 * and later unless FERRUM_CUDA_PDL=0. Process-wide; set before the first forward.
 */
void setProgrammaticLaunch(bool enabled);

/** Source element types of checkpoint tensors (matches the TS side's numbering). */
enum class SourceDtype : int { kBf16 = 0, kF16 = 1, kF32 = 2 };

/** dst[i] = bf16(src[i]) for f16 or f32 `src`. */
void launchConvertToBf16(const void* src, SourceDtype dtype, bf16* dst, size_t count, cudaStream_t stream);
/** Seeded uniform values in [-scale, scale): a pure function of (seed, index), so dummy models are reproducible. */
void launchFillUniform(bf16* dst, size_t count, uint64_t seed, float scale, cudaStream_t stream);
void launchFillConstant(bf16* dst, size_t count, float value, cudaStream_t stream);

/**
 * out[t] = table[ids[t]]; rows of `hidden` elements. ids[t] = -1 - i takes previous[i] (the last step's sampled
 * tokens on the device, SamplingArgs.outTokens) as the id. `resolved` (or null): each row's id, as read.
 */
void launchEmbedding(const bf16* table, const int* ids, const int* previous, bf16* out, int numTokens, int hidden,
                     int* resolved, cudaStream_t stream);

/**
 * Fused residual add + RMSNorm (Hugging Face rounding: the sum and the normalized value are rounded to bf16).
 * Row i reads residual row r = rowIndex ? rowIndex[i] : i; when `delta` is set, x = residual[r] + delta[r]
 * (+ deltaBias), else x = residual[r]. out[i] = weight * bf16(x / rms(x)). The sum is written back to
 * residual[r] only when rowIndex is null.
 */
void launchAddRmsNorm(bf16* residual, const bf16* delta, const bf16* deltaBias, const int* rowIndex,
                      const bf16* weight, bf16* out, int rows, int hidden, float eps, cudaStream_t stream);

struct QkvRopeArgs {
  bf16* qkv;                 // [T][qkvDim]; q heads, then k heads, then v heads; q rewritten in place
  const bf16* bias;          // [qkvDim] or null
  const bf16* qNorm;         // [headDim] or null (Qwen3)
  const bf16* kNorm;         // [headDim] or null
  const float* invFreq;      // [headDim / 2]
  const int* positions;      // [T]
  const int* slotMapping;    // [T]
  bf16* kCache;              // this layer's K pool, [slots][kvDim]
  bf16* vCache;              // this layer's V pool
  int numTokens, numHeads, numKvHeads, headDim;
  float eps;
};
/** Bias, q/k RMSNorm, RoPE (rotate_half layout) and the K/V writes at slotMapping, in one pass. */
void launchQkvRope(const QkvRopeArgs& args, cudaStream_t stream);

/**
 * Whether `device` runs this build's Hopper kernels (wgmma, TMA): compute capability 9 and sm_90a among
 * FERRUM_CUDA_ARCHS. Kernels that need them trap anywhere else.
 */
bool hopperKernelsBuilt(int device);

/** out[r][j] = silu(gateUp[r][j]) * gateUp[r][inter + j]. */
void launchSwiglu(const bf16* gateUp, bf16* out, int rows, int inter, cudaStream_t stream);

/**
 * The most rows x (M) the GEMV path takes: an FMA kernel for 1-2 rows, tensor cores (gemv-mma.cu) for 3-8;
 * larger M goes to cuBLASLt.
 */
constexpr int kGemvMaxRows = 8;
/** Whether launchGemv takes this product: 1 <= m <= kGemvMaxRows, k % 8 == 0, x and w 16-byte aligned. */
bool gemvSupports(const bf16* x, const bf16* w, int m, int k);
/**
 * The outputs a block (its grid size) launchGemv, or launchGemvSwiglu (`swiglu`), takes for an m-row product,
 * the default first: Gemm::tune times each for a shape.
 */
std::vector<int> gemvRowsPerBlock(int m, bool swiglu);
/**
 * y[m][n] = x[m][:] · w[n][:] over k (x [m][k], w [n][k], y [m][n], all row-major) with f32 accumulation; y is
 * f32 when `outF32`, else bf16 rounded to nearest. A bandwidth-bound kernel for few rows; throws outside
 * gemvSupports or for a `rowsPerBlock` not in gemvRowsPerBlock(m, false).
 */
void launchGemv(const bf16* x, const bf16* w, void* y, int m, int n, int k, bool outF32, int rowsPerBlock,
                cudaStream_t stream);
/**
 * The gated MLP's first half in one kernel: y[m][j] = silu(g) · u with g = x[m] · gateUp[j], u = x[m] ·
 * gateUp[inter + j] (gateUp [2 · inter][k], the fused gate|up weight), each rounded to bf16 as launchGemv +
 * launchSwiglu would. Same support as launchGemv; `rowsPerBlock` from gemvRowsPerBlock(m, true).
 */
void launchGemvSwiglu(const bf16* x, const bf16* gateUp, bf16* y, int m, int inter, int k, int rowsPerBlock,
                      cudaStream_t stream);

struct AttentionArgs {
  const bf16* q;             // row t, head h at q + t * qRowStride + h * headDim
  int qRowStride;
  const bf16* kCache;        // this layer's pools, [slots][numKvHeads * headDim]
  const bf16* vCache;
  const int* kvIndices;      // the batch's kvIndices
  const int* rowKvStart;     // [T] offset of the row's sequence in kvIndices
  const int* rowKvLen;       // [T] kv entries the row attends to (causal: prefix + new tokens up to itself)
  const int* rowList;        // [numRows] batch rows to attend, or null for rows 0 .. numRows - 1: list entry i
                             // reads q, rowKvStart, rowKvLen and writes out at row rowList[i] (at row i with
                             // compactOut)
  bf16* out;                 // [T][numHeads * headDim], or [numRows][numHeads * headDim] with compactOut
  bool compactOut;
  float* partial;            // when numSplits > 1: numRows * numHeads * numSplits * (headDim + 2) floats, indexed
                             // by list position i (not batch row): O [i][head][split][headDim], then (m, l) pairs
                             // [i][head][split]
  int numRows, numHeads, numKvHeads, headDim;
  // The kv range of each row is cut into numSplits pieces of splitSize entries (splits past a row's end
  // contribute nothing); splitSize 0: each row cuts its own range into numSplits pieces of ceil(len / numSplits) rounded
  // up to kAttentionTile (step-splits.h). With numSplits > 1 a combine kernel merges the pieces.
  int numSplits, splitSize;
  float scale;               // softmax scale, multiplied into q
  // Decode steps (every row its sequence's one new token) with at most 8 heads a kv head may fuse the work of
  // launchQkvRope in: q then holds the QKV product as it is (q = rope.qkv), each block normalizes and rotates its
  // q heads, and the block whose split ends at the row's last entry first writes that entry's K and V at
  // slotMapping. Rows must be 0 .. numRows - 1 (no rowList).
  bool fuseRope;
  QkvRopeArgs rope;
};
/** Paged attention over the token pool for any mix of prefill and decode rows (GQA-aware, split-K). */
void launchAttention(const AttentionArgs& args, cudaStream_t stream);
/** Whether launchAttention can take AttentionArgs::fuseRope for this head layout (at most 8 heads a kv head). */
bool attentionFusesRope(int numHeads, int numKvHeads);

/**
 * For every layer and i < count: K and V of slot src[i] in (fromK, fromV) to slot dst[i] in (toK, toV).
 * Pools are [layers][slots][kvDim]; a pool may live in mapped pinned host memory (swap).
 */
void launchKvCopy(const bf16* fromK, const bf16* fromV, size_t fromSlots, bf16* toK, bf16* toV, size_t toSlots,
                  const int* src, const int* dst, int count, int numLayers, int kvDim, cudaStream_t stream);

struct SamplingArgs {
  float* logits;             // [S][vocab] f32, modified in place
  int numRows, vocabSize;
  const float* rowFloats;    // [S][kRowFloats] temperature, topP, minP, repetition, presence, frequency penalties
  const int* rowInts;        // [S][4] topK, seed (uint32 bits), step, flags (kSample*)
  const int* adjOffsets;     // [S + 1] sparse per-row logit adjustments
  float* adjSaved;           // scratch: the raw logit of each adjusted id
  const int* allowedOffsets; // [S + 1] sorted allowed ids of rows with kSampleAllowedOnly
  // The variable-length sections: word offsets in `words` (the step's upload) of adjIds, adjPre (added before the
  // repetition penalty: logit bias), adjPost (added after it: -presence - frequency × count), adjFlags
  // (kAdjRepetition | kAdjBanned) and allowedIds. Read on the device, so that a decode graph takes sections
  // whose place in the upload differs from step to step.
  const int* words;
  const int* sections;       // [kSamplingSections]
  // A row with kSampleCountInput counts its own input token (a placeholder the embedding resolved on the device, the
  // previous step's sample) as its newest output in its penalties; the host's lists leave that token out.
  const int* sampleRows;     // [S] the batch row of each sampled row
  const int* inputTokens;    // [T] each batch row's input token, as the embedding read it
  int* outTokens;            // [S]; -1 for skipped rows, kNothingToSample when every token was masked
  float* outLogprobs;        // [S]
  // [S][kMaxTopLogprobs]: the alternatives of rows whose flags ask for some (flags >> kSampleTopShift), best first,
  // in the row's logprob mode; id -1 ends a shorter list. Other rows' entries are left as they were.
  int* outTopIds;
  float* outTopLogprobs;
  int greedySplits;          // blocks a plain greedy row's scan is cut into, 1..kMaxGreedySplits
  float* greedyPartials;     // [S][kMaxGreedySplits][3] scratch: each block's max, sum and argmax (int bits)
  unsigned* greedyTickets;   // [S] blocks of the row done; zero between launches (the last block resets it)
};
constexpr int kSamplingSections = 5;
constexpr int kRowFloats = 6;
constexpr int kMaxGreedySplits = 16;
constexpr int kNothingToSample = -2;
constexpr int kSampleGreedy = 1;
constexpr int kSampleProcessedLogprobs = 2;
constexpr int kSampleAllowedOnly = 4;
constexpr int kSampleSkip = 8;
constexpr int kSampleCountInput = 16;
constexpr int kSampleTopShift = 8;  // flags >> kSampleTopShift: the row's number of alternatives (0 for none)
constexpr int kMaxTopLogprobs = 20;
constexpr int kAdjRepetition = 1;
constexpr int kAdjBanned = 2;
constexpr int kAdjInOutput = 4;  // the id is among the outputs the host counted (presence already charged)
/**
 * The built-in sampling chain, one block per row, except that a plain greedy row (no adjustments, no allowed
 * list) is scanned by greedySplits blocks (see sampling.cu for the exact semantics).
 */
void launchSampling(const SamplingArgs& args, cudaStream_t stream);
/** Blocks a plain greedy row takes when `rows` rows are sampled on `numSms` multiprocessors. */
int greedySplitsFor(int rows, int numSms);

}  // namespace ferrum
