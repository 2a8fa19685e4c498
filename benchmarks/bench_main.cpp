// SPDX-License-Identifier: BSD-3-Clause
// Google Benchmark suite: every op x dtype x size of the op table, manual time with fences,
// counters GB/s, GFLOP/s, AI and roof_frac (decimal units), verified after timing.
#include "ceilings.hpp"
#include "huge_pages.hpp"
#include "op_table.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <string>

using namespace rooftop;
using namespace rooftop::harness;

namespace {

/// Benchmarks whose output failed verification or that could not run (main's exit status).
int failed = 0;
/// The inputs' seed: fresh each run (std::random_device), or ROOFTOP_BENCH_SEED's to replay a run;
/// in the output's context either way.
std::uint64_t inputs_seed = 0;

void run_op(benchmark::State& state, const OpSpec* spec, DType dtype, const Shape& shape, const Ceilings* ceilings) {
  Exec exec;
  // An instance that throws (inputs that cannot be allocated, a shape the kernel refuses) is
  // skipped with its error, and the run goes on: an exception must not leave a benchmark.
  try {
    OpInstance inst = spec->make(exec, dtype, shape, inputs_seed + static_cast<std::uint64_t>(shape[0]));
    inst.run();  // warm-up (first touch, caches)
    double seconds = 0, best = std::numeric_limits<double>::infinity();  // the manual times' sum and least
    for (auto _ : state) {
      const double t = time_fenced(exec, inst.run);
      state.SetIterationTime(t);
      seconds += t;
      best = std::min(best, t);
    }
    const std::string error = verify_fresh_run(exec, inst);
    if (!error.empty()) {
      ++failed;
      state.SkipWithError(error.c_str());
      return;
    }
    // Over the mean manual time, in decimal GB/s and GFLOP/s (plain counters: Google Benchmark
    // would print its rates with another "/s"); roof_frac = roof time / mean time, so below the
    // harness's, which takes the best time. Above 1.05 at the best time means a wrong byte
    // count, or a ceiling below what the machine gave this op: these are measured once,
    // quickly, at the start, where the harness interleaves them with the op's runs. Said on
    // stderr either way.
    const double mean = seconds / static_cast<double>(state.iterations());
    const double roof = ceilings->roof_seconds(inst.cost, dtype, inst.matrix_units);
    state.counters["GB/s"] = inst.cost.bytes * 1e-9 / mean;
    state.counters["GFLOP/s"] = inst.cost.flops * 1e-9 / mean;
    state.counters["AI"] = inst.cost.ai();
    state.counters["roof_frac"] = roof / mean;
    if (roof / best > 1.05)
      std::fprintf(stderr, "rooftop_bench: warning: %s/%s/%s at %.0f%% of its roof at its best time (a wrong byte count, or the quick "
                   "ceilings measured low: the harness, rooftop, re-measures them)\n", spec->name.c_str(),
                   dtype_name(dtype), shape_string(shape).c_str(), 100 * roof / best);
  } catch (const std::exception& e) {
    ++failed;
    state.SkipWithError(e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  const std::string pages = use_huge_pages_for_host_views();  // as the harness does by default
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;  // a misspelt filter would run everything
  if (const char* replay = std::getenv("ROOFTOP_BENCH_SEED")) {
    char* end = nullptr;
    inputs_seed = std::strtoull(replay, &end, 10);
    if (*replay == '\0' || *end != '\0') {
      std::fprintf(stderr, "rooftop_bench: ROOFTOP_BENCH_SEED=%s is not a decimal number\n", replay);
      return 2;
    }
  } else {
    std::random_device entropy;
    inputs_seed = (static_cast<std::uint64_t>(entropy()) << 32) | entropy();
  }
  Exec exec;
  std::fprintf(stderr, "rooftop_bench: measuring ceilings (quick)...\n");
  static const Ceilings ceilings = [&] {
    const BandwidthSampler<Exec> bandwidth(exec);  // freed once measured
    return measure_ceilings(exec, bandwidth, true, [](const std::string&) {});
  }();
  benchmark::AddCustomContext("rooftop_backend", backend_name);
  benchmark::AddCustomContext("device", device_name(exec));
  benchmark::AddCustomContext("kokkos_version", compat::kokkos_version());
  benchmark::AddCustomContext("concurrency", std::to_string(compat::concurrency(exec)));
  benchmark::AddCustomContext("pages", pages);
  benchmark::AddCustomContext("seed", std::to_string(inputs_seed));
  if constexpr (rooftop::detail::host_streams<Exec>)
    benchmark::AddCustomContext("host_outputs", host_outputs_text(host_streaming_threshold<Exec>()));
  benchmark::AddCustomContext("ceiling_dram_gbs", std::to_string(ceilings.dram()));
  benchmark::AddCustomContext("ceiling_llc_gbs", std::to_string(ceilings.bandwidth_gbs.at("llc")));
  benchmark::AddCustomContext("ceiling_fp32_gflops", std::to_string(ceilings.peak_gflops_fp32));
  benchmark::AddCustomContext("ceiling_fp64_gflops", std::to_string(ceilings.peak_gflops_fp64));
  if (ceilings.peak_gflops_bf16_matrix > 0)
    benchmark::AddCustomContext("ceiling_bf16_matrix_gflops", std::to_string(ceilings.peak_gflops_bf16_matrix));
  if (ceilings.peak_gflops_fp16_matrix > 0)
    benchmark::AddCustomContext("ceiling_fp16_matrix_gflops", std::to_string(ceilings.peak_gflops_fp16_matrix));
  benchmark::AddCustomContext("launch_overhead_us", std::to_string(ceilings.launch_overhead_us));

  // One table: ops x dtypes x the harness's working sets (cache-resident and main memory), each
  // shape once (shapes clamped to a size can coincide across working sets).
  std::set<std::string> registered;
  for (const OpSpec& spec : op_table())
    for (DType d : spec.dtypes)
      for (double ws : {cache_working_set(ceilings.llc_bytes), main_memory_working_set(ceilings.llc_bytes)}) {
        if (!spec.cache_sizes && ws < main_memory_working_set(ceilings.llc_bytes)) continue;
        for (const Shape& shape : spec.shapes_for(d, ws)) {
          const std::string name = spec.name + "/" + dtype_name(d) + "/" + shape_string(shape);
          if (!registered.insert(name).second) continue;
          benchmark::RegisterBenchmark(name.c_str(), run_op, &spec, d, shape, &ceilings)->UseManualTime()->Unit(benchmark::kMicrosecond);
        }
      }
  const std::size_t ran = benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (ran == 0) {
    std::fprintf(stderr, "rooftop_bench: no benchmark matches the filter\n");
    return 2;
  }
  if (failed) std::fprintf(stderr, "rooftop_bench: %d benchmark(s) failed verification or could not run\n", failed);
  return failed ? 1 : 0;
}
