// bertrt search's exact inner-product search (embed/semantic_search.h) over random unit vectors:
// the time of one query (what `bertrt search` runs a stdin line) and of 100 queries at once, at
// each corpus size. --dump DIR writes the corpus and queries (raw little-endian float32,
// corpus_N.f32 [N, D], queries.f32 [100, D]) and the top-10 indices bertrt found (top10_N.i64),
// for bench/search_vs_faiss.py, which times FAISS's IndexFlatIP on the same data.
//   bench_search [--dim 384] [--sizes 10000,100000] [--dump DIR]
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "best_seconds.h"
#include "embed/semantic_search.h"

namespace {

std::vector<float> unit_rows(size_t rows, int dim, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> x(rows * size_t(dim));
  for (size_t i = 0; i < rows; ++i) {
    float* r = &x[i * size_t(dim)];
    double ss = 0;
    for (int d = 0; d < dim; ++d) {
      r[d] = normal(rng);
      ss += double(r[d]) * r[d];
    }
    for (int d = 0; d < dim; ++d) r[d] = float(r[d] / std::sqrt(ss));
  }
  return x;
}

void dump(const std::string& path, const void* p, size_t bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(p, 1, bytes, f) != bytes) {
    std::fprintf(stderr, "bench_search: cannot write %s\n", path.c_str());
    std::exit(1);
  }
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  int dim = 384;
  std::vector<size_t> sizes = {10000, 100000};
  std::string dir;
  if (argc == 2 && std::string(argv[1]) == "--help") {
    std::printf(
        "usage: bench_search [--dim D] [--sizes N,N] [--dump DIR]\n"
        "One JSON line a corpus size: the fastest time of one query and of 100 queries (top 10)\n"
        "over random unit vectors [N, D] (default 384; 10000,100000), on the cpu backend\n"
        "(BERTRT_NUM_THREADS threads). --dump DIR writes the data for bench/search_vs_faiss.py.\n");
    return 0;
  }
  if (argc % 2 == 0) {
    std::fprintf(stderr, "usage: bench_search [--dim D] [--sizes N,N] [--dump DIR]\n");
    return 2;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--dim")
      dim = std::stoi(argv[i + 1]);
    else if (a == "--dump")
      dir = argv[i + 1];
    else if (a == "--sizes") {
      sizes.clear();
      std::string s = argv[i + 1];
      for (size_t p = 0; p < s.size();) {
        const size_t c = s.find(',', p);
        sizes.push_back(std::stoul(s.substr(p, c - p)));
        p = c == std::string::npos ? s.size() : c + 1;
      }
    } else {
      std::fprintf(stderr, "usage: bench_search [--dim D] [--sizes N,N] [--dump DIR]\n");
      return 2;
    }
  }
  auto be = bertrt::make_backend("cpu");
  constexpr size_t kQueries = 100, kTop = 10;
  const std::vector<float> q = unit_rows(kQueries, dim, 2);
  if (!dir.empty()) dump(dir + "/queries.f32", q.data(), q.size() * sizeof(float));
  for (size_t n : sizes) {
    const std::vector<float> c = unit_rows(n, dim, 1);
    const double one = bertrt::bench::best_seconds(
        [&] { bertrt::semantic_search(*be, q.data(), 1, c.data(), n, dim, kTop); }, 2.0);
    const double batch = bertrt::bench::best_seconds(
        [&] { bertrt::semantic_search(*be, q.data(), kQueries, c.data(), n, dim, kTop); }, 4.0);
    fmt::print("{{\"n\":{},\"dim\":{},\"one_query_ms\":{:.3f},\"100_queries_ms\":{:.2f}}}\n", n,
               dim, one * 1e3, batch * 1e3);
    if (!dir.empty()) {
      dump(fmt::format("{}/corpus_{}.f32", dir, n), c.data(), c.size() * sizeof(float));
      std::vector<int64_t> top;
      for (const auto& hits :
           bertrt::semantic_search(*be, q.data(), kQueries, c.data(), n, dim, kTop))
        for (const auto& h : hits) top.push_back(int64_t(h.index));
      dump(fmt::format("{}/top10_{}.i64", dir, n), top.data(), top.size() * sizeof(int64_t));
    }
  }
  return 0;
}
