// SPDX-License-Identifier: BSD-3-Clause
// The roofline harness CLI `rooftop`: measures the machine's ceilings, runs every op over a
// size sweep, verifies each result after timing, prints a table, and writes report.json,
// report.csv and roofline.svg.
#include "ceilings.hpp"
#include "huge_pages.hpp"
#include "op_table.hpp"
#include "report.hpp"
#include "rooftop_git.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <utility>

using namespace rooftop;
using namespace rooftop::harness;

namespace {

/// The comma-separated items of an option's value; an empty one (`triad,,dot`, a trailing
/// comma) is refused, as a name left out by a slip of the keyboard.
std::vector<std::string> split(const std::string& s, const char* option) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  if (!s.empty() && s.back() == ',') out.emplace_back();
  if (std::find(out.begin(), out.end(), "") != out.end())
    throw std::invalid_argument(std::string(option) + " has an empty item in '" + s + "'");
  return out;
}

/// An op instance's seed: a function of the run's seed, the op, its dtype and shape, and the
/// stage (the sweep's round, or one of the side-by-side stages below) only, so that `--seed S`
/// with fewer ops, dtypes or sizes gives each instance the inputs it had in the run it replays.
std::uint64_t instance_seed(std::uint64_t seed, const std::string& op, DType dtype, const Shape& shape, std::uint64_t stage) {
  std::uint64_t h = hash64(seed, stage);
  for (const char c : op) h = hash64(h, static_cast<unsigned char>(c));
  h = hash64(h, static_cast<std::uint64_t>(dtype));
  for (const std::int64_t extent : shape) h = hash64(h, static_cast<std::uint64_t>(extent));
  return h;
}
constexpr std::uint64_t chains_stage = std::uint64_t{1} << 32, stores_stage = chains_stage + 1;  // after any round

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return buf;
}

/// Lists every result above its (final) roof: more than 5% above by its best time means a
/// wrong byte count or ceiling, so each is a warning rather than hidden in the report. Up to
/// 5% above (within the ceilings' run-to-run noise on a shared machine), and paired fractions
/// above 1 (the ceiling runs interleaved with the op, few with --quick, all got less than its
/// best run), are named on a line each.
void report_roof_violations(const std::vector<Result>& results, const Ceilings& c) {
  int above = 0;
  std::string slightly, paired;
  for (const Result& r : results) {
    const std::string name = r.op + " " + dtype_name(r.dtype) + "/" + shape_string(r.shape);
    if (r.roof_fraction > 1.05) {
      const char* roof = r.bound == "compute" ? "compute" : c.uses_cache_roof(r.cost.bytes) ? "cache" : "main-memory";
      std::printf("  warning: %s at %.0f%% of its %s roof\n", name.c_str(), 100 * r.roof_fraction, roof);
      ++above;
    } else if (r.roof_fraction > 1.0) {
      slightly += (slightly.empty() ? "" : ", ") + name;
    }
    if (r.paired_roof_fraction > 1.0) {
      char pct[16];
      std::snprintf(pct, sizeof pct, " (%.0f%%)", 100 * r.paired_roof_fraction);
      paired += (paired.empty() ? "" : ", ") + name + pct;
    }
  }
  if (!slightly.empty()) std::printf("  up to 5%% above the roof (within the ceilings' noise): %s\n", slightly.c_str());
  if (!paired.empty()) std::printf("  paired above 100%% (its interleaved ceiling runs all slower than its best): %s\n", paired.c_str());
  if (!above) std::printf("  every op is within 5%% of its roof or below it\n");
}

/// Refuses an op instance whose compulsory bytes exceed the memory its arrays live in (the
/// host's, or on a GPU the device's where it is smaller: memory_for_arrays) before anything is
/// allocated. They count each array the op touches once or twice (read, written, or both), so
/// they can overstate its arrays by at most half: a bound that refuses sizes which would page
/// or be killed, not a count of what the process needs. (Kokkos 3.4 allocates a 4096^3 View of
/// doubles with a span of 0 and no error; the stencil's first fill then wrote past it: a
/// segmentation fault.) Then the verification after timing, which holds the op's arrays as
/// doubles on the host (OpSpec::verification_bytes_at, `verification_bytes`) beside the arrays
/// themselves where they are in host memory, against the host memory available now
/// (host_available_bytes) less process_reserve_bytes: a size whose verification would be
/// killed for memory, after minutes of timing, is refused before anything is allocated.
void require_fits_in_memory(const Exec& exec, double compulsory_bytes, double verification_bytes) {
  const auto [memory, whose] = memory_for_arrays(exec);
  std::ostringstream msg;
  msg << std::fixed << std::setprecision(1);
  if (memory > 0 && compulsory_bytes > memory) {
    msg << "cannot allocate: its " << compulsory_bytes * 1e-9 << " GB of compulsory bytes exceed the " << whose << " "
        << memory * 1e-9 << " GB of memory";
    throw std::length_error(msg.str());
  }
  const double host = host_available_bytes();
  constexpr bool arrays_on_host = std::is_same_v<typename Exec::memory_space, Kokkos::HostSpace>;
  if (host > 0 && verification_bytes + (arrays_on_host ? compulsory_bytes : 0) + process_reserve_bytes > host) {
    msg << "cannot verify: its float64 verification needs at least " << verification_bytes * 1e-9 << " GB of host memory";
    if (arrays_on_host) msg << " beside its " << compulsory_bytes * 1e-9 << " GB of compulsory bytes";
    msg << ", more than " << host_available_words(host);
    throw std::length_error(msg.str());
  }
}

/// chain_unfused and chain_fused timed side by side (time_alternated) at one dtype and shape:
/// fresh instances of both, alive together, their runs alternated, then both verified
/// (verify_fresh_run).
struct ChainsSideBySide {
  Alternation timing;  // a: unfused, b: fused
  std::string verify_error;  // "" if both outputs were right
};
ChainsSideBySide chains_side_by_side(const Exec& exec, DType dtype, const Shape& shape, std::uint64_t seed, int pairs) {
  const OpSpec* const unfused_spec = find_op("chain_unfused");
  const OpSpec* const fused_spec = find_op("chain_fused");
  const double unfused_bytes = unfused_spec->cost(dtype, shape).bytes, fused_bytes = fused_spec->cost(dtype, shape).bytes;
  // Alive together, verified one at a time.
  require_fits_in_memory(exec, unfused_bytes + fused_bytes,
                         std::max(unfused_spec->verification_bytes_at(dtype, shape), fused_spec->verification_bytes_at(dtype, shape)));
  const OpInstance unfused = unfused_spec->make(exec, dtype, shape, instance_seed(seed, unfused_spec->name, dtype, shape, chains_stage)),
                   fused = fused_spec->make(exec, dtype, shape, instance_seed(seed, fused_spec->name, dtype, shape, chains_stage));
  ChainsSideBySide out{time_alternated(exec, unfused.run, fused.run, 1, pairs), {}};
  if (std::string e = verify_fresh_run(exec, unfused); !e.empty()) out.verify_error = "chain_unfused: " + e;
  if (std::string e = verify_fresh_run(exec, fused); !e.empty())
    out.verify_error += (out.verify_error.empty() ? "" : "; ") + ("chain_fused: " + e);
  return out;
}

/// One op timed with streaming and with plain stores side by side (time_alternated; a: the
/// threshold the run has, b: none streamed), on a fresh instance, then its output verified
/// after a run of each kind. The threshold is restored however this ends.
struct StoresSideBySide {
  Alternation timing;        // a: streaming stores from the run's threshold, b: plain stores only
  std::string verify_error;  // "" if both kinds of run left a right output
};
StoresSideBySide stores_side_by_side(const Exec& exec, const OpSpec& spec, DType dtype, const Shape& shape, std::uint64_t seed,
                                     int pairs, std::size_t threshold) {
  struct Restore {
    std::size_t bytes;
    ~Restore() { set_streaming_store_threshold(bytes); }
  } restore{streaming_store_threshold()};
  require_fits_in_memory(exec, spec.cost(dtype, shape).bytes, spec.verification_bytes_at(dtype, shape));
  const OpInstance inst = spec.make(exec, dtype, shape, instance_seed(seed, spec.name, dtype, shape, stores_stage));
  auto streamed = [&] {
    set_streaming_store_threshold(threshold);
    inst.run();
  };
  auto plain = [&] {
    set_streaming_store_threshold(std::numeric_limits<std::size_t>::max());
    inst.run();
  };
  StoresSideBySide out{time_alternated(exec, streamed, plain, 1, pairs), {}};
  auto verify_after = [&](const std::string& kind, auto&& run) {
    if (std::string e = verify_fresh_run(exec, inst, run); !e.empty())
      out.verify_error += (out.verify_error.empty() ? "" : "; ") + kind + ": " + e;
  };
  verify_after("streaming stores", streamed);
  verify_after("plain stores", plain);
  return out;
}

/// Prints one result's stores side by side, as soon as they are timed.
void print_stores(const Result& r, const StoresSideBySide& s) {
  const Alternation& t = s.timing;
  std::printf("  %-15s %4s/%-13s streamed %9.1f us, plain %9.1f us at best: plain %.2fx (%.2f-%.2fx)%s\n", r.op.c_str(),
              dtype_name(r.dtype), shape_string(r.shape).c_str(), t.a.seconds_min * 1e6, t.b.seconds_min * 1e6, t.ratio_median(),
              t.ratios.front(), t.ratios.back(), s.verify_error.empty() ? "" : ("; NOT verified: " + s.verify_error).c_str());
  std::fflush(stdout);
}

/// Returns (for the report) the stores' side-by-side timings, keyed by the results they
/// repeat, and prints how many results plain stores ran more than 5% faster or slower.
nlohmann::json stores_summary(const std::vector<std::pair<const Result*, StoresSideBySide>>& compared, std::size_t threshold,
                              int pairs) {
  nlohmann::json entries = nlohmann::json::array();
  int faster = 0, slower = 0;
  for (const auto& [r, s] : compared) {
    const Alternation& t = s.timing;
    const double speedup = t.ratio_median();  // streamed time over plain time
    faster += speedup > 1.05;
    slower += speedup < 1 / 1.05;
    nlohmann::json entry = {{"op", r->op}, {"dtype", dtype_name(r->dtype)}, {"shape", r->shape},
                            {"streamed_seconds_min", t.a.seconds_min}, {"plain_seconds_min", t.b.seconds_min},
                            {"plain_speedup_median", speedup}, {"plain_speedup_min", t.ratios.front()},
                            {"plain_speedup_max", t.ratios.back()}, {"verified", s.verify_error.empty()}};
    if (!s.verify_error.empty()) entry["verify_error"] = s.verify_error;
    entries.push_back(entry);
  }
  if (compared.empty())
    std::printf("  none compared: no verified result has a streamable output of %zu bytes or more (the threshold)\n", threshold);
  else
    std::printf("  plain stores more than 5%% faster on %d of %zu, more than 5%% slower on %d\n", faster, compared.size(), slower);
  return {{"streaming_store_threshold_bytes", threshold}, {"pairs", pairs}, {"plain_faster", faster}, {"plain_slower", slower},
          {"results", entries}};
}

/// "fp32/2730x4096": a result's dtype and shape, as the fusion summary keys them.
std::string dtype_and_shape(const Result& r) { return std::string(dtype_name(r.dtype)) + "/" + shape_string(r.shape); }

/// What fusing bias + GELU + dropout saves: for each chain_fused result, the chain_unfused one
/// of the same dtype and shape, by their best times in the sweep and, where the two were timed
/// side by side (`side_by_side`, keyed by dtype_and_shape), by the median of those pairs' ratios.
/// Printed, and returned for the report.
nlohmann::json fusion_summary(const std::vector<Result>& results, const std::map<std::string, ChainsSideBySide>& side_by_side) {
  nlohmann::json out = nlohmann::json::array();
  for (const Result& fused : results) {
    if (fused.op != "chain_fused") continue;
    for (const Result& unfused : results) {
      if (unfused.op != "chain_unfused" || unfused.dtype != fused.dtype || unfused.shape != fused.shape) continue;
      const double speedup = unfused.timing.seconds_min / fused.timing.seconds_min;
      const bool verified = unfused.verified && fused.verified;  // the sweep's results of both
      std::printf("  fusion, bias + GELU + dropout, %s: %.1f MB in %.0f us unfused, %.1f MB in %.0f us fused: "
                  "%.0f%% fewer bytes, %.2fx faster%s\n",
                  dtype_and_shape(fused).c_str(), unfused.cost.bytes / 1e6, unfused.timing.seconds_min * 1e6,
                  fused.cost.bytes / 1e6, fused.timing.seconds_min * 1e6, 100 * (1 - fused.cost.bytes / unfused.cost.bytes),
                  speedup, verified ? "" : " (NOT verified)");
      nlohmann::json entry = {{"dtype", dtype_name(fused.dtype)}, {"shape", fused.shape}, {"unfused_bytes", unfused.cost.bytes},
                              {"fused_bytes", fused.cost.bytes}, {"unfused_seconds_min", unfused.timing.seconds_min},
                              {"fused_seconds_min", fused.timing.seconds_min}, {"speedup", speedup}, {"verified", verified}};
      const auto paired = side_by_side.find(dtype_and_shape(fused));
      if (paired != side_by_side.end()) {
        const Alternation& t = paired->second.timing;
        std::printf("    side by side, %zu pairs of runs alternated: %.2fx (median; %.2f-%.2fx), unfused %.0f us and fused "
                    "%.0f us at best%s\n",
                    t.ratios.size(), t.ratio_median(), t.ratios.front(), t.ratios.back(), t.a.seconds_min * 1e6,
                    t.b.seconds_min * 1e6, paired->second.verify_error.empty() ? "" : ("; NOT verified: " + paired->second.verify_error).c_str());
        entry["side_by_side"] = {{"pairs", t.ratios.size()}, {"speedup_median", t.ratio_median()},
                                 {"speedup_min", t.ratios.front()}, {"speedup_max", t.ratios.back()},
                                 {"unfused_seconds_min", t.a.seconds_min}, {"fused_seconds_min", t.b.seconds_min},
                                 {"verified", paired->second.verify_error.empty()}};
        if (!paired->second.verify_error.empty()) entry["side_by_side"]["verify_error"] = paired->second.verify_error;
      }
      out.push_back(entry);
    }
  }
  return out;
}

/// The memory-bound main-memory results that the core, not the memory, caps: for each, the
/// same op and dtype at its cache-resident size (of the same row length, where there is one;
/// the fastest if several) runs below the main-memory bandwidth roof, so even with every byte
/// at cache speed the op could not reach that roof. Printed, and returned for the report. None
/// where the cache ceiling is not above main memory's (Ceilings::cache_above_memory: on GPUs
/// the cache runs are probably bound by kernel launches, not by the cores).
nlohmann::json core_limited_summary(const std::vector<Result>& results, const Ceilings& ceilings) {
  nlohmann::json out = nlohmann::json::array();
  if (!ceilings.cache_above_memory()) return out;
  for (const Result& r : results) {
    if (r.cache_resident || r.bound != "memory") continue;
    const Result* in_cache = nullptr;
    bool same_rows = false;
    for (const Result& c : results) {
      if (!c.cache_resident || c.op != r.op || c.dtype != r.dtype || c.shape.empty() || r.shape.empty()) continue;
      const bool same = c.shape.back() == r.shape.back();
      if (!in_cache || (same && !same_rows) || (same == same_rows && c.gbs > in_cache->gbs)) in_cache = &c;
      same_rows |= same;
    }
    if (!in_cache || in_cache->gbs >= r.bandwidth_roof_gbs) continue;
    if (out.empty())
      std::printf("  core-limited (the same op with its data in cache runs below the main-memory roof):\n");
    std::printf("    %s %s/%s: %.1f GB/s (%.0f%% of roof); in cache (%s) %.1f GB/s, %.0f%% of the main-memory roof\n", r.op.c_str(),
                dtype_name(r.dtype), shape_string(r.shape).c_str(), r.gbs, 100 * r.roof_fraction,
                shape_string(in_cache->shape).c_str(), in_cache->gbs, 100 * in_cache->gbs / r.bandwidth_roof_gbs);
    out.push_back({{"op", r.op}, {"dtype", dtype_name(r.dtype)}, {"shape", r.shape}, {"gbs", r.gbs},
                   {"bandwidth_roof_gbs", r.bandwidth_roof_gbs}, {"in_cache_shape", in_cache->shape}, {"in_cache_gbs", in_cache->gbs}});
  }
  return out;
}

/// The first paragraph of an exception's message, trailing whitespace trimmed (Kokkos appends
/// a note about tracebacks after a blank line).
std::string first_paragraph(const char* what) {
  std::string s(what);
  s = s.substr(0, s.find("\n\n"));
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

struct Options {
  std::string ops;  // not given: every op
  bool ops_given = false;
  std::string dtypes = "fp64,fp32,bf16,fp16";
  std::string out = "results";
  std::vector<std::int64_t> sizes;
  bool quick = false;
  std::string pages = "huge";
  int rounds = 0;  // 0: 2, or 1 with --quick
  std::uint64_t seed = 0;
  bool seed_given = false;  // --seed, 0 among its values
  bool compare_stores = false;
};

void print_header() {
  std::printf("%-9s %-15s %-18s %9s %11s %10s %10s %7s %6s %6s %-8s %s\n", "[#/N]", "op", "dtype/shape", "MB", "time (us)", "GB/s",
              "GFLOP/s", "AI", "roof", "paired", "bound", "verified");
}

void print_row(const char* tag, const Result& r) {
  char paired[16] = "     -";  // none: see place_under_roof
  if (r.paired_roof_fraction > 0) std::snprintf(paired, sizeof paired, "%5.0f%%", 100 * r.paired_roof_fraction);
  std::printf("%-9s %-15s %4s/%-13s %9.1f %11.1f %10.2f %10.2f %7.3f %5.0f%% %s %-8s %s%s\n", tag, r.op.c_str(),
              dtype_name(r.dtype), shape_string(r.shape).c_str(), r.cost.bytes / 1e6, r.timing.seconds_min * 1e6, r.gbs, r.gflops,
              r.cost.ai(), 100 * r.roof_fraction, paired, r.bound.c_str(), r.verified ? "yes" : ("NO: " + r.verify_error).c_str(),
              r.cache_resident ? " (cache-resident)" : "");
  std::fflush(stdout);
}

/// Checks the arguments (no Kokkos needed, so a mistake is told before Kokkos starts and prints
/// its own notes), then starts Kokkos with argc/argv and runs.
int run(Options opt, int& argc, char** argv) {
  if (opt.rounds <= 0) opt.rounds = opt.quick ? 1 : 2;
  if (!opt.ops_given)
    for (const auto& o : op_table()) opt.ops += (opt.ops.empty() ? "" : ",") + o.name;
  // The lists as given, each name once: a name given twice is refused (it would run, and pair
  // in the fusion's side by side, twice).
  auto names = [](const std::string& list, const char* option) {
    const std::vector<std::string> out = split(list, option);
    if (out.empty()) throw std::invalid_argument(std::string(option) + " names nothing to run");
    for (std::size_t i = 0; i < out.size(); ++i)
      if (std::find(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(i), out[i]) != out.begin() + static_cast<std::ptrdiff_t>(i))
        throw std::invalid_argument(std::string(option) + " names '" + out[i] + "' twice");
    return out;
  };
  std::vector<const OpSpec*> ops;
  for (const auto& name : names(opt.ops, "--ops")) {
    const OpSpec* s = find_op(name);
    if (!s) {
      std::string known;
      for (const auto& o : op_table()) known += (known.empty() ? "" : ", ") + o.name;
      throw std::invalid_argument("unknown op '" + name + "' (known: " + known + ")");
    }
    ops.push_back(s);
  }
  std::vector<DType> dtypes;
  for (const auto& d : names(opt.dtypes, "--dtypes")) {
    const DType t = parse_dtype(d);
    if (std::find(dtypes.begin(), dtypes.end(), t) != dtypes.end())  // fp32 and float, say
      throw std::invalid_argument("--dtypes names " + std::string(dtype_name(t)) + " twice ('" + d + "')");
    dtypes.push_back(t);
  }
  for (std::size_t i = 0; i < opt.sizes.size(); ++i)
    if (std::find(opt.sizes.begin(), opt.sizes.begin() + static_cast<std::ptrdiff_t>(i), opt.sizes[i]) !=
        opt.sizes.begin() + static_cast<std::ptrdiff_t>(i))
      throw std::invalid_argument("--sizes names " + std::to_string(opt.sizes[i]) + " twice");
  // Checked now, not after the ceilings' minute: at least one op runs in one of the dtypes.
  if (std::none_of(ops.begin(), ops.end(), [&](const OpSpec* s) {
        return std::any_of(dtypes.begin(), dtypes.end(),
                           [&](DType d) { return std::find(s->dtypes.begin(), s->dtypes.end(), d) != s->dtypes.end(); });
      }))
    throw std::invalid_argument("nothing to run: none of the ops supports the dtypes asked for");
  for (const OpSpec* s : ops)
    if (std::none_of(dtypes.begin(), dtypes.end(),
                     [&](DType d) { return std::find(s->dtypes.begin(), s->dtypes.end(), d) != s->dtypes.end(); })) {
      std::string supported;
      for (DType d : s->dtypes) supported += (supported.empty() ? "" : ", ") + std::string(dtype_name(d));
      std::printf("note: %s runs in %s only, none of them in --dtypes: left out\n", s->name.c_str(), supported.c_str());
    }
  if (opt.compare_stores && !host_streaming_threshold<Exec>())
    throw std::invalid_argument(rooftop::detail::host_streams<Exec>
                                    ? "--compare-stores: ROOFTOP_STREAMING_STORE_THRESHOLD=never leaves no streaming stores to compare"
                                    : "--compare-stores: this backend writes no output with streaming stores (host x86 backends only)");
  // Every View below is destroyed before this guard finalizes Kokkos (reverse order). Kokkos
  // (3.4 to 5) takes the --kokkos-* arguments it knows out of argv: one left is a misspelling,
  // which 3.4 would ignore and later versions only warn of (--kokkos-tool* are the tools').
  Kokkos::ScopeGuard kokkos(argc, argv);
  for (int i = 1; i < argc; ++i)
    if (const std::string a = argv[i]; a.rfind("--kokkos-", 0) == 0 && a.rfind("--kokkos-tool", 0) != 0)
      throw std::invalid_argument("Kokkos does not know the argument '" + a + "' (--kokkos-help lists those it knows)");
  // The last check: --out is made only for a run that is not refused.
  try {
    if (opt.out.empty()) throw std::invalid_argument("--out names no directory");
    std::filesystem::create_directories(opt.out);
  } catch (const std::filesystem::filesystem_error& e) {
    throw std::invalid_argument("cannot make the --out directory '" + opt.out + "': " + e.code().message());
  }
  const std::string json_path = opt.out + "/report.json", csv_path = opt.out + "/report.csv", svg_path = opt.out + "/roofline.svg";
  // Checked now, not after a sweep of many minutes: each of the report's files can be written
  // as write_files does it (path.tmp, renamed into place), so an earlier report stays until it
  // is replaced.
  const std::vector<std::string> report_paths = {json_path, csv_path, svg_path};
  for (const std::string& path : report_paths) {
    const bool ok = static_cast<bool>(std::ofstream(path + ".tmp"));
    std::error_code ignored;
    std::filesystem::remove(path + ".tmp", ignored);
    if (!ok || std::filesystem::is_directory(path))
      throw std::invalid_argument("cannot write " + path + " (--out '" + opt.out + "')");
  }
  // An earlier run's report is kept (report.prev.json, ...) when this run writes its first one:
  // where it cannot be, the run is refused now, not after the sweep.
  bool previous_kept = std::none_of(report_paths.begin(), report_paths.end(), [](const std::string& p) { return std::filesystem::exists(p); });
  if (!previous_kept)
    for (const std::string& path : report_paths)
      if (const std::string why = cannot_keep(path); !why.empty()) throw std::invalid_argument(why);
  const std::uint64_t seed = opt.seed_given ? opt.seed : std::random_device{}();

  const std::string pages = opt.pages == "huge" ? use_huge_pages_for_host_views()
                                                : "system default pages (THP " + transparent_huge_pages_mode() + ", --pages system)";
  Exec exec;
  SystemInfo sys{backend_name, compat::kokkos_version(), device_name(exec), __VERSION__, ROOFTOP_GIT, utc_timestamp(),
                 compat::concurrency(exec), pages, -1, host_streaming_threshold<Exec>()};
  std::printf("rooftop roofline harness: %s backend, Kokkos %s, %s, %d threads, seed %llu%s\n", sys.backend.c_str(),
              sys.kokkos_version.c_str(), sys.device.c_str(), sys.concurrency, static_cast<unsigned long long>(seed),
              opt.quick ? " (quick)" : "");
  if constexpr (rooftop::detail::host_streams<Exec>)
    std::printf("Host outputs: %s (ROOFTOP_STREAMING_STORE_THRESHOLD: bytes, K, M or G, or never)\n",
                host_outputs_text(sys.streaming_store_threshold).c_str());
  if (!std::getenv("OMP_PROC_BIND") && std::string(backend_name) == "OpenMP")
    std::printf("note: OMP_PROC_BIND is not set; threads may migrate (set OMP_PROC_BIND=spread OMP_PLACES=threads)\n");

  if (!previous_kept) {
    std::string held;
    for (const std::string& path : report_paths)
      if (std::filesystem::exists(path)) held += (held.empty() ? "" : ", ") + previous_path(path);
    std::printf("%s holds an earlier report: it is kept as %s (one generation: older ones are replaced) when this run\n"
                "writes its own\n",
                opt.out.c_str(), held.c_str());
  }

  std::printf("\nMeasuring ceilings...\n");
  auto progress = [](const std::string& step) {
    std::printf("  %s\n", step.c_str());
    std::fflush(stdout);
  };
  BandwidthSampler<Exec> bandwidth(exec);
  Ceilings ceilings = measure_ceilings(exec, bandwidth, opt.quick, progress);
  sys.anon_huge_page_bytes = anon_huge_page_bytes();
  std::printf("\nHost memory: %s; %.0f MB of this process's memory in huge pages after measuring the ceilings\n", sys.pages.c_str(),
              sys.anon_huge_page_bytes / 1e6);
  auto print_bandwidth = [&ceilings](const char* when) {
    std::printf("\nBandwidth ceilings %s: DRAM %.1f GB/s (copy %.1f, add %.1f, triad %.1f, read %.1f), LLC %.1f GB/s\n",
                when, ceilings.dram(), ceilings.bandwidth_gbs.at("dram_copy"), ceilings.bandwidth_gbs.at("dram_add"),
                ceilings.bandwidth_gbs.at("dram_triad"), ceilings.bandwidth_gbs.at("dram_read"), ceilings.bandwidth_gbs.at("llc"));
    if (!ceilings.cache_above_memory())
      std::printf("  (LLC not above DRAM, as on GPUs, where kernel launches probably bound its runs: cache-resident sizes are\n"
                  "   held to the DRAM roof, and none is called core-limited)\n");
  };
  print_bandwidth("(before the sweep)");
  for (const char* link : {"h2d_pageable", "h2d_pinned", "d2h_pageable", "d2h_pinned"})
    if (ceilings.bandwidth_gbs.count(link)) std::printf("Host <-> device: %s %.1f GB/s\n", link, ceilings.bandwidth_gbs.at(link));
  auto print_compute = [&ceilings](const char* when) {
    std::printf("Compute ceilings%s: FP32 %.1f GFLOP/s, FP64 %.1f GFLOP/s", when, ceilings.peak_gflops_fp32, ceilings.peak_gflops_fp64);
    if (ceilings.peak_gflops_bf16_matrix > 0) std::printf(", matrix units bf16 %.1f GFLOP/s", ceilings.peak_gflops_bf16_matrix);
    if (ceilings.peak_gflops_fp16_matrix > 0) std::printf(", fp16 %.1f GFLOP/s", ceilings.peak_gflops_fp16_matrix);
  };
  print_compute("");
  std::printf(", launch %.2f us\n\n", ceilings.launch_overhead_us);

  // Size sweep by working set: cache-resident, then far beyond the last-level cache.
  const double cache_ws = cache_working_set(ceilings.llc_bytes), dram_ws = main_memory_working_set(ceilings.llc_bytes);
  std::vector<double> working_sets = opt.quick ? std::vector<double>{dram_ws} : std::vector<double>{cache_ws, dram_ws};
  struct Planned { const OpSpec* spec; DType dtype; Shape shape; };
  std::vector<Planned> plan;
  for (const OpSpec* s : ops)
    for (DType d : dtypes) {
      if (std::find(s->dtypes.begin(), s->dtypes.end(), d) == s->dtypes.end()) continue;
      std::vector<Shape> shapes;
      for (std::int64_t n : opt.sizes)
        for (const Shape& shape : s->shapes_of_elements(n)) shapes.push_back(shape);
      if (opt.sizes.empty())
        for (double ws : working_sets)
          if (s->cache_sizes || ws == dram_ws)
            for (const Shape& shape : s->shapes_for(d, ws)) shapes.push_back(shape);
      // Once each: shapes clamped to a size (gemm's n, attention's sequence) can coincide
      // across working sets where the cache is large.
      for (const Shape& shape : shapes)
        if (std::none_of(plan.begin(), plan.end(), [&](const Planned& p) { return p.spec == s && p.dtype == d && p.shape == shape; }))
          plan.push_back({s, d, shape});
    }
  if (plan.empty()) throw std::invalid_argument("nothing to run: none of the ops has a shape for the sizes asked for");

  std::vector<Result> results(plan.size());
  std::vector<int> failed(plan.size(), 0);
  // An instance that throws (its inputs cannot be allocated, a kernel rejects the shape) is
  // reported with its error and left out of later rounds; the sweep goes on without it. What
  // its earlier rounds measured (rounds_measured) stays in the report.
  std::vector<std::string> errors(plan.size());
  std::vector<int> rounds_measured(plan.size(), 0);
  // A side-by-side run (chains, --compare-stores) or a re-measurement of the ceilings after a
  // round that throws: listed under "errors" beside the sweep's, with "during" naming the stage.
  nlohmann::json after_sweep_errors = nlohmann::json::array();
  int ceiling_failures = 0;  // of those, re-measurements of the ceilings after a round
  std::string keep_error;  // why the previous run's report could not be kept, if it could not
  // The results of the instances that ran, under the ceilings as they stand.
  auto completed = [&] {
    std::vector<Result> done;
    for (std::size_t k = 0; k < plan.size(); ++k)
      if (rounds_measured[k] > 0) {
        done.push_back(results[k]);
        place_under_roof(done.back(), ceilings);
      }
    return done;
  };
  // The report of the rounds done so far: written after every round, so that a long run
  // stopped part way keeps what it measured.
  auto write_report = [&](const std::vector<Result>& done, int rounds_done, const nlohmann::json& fusion,
                          const nlohmann::json& core_limited, const nlohmann::json& stores) {
    nlohmann::json report = to_json(sys, ceilings, done);
    report["rounds"] = {{"completed", rounds_done}, {"planned", opt.rounds}};
    if (!fusion.empty()) report["fusion"] = fusion;
    if (!core_limited.empty()) report["core_limited"] = core_limited;
    if (!stores.is_null()) report["stores_side_by_side"] = stores;
    nlohmann::json errored = nlohmann::json::array();
    for (std::size_t k = 0; k < plan.size(); ++k)
      if (!errors[k].empty())
        errored.push_back({{"op", plan[k].spec->name},
                           {"dtype", dtype_name(plan[k].dtype)},
                           {"shape", plan[k].shape},
                           {"error", errors[k]},
                           {"rounds_measured", rounds_measured[k]}});
    for (const nlohmann::json& e : after_sweep_errors) errored.push_back(e);
    if (!errored.empty()) report["errors"] = errored;
    // A run that measured nothing (every instance refused) would push a good earlier report
    // out to .prev, and a second such run would replace it: its errors are printed instead.
    if (done.empty() && !previous_kept)
      throw std::runtime_error("nothing was measured, so the earlier report in " + opt.out + " is left as it was");
    // Tried once (checked at start-up, so only a change since can fail it): keep_previous
    // leaves the earlier report as it found it, and this run's is then not written over it.
    if (!previous_kept && keep_error.empty()) {
      try {
        std::string names;
        for (const std::string& kept : keep_previous(report_paths)) names += (names.empty() ? "" : ", ") + kept;
        std::printf("Kept the previous run's report as %s\n", names.c_str());
        previous_kept = true;
      } catch (const std::exception& e) {
        keep_error = e.what();
      }
    }
    if (!keep_error.empty()) throw std::runtime_error(keep_error + ", so this run's report is not written over it");
    write_files({{json_path, report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"}, {csv_path, to_csv(done)}, {svg_path, to_svg(sys, ceilings, done)}});
  };
  // Best-of-many, like STREAM, and spread over rounds: on a shared machine the bandwidth
  // drifts by tens of percent over seconds, so the samples of each op are taken in several
  // windows minutes apart (fresh inputs each round), a ceiling kernel runs after each of the
  // op's timed runs, and the ceilings are re-measured after every round, keeping the best.
  // Every op is verified after each round's timing.
  const int reps = opt.quick ? 5 : 25;
  const double min_seconds = opt.quick ? 0.05 : 0.25;
  for (int round = 0; round < opt.rounds; ++round) {
    std::printf("Round %d of %d\n", round + 1, opt.rounds);
    print_header();
    for (std::size_t k = 0; k < plan.size(); ++k) {
      if (!errors[k].empty()) continue;
      const Planned& p = plan[k];
      char tag[48];
      std::snprintf(tag, sizeof tag, "[%zu/%zu]", k + 1, plan.size());
      try {
        require_fits_in_memory(exec, p.spec->cost(p.dtype, p.shape).bytes, p.spec->verification_bytes_at(p.dtype, p.shape));
        OpInstance inst = p.spec->make(exec, p.dtype, p.shape, instance_seed(seed, p.spec->name, p.dtype, p.shape, round));
        Result r;
        r.op = p.spec->name;
        r.dtype = p.dtype;
        r.shape = inst.shape;
        r.cost = inst.cost;
        r.matrix_units = inst.matrix_units;
        r.streamable_output_bytes = inst.streamable_output_bytes;
        r.paired_bandwidth_gbs = round > 0 ? results[k].paired_bandwidth_gbs : 0;
        r.timing = bandwidth.time_interleaved(ceilings, ceilings.is_cache_resident(inst.cost.bytes), inst.run, 2, reps,
                                              min_seconds, r.paired_bandwidth_gbs);
        r.verify_error = verify_fresh_run(exec, inst);  // after timing
        failed[k] |= !r.verify_error.empty();
        if (round > 0) {
          r.timing = merge(results[k].timing, r.timing);
          if (r.verify_error.empty()) r.verify_error = results[k].verify_error;
        }
        r.verified = !failed[k];
        place_under_roof(r, ceilings);
        results[k] = r;
        ++rounds_measured[k];
        print_row(tag, r);
      } catch (const std::exception& e) {
        errors[k] = first_paragraph(e.what());
        std::printf("%-9s %-15s %4s/%-13s FAILED: %s%s\n", tag, p.spec->name.c_str(), dtype_name(p.dtype),
                    shape_string(p.shape).c_str(), errors[k].c_str(),
                    rounds_measured[k] > 0 ? " (the rounds before this one stay in the report)" : "");
        std::fflush(stdout);
      }
    }
    std::printf("\nMeasuring ceilings again after round %d...\n", round + 1);
    try {
      bandwidth.measure(ceilings, opt.quick, progress);
      measure_compute_peaks(exec, ceilings, opt.quick, progress);
    } catch (const std::exception& e) {  // the ceilings measured so far stand; the round's results stay
      const std::string during = "ceilings after round " + std::to_string(round + 1);
      std::printf("  FAILED to measure the %s (those measured before stand): %s\n", during.c_str(), first_paragraph(e.what()).c_str());
      after_sweep_errors.push_back({{"op", "ceilings"}, {"error", first_paragraph(e.what())}, {"during", during}});
      ++ceiling_failures;
    }
    print_bandwidth("(best so far)");
    print_compute(" (best so far)");
    std::printf("\n");
    if (round + 1 < opt.rounds) {
      try {
        write_report(completed(), round + 1, nlohmann::json::array(), nlohmann::json::array(), nlohmann::json());
        std::printf("Wrote the report of round %d of %d to %s\n", round + 1, opt.rounds, opt.out.c_str());
      } catch (const std::exception& e) {  // the run goes on; the final report is tried again
        std::printf("warning: could not write the report of round %d: %s\n", round + 1, first_paragraph(e.what()).c_str());
      }
    }
    std::printf("\n");
  }

  const std::vector<Result> done = completed();
  if (opt.rounds > 1) {
    std::printf("Best of %d rounds, under the best ceilings:\n", opt.rounds);
    print_header();
    for (const Result& r : done) print_row("", r);
  } else {
    // One round: its rows were placed under the ceilings measured before it. Those that the
    // ceilings measured after it move (to another whole percent, or another bound) are
    // printed again as the report has them.
    auto percent = [](double fraction) { return std::lround(100 * fraction); };
    bool moved = false;
    for (std::size_t k = 0, i = 0; k < plan.size(); ++k) {
      if (rounds_measured[k] == 0) continue;
      const Result &now = done[i++], &printed = results[k];
      if (percent(now.roof_fraction) == percent(printed.roof_fraction) && now.bound == printed.bound &&
          percent(now.paired_roof_fraction) == percent(printed.paired_roof_fraction))
        continue;
      if (!moved) std::printf("Placed again under the ceilings measured after the round (the rows above that moved):\n");
      if (!moved) print_header();
      moved = true;
      print_row("", now);
    }
  }
  std::printf("(bandwidth ceilings: best of the measurements around each round and of %d ceiling-kernel runs\n"
              " interleaved with the ops' timed runs)\n",
              bandwidth.samples());
  report_roof_violations(done, ceilings);
  // The chains again, side by side (chains_side_by_side): the fused chain is bound by its
  // instructions here and the unfused one by the memory, so their best times, taken at
  // different moments of a shared machine's memory, give a speedup that moves from run to run.
  std::map<std::string, ChainsSideBySide> side_by_side;
  int side_by_side_failures = 0, side_by_side_tried = 0;
  for (const Result& fused : done) {
    if (fused.op != "chain_fused" || !fused.verified) continue;
    const bool unfused_ran = std::any_of(done.begin(), done.end(), [&](const Result& r) {
      return r.op == "chain_unfused" && r.verified && r.dtype == fused.dtype && r.shape == fused.shape;
    });
    if (!unfused_ran) continue;
    if (!side_by_side_tried) std::printf("\nTiming chain_unfused and chain_fused side by side...\n");
    progress(dtype_and_shape(fused));
    ++side_by_side_tried;
    try {
      const ChainsSideBySide s = chains_side_by_side(exec, fused.dtype, fused.shape, seed, opt.quick ? 9 : 25);
      side_by_side_failures += !s.verify_error.empty();
      side_by_side.emplace(dtype_and_shape(fused), s);
    } catch (const std::exception& e) {
      std::printf("  %s FAILED to run side by side: %s\n", dtype_and_shape(fused).c_str(), first_paragraph(e.what()).c_str());
      after_sweep_errors.push_back({{"op", "chain_fused"}, {"paired_with", "chain_unfused"}, {"dtype", dtype_name(fused.dtype)},
                                    {"shape", fused.shape}, {"error", first_paragraph(e.what())}, {"during", "chains side by side"}});
    }
  }
  if (side_by_side_tried) std::printf("\n");
  const nlohmann::json fusion = fusion_summary(done, side_by_side);
  const nlohmann::json core_limited = core_limited_summary(done, ceilings);
  // --compare-stores: every verified result whose output may be streamed and reaches the
  // threshold (an output below it is never streamed) again, with streaming and plain stores
  // side by side.
  nlohmann::json stores;
  int stores_failures = 0;
  if (opt.compare_stores) {
    const std::size_t threshold = *sys.streaming_store_threshold;
    const int pairs = opt.quick ? 9 : 15;
    std::vector<std::pair<const Result*, StoresSideBySide>> compared;
    std::printf("\nTiming streaming against plain stores side by side (%d pairs each; plain's speedup, median (least-greatest))...\n",
                pairs);
    for (std::size_t k = 0; k < done.size(); ++k) {
      const Result& r = done[k];
      if (!r.verified || r.streamable_output_bytes == 0 || r.streamable_output_bytes < static_cast<double>(threshold)) continue;
      try {
        compared.emplace_back(&r, stores_side_by_side(exec, *find_op(r.op), r.dtype, r.shape, seed, pairs, threshold));
        stores_failures += !compared.back().second.verify_error.empty();
        print_stores(r, compared.back().second);
      } catch (const std::exception& e) {
        std::printf("  %s %s/%s FAILED to run side by side: %s\n", r.op.c_str(), dtype_name(r.dtype), shape_string(r.shape).c_str(),
                    first_paragraph(e.what()).c_str());
        after_sweep_errors.push_back({{"op", r.op}, {"dtype", dtype_name(r.dtype)}, {"shape", r.shape},
                                      {"error", first_paragraph(e.what())}, {"during", "stores side by side"}});
      }
    }
    stores = stores_summary(compared, threshold, pairs);
  }
  bool written = true;
  try {
    write_report(done, opt.rounds, fusion, core_limited, stores);
    std::printf("\nWrote %s, %s and %s\n", json_path.c_str(), csv_path.c_str(), svg_path.c_str());
  } catch (const std::exception& e) {  // what was measured is all in the tables printed above
    std::printf("\nFAILED to write the report: %s\n", e.what());
    written = false;
  }
  const int failures = static_cast<int>(std::count(failed.begin(), failed.end(), 1));
  const int unrun = static_cast<int>(std::count_if(errors.begin(), errors.end(), [](const std::string& e) { return !e.empty(); }));
  if (failures || unrun || side_by_side_failures || stores_failures || !after_sweep_errors.empty() || !written) {
    if (failures) std::printf("%d result(s) FAILED verification\n", failures);
    if (side_by_side_failures) std::printf("%d side-by-side chain run(s) FAILED verification\n", side_by_side_failures);
    if (stores_failures) std::printf("%d side-by-side store run(s) FAILED verification\n", stores_failures);
    const char* const listed = written ? " (listed under \"errors\" in the report)" : "";
    if (unrun) std::printf("%d op instance(s) FAILED to run%s\n", unrun, listed);
    if (ceiling_failures) std::printf("%d re-measurement(s) of the ceilings FAILED%s\n", ceiling_failures, listed);
    if (after_sweep_errors.size() > static_cast<std::size_t>(ceiling_failures))
      std::printf("%zu side-by-side run(s) FAILED to run%s\n", after_sweep_errors.size() - ceiling_failures, listed);
    if (!written) std::printf("The report was not written (above)\n");
    return 1;
  }
  std::printf("All %zu results verified.\n", results.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rooftop: measure the machine's ceilings, run every op over a size sweep, and place each on the roofline"};
  Options opt;
  std::string op_list;
  for (const auto& s : op_table()) op_list += (op_list.empty() ? "" : ",") + s.name;
  app.add_option("--ops", opt.ops, "Comma-separated ops to run (default: all of " + op_list + ")");
  app.add_option("--dtypes", opt.dtypes, "Comma-separated dtypes: fp64,fp32,bf16,fp16 (also spelled double/f64, float/f32, bfloat16, half/f16)")->capture_default_str();
  app.add_option("--out", opt.out, "Directory for report.json, report.csv and roofline.svg (the previous run's are kept as report.prev.json, report.prev.csv and roofline.prev.svg; older ones are replaced)")->capture_default_str();
  const CLI::Validator positive(
      [](std::string& v) -> std::string {
        try {
          std::size_t used = 0;
          if (std::stoll(v, &used) > 0 && used == v.size()) return "";
        } catch (const std::exception&) {
        }
        return "expected a positive whole number, got '" + v + "'";
      },
      "POSITIVE");
  app.add_option("--sizes", opt.sizes,
                 "Sizes to run instead of the working-set sweep: n elements, an n^3 grid, an n x n matrix, a "
                 "sequence of n or (linear) 1 and 8 rows times an n x n weight, as fits the op; row-wise ops get "
                 "n / cols rows (at least 1) of each of their row lengths")
      ->delimiter(',')
      ->check(positive);
  const CLI::Validator whole(
      [](std::string& v) -> std::string {
        if (!v.empty() && std::all_of(v.begin(), v.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) {
          try {
            std::stoull(v);
            return "";
          } catch (const std::out_of_range&) {
            return "expected a whole number below 2^64, got '" + v + "'";
          }
        }
        return "expected a whole number, 0 or more, got '" + v + "'";
      },
      "UINT");
  app.add_option("--seed", opt.seed, "Seed for the random inputs (default: fresh each run, printed)")->check(whole);
  app.add_option("--rounds", opt.rounds, "Rounds of the sweep; each op keeps its best time (default 2, 1 with --quick)")
      ->check(positive);
  app.add_flag("--quick", opt.quick, "Main-memory working sets only (no cache-resident sizes), one round, fewer repetitions");
  app.add_option("--pages", opt.pages,
                 "Host arrays in transparent huge pages where Linux offers them (huge), or in the system's default pages (system)")
      ->check(CLI::IsMember({"huge", "system"}))
      ->capture_default_str();
  app.add_flag("--compare-stores", opt.compare_stores,
               "After the sweep, time each result whose outputs may be streamed again with streaming and with plain stores "
               "side by side (x86 hosts), to choose ROOFTOP_STREAMING_STORE_THRESHOLD");
  app.allow_extras();  // --kokkos-* arguments are Kokkos's (run() refuses those it does not know)
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print and exit 0; a bad argument exits 2 as the harness's own
    // refusals below do (CLI11's own codes are 104-114).
    return app.exit(e) == 0 ? 0 : 2;
  }
  opt.seed_given = app.count("--seed") > 0;
  opt.ops_given = app.count("--ops") > 0;
  // `--ops --out x` gives --ops the value "--out" (and leaves x over): say what is missing.
  const char* const valued[] = {"--ops", "--dtypes", "--out"};
  const std::string* const values[] = {&opt.ops, &opt.dtypes, &opt.out};
  for (int i = 0; i < 3; ++i)
    if (values[i]->rfind("--", 0) == 0) {
      std::fprintf(stderr, "rooftop: %s needs a value (got the option '%s')\n", valued[i], values[i]->c_str());
      return 2;
    }
  for (const auto& extra : app.remaining())
    if (extra.rfind("--kokkos-", 0) != 0) {
      std::fprintf(stderr, "rooftop: unknown argument '%s' (see --help)\n", extra.c_str());
      return 2;
    }

  // Refused arguments (std::invalid_argument, thrown before anything is measured) exit 2; a
  // failure once the run has started (the first measurement of the ceilings cannot allocate
  // its arrays, a kernel's rooftop::Error, ...) exits 1, as the sweep's own failures do.
  try {
    return run(opt, argc, argv);
  } catch (const rooftop::Error& e) {
    std::fprintf(stderr, "rooftop: %s\n", e.what());
    return 1;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "rooftop: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rooftop: %s\n", e.what());
    return 1;
  }
}
