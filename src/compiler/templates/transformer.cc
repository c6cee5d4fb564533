// The `transformer` template: a BERT encoder with a classification head on token 0.
#include <cmath>

#include "compiler/builder.h"
#include "compiler/templates/templates.h"

namespace remat {
namespace compiler {
namespace {

constexpr float kLayerNormEps = 1e-12f;

// One post-LayerNorm encoder block (docs/templates.md); returns the block's output.
int encoder_block(Builder& b, int x, int64_t hidden, int64_t heads, int64_t ffn, float p,
                  AttentionKernel attention, const std::string& prefix) {
  const int64_t d = hidden / heads;
  // q, k and v stay [B, S, H], each head's [S, D] matrix a column block of them: attention (or
  // head_matmul, unfused) reads the heads in place, and writes the context straight into the
  // merged [B, S, H].
  const std::string attn = prefix + ".attention";
  const int q = b.linear(x, hidden, attn + ".self.query");
  const int k = b.linear(x, hidden, attn + ".self.key");
  const int v = b.linear(x, hidden, attn + ".self.value");
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const int merged = b.attention(q, k, v, -1, heads, scale, p, attention, attn + ".self");
  const int projected =
      b.dropout(b.linear(merged, hidden, attn + ".output.dense"), p, attn + ".output.dropout");
  const int x1 = b.layer_norm(b.add(x, projected, attn + ".output.residual"),
                              attn + ".output.LayerNorm", kLayerNormEps);
  const int inner =
      b.gelu(b.linear(x1, ffn, prefix + ".intermediate.dense"), prefix + ".intermediate.gelu");
  const int out =
      b.dropout(b.linear(inner, hidden, prefix + ".output.dense"), p, prefix + ".output.dropout");
  return b.layer_norm(b.add(x1, out, prefix + ".output.residual"), prefix + ".output.LayerNorm",
                      kLayerNormEps);
}

}  // namespace

Graph build_transformer(TemplateSpec& spec, int64_t batch, AttentionKernel attention) {
  const int64_t layers =
      spec.integer_up_to("layers", 1, kMaxTransformerLayers, "deeper models take too long to plan");
  const int64_t hidden = spec.integer("hidden", 1);
  const int64_t heads = spec.integer("heads", 1);
  const int64_t ffn = spec.integer("ffn", 1);
  const int64_t seq = spec.integer("seq", 1);
  const int64_t vocab = spec.integer("vocab", 1);
  const int64_t classes = spec.integer("classes", 1);
  const float p = spec.real("dropout", 0.0f, 1.0f, 0.0f);
  if (hidden % heads != 0) {
    throw CompileError("transformer: hidden=" + std::to_string(hidden) +
                       " is not a multiple of heads=" + std::to_string(heads));
  }
  Graph graph;
  Builder b(&graph);
  const int tokens = b.input("tokens", REMAT_DTYPE_I32, {batch, seq});
  const int labels = b.label("labels", REMAT_DTYPE_I32, {batch});
  const int words =
      b.param("embeddings.word_embeddings.weight", {vocab, hidden}, Init::kNormal, 0.02f);
  const int positions =
      b.param("embeddings.position_embeddings.weight", {seq, hidden}, Init::kNormal, 0.02f);
  const int embedded = b.embedding(tokens, words, "embeddings.words");
  int x = b.layer_norm(b.bias_add(embedded, positions, "embeddings.sum"), "embeddings.LayerNorm",
                       kLayerNormEps);
  x = b.dropout(x, p, "embeddings.dropout");
  for (int64_t l = 0; l < layers; ++l) {
    x = encoder_block(b, x, hidden, heads, ffn, p, attention, "encoder.layer." + std::to_string(l));
  }
  const int first = b.select(x, 1, 0, "pooler.first_token");
  const int pooled = b.tanh(b.linear(first, hidden, "pooler.dense"), "pooler.tanh");
  const int logits = b.linear(b.dropout(pooled, p, "pooler.dropout"), classes, "classifier");
  b.softmax_cross_entropy(logits, labels);
  return graph;
}

}  // namespace compiler
}  // namespace remat
