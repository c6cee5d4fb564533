// Hand-written SVG for the live-bytes timeline: no dependency, opens in any browser.
#include "cli/size_timeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cli/cli_args.h"

namespace remat {
namespace cli {
namespace {

const int kWidth = 960;
const int kPlotLeft = 100, kPlotRight = kWidth - 30, kPlotTop = 60, kPlotBottom = 420;
const int kLegendLine = 22;

// Colour by strategy, so `none` is the same red in every picture.
const char* colour_of(const std::string& strategy, size_t index) {
  static const char* const kSpare[] = {"#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  if (strategy == "none") return "#d62728";
  if (strategy == "sqrt") return "#1f77b4";
  if (strategy == "selective") return "#2ca02c";
  if (strategy == "budget") return "#9467bd";
  if (strategy.compare(0, 7, "manual:") == 0) return "#ff7f0e";
  return kSpare[index % 5];
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

std::string fmt(const char* format, double a) {
  char b[64];
  std::snprintf(b, sizeof(b), format, a);
  return b;
}

// A step of 1, 2 or 5 times a power of ten giving about |count| intervals over [0, |top|].
double nice_step(double top, int count) {
  const double raw = std::max(top / count, 1e-12);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw) return m * magnitude;
  }
  return 10.0 * magnitude;
}

}  // namespace

void timeline_size(size_t series, int* out_width, int* out_height) {
  *out_width = kWidth;
  *out_height = kPlotBottom + 70 + kLegendLine * static_cast<int>(std::max<size_t>(series, 1));
}

std::string timeline_svg(const std::string& title, const std::vector<SizeRow>& all_rows) {
  std::vector<const SizeRow*> rows;
  for (const SizeRow& r : all_rows) {
    if (r.ok() && !r.live_bytes.empty()) rows.push_back(&r);
  }
  int width = 0, height = 0;
  timeline_size(rows.size(), &width, &height);
  uint64_t peak = 1;
  size_t ops = 1, backward = SIZE_MAX;
  for (const SizeRow* r : rows) {
    peak = std::max(peak, *std::max_element(r->live_bytes.begin(), r->live_bytes.end()));
    ops = std::max(ops, r->op_count);
    backward = std::min(backward, r->backward_start);
  }
  // Y axis in the largest binary unit below the peak, with 1-2-5 steps.
  const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double unit = 1.0;
  while (u < 4 && static_cast<double>(peak) >= unit * 1024.0) {
    unit *= 1024.0;
    ++u;
  }
  const double y_step = nice_step(static_cast<double>(peak) / unit, 6);
  const double y_top = std::ceil(static_cast<double>(peak) / unit / y_step) * y_step * unit;
  const double x_step = std::max(1.0, nice_step(static_cast<double>(ops), 8));
  const double x_top = std::ceil(static_cast<double>(ops) / x_step) * x_step;
  const double plot_w = kPlotRight - kPlotLeft, plot_h = kPlotBottom - kPlotTop;
  auto px = [&](double op) { return kPlotLeft + plot_w * op / x_top; };
  auto py = [&](double bytes) { return kPlotBottom - plot_h * bytes / y_top; };

  std::string s;
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) +
       "\" height=\"" + std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(width) + " " +
       std::to_string(height) +
       "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"13\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  std::string shown = title.size() > 110 ? title.substr(0, 107) + "..." : title;
  s += "<text x=\"" + std::to_string(kPlotLeft) +
       "\" y=\"26\" font-size=\"16\" font-weight=\"bold\">Arena bytes live at each op</text>\n";
  s += "<text x=\"" + std::to_string(kPlotLeft) + "\" y=\"46\" fill=\"#555\">" + escape(shown) +
       "</text>\n";
  // The forward pass, shaded; the backward pass (with recomputed ops) follows.
  if (!rows.empty() && backward > 0) {
    s += "<rect x=\"" + fmt("%.1f", px(0)) + "\" y=\"" + std::to_string(kPlotTop) + "\" width=\"" +
         fmt("%.1f", px(static_cast<double>(backward)) - px(0)) + "\" height=\"" +
         fmt("%.0f", plot_h) + "\" fill=\"#f0f0f0\"/>\n";
    s += "<text x=\"" + fmt("%.1f", px(static_cast<double>(backward)) - 6) + "\" y=\"" +
         std::to_string(kPlotTop + 16) + "\" text-anchor=\"end\" fill=\"#555\">forward</text>\n";
    s += "<text x=\"" + fmt("%.1f", px(static_cast<double>(backward)) + 6) + "\" y=\"" +
         std::to_string(kPlotTop + 16) +
         "\" fill=\"#555\">backward (recomputed ops inline)</text>\n";
  }
  // Grid and axes.
  s += "<g stroke=\"#ddd\" stroke-width=\"1\">\n";
  for (double v = y_step; v * unit <= y_top + 0.5; v += y_step) {
    s += "<line x1=\"" + std::to_string(kPlotLeft) + "\" x2=\"" + std::to_string(kPlotRight) +
         "\" y1=\"" + fmt("%.1f", py(v * unit)) + "\" y2=\"" + fmt("%.1f", py(v * unit)) + "\"/>\n";
  }
  s += "</g>\n<g fill=\"#333\">\n";
  for (double v = 0; v * unit <= y_top + 0.5; v += y_step) {
    s += "<text x=\"" + std::to_string(kPlotLeft - 8) + "\" y=\"" + fmt("%.1f", py(v * unit) + 4) +
         "\" text-anchor=\"end\">" + fmt("%g", v) + " " + kUnits[u] + "</text>\n";
  }
  for (double v = 0; v <= x_top + 0.5; v += x_step) {
    s += "<text x=\"" + fmt("%.1f", px(v)) + "\" y=\"" + std::to_string(kPlotBottom + 18) +
         "\" text-anchor=\"middle\">" + fmt("%.0f", v) + "</text>\n";
  }
  s += "</g>\n";
  s += "<text x=\"" + fmt("%.1f", kPlotLeft + plot_w / 2) + "\" y=\"" +
       std::to_string(kPlotBottom + 40) + "\" text-anchor=\"middle\">op index in the step</text>\n";
  s += "<text transform=\"translate(22," + fmt("%.1f", kPlotTop + plot_h / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">bytes live in the arena</text>\n";
  s += "<path d=\"M" + std::to_string(kPlotLeft) + " " + std::to_string(kPlotTop) + " V" +
       std::to_string(kPlotBottom) + " H" + std::to_string(kPlotRight) +
       "\" fill=\"none\" stroke=\"#333\"/>\n";

  for (size_t k = 0; k < rows.size(); ++k) {
    const SizeRow& r = *rows[k];
    const char* colour = colour_of(r.strategy, k);
    // Where this plan's backward pass starts.
    s += "<line x1=\"" + fmt("%.1f", px(static_cast<double>(r.backward_start))) + "\" x2=\"" +
         fmt("%.1f", px(static_cast<double>(r.backward_start))) + "\" y1=\"" +
         std::to_string(kPlotTop) + "\" y2=\"" + std::to_string(kPlotBottom) + "\" stroke=\"" +
         colour + "\" stroke-width=\"1\" stroke-dasharray=\"5,4\"/>\n";
    // A step line: live bytes hold from op i to op i + 1. Past two points per pixel column,
    // each column keeps its lowest and highest value so peaks and troughs survive.
    std::string points;
    auto add = [&](double x, double bytes) {
      points += fmt("%.1f", x) + "," + fmt("%.1f", py(bytes)) + " ";
    };
    const size_t n = r.live_bytes.size();
    if (n <= static_cast<size_t>(2 * plot_w)) {
      for (size_t i = 0; i < n; ++i) {
        add(px(static_cast<double>(i)), static_cast<double>(r.live_bytes[i]));
        add(px(static_cast<double>(i + 1)), static_cast<double>(r.live_bytes[i]));
      }
    } else {
      size_t i = 0;
      for (int column = 0; i < n; ++column) {
        const double x_end = x_top * (column + 1) / plot_w;
        uint64_t lo = r.live_bytes[i], hi = r.live_bytes[i];
        size_t lo_at = i, hi_at = i;
        for (; i < n && static_cast<double>(i) < x_end; ++i) {
          if (r.live_bytes[i] < lo) {
            lo = r.live_bytes[i];
            lo_at = i;
          }
          if (r.live_bytes[i] > hi) {
            hi = r.live_bytes[i];
            hi_at = i;
          }
        }
        const double x = kPlotLeft + column + 0.5;
        add(x, static_cast<double>(lo_at < hi_at ? lo : hi));
        add(x, static_cast<double>(lo_at < hi_at ? hi : lo));
      }
    }
    s += "<polyline fill=\"none\" stroke=\"" + std::string(colour) +
         "\" stroke-width=\"1.6\" stroke-linejoin=\"round\" points=\"" + points + "\"/>\n";
    // Legend entry.
    const int y = kPlotBottom + 70 + kLegendLine * static_cast<int>(k);
    const uint64_t top = *std::max_element(r.live_bytes.begin(), r.live_bytes.end());
    s += "<line x1=\"" + std::to_string(kPlotLeft) + "\" x2=\"" + std::to_string(kPlotLeft + 28) +
         "\" y1=\"" + std::to_string(y - 4) + "\" y2=\"" + std::to_string(y - 4) + "\" stroke=\"" +
         colour + "\" stroke-width=\"3\"/>\n";
    std::string strategy = r.strategy.size() > 40 ? r.strategy.substr(0, 37) + "..." : r.strategy;
    s += "<text x=\"" + std::to_string(kPlotLeft + 36) + "\" y=\"" + std::to_string(y) + "\">" +
         escape(strategy) + ", batch " + std::to_string(r.batch) + ": peak live " +
         format_bytes(top) + ", arena " + format_bytes(r.arena_bytes) + ", recomputed " +
         fmt("%.1f", 100.0 * r.recomputed_share()) + "% of the step's flops</text>\n";
  }
  if (rows.empty()) {
    s += "<text x=\"" + fmt("%.1f", kPlotLeft + plot_w / 2) + "\" y=\"" +
         fmt("%.1f", kPlotTop + plot_h / 2) + "\" text-anchor=\"middle\">no plan compiled</text>\n";
  }
  s += "</svg>\n";
  return s;
}

}  // namespace cli
}  // namespace remat
