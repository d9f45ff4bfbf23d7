#include "model-weights.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>

#include "native-error.h"

namespace ferrum {
namespace {

enum class Role { Embed, FinalNorm, LmHead, InputNorm, Q, K, V, O, QBias, KBias, VBias, OBias, QNorm, KNorm, PostNorm, Gate, Up, Down };

struct LayerRoleName {
  const char* suffix;
  Role role;
};

const LayerRoleName kLayerRoles[] = {
    {"input_layernorm.weight", Role::InputNorm},   {"self_attn.q_proj.weight", Role::Q},
    {"self_attn.k_proj.weight", Role::K},          {"self_attn.v_proj.weight", Role::V},
    {"self_attn.o_proj.weight", Role::O},          {"self_attn.q_proj.bias", Role::QBias},
    {"self_attn.k_proj.bias", Role::KBias},        {"self_attn.v_proj.bias", Role::VBias},
    {"self_attn.o_proj.bias", Role::OBias},        {"self_attn.q_norm.weight", Role::QNorm},
    {"self_attn.k_norm.weight", Role::KNorm},      {"post_attention_layernorm.weight", Role::PostNorm},
    {"mlp.gate_proj.weight", Role::Gate},          {"mlp.up_proj.weight", Role::Up},
    {"mlp.down_proj.weight", Role::Down},
};

constexpr size_t kAlignment = 64;
constexpr int64_t kDummyChunkElements = int64_t{1} << 20;
// Dummy weights: uniform with standard deviation 0.02 (half-width 0.02 * sqrt(3)), like HF's init range.
constexpr float kDummyHalfWidth = 0.0346410162f;

bool parseName(const std::string& name, Role* role, int* layer) {
  *layer = -1;
  if (name == "model.embed_tokens.weight") return *role = Role::Embed, true;
  if (name == "model.norm.weight") return *role = Role::FinalNorm, true;
  if (name == "lm_head.weight") return *role = Role::LmHead, true;
  static const std::string prefix = "model.layers.";
  if (name.compare(0, prefix.size(), prefix) != 0) return false;
  size_t pos = prefix.size();
  int index = 0;
  size_t digits = 0;
  while (pos < name.size() && name[pos] >= '0' && name[pos] <= '9' && digits < 9) {
    index = index * 10 + (name[pos++] - '0');
    ++digits;
  }
  if (digits == 0 || pos >= name.size() || name[pos] != '.') return false;
  const std::string suffix = name.substr(pos + 1);
  for (const LayerRoleName& entry : kLayerRoles) {
    if (suffix == entry.suffix) {
      *role = entry.role;
      *layer = index;
      return true;
    }
  }
  return false;
}

bool isVector(Role role) {
  switch (role) {
    case Role::FinalNorm: case Role::InputNorm: case Role::PostNorm: case Role::QNorm: case Role::KNorm:
    case Role::QBias: case Role::KBias: case Role::VBias: case Role::OBias:
      return true;
    default:
      return false;
  }
}

bool isNorm(Role role) {
  return role == Role::FinalNorm || role == Role::InputNorm || role == Role::PostNorm || role == Role::QNorm ||
         role == Role::KNorm;
}

// [rows, cols] the role must have; vectors are [1, n] (their checkpoint shape is [n]).
void expectedShape(Role role, const ModelShape& s, int64_t* rows, int64_t* cols) {
  const int64_t h = s.hiddenSize, q = s.qDim(), kv = s.kvDim(), inter = s.intermediateSize;
  switch (role) {
    case Role::Embed: case Role::LmHead: *rows = s.vocabSize, *cols = h; return;
    case Role::FinalNorm: case Role::InputNorm: case Role::PostNorm: case Role::OBias: *rows = 1, *cols = h; return;
    case Role::Q: *rows = q, *cols = h; return;
    case Role::K: case Role::V: *rows = kv, *cols = h; return;
    case Role::O: *rows = h, *cols = q; return;
    case Role::QBias: *rows = 1, *cols = q; return;
    case Role::KBias: case Role::VBias: *rows = 1, *cols = kv; return;
    case Role::QNorm: case Role::KNorm: *rows = 1, *cols = s.headDim; return;
    case Role::Gate: case Role::Up: *rows = inter, *cols = h; return;
    case Role::Down: *rows = h, *cols = inter; return;
  }
}

Tensor* viewFor(ModelWeights& w, Role role, int layer) {
  if (layer >= 0) {
    LayerWeights& l = w.layers[static_cast<size_t>(layer)];
    switch (role) {
      case Role::InputNorm: return &l.inputNorm;
      case Role::Q: return &l.q;
      case Role::K: return &l.k;
      case Role::V: return &l.v;
      case Role::O: return &l.o;
      case Role::QBias: return &l.qBias;
      case Role::KBias: return &l.kBias;
      case Role::VBias: return &l.vBias;
      case Role::OBias: return &l.oBias;
      case Role::QNorm: return &l.qNorm;
      case Role::KNorm: return &l.kNorm;
      case Role::PostNorm: return &l.postNorm;
      case Role::Gate: return &l.gate;
      case Role::Up: return &l.up;
      case Role::Down: return &l.down;
      default: return nullptr;
    }
  }
  switch (role) {
    case Role::Embed: return &w.embed;
    case Role::FinalNorm: return &w.finalNorm;
    case Role::LmHead: return &w.lmHead;
    default: return nullptr;
  }
}

struct Placement {
  const TensorSource* source;
  Role role;
  int64_t elements;
  DType storage;  // f32 for vectors, the checkpoint dtype for matrices
  size_t offset;
  size_t bytes;
};

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A pure function of (seed, tensor, element): the same weights whatever the thread count. One 64-bit hash
// gives four 16-bit uniforms (elements 4j .. 4j + 3), plenty for random weights.
void fillDummy(const Placement& p, size_t tensorIndex, uint64_t seed, int64_t begin, int64_t end, unsigned char* base) {
  unsigned char* dst = base + p.offset;
  const uint64_t stream = splitmix64(seed ^ (static_cast<uint64_t>(tensorIndex) << 32));
  const bool norm = isNorm(p.role);
  uint64_t bits = splitmix64(stream + static_cast<uint64_t>(begin >> 2));
  for (int64_t i = begin; i < end; ++i) {
    float value = 1.0f;
    if (!norm) {
      if ((i & 3) == 0) bits = splitmix64(stream + static_cast<uint64_t>(i >> 2));
      const uint32_t piece = static_cast<uint32_t>(bits >> ((i & 3) * 16)) & 0xffffu;
      const float unit = (static_cast<float>(piece) + 0.5f) * (1.0f / 65536.0f);  // (0, 1)
      value = (2.0f * unit - 1.0f) * kDummyHalfWidth;
    }
    if (p.storage == DType::F32) {
      std::memcpy(dst + i * 4, &value, 4);
    } else {
      const uint16_t half = p.storage == DType::BF16 ? f32ToBf16(value) : f32ToF16(value);
      std::memcpy(dst + i * 2, &half, 2);
    }
  }
}

void readFully(int fd, unsigned char* dst, const TensorSource& s) {
  uint64_t done = 0;
  while (done < s.byteLength) {
    const uint64_t want = s.byteLength - done < (uint64_t{1} << 30) ? s.byteLength - done : (uint64_t{1} << 30);
    const ssize_t got = pread(fd, dst + done, want, static_cast<off_t>(s.byteOffset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      throw NativeError("invalid_checkpoint", "cannot read tensor " + s.name + " from " + s.file + ": " +
                                                  (got < 0 ? std::strerror(errno) : "file is shorter than its header says"));
    }
    done += static_cast<uint64_t>(got);
  }
}

// Checkpoint vectors (bf16/f16) become f32 in place: element i moves from byte 2i to byte 4i, so walking
// backwards never overwrites an element before it is read.
void widenInPlace(DType source, unsigned char* data, int64_t elements) {
  if (source == DType::F32) return;
  for (int64_t i = elements - 1; i >= 0; --i) {
    uint16_t half;
    std::memcpy(&half, data + i * 2, 2);
    const float value = source == DType::BF16 ? bf16ToF32(half) : f16ToF32(half);
    std::memcpy(data + i * 4, &value, 4);
  }
}

}  // namespace

ModelWeights::ModelWeights(const ModelShape& shape, const std::vector<TensorSource>& sources, bool dummy,
                           uint64_t seed, ThreadPool& pool) {
  layers.resize(static_cast<size_t>(shape.numLayers));
  std::vector<Placement> placements;
  std::vector<int> layerOf;
  size_t total = 0;
  for (const TensorSource& source : sources) {
    Role role;
    int layer;
    if (!parseName(source.name, &role, &layer) || layer >= shape.numLayers) {
      throw NativeError("invalid_checkpoint", "unexpected tensor " + source.name);
    }
    int64_t rows = 0, cols = 0;
    expectedShape(role, shape, &rows, &cols);
    const bool vector = isVector(role);
    const std::vector<int64_t> want = vector ? std::vector<int64_t>{cols} : std::vector<int64_t>{rows, cols};
    if (source.shape != want) {
      throw NativeError("shape_mismatch", "tensor " + source.name + " has shape " + shapeText(source.shape) +
                                              ", expected " + shapeText(want));
    }
    const int64_t elements = rows * cols;
    if (!dummy && source.byteLength != static_cast<uint64_t>(elements) * dtypeBytes(source.dtype)) {
      throw NativeError("invalid_checkpoint", "tensor " + source.name + " in " + source.file + " has " +
                                                  std::to_string(source.byteLength) + " bytes, expected " +
                                                  std::to_string(elements * dtypeBytes(source.dtype)));
    }
    Tensor* view = viewFor(*this, role, layer);
    if (view->rows != 0) throw NativeError("invalid_checkpoint", "tensor " + source.name + " given twice");
    view->rows = rows;  // marks the role as taken; data is set once the arena exists
    view->cols = cols;
    view->dtype = vector ? DType::F32 : source.dtype;
    const size_t bytes = static_cast<size_t>(elements) * dtypeBytes(view->dtype);
    placements.push_back(Placement{&source, role, elements, view->dtype, total, bytes});
    layerOf.push_back(layer);
    total += (bytes + kAlignment - 1) / kAlignment * kAlignment;
  }

  arena_ = AlignedBuffer(total, "model weights");
  unsigned char* base = arena_.as<unsigned char>();
  for (size_t i = 0; i < placements.size(); ++i) {
    viewFor(*this, placements[i].role, layerOf[i])->data = base + placements[i].offset;
  }

  const auto require = [](const Tensor& t, const std::string& name) {
    if (!t.present()) throw NativeError("missing_tensor", "tensor " + name + " is missing");
  };
  require(embed, "model.embed_tokens.weight");
  require(finalNorm, "model.norm.weight");
  if (shape.tieWordEmbeddings) {
    lmHead = embed;
  } else {
    require(lmHead, "lm_head.weight");
  }
  for (int i = 0; i < shape.numLayers; ++i) {
    const LayerWeights& l = layers[static_cast<size_t>(i)];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    require(l.inputNorm, p + "input_layernorm.weight");
    require(l.q, p + "self_attn.q_proj.weight");
    require(l.k, p + "self_attn.k_proj.weight");
    require(l.v, p + "self_attn.v_proj.weight");
    require(l.o, p + "self_attn.o_proj.weight");
    require(l.postNorm, p + "post_attention_layernorm.weight");
    require(l.gate, p + "mlp.gate_proj.weight");
    require(l.up, p + "mlp.up_proj.weight");
    require(l.down, p + "mlp.down_proj.weight");
    if (shape.qkNorm) {
      require(l.qNorm, p + "self_attn.q_norm.weight");
      require(l.kNorm, p + "self_attn.k_norm.weight");
    }
  }

  std::mutex errorMutex;
  std::string errorCode, errorMessage;
  const auto fail = [&](const NativeError& error) {
    std::lock_guard<std::mutex> lock(errorMutex);
    if (errorCode.empty()) errorCode = error.code(), errorMessage = error.what();
  };

  if (dummy) {
    // Work items: 1M-element chunks of every tensor.
    std::vector<std::pair<size_t, int64_t>> chunks;
    for (size_t i = 0; i < placements.size(); ++i) {
      for (int64_t begin = 0; begin < placements[i].elements; begin += kDummyChunkElements) chunks.emplace_back(i, begin);
    }
    pool.forEachDynamic(static_cast<int64_t>(chunks.size()), [&](int64_t item, int) {
      const auto [index, begin] = chunks[static_cast<size_t>(item)];
      const int64_t end = begin + kDummyChunkElements < placements[index].elements ? begin + kDummyChunkElements
                                                                                   : placements[index].elements;
      fillDummy(placements[index], index, seed, begin, end, base);
    });
    return;
  }

  std::map<std::string, int> files;
  for (const Placement& p : placements) {
    if (files.count(p.source->file)) continue;
    const int fd = open(p.source->file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const std::string reason = std::strerror(errno);
      for (auto& entry : files) close(entry.second);
      throw NativeError("invalid_checkpoint", "cannot open " + p.source->file + ": " + reason);
    }
    files[p.source->file] = fd;
  }
  pool.forEachDynamic(static_cast<int64_t>(placements.size()), [&](int64_t item, int) {
    const Placement& p = placements[static_cast<size_t>(item)];
    try {
      readFully(files.at(p.source->file), base + p.offset, *p.source);
      if (p.storage == DType::F32) widenInPlace(p.source->dtype, base + p.offset, p.elements);
    } catch (const NativeError& error) {
      fail(error);
    }
  });
  for (auto& entry : files) close(entry.second);
  if (!errorCode.empty()) throw NativeError(errorCode, errorMessage);
}

}  // namespace ferrum
