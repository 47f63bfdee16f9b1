// bertrt plot: training curves from a --metrics JSON-lines file as an SVG picture: losses (top)
// and accuracies (bottom) against the step, train lines smoothed (means over bins of steps),
// held-out evaluations ("eval" records) as dashed lines with markers; axes, ticks, grid and a
// legend. Several files draw several runs in one picture, each in its own colours.
//
// SVG only, on purpose: it is text (diffable, testable with an XML parser), scales without
// blurring, shows in browsers and on GitHub, and needs no font rasteriser; a PNG would need one
// (or a bitmap font) for the tick labels. Convert with `rsvg-convert curve.svg > curve.png` when a
// raster is needed.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>

#include "common.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_excerpt.h"

namespace bertrt::cli {

namespace {

struct Series {
  std::string id, label, color;
  bool eval = false;
  std::vector<std::pair<double, double>> points;  // (step, value)
};

struct Panel {
  std::string title;
  std::vector<Series> series;
};

// Records by step, the last one winning (a resumed run may repeat steps).
struct Records {
  std::map<int64_t, nlohmann::json> train, eval;
  bool finetune = false;  // finetune's records: "eval" names the split, metrics at top level
};

// The drawn values of a record: a number, or null (a non-finite value); accuracies in [0, 1].
// Returns how many it has.
int check_values(const nlohmann::json& j, const std::string& path, size_t line) {
  int found = 0;
  for (const char* key : {"loss", "mlm_loss", "nsp_loss", "accuracy", "mlm_accuracy",
                          "nsp_accuracy"}) {
    if (!j.contains(key) || j[key].is_null()) continue;
    if (!j[key].is_number())
      fail("{}: line {}: \"{}\" must be a number, got {}", path, line, key, json_excerpt(j[key]));
    const double v = j[key].get<double>();
    if (std::strstr(key, "accuracy") && !(v >= 0 && v <= 1))
      fail("{}: line {}: \"{}\" must be in [0, 1], got {}", path, line, key, v);
    ++found;
  }
  return found;
}

Records read_metrics(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("{}: cannot open", path);
  Records r;
  std::string line;
  size_t torn = 0, values = 0;
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      if (in.peek() != EOF) fail("{}: line {}: not a JSON object", path, n);
      torn = n;  // a torn last line (killed run)
      break;
    }
    if (!j.contains("step") || !j["step"].is_number_integer()) continue;
    const int64_t step = j["step"].get<int64_t>();
    if (j.contains("eval") && j["eval"].is_object()) {  // pretrain: {"eval": {"mlm_loss", ...}}
      r.eval[step] = j["eval"];
      values += check_values(j["eval"], path, n);
    } else if (j.contains("eval") && j["eval"].is_string()) {  // finetune: {"eval": "dev", ...}
      r.eval[step] = j;
      r.finetune = true;
      values += check_values(j, path, n);
    } else {
      r.train[step] = j;
      if (j.contains("accuracy") && !j.contains("mlm_loss")) r.finetune = true;
      values += check_values(j, path, n);
    }
  }
  if (r.train.empty() && r.eval.empty()) {
    if (torn) fail("{}: line {}: not a JSON object", path, torn);
    fail("{}: no step or eval records (the JSON lines of --metrics)", path);
  }
  if (values == 0)
    fail("{}: its {} records hold no loss or accuracy to draw", path,
         r.train.size() + r.eval.size());
  return r;
}

std::optional<double> number(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number()) return std::nullopt;
  const double v = j[key].get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

// Means of consecutive bins of `window` points, each at its bin's last step: smooth, a bounded
// number of points for long runs, and each mean summed afresh (a running sum would drift).
std::vector<std::pair<double, double>> smooth(const std::vector<std::pair<double, double>>& p,
                                              size_t window) {
  std::vector<std::pair<double, double>> out;
  for (size_t begin = 0; begin < p.size(); begin += window) {
    const size_t end = std::min(p.size(), begin + window);
    double sum = 0;
    for (size_t i = begin; i < end; ++i) sum += p[i].second;
    out.push_back({p[end - 1].first, sum / double(end - begin)});
  }
  return out;
}

Series train_series(const Records& r, const char* key, const std::string& label,
                    const std::string& color, size_t window) {
  Series s{std::string("train-") + key, label, color, false, {}};
  for (const auto& [step, j] : r.train)
    if (auto v = number(j, key)) s.points.push_back({double(step), *v});
  s.points = smooth(s.points, window);
  return s;
}

Series eval_series(const Records& r, const char* key, const std::string& label,
                   const std::string& color) {
  Series s{std::string("eval-") + key, label, color, true, {}};
  for (const auto& [step, j] : r.eval)
    if (auto v = number(j, key)) s.points.push_back({double(step), *v});
  return s;
}

// 1, 2 or 5 × 10^k: about `target` ticks over [lo, hi].
double nice_step(double lo, double hi, int target) {
  const double raw = std::max(hi - lo, 1e-12) / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

std::string tick_label(double v, double step) {
  const int decimals = step >= 1 ? 0 : int(std::ceil(-std::log10(step)));
  return fmt::format("{:.{}f}", v, decimals);
}

// One panel in the rectangle (x0, y0, w, h) of the picture.
std::string render_panel(const Panel& panel, double x_max, double x0, double y0, double w,
                         double h) {
  double lo = INFINITY, hi = -INFINITY;
  for (const Series& s : panel.series)
    for (const auto& [x, y] : s.points) lo = std::min(lo, y), hi = std::max(hi, y);
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
  // A flat panel gets a band around its value, relative to it: ±0.5 next to 1e20 (a diverged
  // loss) vanishes in double, and the ticks below would never advance.
  if (hi - lo < 1e-9 * std::max(1.0, std::fabs(lo))) {
    const double pad = std::max(0.5, 0.05 * std::fabs(lo));
    lo -= pad, hi += pad;
  }
  const double ystep = nice_step(lo, hi, 5);
  lo = std::floor(lo / ystep) * ystep, hi = std::ceil(hi / ystep) * ystep;
  const double xstep = nice_step(0, x_max, 6);
  const double xhi = std::max(std::ceil(x_max / xstep) * xstep, xstep);
  auto X = [&](double x) { return x0 + w * x / xhi; };
  auto Y = [&](double y) { return y0 + h - h * (y - lo) / (hi - lo); };

  std::string svg = fmt::format("<g class=\"panel\" id=\"{}\">\n", escape(panel.title));
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"15\" font-weight=\"bold\">{}</text>\n",
                     x0, y0 - 10, escape(panel.title));
  // Grid, ticks and their labels.
  // Ticks counted, not accumulated: y += ystep may not move a large y.
  const long ny = std::lround((hi - lo) / ystep), nx = std::lround(xhi / xstep);
  for (long i = 0; i <= ny; ++i) {
    const double y = lo + double(i) * ystep;
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n",
                       x0, Y(y), x0 + w, Y(y));
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"black\"/>\n",
                       x0 - 5, Y(y), x0, Y(y));
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n",
                       x0 - 8, Y(y) + 4, tick_label(y, ystep));
  }
  for (long i = 0; i <= nx; ++i) {
    const double x = double(i) * xstep;
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#eee\"/>\n",
                       X(x), y0, X(x), y0 + h);
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"black\"/>\n",
                       X(x), y0 + h, X(x), y0 + h + 5);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\n",
                       X(x), y0 + h + 18, tick_label(x, xstep));
  }
  // Axes.
  svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"black\"/>\n",
                     x0, y0, y0 + h);
  svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"black\"/>\n",
                     x0, y0 + h, x0 + w);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"12\" text-anchor=\"middle\">step</text>\n",
                     x0 + w / 2, y0 + h + 34);
  // Curves.
  for (const Series& s : panel.series) {
    if (s.points.empty()) continue;
    std::string pts;
    for (const auto& [x, y] : s.points) pts += fmt::format("{:.1f},{:.1f} ", X(x), Y(y));
    svg += fmt::format("<polyline class=\"series\" id=\"{}\" fill=\"none\" stroke=\"{}\" "
                       "stroke-width=\"{}\"{} points=\"{}\"/>\n",
                       s.id, s.color, s.eval ? 2 : 1.5, s.eval ? " stroke-dasharray=\"6,4\"" : "",
                       pts);
    if (s.eval)
      for (const auto& [x, y] : s.points)
        svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", X(x),
                           Y(y), s.color);
  }
  // Legend, right of the plot area (never over a curve).
  double ly = y0 + 14;
  for (const Series& s : panel.series) {
    if (s.points.empty()) continue;
    const double lx = x0 + w + 20;
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
                       "stroke-width=\"2\"{}/>\n",
                       lx, ly - 4, lx + 24, ly - 4, s.color,
                       s.eval ? " stroke-dasharray=\"6,4\"" : "");
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"12\">{}</text>\n", lx + 30, ly,
                       escape(s.label));
    ly += 16;
  }
  return svg + "</g>\n";
}

// Colours of one run's series: loss, MLM, NSP, eval MLM, eval NSP.
struct Palette {
  const char *loss, *mlm, *nsp, *eval_mlm, *eval_nsp;
};
constexpr Palette kPalettes[] = {{"#1f77b4", "#2ca02c", "#ff7f0e", "#006400", "#b35900"},
                                 {"#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"},
                                 {"#17becf", "#bcbd22", "#393b79", "#637939", "#843c39"}};

// A label as an SVG id: letters, digits, '-' and '_' kept, anything else '-'.
std::string id_slug(const std::string& label) {
  std::string id = label;
  for (char& c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '-';
  return id;
}

// One metrics file and its label: with several files (runs compared, e.g. bertrt and the PyTorch
// PyTorch twin of a pre-training run) every series is named "<label>: ..." and its id gets a "<label>-" prefix.
struct Run {
  std::string label;
  Records records;
};

std::string render(const std::vector<Run>& runs, const std::string& title, size_t window) {
  const std::string avg = window > 1 ? fmt::format(" (means of {} steps)", window) : "";
  Panel loss{"loss", {}}, acc{"accuracy", {}};
  double x_max = 1;
  for (size_t i = 0; i < runs.size(); ++i) {
    const Records& r = runs[i].records;
    const Palette& c = kPalettes[i % std::size(kPalettes)];
    const std::string name = runs.size() > 1 ? runs[i].label + ": " : "";
    auto named = [&](Series s) {
      if (runs.size() > 1) s.id = id_slug(runs[i].label) + "-" + s.id;
      return s;
    };
    // Each file draws the series it has: pretrain's MLM and NSP, finetune's task loss and
    // accuracy (its eval records carry "loss" and "accuracy" at top level).
    for (Series s : {train_series(r, "loss", name + "train loss" + avg, c.loss, window),
                     train_series(r, "mlm_loss", name + "train MLM loss" + avg, c.mlm, window),
                     train_series(r, "nsp_loss", name + "train NSP loss" + avg, c.nsp, window),
                     eval_series(r, "loss", name + "eval loss", c.eval_mlm),
                     eval_series(r, "mlm_loss", name + "eval MLM loss", c.eval_mlm),
                     eval_series(r, "nsp_loss", name + "eval NSP loss", c.eval_nsp)})
      loss.series.push_back(named(std::move(s)));
    for (Series s :
         {train_series(r, "accuracy", name + "train accuracy" + avg, c.mlm, window),
          train_series(r, "mlm_accuracy", name + "train MLM accuracy" + avg, c.mlm, window),
          train_series(r, "nsp_accuracy", name + "train NSP accuracy" + avg, c.nsp, window),
          eval_series(r, "accuracy", name + "eval accuracy", c.eval_mlm),
          eval_series(r, "mlm_accuracy", name + "eval MLM accuracy", c.eval_mlm),
          eval_series(r, "nsp_accuracy", name + "eval NSP accuracy", c.eval_nsp)})
      acc.series.push_back(named(std::move(s)));
    if (!r.train.empty()) x_max = std::max(x_max, double(r.train.rbegin()->first));
    if (!r.eval.empty()) x_max = std::max(x_max, double(r.eval.rbegin()->first));
  }
  const double W = 1180, H = 760, plot_w = 800;
  std::string svg = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"24\" font-size=\"16\" text-anchor=\"middle\">{3}</text>\n",
      W, H, W / 2, escape(title));
  svg += render_panel(loss, x_max, 80, 70, plot_w, 270);
  svg += render_panel(acc, x_max, 80, 420, plot_w, 270);
  return svg + "</svg>\n";
}

}  // namespace

void add_plot(CLI::App& app) {
  struct Opts {
    std::vector<std::string> metrics, labels;
    std::string out;
    int smooth = 0;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* c = app.add_subcommand(
      "plot", "draw loss and accuracy curves (train and eval) of a --metrics file as SVG");
  c->add_option("metrics", o->metrics,
                "JSON lines written by `bertrt pretrain --metrics` or `bertrt finetune "
                "--metrics`; several files draw their runs "
                "in one picture (e.g. bertrt's run and a PyTorch run that wrote the same keys)")
      ->required();
  c->add_option("--label", o->labels,
                "name of each metrics file's run in the legend, in order (default: file stems)");
  c->add_option("-o,--output", o->out, "picture to write (.svg)")->required();
  c->add_option("--smooth", o->smooth,
                "plot train curves as means of this many steps (0: about 1/300 of the run, 1: raw)")
      ->capture_default_str()
      ->check(at_least(0));
  c->callback([o] {
    for (const std::string& m : o->metrics) check_input_file("metrics", m);
    if (!o->labels.empty() && o->labels.size() != o->metrics.size())
      fail_usage("--label given {} times for {} metrics files", o->labels.size(),
                 o->metrics.size());
    check_output_path("-o", o->out);
    FlagPaths inputs;
    for (const std::string& m : o->metrics) inputs.emplace_back("a metrics file", m);
    check_distinct_files({{"-o", o->out}}, inputs);
    const std::string ext = std::filesystem::path(o->out).extension().string();
    if (ext != ".svg") {
      const std::string stem = std::filesystem::path(o->out).stem().string();
      fail("-o {}: only SVG is written (a PNG needs a font rasteriser); write -o {}.svg and "
           "convert it if needed (`rsvg-convert {}.svg > {}.png`)", o->out, stem, stem, stem);
    }
    std::vector<Run> runs;
    std::vector<std::string> files;
    size_t train_steps = 0, total_steps = 0, evals = 0;  // train_steps: the longest run's
    for (size_t i = 0; i < o->metrics.size(); ++i) {
      const std::filesystem::path p(o->metrics[i]);
      runs.push_back(
          {o->labels.empty() ? p.stem().string() : o->labels[i], read_metrics(p.string())});
      files.push_back(p.filename().string());
      train_steps = std::max(train_steps, runs.back().records.train.size());
      total_steps += runs.back().records.train.size();
      evals += runs.back().records.eval.size();
    }
    const size_t window =
        o->smooth > 0 ? size_t(o->smooth) : std::max<size_t>(1, train_steps / 300);
    const bool finetune = std::all_of(runs.begin(), runs.end(),
                                      [](const Run& r) { return r.records.finetune; });
    const std::string svg = render(
        runs,
        fmt::format("bertrt {}: {}", finetune ? "finetune" : "pretrain", fmt::join(files, " vs ")),
        window);
    AtomicFile f(o->out);
    f.write(svg.data(), svg.size());
    f.commit();
    fmt::print("wrote {} ({} run(s), {} train steps, {} evaluations)\n", o->out, runs.size(),
               total_steps, evals);  // totals over the runs
  });
}

}  // namespace bertrt::cli
