// Float64 reference implementations of the ops (see op_reference.h).
#include "op_reference.h"

#include <math.h>

#include "plan/philox.h"

namespace ops_test {

std::vector<int64_t> MatMulCase::a_dims() const {
  return {batch, trans_a ? k : m, trans_a ? m : k};
}

std::vector<int64_t> MatMulCase::b_dims() const {
  const int64_t r = trans_b ? n : k, c = trans_b ? k : n;
  if (mode == MatMulMode::kBroadcast) return {r, c};
  return {batch, r, c};
}

std::vector<int64_t> MatMulCase::c_dims() const {
  if (mode == MatMulMode::kReduce) return {m, n};
  return {batch, m, n};
}

Vec ref_matmul(const MatMulCase& mc, double alpha, const Vec& a, const Vec& b) {
  const bool shared_b = mc.mode == MatMulMode::kBroadcast;
  const bool reduce = mc.mode == MatMulMode::kReduce;
  Vec c(static_cast<size_t>((reduce ? 1 : mc.batch) * mc.m * mc.n), 0.0);
  for (int64_t t = 0; t < mc.batch; ++t) {
    const double* at = a.data() + t * mc.m * mc.k;
    const double* bt = b.data() + (shared_b ? 0 : t) * mc.k * mc.n;
    double* ct = c.data() + (reduce ? 0 : t) * mc.m * mc.n;
    for (int64_t i = 0; i < mc.m; ++i) {
      for (int64_t j = 0; j < mc.n; ++j) {
        double s = 0.0;
        for (int64_t p = 0; p < mc.k; ++p) {
          const double av = mc.trans_a ? at[p * mc.m + i] : at[i * mc.k + p];
          const double bv = mc.trans_b ? bt[j * mc.k + p] : bt[p * mc.n + j];
          s += av * bv;
        }
        ct[i * mc.n + j] += alpha * s;
      }
    }
  }
  return c;
}

std::vector<int64_t> HeadTensor::dims() const {
  if (interleaved) return {outer, rows, heads * cols};
  return {outer, heads, rows, cols};
}

size_t HeadTensor::at(int64_t o, int64_t h, int64_t i, int64_t j) const {
  return static_cast<size_t>(interleaved ? (o * rows + i) * heads * cols + h * cols + j
                                         : ((o * heads + h) * rows + i) * cols + j);
}

HeadTensor HeadMatMulCase::a() const {
  return {outer, heads, trans_a ? k : m, trans_a ? m : k, (layout & 1) != 0};
}
HeadTensor HeadMatMulCase::b() const {
  return {outer, heads, trans_b ? n : k, trans_b ? k : n, (layout & 2) != 0};
}
HeadTensor HeadMatMulCase::c() const { return {outer, heads, m, n, (layout & 4) != 0}; }

Vec ref_head_matmul(const HeadMatMulCase& hc, double alpha, const Vec& a, const Vec& b) {
  const HeadTensor ha = hc.a(), hb = hc.b(), hcc = hc.c();
  Vec c(static_cast<size_t>(hc.outer * hc.heads * hc.m * hc.n));
  for (int64_t o = 0; o < hc.outer; ++o) {
    for (int64_t h = 0; h < hc.heads; ++h) {
      for (int64_t i = 0; i < hc.m; ++i) {
        for (int64_t j = 0; j < hc.n; ++j) {
          double sum = 0;
          for (int64_t p = 0; p < hc.k; ++p) {
            sum += a[hc.trans_a ? ha.at(o, h, p, i) : ha.at(o, h, i, p)] *
                   b[hc.trans_b ? hb.at(o, h, j, p) : hb.at(o, h, p, j)];
          }
          c[hcc.at(o, h, i, j)] = alpha * sum;
        }
      }
    }
  }
  return c;
}

Vec ref_softmax(const Vec& x, int64_t n) {
  Vec y(x.size());
  for (size_t r = 0; r < x.size(); r += static_cast<size_t>(n)) {
    double mx = x[r];
    for (int64_t j = 1; j < n; ++j) mx = fmax(mx, x[r + j]);
    double s = 0.0;
    for (int64_t j = 0; j < n; ++j) s += exp(x[r + j] - mx);
    for (int64_t j = 0; j < n; ++j) y[r + j] = exp(x[r + j] - mx) / s;
  }
  return y;
}

void ref_layernorm(const Vec& x, const Vec& gamma, const Vec& beta, int64_t n, double eps, Vec* y,
                   Vec* mean, Vec* rstd) {
  const size_t rows = x.size() / static_cast<size_t>(n);
  y->assign(x.size(), 0.0);
  mean->assign(rows, 0.0);
  rstd->assign(rows, 0.0);
  for (size_t r = 0; r < rows; ++r) {
    const double* xr = x.data() + r * n;
    double m = 0.0, var = 0.0;
    for (int64_t j = 0; j < n; ++j) m += xr[j];
    m /= static_cast<double>(n);
    for (int64_t j = 0; j < n; ++j) var += (xr[j] - m) * (xr[j] - m);
    const double s = 1.0 / sqrt(var / static_cast<double>(n) + eps);
    (*mean)[r] = m;
    (*rstd)[r] = s;
    for (int64_t j = 0; j < n; ++j) (*y)[r * n + j] = (xr[j] - m) * s * gamma[j] + beta[j];
  }
}

bool ref_dropout_keep(uint64_t seed, uint64_t step, uint64_t key, uint64_t i, double p) {
  return remat::uniform01(remat::philox_word(seed, step, key, i)) >= p;
}

Vec ref_dropout(const Vec& x, uint64_t seed, uint64_t step, uint64_t key, double p) {
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    y[i] = ref_dropout_keep(seed, step, key, i, p) ? x[i] / (1.0 - p) : x[i] * 0.0;
  }
  return y;
}

Vec ref_embedding(const std::vector<int32_t>& ids, const Vec& table, int64_t h) {
  Vec out;
  for (int32_t id : ids) {
    for (int64_t k = 0; k < h; ++k) out.push_back(table[static_cast<size_t>(id * h + k)]);
  }
  return out;
}

Vec ref_permute(const Vec& x, const std::vector<int64_t>& d, const std::vector<int64_t>& p) {
  const size_t r = d.size();
  std::vector<int64_t> y_dims(r), idx(r, 0);
  for (size_t k = 0; k < r; ++k) y_dims[k] = d[static_cast<size_t>(p[k])];
  Vec y(x.size());
  // Walk y in row-major order; j_{p_k} = i_k gives the x element.
  for (size_t flat = 0; flat < y.size(); ++flat) {
    std::vector<int64_t> j(r);
    for (size_t k = 0; k < r; ++k) j[static_cast<size_t>(p[k])] = idx[k];
    int64_t off = 0;
    for (size_t k = 0; k < r; ++k) off = off * d[k] + j[k];
    y[flat] = x[static_cast<size_t>(off)];
    for (size_t k = r; k-- > 0;) {
      if (++idx[k] < y_dims[k]) break;
      idx[k] = 0;
    }
  }
  return y;
}

Vec ref_select(const Vec& x, const std::vector<int64_t>& dims, int64_t axis, int64_t index) {
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= dims[static_cast<size_t>(k)];
  for (size_t k = static_cast<size_t>(axis) + 1; k < dims.size(); ++k) inner *= dims[k];
  const int64_t n = dims[static_cast<size_t>(axis)];
  Vec y;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < inner; ++k)
      y.push_back(x[static_cast<size_t>((o * n + index) * inner + k)]);
  }
  return y;
}

double ref_cross_entropy(const Vec& logits, const std::vector<int32_t>& labels, int64_t c) {
  double total = 0.0;
  for (size_t r = 0; r < labels.size(); ++r) {
    const double* x = logits.data() + r * c;
    double mx = x[0];
    for (int64_t j = 1; j < c; ++j) mx = fmax(mx, x[j]);
    double s = 0.0;
    for (int64_t j = 0; j < c; ++j) s += exp(x[j] - mx);
    total += -(x[labels[r]] - mx - log(s));
  }
  return total / static_cast<double>(labels.size());
}

double ref_mse(const Vec& pred, const Vec& target) {
  double s = 0.0;
  for (size_t i = 0; i < pred.size(); ++i) s += (pred[i] - target[i]) * (pred[i] - target[i]);
  return s / static_cast<double>(pred.size());
}

double ref_gelu(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }

void ref_sgd(Vec* param, const Vec& grad, Vec* velocity, double lr, double momentum, double wd) {
  for (size_t i = 0; i < param->size(); ++i) {
    const double g = grad[i] + wd * (*param)[i];
    if (momentum != 0.0) {
      (*velocity)[i] = momentum * (*velocity)[i] + g;
      (*param)[i] -= lr * (*velocity)[i];
    } else {
      (*param)[i] -= lr * g;
    }
  }
}

void ref_adam(Vec* param, const Vec& grad, Vec* m, Vec* v, double lr, double b1, double b2,
              double eps, double wd, bool decoupled, uint64_t step) {
  const double t = static_cast<double>(step + 1);
  const double bc1 = 1.0 - pow(b1, t), bc2 = 1.0 - pow(b2, t);
  for (size_t i = 0; i < param->size(); ++i) {
    double g = grad[i];
    double& p = (*param)[i];
    if (decoupled) {
      p *= 1.0 - lr * wd;
    } else {
      g += wd * p;
    }
    (*m)[i] = b1 * (*m)[i] + (1.0 - b1) * g;
    (*v)[i] = b2 * (*v)[i] + (1.0 - b2) * g * g;
    p -= (lr / bc1) * (*m)[i] / (sqrt((*v)[i]) / sqrt(bc2) + eps);
  }
}

}  // namespace ops_test
