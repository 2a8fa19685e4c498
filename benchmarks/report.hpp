// SPDX-License-Identifier: BSD-3-Clause
/// \file
/// Roofline results and their writers: the JSON report (schema rooftop-report/1, see
/// README.md), CSV, an SVG roofline plot, and the terminal table.
#pragma once

#include "ceilings.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace rooftop::harness {

/// One op at one dtype and shape, measured and placed under its roof.
struct Result {
  std::string op;
  DType dtype = DType::fp32;
  std::vector<std::int64_t> shape;
  Cost cost;
  Timing timing;
  double gbs = 0, gflops = 0;
  double bandwidth_roof_gbs = 0, peak_gflops = 0, roof_gflops = 0, roof_fraction = 0;
  // The same roof with the bandwidth the ceiling kernels got while this op was timed (their
  // runs interleaved with its runs): op and ceiling in the same machine state.
  double paired_bandwidth_gbs = 0, paired_roof_fraction = 0;
  std::string bound;     // "memory" or "compute"
  bool cache_resident = false;
  bool matrix_units = false;  // held to the matrix units' peak (tensor cores)
  double streamable_output_bytes = 0;  // OpInstance's (not reported)
  bool verified = false;
  std::string verify_error;
};

/// Fills the derived fields of r from its cost and timing (best time) and the ceilings.
/// The roof time is max(flops / peak, bytes / bandwidth); roof_fraction = roof time / time,
/// which equals GFLOP/s over the roof for ops with FLOPs and GB/s over the bandwidth for ops
/// without.
inline void place_under_roof(Result& r, const Ceilings& c) {
  const double t = r.timing.seconds_min;
  r.gbs = r.cost.bytes / t * 1e-9;
  r.gflops = r.cost.flops / t * 1e-9;
  r.cache_resident = c.is_cache_resident(r.cost.bytes);
  r.bandwidth_roof_gbs = c.bandwidth_for(r.cost.bytes);
  r.peak_gflops = c.peak_for(r.dtype, r.matrix_units);
  r.roof_gflops = std::min(r.peak_gflops, r.cost.ai() * r.bandwidth_roof_gbs);
  r.bound = r.cost.bytes / r.bandwidth_roof_gbs >= r.cost.flops / r.peak_gflops ? "memory" : "compute";
  r.roof_fraction = c.roof_seconds(r.cost, r.dtype, r.matrix_units) / t;
  // Paired samples come from the ceiling kernels at the op's working set (the cache's where it
  // is cache-resident): none where those are not its roof (Ceilings::uses_cache_roof).
  r.paired_roof_fraction = 0;
  if (r.paired_bandwidth_gbs > 0 && r.cache_resident == c.uses_cache_roof(r.cost.bytes))
    r.paired_roof_fraction = std::max(r.cost.bytes / (r.paired_bandwidth_gbs * 1e9), r.cost.flops / (r.peak_gflops * 1e9)) / t;
}

struct SystemInfo {
  std::string backend, kokkos_version, device, compiler, git, timestamp;
  int concurrency = 0;
  std::string pages;                  // host page policy (huge_pages.hpp)
  long long anon_huge_page_bytes = -1;  // of the process, with the ceiling arrays allocated
  // Host outputs of at least this many bytes streamed (rooftop::streaming_store_threshold());
  // null in the report where none are (GPU backends, "never", hosts without streaming stores).
  std::optional<std::size_t> streaming_store_threshold;
};

inline nlohmann::json to_json(const SystemInfo& s, const Ceilings& c, const std::vector<Result>& results) {
  nlohmann::json j;
  j["schema"] = "rooftop-report/1";
  j["system"] = {{"backend", s.backend}, {"kokkos_version", s.kokkos_version}, {"device", s.device},
                 {"concurrency", s.concurrency}, {"compiler", s.compiler}, {"git", s.git}, {"timestamp", s.timestamp},
                 {"pages", s.pages}, {"anon_huge_page_bytes", s.anon_huge_page_bytes}};
  j["system"]["streaming_store_threshold_bytes"] =
      s.streaming_store_threshold ? nlohmann::json(*s.streaming_store_threshold) : nlohmann::json(nullptr);
  j["ceilings"] = {{"bandwidth_gbs", c.bandwidth_gbs},
                   {"peak_gflops", {{"fp32", c.peak_gflops_fp32}, {"fp64", c.peak_gflops_fp64}}},
                   {"launch_overhead_us", c.launch_overhead_us},
                   {"last_level_cache_bytes", static_cast<long long>(c.llc_bytes)},  // whole numbers of bytes
                   {"main_memory_working_set_bytes", static_cast<long long>(c.main_memory_bytes)}};
  if (c.peak_gflops_bf16_matrix > 0) j["ceilings"]["peak_gflops"]["bf16_matrix"] = c.peak_gflops_bf16_matrix;
  if (c.peak_gflops_fp16_matrix > 0) j["ceilings"]["peak_gflops"]["fp16_matrix"] = c.peak_gflops_fp16_matrix;
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& r : results) {
    nlohmann::json o = {{"op", r.op}, {"dtype", dtype_name(r.dtype)}, {"shape", r.shape},
                        {"flops", r.cost.flops}, {"bytes", r.cost.bytes}, {"ai", r.cost.ai()},
                        {"seconds_min", r.timing.seconds_min}, {"seconds_median", r.timing.seconds_median},
                        {"repetitions", r.timing.repetitions}, {"gbs", r.gbs}, {"gflops", r.gflops},
                        {"roof_gflops", r.roof_gflops}, {"roof_fraction", r.roof_fraction}, {"bound", r.bound},
                        {"bandwidth_roof_gbs", r.bandwidth_roof_gbs}, {"cache_resident", r.cache_resident},
                        {"paired_bandwidth_gbs", r.paired_bandwidth_gbs}, {"paired_roof_fraction", r.paired_roof_fraction},
                        {"peak_gflops", r.peak_gflops}, {"matrix_units", r.matrix_units}, {"verified", r.verified}};
    if (!r.verified) o["verify_error"] = r.verify_error;
    ops.push_back(o);
  }
  j["ops"] = ops;
  return j;
}

inline std::string to_csv(const std::vector<Result>& results) {
  std::ostringstream o;
  o << "op,dtype,shape,flops,bytes,ai,seconds_min,seconds_median,gbs,gflops,roof_gflops,roof_fraction,bound,"
       "cache_resident,verified,paired_bandwidth_gbs,paired_roof_fraction,matrix_units,bandwidth_roof_gbs,peak_gflops\n";
  o.precision(9);
  // FLOPs and bytes whole, as report.json has them (9 digits made gemm n = 2048's 17179869184
  // FLOPs 1.71798692e+10).
  const auto count = [](double v) {
    std::ostringstream c;
    if (v == std::floor(v) && std::abs(v) < 0x1p63) c << static_cast<std::int64_t>(v);
    else c << std::setprecision(17) << v;
    return c.str();
  };
  for (const auto& r : results)
    o << r.op << ',' << dtype_name(r.dtype) << ',' << shape_string(r.shape) << ',' << count(r.cost.flops) << ',' << count(r.cost.bytes) << ','
      << r.cost.ai() << ',' << r.timing.seconds_min << ',' << r.timing.seconds_median << ',' << r.gbs << ',' << r.gflops << ','
      << r.roof_gflops << ',' << r.roof_fraction << ',' << r.bound << ',' << (r.cache_resident ? "true" : "false") << ','
      << (r.verified ? "true" : "false") << ',' << r.paired_bandwidth_gbs << ',' << r.paired_roof_fraction << ','
      << (r.matrix_units ? "true" : "false") << ',' << r.bandwidth_roof_gbs << ',' << r.peak_gflops << '\n';
  return o.str();
}

/// `text` with the characters XML gives meaning to escaped, for the SVG's text (a device name
/// or a git description may hold an '&').
inline std::string xml_text(const std::string& text) {
  std::string out;
  for (const char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '\'': out += "&apos;"; break;
      case '"': out += "&quot;"; break;
      default: out += ch;
    }
  }
  return out;
}

/// Log-log roofline: x = arithmetic intensity (FLOP/byte), y = GFLOP/s. Ceilings are lines;
/// each op is a point at its largest size, labelled "op/dtype". Ops without FLOPs (copy)
/// have no place on these axes and are listed beside the plot with their GB/s.
inline std::string to_svg(const SystemInfo& s, const Ceilings& c, const std::vector<Result>& results) {
  const double W = 980, H = 620, left = 80, right = 700, top = 50, bottom = 560;
  double x_min = 1.0 / 64, x_max = 64, y_min = 0.1, y_max = 1;
  y_max = std::max({c.peak_gflops_fp32, c.peak_gflops_fp64, c.peak_gflops_bf16_matrix, c.peak_gflops_fp16_matrix, 1.0}) * 3;
  // A point needs a positive, finite intensity and rate on log axes (an op of FLOPs and no
  // bytes, or a zero time, would have none): others are left off the plot.
  auto plotted = [](const Result& r) {
    return r.cost.flops > 0 && r.cost.bytes > 0 && std::isfinite(r.cost.ai()) && std::isfinite(r.gflops) && r.gflops > 0;
  };
  for (const auto& r : results)
    if (plotted(r)) {
      x_min = std::min(x_min, r.cost.ai() / 2);
      x_max = std::max(x_max, r.cost.ai() * 2);
      y_min = std::min(y_min, r.gflops / 2);
    }
  y_min = std::pow(10, std::floor(std::log10(std::max(y_min, 1e-3))));
  auto X = [&](double ai) { return left + (right - left) * std::log(ai / x_min) / std::log(x_max / x_min); };
  auto Y = [&](double g) { return bottom - (bottom - top) * std::log(g / y_min) / std::log(y_max / y_min); };
  std::ostringstream o;
  o.precision(4);
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H << "' font-family='sans-serif' font-size='11'>\n"
    << "<rect width='100%' height='100%' fill='white'/>\n"
    << "<text x='" << left << "' y='22' font-size='14' font-weight='bold'>rooftop roofline: " << xml_text(s.backend) << ", " << xml_text(s.device)
    << " (" << s.concurrency << " threads)</text>\n"
    << "<rect x='" << left << "' y='" << top << "' width='" << right - left << "' height='" << bottom - top
    << "' fill='none' stroke='#333'/>\n";
  // Decade grid and tick labels.
  for (double d = std::pow(10, std::ceil(std::log10(x_min))); d <= x_max; d *= 10)
    o << "<line x1='" << X(d) << "' y1='" << top << "' x2='" << X(d) << "' y2='" << bottom << "' stroke='#ddd'/>"
      << "<text x='" << X(d) << "' y='" << bottom + 15 << "' text-anchor='middle'>" << d << "</text>\n";
  for (double d = y_min; d <= y_max; d *= 10)
    o << "<line x1='" << left << "' y1='" << Y(d) << "' x2='" << right << "' y2='" << Y(d) << "' stroke='#ddd'/>"
      << "<text x='" << left - 6 << "' y='" << Y(d) + 4 << "' text-anchor='end'>" << d << "</text>\n";
  o << "<text x='" << (left + right) / 2 << "' y='" << bottom + 35 << "' text-anchor='middle'>arithmetic intensity (FLOP / byte)</text>\n"
    << "<text transform='translate(22," << (top + bottom) / 2 << ") rotate(-90)' text-anchor='middle'>GFLOP/s</text>\n";
  // Ceilings: one roof per (bandwidth, peak) pair, drawn as a polyline min(peak, ai * bw).
  auto roof = [&](double bw, double peak, const char* color, const std::string& label, bool dashed) {
    const double ridge = peak / bw;
    const double x0 = x_min, x1 = std::min(std::max(ridge, x_min), x_max);
    o << "<polyline fill='none' stroke='" << color << "' stroke-width='2'" << (dashed ? " stroke-dasharray='6,4'" : "") << " points='"
      << X(x0) << ',' << Y(std::max(x0 * bw, y_min)) << ' ' << X(x1) << ',' << Y(std::min(x1 * bw, peak)) << ' ' << X(x_max) << ','
      << Y(peak) << "'/>\n"
      << "<text x='" << right - 4 << "' y='" << Y(peak) - 4 << "' text-anchor='end' fill='" << color << "'>" << label << "</text>\n";
  };
  std::ostringstream l32, l64;
  l32.precision(4);
  l64.precision(4);
  l32 << "FP32 peak " << c.peak_gflops_fp32 << " GFLOP/s";
  l64 << "FP64 peak " << c.peak_gflops_fp64 << " GFLOP/s";
  roof(c.dram(), c.peak_gflops_fp32, "#c0392b", l32.str(), false);
  roof(c.dram(), c.peak_gflops_fp64, "#2c3e50", l64.str(), false);
  if (c.peak_gflops_bf16_matrix > 0) {
    std::ostringstream lm;
    lm.precision(4);
    lm << "matrix units bf16 " << c.peak_gflops_bf16_matrix;
    if (c.peak_gflops_fp16_matrix > 0) lm << ", fp16 " << c.peak_gflops_fp16_matrix;
    lm << " GFLOP/s";
    roof(c.dram(), std::max(c.peak_gflops_bf16_matrix, c.peak_gflops_fp16_matrix), "#8e44ad", lm.str(), false);
  }
  if (c.cache_above_memory()) roof(c.bandwidth_gbs.at("llc"), c.peak_gflops_fp32, "#e67e22", "", true);
  o << "<text x='" << X(x_min) + 6 << "' y='" << Y(std::max(x_min * c.dram(), y_min)) - 6 << "' fill='#c0392b'>DRAM " << c.dram()
    << " GB/s</text>\n";
  if (c.cache_above_memory())
    o << "<text x='" << X(x_min) + 6 << "' y='" << Y(std::max(x_min * c.bandwidth_gbs.at("llc"), y_min)) - 6
      << "' fill='#e67e22'>LLC " << c.bandwidth_gbs.at("llc") << " GB/s (dashed)</text>\n";
  // Host <-> device links (GPU backends): bandwidth-only roofs, dotted.
  double link_y = Y(y_min) - 6;
  for (const char* link : {"h2d_pinned", "h2d_pageable", "d2h_pinned", "d2h_pageable"}) {
    if (!c.bandwidth_gbs.count(link)) continue;
    const double bw = c.bandwidth_gbs.at(link);
    const double x0 = std::max(x_min, y_min / bw), x1 = std::min(x_max, y_max / bw);
    o << "<line x1='" << X(x0) << "' y1='" << Y(x0 * bw) << "' x2='" << X(x1) << "' y2='" << Y(x1 * bw)
      << "' stroke='#95a5a6' stroke-dasharray='2,3'/>\n"
      << "<text x='" << right - 4 << "' y='" << link_y << "' text-anchor='end' fill='#7f8c8d'>" << link << " " << bw
      << " GB/s (dotted)</text>\n";
    link_y -= 14;
  }
  // Points: every measured size; labels at the largest size of each op/dtype.
  const char* colors[] = {"#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};
  std::vector<std::string> names;
  double list_y = top + 10;
  o << "<text x='" << right + 20 << "' y='" << list_y << "' font-weight='bold'>0-FLOP ops, largest size (GB/s, fraction of roof)</text>\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    const std::string key = r.op + "/" + dtype_name(r.dtype);
    bool largest = true;  // the largest working set of its op and dtype (the last of equals)
    for (std::size_t k = 0; k < results.size(); ++k)
      if (k != i && results[k].op == r.op && results[k].dtype == r.dtype &&
          (results[k].cost.bytes > r.cost.bytes || (results[k].cost.bytes == r.cost.bytes && k > i)))
        largest = false;
    if (r.cost.flops <= 0) {
      if (largest) {
        list_y += 15;
        o << "<text x='" << right + 20 << "' y='" << list_y << "'>" << key << ": " << r.gbs << " GB/s, " << r.roof_fraction
          << "</text>\n";
      }
      continue;
    }
    if (!plotted(r)) continue;
    auto it = std::find(names.begin(), names.end(), r.op);
    if (it == names.end()) it = names.insert(names.end(), r.op);
    const char* color = colors[(it - names.begin()) % 8];
    o << "<circle cx='" << X(r.cost.ai()) << "' cy='" << Y(r.gflops) << "' r='" << (largest ? 4 : 2.5) << "' fill='"
      << (r.verified ? color : "red") << "' fill-opacity='" << (r.cache_resident ? 0.35 : 0.9) << "'><title>" << key << " "
      << shape_string(r.shape) << ": " << r.gflops << " GFLOP/s, " << r.gbs << " GB/s, " << r.roof_fraction << " of roof</title></circle>\n";
    if (largest)
      o << "<text x='" << X(r.cost.ai()) + 6 << "' y='" << Y(r.gflops) + 3 << "' fill='" << color << "' font-size='9'>" << key
        << "</text>\n";
  }
  o << "<text x='" << right + 20 << "' y='" << bottom << "' font-size='10'>Faint points: cache-resident sizes ("
    << (c.cache_above_memory() ? "LLC roof" : "DRAM roof: LLC not above it") << ").</text>\n"
    << "<text x='" << right + 20 << "' y='" << bottom + 14 << "' font-size='10'>" << xml_text(s.git + " " + s.timestamp) << "</text>\n"
    << "</svg>\n";
  return o.str();
}

/// Where an earlier run's report file is kept: "report.json" -> "report.prev.json".
inline std::string previous_path(const std::string& path) {
  const auto slash = path.find_last_of('/'), dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + ".prev";
  return path.substr(0, dot) + ".prev" + path.substr(dot);
}

/// Why path's previous_path cannot take an earlier report (it is a directory, which a file is
/// not renamed over nor removed in place of), or "" where it can. The harness asks at start-up,
/// before a sweep of many minutes.
inline std::string cannot_keep(const std::string& path) {
  const std::string to = previous_path(path);
  std::error_code ignored;
  if (std::filesystem::is_directory(to, ignored))
    return "cannot keep the previous " + path + " as " + to + ": " + to + " is a directory";
  return "";
}

/// Renames each of paths that exists to its previous_path (replacing an older one there) and
/// returns the new names, so that a new run's first report does not overwrite the last run's.
/// The previous_path of one that does not exist is removed, so the kept files are all of one
/// run. All or nothing: paths are checked with cannot_keep first, and where a rename or a
/// removal still fails the files already renamed are renamed back (a report half kept would
/// lose its kept half on the next run, which removes the previous_path of a file not there);
/// the older kept files those renames replaced are gone by then.
/// Throws std::runtime_error naming the file it could not rename or remove.
inline std::vector<std::string> keep_previous(const std::vector<std::string>& paths) {
  for (const std::string& path : paths)
    if (const std::string why = cannot_keep(path); !why.empty()) throw std::runtime_error(why);
  std::vector<std::pair<std::string, std::string>> moved;
  for (const std::string& path : paths) {
    const std::string to = previous_path(path);
    std::error_code error;
    if (std::filesystem::exists(path)) {
      std::filesystem::rename(path, to, error);
      if (!error) moved.emplace_back(path, to);
    } else {
      std::filesystem::remove(to, error);
    }
    if (error) {
      std::string why = "cannot keep the previous " + path + " as " + to + ": " + error.message();
      for (const auto& [from, kept] : moved) {
        std::error_code back;
        std::filesystem::rename(kept, from, back);
        if (back) why += "; and " + kept + " could not be renamed back to " + from + ": " + back.message();
      }
      throw std::runtime_error(why);
    }
  }
  std::vector<std::string> kept;
  for (const auto& m : moved) kept.push_back(m.second);
  return kept;
}

/// Writes each (path, text): first to path + ".tmp", then, once every one is written, renames
/// them into place, so a failed write (a full disk) leaves the files as they were rather than
/// a report whose JSON is new and complete but whose CSV is empty. Throws std::runtime_error
/// naming the path on failure, including a failure that shows only when the buffered text is
/// flushed on closing.
inline void write_files(const std::vector<std::pair<std::string, std::string>>& files) {
  for (const auto& [path, text] : files) {
    std::ofstream f(path + ".tmp");
    f << text;
    f.close();
    if (!f) {
      for (const auto& written : files) std::remove((written.first + ".tmp").c_str());
      throw std::runtime_error("cannot write " + path);
    }
  }
  for (std::size_t i = 0; i < files.size(); ++i)
    if (std::rename((files[i].first + ".tmp").c_str(), files[i].first.c_str()) != 0) {
      // Only a change to the directory since the writes fails here; the files not yet renamed
      // keep their earlier text, and the message says which were replaced.
      const int error = errno;
      std::string why = "cannot write " + files[i].first + " (renaming " + files[i].first + ".tmp: " + std::strerror(error) + ")";
      for (std::size_t j = 0; j < i; ++j) why += j ? ", " + files[j].first : "; already replaced: " + files[j].first;
      for (std::size_t j = i; j < files.size(); ++j) std::remove((files[j].first + ".tmp").c_str());
      throw std::runtime_error(why);
    }
}

}  // namespace rooftop::harness
