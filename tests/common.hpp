// SPDX-License-Identifier: BSD-3-Clause
// Shared test helpers: the backend's execution space, fresh seeded random inputs (seed printed,
// ROOFTOP_TEST_SEED to replay), NaN-poisoned outputs, float64 host copies, tolerances.
#pragma once

#include <rooftop/core/backend.hpp>
#include <rooftop/core/random.hpp>
#include <rooftop/core/reduction.hpp>
#include <rooftop/backends/cpu/streaming_store.hpp>
#include <rooftop/core/types.hpp>

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace rooftop::test {

using Exec = BackendExec;
template <class T>
using Vector = Kokkos::View<T*, BackendMemory>;

/// The run's seed: ROOFTOP_TEST_SEED if set, else fresh; printed once by main.
std::uint64_t run_seed();

/// A distinct seed per call, derived from the run's seed.
inline std::uint64_t next_seed() {
  static std::uint64_t counter = 0;
  return hash64(run_seed(), counter++);
}

/// The peak, while one lives, of the bytes Kokkos has allocated since it was made less those
/// it has freed, in every memory space (device memory, team scratch and host Views alike), and
/// the labels of what it allocated, counted through Kokkos Tools' allocation callbacks, which it
/// installs in place of any a tool had set, restoring those after. (Memory Kokkos keeps between
/// calls, such as a GPU's team scratch, counts where it grows.)
class KokkosAllocations {
 public:
  KokkosAllocations() : saved_(Kokkos::Tools::Experimental::get_callbacks()) {
    live = peak = 0;
    {
      const std::lock_guard<std::mutex> lock(labels_mutex());
      labels().clear();
    }
    Kokkos::Tools::Experimental::set_allocate_data_callback(allocated);
    Kokkos::Tools::Experimental::set_deallocate_data_callback(freed);
  }
  ~KokkosAllocations() { Kokkos::Tools::Experimental::set_callbacks(saved_); }
  KokkosAllocations(const KokkosAllocations&) = delete;
  KokkosAllocations& operator=(const KokkosAllocations&) = delete;
  std::int64_t peak_bytes() const { return peak; }
  /// Whether something labelled `label` was allocated while this one lived.
  bool allocated(const std::string& label) const {
    const std::lock_guard<std::mutex> lock(labels_mutex());
    return labels().count(label) != 0;
  }

 private:
  static void allocated(const Kokkos_Profiling_SpaceHandle, const char* label, const void*, const std::uint64_t bytes) {
    const std::int64_t now = live += static_cast<std::int64_t>(bytes);
    for (std::int64_t top = peak; now > top && !peak.compare_exchange_weak(top, now);) {
    }
    const std::lock_guard<std::mutex> lock(labels_mutex());
    labels().insert(label ? label : "");
  }
  static void freed(const Kokkos_Profiling_SpaceHandle, const char*, const void*, const std::uint64_t bytes) {
    live -= static_cast<std::int64_t>(bytes);
  }
  static std::set<std::string>& labels() {
    static std::set<std::string> seen;
    return seen;
  }
  static std::mutex& labels_mutex() {
    static std::mutex m;
    return m;
  }
  static inline std::atomic<std::int64_t> live{0}, peak{0};
  Kokkos::Tools::Experimental::EventSet saved_;
};

/// Sizes every op is tested at: empty, one, small odd, not a multiple of any block/lane/team
/// size, and large.
inline const std::vector<std::int64_t> sizes = {0, 1, 13, 4096 * 3 + 77, (1 << 20) + 7};

template <class T>
using Matrix = Kokkos::View<T**, Kokkos::LayoutRight, BackendMemory>;

/// Host kernels stream outputs above rooftop::streaming_store_threshold(), which the test sizes
/// stay below; a test runs its body once per store path, every output streamed in the second.
inline const std::vector<std::size_t> store_thresholds = {SIZE_MAX, 0};

/// Sets the streaming-store threshold for a scope.
struct StreamingThreshold {
  std::size_t saved = rooftop::streaming_store_threshold();
  explicit StreamingThreshold(std::size_t bytes) { rooftop::set_streaming_store_threshold(bytes); }
  ~StreamingThreshold() { rooftop::set_streaming_store_threshold(saved); }
  StreamingThreshold(const StreamingThreshold&) = delete;
  StreamingThreshold& operator=(const StreamingThreshold&) = delete;
};

/// Row-wise ops are tested at these row lengths (cols): one, small odd, a short row of whole
/// cache lines (the harness's shortest, which AVX2 hosts now stream in most dtypes), not a multiple
/// of any lane count, and a long row.
inline const std::vector<std::int64_t> row_lengths = {1, 13, 768, 4096 + 77, 32768};

/// (rows, cols) for row-wise ops: every row length (rows of more than 1000 entries 3 at a
/// time, shorter ones `short_rows`), then rows of 4173 on either side of `elements` in all
/// (a threshold of the host's, such as the bias ops' detail::widened_bias_from).
inline std::vector<std::array<std::int64_t, 2>> row_shapes(std::int64_t short_rows, std::int64_t elements) {
  std::vector<std::array<std::int64_t, 2>> shapes;
  for (const std::int64_t cols : row_lengths) shapes.push_back({cols > 1000 ? 3 : short_rows, cols});
  const std::int64_t wide = 4096 + 77;
  shapes.push_back({(elements - 1) / wide, wide});
  shapes.push_back({elements / wide + 1, wide});
  return shapes;
}

template <class T>
Vector<T> random_vector(std::int64_t n, double lo = -1, double hi = 1) {
  Vector<T> v("rooftop::test::v", n);
  fill_uniform(Exec(), v, next_seed(), lo, hi);
  return v;
}

template <class T>
Vector<T> poisoned_vector(std::int64_t n) {
  Vector<T> v("rooftop::test::out", n);
  fill_nan(Exec(), v);
  return v;
}

/// The elements of a contiguous View as a rank-1 View (same memory).
template <class View>
Kokkos::View<typename View::value_type*, BackendMemory, Kokkos::MemoryUnmanaged> flat(const View& v) {
  return Kokkos::View<typename View::value_type*, BackendMemory, Kokkos::MemoryUnmanaged>(v.data(), v.size());
}

template <class T>
Matrix<T> random_matrix(std::int64_t rows, std::int64_t cols, double lo = -1, double hi = 1) {
  Matrix<T> m("rooftop::test::m", rows, cols);
  fill_uniform(Exec(), flat(m), next_seed(), lo, hi);
  return m;
}

template <class T>
Matrix<T> poisoned_matrix(std::int64_t rows, std::int64_t cols) {
  Matrix<T> m("rooftop::test::out", rows, cols);
  fill_nan(Exec(), flat(m));
  return m;
}

/// An output filled with 7, a finite value no check that uses it expects: for outputs that
/// should be NaN, where a NaN poison could not tell a NaN written from an entry left unwritten.
template <class T>
Matrix<T> sentinel_matrix(std::int64_t rows, std::int64_t cols) {
  Matrix<T> m("rooftop::test::out", rows, cols);
  Kokkos::deep_copy(m, T(7.0f));
  return m;
}

/// A LayoutRight copy of v in its own memory space.
template <class View, std::size_t... r>
auto contiguous_copy(const View& v, std::index_sequence<r...>) {
  Kokkos::View<typename View::non_const_data_type, Kokkos::LayoutRight, typename View::memory_space> out("rooftop::test::copy",
                                                                                                        v.extent(r)...);
  Kokkos::deep_copy(out, v);  // within one memory space: any layouts
  return out;
}

/// Edits v's elements on the host: edit(h) on a host mirror holding them, then copied back.
template <class View, class Edit>
void edit(const View& v, const Edit& edit_host) {
  auto h = Kokkos::create_mirror_view(v);
  Kokkos::deep_copy(h, v);
  edit_host(h);
  Kokkos::deep_copy(v, h);
}

/// A host View holding v's elements, at the same indices, for any layout: Kokkos copies between
/// memory spaces only whole contiguous spans, so a strided device View (a subview, a
/// LayoutStride batch) goes through a contiguous copy on the device first. Always a copy.
template <class View>
auto host_copy(const View& v) {
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename View::memory_space>::accessible) {
    auto h = Kokkos::create_mirror(Kokkos::HostSpace(), v);
    Kokkos::deep_copy(h, v);
    return h;
  } else {
    return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(),
                                               contiguous_copy(v, std::make_index_sequence<View::rank>{}));
  }
}

/// v's elements readable on the host at the same indices: v itself where the host can read it,
/// else host_copy(v).
template <class View>
auto host_view(const View& v) {
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename View::memory_space>::accessible) {
    return v;
  } else {
    return host_copy(v);
  }
}

/// An empty team body, to ask the backend how large a team may be.
struct NoOp {
  KOKKOS_INLINE_FUNCTION void operator()(const Kokkos::TeamPolicy<Exec>::member_type&) const {}
};

/// The largest team this backend runs an empty body with.
inline int max_team_size() {
  return Kokkos::TeamPolicy<Exec>(Exec(), 1, Kokkos::AUTO).team_size_max(NoOp{}, Kokkos::ParallelForTag());
}

/// Values of v as float64 on the host (through the compute type, exactly).
template <class View>
std::vector<double> host(const View& v) {
  const auto h = host_view(v);
  std::vector<double> out(v.extent(0));
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<double>(static_cast<compute_t<typename View::value_type>>(h(i)));
  return out;
}

/// Elements of a (rows, cols) View as float64 on the host, row after row.
template <class T>
std::vector<double> host(const Matrix<T>& m) {
  std::vector<double> out(m.size());
  const auto h = host_view(m);
  for (std::size_t r = 0; r < m.extent(0); ++r)
    for (std::size_t c = 0; c < m.extent(1); ++c)
      out[r * m.extent(1) + c] = static_cast<double>(static_cast<compute_t<T>>(h(r, c)));
  return out;
}

/// Tolerance of an elementwise result: one rounding of the compute type and one to storage,
/// relative to the sum of |terms| (plus denorm_min<T>() absolute, for subnormal results).
template <class T>
double elementwise_tolerance() {
  return 2 * epsilon<T>() + 2 * epsilon<compute_t<T>>();
}

/// Tolerance of a reduction of n terms relative to the sum of |terms| (worst case of rooftop's
/// fold, see detail::reduction_depth; `regions`: a fold of detail::reduce_regions, sum's).
inline double reduction_tolerance(std::int64_t n, double accumulate_eps, bool regions = false) {
  return (regions ? detail::region_reduction_depth(n) : detail::reduction_depth(n)) * accumulate_eps;
}

}  // namespace rooftop::test

TYPE_TO_STRING(rooftop::bf16);
TYPE_TO_STRING(rooftop::fp16);

#define ROOFTOP_DTYPES double, float, rooftop::bf16, rooftop::fp16
/// Ops whose math is fp32 (activations, softmax, norms, dropout).
#define ROOFTOP_ML_DTYPES float, rooftop::bf16, rooftop::fp16
