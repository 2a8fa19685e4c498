// SPDX-License-Identifier: BSD-3-Clause
// Compiled to assembly with -fno-inline by check_prefetch.cmake: every prefetch helper must
// still prefetch where the compiler would not inline it (why: cpu::prefetch_line). Each
// function below holds a marker line, so the check can tell which one lost its prefetches.
#include "../../backends/cpu/streaming_store.hpp"

void prefetch_line_kept(const char* p) {
  asm volatile("# rooftop-check prefetch_line" ::: "memory");
  rooftop::cpu::prefetch_line(p);
}
void prefetch_run_kept(const float* p, long count) {
  asm volatile("# rooftop-check prefetch_run" ::: "memory");
  rooftop::cpu::prefetch_run(p, count);
}
void prefetch_ahead_kept(const float* p, long count) {
  asm volatile("# rooftop-check prefetch_ahead" ::: "memory");
  rooftop::cpu::prefetch_ahead(p, count);
}
void prefetch_lines_kept(const rooftop::cpu::Prefetch& ahead, long end) {
  asm volatile("# rooftop-check Prefetch::lines" ::: "memory");
  ahead.lines(0, end);
}
void prefetch_one_line_kept(const rooftop::cpu::Prefetch& ahead, long b) {
  asm volatile("# rooftop-check Prefetch::line" ::: "memory");
  ahead.line(b);
}
