// AdamW against its definitions, run in Python at test time (/usr/bin/python3 with torch):
//   - bias_correction = true: torch.optim.AdamW itself (weight decay 0.01);
//   - bias_correction = false: the original BERT AdamWeightDecayOptimizer
//     (google-research/bert optimization.py), hand-written in float32 torch ops:
//       m = β1·m + (1 − β1)·g;  v = β2·v + (1 − β2)·g²;  u = m/(√v + eps) + wd·p;  p −= lr·u.
// Three steps on a small vector, both backends. The expected numbers come from Python, never
// from this file. Skipped (visibly) when python3 or torch is missing.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "backends/backend.h"
#include "op_test_util.h"
#include "test_util.h"

namespace bertrt {
namespace {

using test::kEps;
using test::randn;

using test::have_torch;
using test::kPython;

// Runs `script` with python3 and returns its stdout; empty on failure.
std::string run_python(const std::string& script) {
  char path[] = "/tmp/bertrt_adamw_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return {};
  close(fd);
  std::ofstream(path) << script;
  const std::string cmd = std::string(kPython) + " " + path;
  std::string out;
  if (FILE* pipe = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, got);
    if (pclose(pipe) != 0) out.clear();
  }
  std::remove(path);
  return out;
}

// "label v0 v1 ..." lines → label → values.
std::map<std::string, std::vector<float>> parse(const std::string& text) {
  std::map<std::string, std::vector<float>> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string label;
    ls >> label;
    double x;
    while (ls >> x) rows[label].push_back(static_cast<float>(x));
  }
  return rows;
}

// Exact decimal of a float (as a double, which holds it exactly).
std::string py(float x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", static_cast<double>(x));
  return buf;
}

std::string py_list(const std::vector<float>& v) {
  std::string s = "[";
  for (float x : v) s += py(x) + ", ";
  return s + "]";
}

std::string script(const std::vector<float>& p0, const std::vector<std::vector<float>>& grads,
                   const AdamWHyper& h) {
  std::string s = "import torch\n"
                  "f = lambda xs: torch.tensor(xs, dtype=torch.float32)\n"
                  "show = lambda label, t: print(label, ' '.join(repr(float(x)) for x in t))\n";
  s += "p0 = f(" + py_list(p0) + ")\ngrads = [";
  for (const auto& g : grads) s += "f(" + py_list(g) + "), ";
  s += "]\n";
  s += "lr, b1, b2, eps, wd = " + py(h.lr) + ", " + py(h.beta1) + ", " + py(h.beta2) + ", " +
       py(h.eps) + ", " + py(h.weight_decay) + "\n";
  s += "p = p0.clone().requires_grad_(True)\n"
       "opt = torch.optim.AdamW([p], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)\n"
       "for t, g in enumerate(grads, 1):\n"
       "    p.grad = g.clone()\n"
       "    opt.step()\n"
       "    show('torch_p%d' % t, p.detach())\n"
       "show('torch_m', opt.state[p]['exp_avg'])\n"
       "show('torch_v', opt.state[p]['exp_avg_sq'])\n"
       // google-research/bert optimization.py AdamWeightDecayOptimizer.apply_gradients
       "p = p0.clone(); m = torch.zeros_like(p); v = torch.zeros_like(p)\n"
       "for t, g in enumerate(grads, 1):\n"
       "    m = b1 * m + (1.0 - b1) * g\n"
       "    v = b2 * v + (1.0 - b2) * torch.square(g)\n"
       "    update = m / (torch.sqrt(v) + eps)\n"
       "    update = update + wd * p\n"
       "    p = p - lr * update\n"
       "    show('bert_p%d' % t, p)\n"
       "show('bert_m', m)\n"
       "show('bert_v', v)\n";
  return s;
}

void compare(const std::string& what, const std::vector<float>& want, const std::vector<float>& got,
             double scale_floor) {
  // Same float operations as the Python side; only the order of a multiply by a scalar and FMA
  // contraction can move a rounding: a few eps relative, and ~eps of the step size lr for p.
  std::vector<double> tol(want.size());
  for (size_t i = 0; i < want.size(); ++i) tol[i] = 8 * kEps * (std::fabs(want[i]) + scale_floor);
  EXPECT_TRUE(test::all_close(want, got, tol)) << what;
}

void run_case(bool bias_correction) {
  if (!have_torch()) GTEST_SKIP() << kPython << " with torch is needed for the AdamW reference";
  const int n = 9;
  AdamWHyper h;
  h.lr = 1e-2f;
  h.weight_decay = 0.01f;
  h.eps = bias_correction ? 1e-8f : 1e-6f;  // BERT used eps = 1e-6
  h.bias_correction = bias_correction;
  const auto p0 = randn(n, 1);
  std::vector<std::vector<float>> grads;
  for (int t = 0; t < 3; ++t) grads.push_back(randn(n, 10 + t, t == 1 ? 1e-3f : 0.5f));
  const std::string out = run_python(script(p0, grads, h));
  ASSERT_FALSE(out.empty()) << "python reference script failed";
  auto want = parse(out);
  const std::string tag = bias_correction ? "torch_" : "bert_";

  for (const std::string& name : test::host_backend_names()) {
    SCOPED_TRACE(name);
    auto be = make_backend(name);
    auto p = p0;
    std::vector<float> m(n, 0.0f), v(n, 0.0f);
    for (int t = 1; t <= 3; ++t) {
      be->adamw_step(p.data(), m.data(), v.data(), grads[t - 1].data(), n, h, t);
      compare(tag + "p" + std::to_string(t), want[tag + "p" + std::to_string(t)], p, h.lr);
    }
    compare(tag + "m", want[tag + "m"], m, 0.0);
    compare(tag + "v", want[tag + "v"], v, 0.0);
  }
}

TEST(AdamW, MatchesTorchAdamW) { run_case(true); }
TEST(AdamW, BiasCorrectionOffMatchesOriginalBert) { run_case(false); }

}  // namespace
}  // namespace bertrt
