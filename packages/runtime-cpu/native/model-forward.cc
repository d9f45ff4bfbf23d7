// Model::forward: the decoder graph (Llama / Qwen2 / Qwen3) over one flattened batch.
#include <cmath>
#include <cstring>
#include <limits>

#include "attention.h"
#include "linear.h"
#include "model.h"
#include "ops.h"

namespace ferrum {

void Model::forward(const BatchView& batch) {
  const int tokens = batch.numTokens;
  int32_t* tokenSeq = tokenSeq_.as<int32_t>();
  for (int b = 0; b < batch.numSeqs; ++b) {
    for (int t = batch.qIndptr.data[b]; t < batch.qIndptr.data[b + 1]; ++t) tokenSeq[t] = b;
  }
  rope_.fillTables(batch.positions.data, tokens, ropeCos_.as<float>(), ropeSin_.as<float>());
  embed(batch);
  for (int layer = 0; layer < shape_.numLayers; ++layer) {
    attentionBlock(batch, layer);
    mlpBlock(tokens, layer);
  }
  writeOutputs(batch);
}

void Model::embed(const BatchView& batch) {
  const int h = shape_.hiddenSize;
  const Tensor& table = weights_.embed;
  const size_t rowBytes = dtypeBytes(table.dtype) * static_cast<size_t>(h);
  float* hidden = hidden_.as<float>();
  pool_.parallelFor(batch.numTokens, [&](int64_t begin, int64_t end, int) {
    for (int64_t t = begin; t < end; ++t) {
      const auto* row = static_cast<const unsigned char*>(table.data) + rowBytes * static_cast<size_t>(batch.tokenIds.data[t]);
      kernels_->widen(table.dtype, row, hidden + t * h, h);
    }
  });
}

void Model::attentionBlock(const BatchView& batch, int layer) {
  const LayerWeights& w = weights_.layers[static_cast<size_t>(layer)];
  const int tokens = batch.numTokens, h = shape_.hiddenSize, hd = shape_.headDim, half = hd / 2;
  const int qDim = shape_.qDim(), kvDim = shape_.kvDim();
  float *hidden = hidden_.as<float>(), *normed = normed_.as<float>();
  float *q = q_.as<float>(), *k = k_.as<float>(), *v = v_.as<float>();

  pool_.parallelFor(tokens, [&](int64_t begin, int64_t end, int) {
    for (int64_t t = begin; t < end; ++t) {
      kernels_->rmsNorm(hidden + t * h, w.inputNorm.f32(), shape_.rmsNormEps, normed + t * h, h);
    }
  });
  runLinears(pool_, *kernels_, normed, h, tokens, packed_.as<uint16_t>(),
             {{&w.q, q, qDim, false}, {&w.k, k, kvDim, false}, {&w.v, v, kvDim, false}});

  // Per token: biases (Qwen2), per-head RMSNorm (Qwen3), RoPE, then K and V into the pool.
  pool_.parallelFor(tokens, [&](int64_t begin, int64_t end, int) {
    for (int64_t t = begin; t < end; ++t) {
      float *qt = q + t * qDim, *kt = k + t * kvDim, *vt = v + t * kvDim;
      if (w.qBias.present()) addBias(qt, w.qBias.f32(), qDim);
      if (w.kBias.present()) addBias(kt, w.kBias.f32(), kvDim);
      if (w.vBias.present()) addBias(vt, w.vBias.f32(), kvDim);
      const float* cos = ropeCos_.as<float>() + t * half;
      const float* sin = ropeSin_.as<float>() + t * half;
      for (int head = 0; head < shape_.numHeads; ++head) {
        if (w.qNorm.present()) kernels_->rmsNorm(qt + head * hd, w.qNorm.f32(), shape_.rmsNormEps, qt + head * hd, hd);
        kernels_->rope(qt + head * hd, cos, sin, half);
      }
      for (int head = 0; head < shape_.numKvHeads; ++head) {
        if (w.kNorm.present()) kernels_->rmsNorm(kt + head * hd, w.kNorm.f32(), shape_.rmsNormEps, kt + head * hd, hd);
        kernels_->rope(kt + head * hd, cos, sin, half);
      }
      const int slot = batch.slotMapping.data[t];
      std::memcpy(kv_.key(layer, slot), kt, sizeof(float) * static_cast<size_t>(kvDim));
      std::memcpy(kv_.value(layer, slot), vt, sizeof(float) * static_cast<size_t>(kvDim));
    }
  });

  const AttentionArgs args{&batch,          tokenSeq_.as<int32_t>(), q,
                           attn_.as<float>(), &kv_,                 layer,
                           shape_.numHeads, shape_.numKvHeads,       hd,
                           scores_.as<float>(), scoresPerThread_,   blockStarts_.as<int32_t>()};
  attention(pool_, *kernels_, args);

  // hidden += o_proj(attention): the residual add happens in the GEMM's store.
  runLinears(pool_, *kernels_, attn_.as<float>(), qDim, tokens, packed_.as<uint16_t>(), {{&w.o, hidden, h, true}});
  if (w.oBias.present()) {
    for (int t = 0; t < tokens; ++t) addBias(hidden + static_cast<size_t>(t) * h, w.oBias.f32(), h);
  }
}

void Model::mlpBlock(int tokens, int layer) {
  const LayerWeights& w = weights_.layers[static_cast<size_t>(layer)];
  const int h = shape_.hiddenSize, inter = shape_.intermediateSize;
  float *hidden = hidden_.as<float>(), *normed = normed_.as<float>();
  float *gate = gate_.as<float>(), *up = up_.as<float>();
  pool_.parallelFor(tokens, [&](int64_t begin, int64_t end, int) {
    for (int64_t t = begin; t < end; ++t) {
      kernels_->rmsNorm(hidden + t * h, w.postNorm.f32(), shape_.rmsNormEps, normed + t * h, h);
    }
  });
  runLinears(pool_, *kernels_, normed, h, tokens, packed_.as<uint16_t>(), {{&w.gate, gate, inter, false}, {&w.up, up, inter, false}});
  pool_.parallelFor(tokens, [&](int64_t begin, int64_t end, int) {
    for (int64_t t = begin; t < end; ++t) kernels_->siluMul(gate + t * inter, up + t * inter, inter);
  });
  runLinears(pool_, *kernels_, gate, inter, tokens, packed_.as<uint16_t>(), {{&w.down, hidden, h, true}});
}

// Final norm and lm_head for the sampled rows only, kLogitRows at a time; then greedy picks and host copies.
void Model::writeOutputs(const BatchView& batch) {
  const int h = shape_.hiddenSize, vocab = shape_.vocabSize, samples = batch.numSampleRows();
  float *rows = logitRows_.as<float>(), *logits = logits_.as<float>();
  int64_t hostRow = 0;
  for (int first = 0; first < samples; first += kLogitRows) {
    const int count = samples - first < kLogitRows ? samples - first : kLogitRows;
    for (int i = 0; i < count; ++i) {
      const float* src = hidden_.as<float>() + static_cast<size_t>(batch.sampleRows.data[first + i]) * h;
      kernels_->rmsNorm(src, weights_.finalNorm.f32(), shape_.rmsNormEps, rows + static_cast<size_t>(i) * h, h);
    }
    runLinears(pool_, *kernels_, rows, h, count, packed_.as<uint16_t>(), {{&weights_.lmHead, logits, vocab, false}});
    pool_.parallelFor(count, [&](int64_t begin, int64_t end, int) {
      for (int64_t i = begin; i < end; ++i) {
        const int32_t mode = batch.rowModes.data[first + i];
        batch.outTokens[first + i] = -1;
        batch.outLogprobs[first + i] = std::numeric_limits<float>::quiet_NaN();
        if (!(mode & kRowGreedy)) continue;
        const float* row = logits + i * vocab;
        const int best = argmaxSkippingNaN(row, vocab);
        const double logSumExp = row[best] + std::log(kernels_->sumExp(row, vocab, row[best]));
        batch.outTokens[first + i] = best;
        batch.outLogprobs[first + i] = static_cast<float>(row[best] - logSumExp);
      }
    });
    for (int i = 0; i < count; ++i) {
      if (!(batch.rowModes.data[first + i] & kRowHostLogits)) continue;
      std::memcpy(batch.outLogits + hostRow * vocab, logits + static_cast<size_t>(i) * vocab, sizeof(float) * vocab);
      ++hostRow;
    }
  }
}

}  // namespace ferrum
