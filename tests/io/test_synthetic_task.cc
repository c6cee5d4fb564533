// The synthetic task: a data-parallel rank's rows drawn alone are those rows of the whole batch,
// and the batch's values are Philox's words as the task states them.
#include "tests/cmocka_cpp.h"

#include <cstring>
#include <string>
#include <vector>

#include "io/synthetic_task.h"
#include "plan/philox.h"

namespace {

using Bytes = std::vector<std::vector<uint8_t>>;

// Bytes [first, first + count) rows of every binding of |whole|, a batch of |batch| rows.
Bytes slice(const Bytes& whole, int64_t batch, int64_t first, int64_t count) {
  Bytes out;
  for (const std::vector<uint8_t>& v : whole) {
    const size_t row = v.size() / static_cast<size_t>(batch);
    out.emplace_back(v.begin() + static_cast<long>(row * static_cast<size_t>(first)),
                     v.begin() + static_cast<long>(row * static_cast<size_t>(first + count)));
  }
  return out;
}

// Rows at every start and length, over features of 5 floats (groups of four Philox words
// straddle rows) and images, and the transformer's tokens.
void rows_drawn_alone_are_the_rows_of_the_whole_batch(void**) {
  constexpr int64_t kBatch = 7;
  for (const char* model :
       {"mlp:layers=1,width=4,in=5,classes=3", "cnn:in=1x6x6,classes=4",
        "transformer:layers=1,hidden=8,heads=2,ffn=16,seq=3,vocab=50,classes=2"}) {
    const remat::io::SyntheticTask task(model, kBatch, 11);
    for (uint64_t step : {uint64_t{0}, uint64_t{5}}) {
      const Bytes whole = task.batch(step);
      for (int64_t first = 0; first < kBatch; ++first) {
        for (int64_t count = 1; first + count <= kBatch; ++count) {
          if (task.rows(step, first, count) != slice(whole, kBatch, first, count))
            fail_msg("%s step %llu: rows [%lld, %lld) differ from the whole batch's", model,
                     static_cast<unsigned long long>(step), static_cast<long long>(first),
                     static_cast<long long>(first + count));
        }
      }
    }
  }
}

// x[i] = 2 u(word i) - 1 of the data stream: the task's key is not public, so the stream is
// found from element 0 and every other element checked against philox_word() of it.
void the_inputs_are_philox_words_one_per_element(void**) {
  constexpr int64_t kBatch = 9, kIn = 5;
  const remat::io::SyntheticTask task("mlp:layers=1,width=4,in=5,classes=3", kBatch, 3);
  const Bytes b = task.batch(2);
  std::vector<float> x(static_cast<size_t>(kBatch * kIn));
  memcpy(x.data(), b[0].data(), b[0].size());
  assert_int_equal(b[0].size(), x.size() * sizeof(float));
  // kDataKey of synthetic_task.cc ("data" in ASCII), as the file states it.
  constexpr uint64_t kDataKey = 0x64617461u;
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = 2.0f * remat::uniform01(remat::philox_word(3, 2, kDataKey, i)) - 1.0f;
    if (memcmp(&want, &x[i], sizeof want) != 0)
      fail_msg("x[%zu] = %.9g, Philox's word gives %.9g", i, static_cast<double>(x[i]),
               static_cast<double>(want));
  }
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(rows_drawn_alone_are_the_rows_of_the_whole_batch),
      cmocka_unit_test(the_inputs_are_philox_words_one_per_element),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
